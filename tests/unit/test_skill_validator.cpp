// Every rule of the reference validator (skills-ref), a passing and a failing case each, with its
// exact wording; then upskill's warnings.
#include <gtest/gtest.h>

#include "support/temp_dir.hpp"
#include "upskill/skill/strict_yaml.hpp"
#include "upskill/skill/validator.hpp"

namespace upskill::skill {
namespace {

using testing::TempDir;

constexpr const char* kAllowed =
    "['allowed-tools', 'compatibility', 'description', 'license', 'metadata', 'name']";

class Validator : public ::testing::Test {
 protected:
  TempDir tmp;
  ValidationReport check(const std::string& dir, const std::string& skill_md,
                         ValidationOptions options = {}) {
    tmp.write(dir + "/SKILL.md", skill_md);
    return validate_skill(tmp / dir, options);
  }
  static std::string md(const std::string& frontmatter, const std::string& body = "Body.\n") {
    return "---\n" + frontmatter + "---\n" + body;
  }
  static std::vector<std::string> only(const std::string& message) { return {message}; }
};

TEST_F(Validator, ValidSkillPasses) {
  auto r = check(
      "pdf-tools",
      md("name: pdf-tools\ndescription: Work with PDF files. Use when a PDF is involved.\n"
         "license: Apache-2.0\ncompatibility: Needs python3\nallowed-tools: Bash(git:*) Read\n"
         "metadata:\n  author: someone\n  version: \"1.0\"\n"));
  EXPECT_TRUE(r.valid());
  EXPECT_TRUE(r.errors.empty());
}

TEST_F(Validator, PathRules) {
  auto missing = validate_skill(tmp / "absent");
  EXPECT_TRUE(missing.not_a_skill);
  EXPECT_EQ(missing.errors, only("Path does not exist: " + (tmp / "absent").string()));
  const auto file = tmp.write("file.txt", "x");
  auto not_dir = validate_skill(file);
  EXPECT_TRUE(not_dir.not_a_skill);
  EXPECT_EQ(not_dir.errors, only("Not a directory: " + file.string()));
  std::filesystem::create_directories(tmp / "empty");
  auto no_md = validate_skill(tmp / "empty");
  EXPECT_TRUE(no_md.not_a_skill);
  EXPECT_EQ(no_md.errors, only("Missing required file: SKILL.md"));
}

TEST_F(Validator, LowercaseSkillMdAcceptedWithWarning) {
  tmp.write("lower/skill.md", md("name: lower\ndescription: Use when testing.\n"));
  auto r = validate_skill(tmp / "lower");
  EXPECT_TRUE(r.valid());
  EXPECT_NE(r.warnings.at(0).find("skill.md"), std::string::npos);
}

TEST_F(Validator, SkillMdPathMapsToItsDirectory) {
  tmp.write("via-file/SKILL.md", md("name: via-file\ndescription: Use when testing.\n"));
  auto r = validate_skill(tmp / "via-file/SKILL.md");
  EXPECT_TRUE(r.valid()) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(r.skill_dir, tmp / "via-file");
}

TEST_F(Validator, FrontmatterStructure) {
  EXPECT_EQ(check("a", "# no front matter\n").errors,
            only("SKILL.md must start with YAML frontmatter (---)"));
  EXPECT_EQ(
      check("b", "\xEF\xBB\xBF---\nname: b\n---\n").errors,
      only("SKILL.md must start with YAML frontmatter (---)"));  // as skills-ref: a BOM is not ---
  EXPECT_EQ(check("c", "---\nname: c\ndescription: d\n").errors,
            only("SKILL.md frontmatter not properly closed with ---"));
  EXPECT_EQ(check("d", md("just a string\n")).errors,
            only("SKILL.md frontmatter must be a YAML mapping"));
  EXPECT_EQ(check("e", md("- a\n- b\n")).errors,
            only("SKILL.md frontmatter must be a YAML mapping"));
  EXPECT_EQ(check("f", md("")).errors, only("SKILL.md frontmatter must be a YAML mapping"));
}

TEST_F(Validator, InvalidYamlIncludingStrictYamlRestrictions) {
  for (const auto& [dir, fm] : std::vector<std::pair<std::string, std::string>>{
           {"syntax", "name: x\n  bad: [\n"},
           {"flow-map", "name: flow-map\ndescription: d\nmetadata: {a: b}\n"},
           {"flow-seq", "name: flow-seq\ndescription: [a, b]\n"},
           {"anchor", "name: &n anchor\ndescription: d\n"},
           {"alias", "name: alias\ndescription: d\nlicense: *x\n"},
           {"tag", "name: tag\ndescription: !!str d\n"},
           {"dup", "name: dup\nname: dup\ndescription: d\n"}}) {
    auto r = check(dir, md(fm));
    ASSERT_EQ(r.errors.size(), 1u) << dir;
    EXPECT_EQ(r.errors[0].rfind("Invalid YAML in frontmatter: ", 0), 0u)
        << dir << ": " << r.errors[0];
  }
}

TEST_F(Validator, UnexpectedFields) {
  auto r = check("x", md("name: x\ndescription: d\nmodel: opus\nargument-hint: \"[file]\"\n"));
  EXPECT_EQ(r.errors,
            only(std::string("Unexpected fields in frontmatter: argument-hint, model. Only ") +
                 kAllowed + " are allowed."));
  // --claude-code accepts Claude Code's keys.
  ValidationOptions cc;
  cc.claude_code = true;
  EXPECT_TRUE(
      check(
          "x",
          md("name: x\ndescription: Use when.\nmodel: opus\nargument-hint: \"[file]\"\n"
             "disable-model-invocation: true\nuser-invocable: false\neffort: high\ncontext: fork\n"
             "agent: general\nhooks:\n  a: b\n"),
          cc)
          .valid());
  auto still = check("y", md("name: y\ndescription: d\nbogus: 1\n"), cc);
  ASSERT_EQ(still.errors.size(), 1u);
  EXPECT_NE(still.errors[0].find(
                "Unexpected fields in frontmatter: bogus. Only ['agent', 'allowed-tools', "),
            std::string::npos)
      << still.errors[0];
}

TEST_F(Validator, RequiredFields) {
  EXPECT_EQ(check("n", md("description: d\n")).errors,
            only("Missing required field in frontmatter: name"));
  EXPECT_EQ(check("n", md("name: n\n")).errors,
            only("Missing required field in frontmatter: description"));
  EXPECT_EQ(check("n", md("license: MIT\n")).errors,
            (std::vector<std::string>{"Missing required field in frontmatter: name",
                                      "Missing required field in frontmatter: description"}));
  EXPECT_EQ(check("n", md("name:\ndescription: d\n")).errors,
            only("Field 'name' must be a non-empty string"));
  EXPECT_EQ(check("n", md("name: \"  \"\ndescription: d\n")).errors,
            only("Field 'name' must be a non-empty string"));
  EXPECT_EQ(check("n", md("name:\n  a: b\ndescription: d\n")).errors,
            only("Field 'name' must be a non-empty string"));
  EXPECT_EQ(check("n", md("name: n\ndescription:\n")).errors,
            only("Field 'description' must be a non-empty string"));
  EXPECT_EQ(check("n", md("name: n\ndescription:\n  - a\n")).errors,
            only("Field 'description' must be a non-empty string"));
}

TEST_F(Validator, ScalarsAreStringsAsInStrictYaml) {
  EXPECT_TRUE(check("123", md("name: 123\ndescription: true\n")).valid());
  EXPECT_TRUE(check("null", md("name: null\ndescription: ~\n")).valid());
}

TEST_F(Validator, NameLength) {
  const std::string ok(64, 'a'), long_name(65, 'a');
  EXPECT_TRUE(check(ok, md("name: " + ok + "\ndescription: d\n")).valid());
  EXPECT_EQ(check(long_name, md("name: " + long_name + "\ndescription: d\n")).errors,
            only("Skill name '" + long_name + "' exceeds 64 character limit (65 chars)"));
  // Counted in characters, not bytes.
  const std::string cjk =
      "技能技能技能技能技能技能技能技能技能技能技能技能技能技能技能技能";  // 32 chars
  EXPECT_TRUE(check(cjk, md("name: " + cjk + "\ndescription: d\n")).valid());
}

TEST_F(Validator, NameCase) {
  EXPECT_EQ(check("My-Skill", md("name: My-Skill\ndescription: d\n")).errors,
            only("Skill name 'My-Skill' must be lowercase"));
  EXPECT_EQ(check("été", md("name: Été\ndescription: d\n")).errors,
            (std::vector<std::string>{"Skill name 'Été' must be lowercase",
                                      "Directory name 'été' must match skill name 'Été'"}));
}

TEST_F(Validator, NameHyphens) {
  EXPECT_EQ(check("-a", md("name: -a\ndescription: d\n")).errors,
            only("Skill name cannot start or end with a hyphen"));
  EXPECT_EQ(check("a-", md("name: a-\ndescription: d\n")).errors,
            only("Skill name cannot start or end with a hyphen"));
  EXPECT_EQ(check("a--b", md("name: a--b\ndescription: d\n")).errors,
            only("Skill name cannot contain consecutive hyphens"));
  EXPECT_TRUE(check("a-b-c", md("name: a-b-c\ndescription: d\n")).valid());
}

TEST_F(Validator, NameCharacters) {
  EXPECT_EQ(check("a_b", md("name: a_b\ndescription: d\n")).errors,
            only("Skill name 'a_b' contains invalid characters. Only letters, digits, and hyphens "
                 "are allowed."));
  EXPECT_EQ(check("a.b", md("name: a.b\ndescription: d\n")).errors,
            only("Skill name 'a.b' contains invalid characters. Only letters, digits, and hyphens "
                 "are allowed."));
  EXPECT_TRUE(check("技能", md("name: 技能\ndescription: d\n"))
                  .valid());  // isalnum() accepts letters of any script
}

TEST_F(Validator, NameIsNfkcNormalisedAndStripped) {
  // Fullwidth "ｐｄｆ" normalises to "pdf", which matches the directory.
  EXPECT_TRUE(check("pdf", md("name: ｐｄｆ\ndescription: d\n")).valid());
  EXPECT_TRUE(check("pdf", md("name: \" pdf \"\ndescription: d\n")).valid());
}

TEST_F(Validator, DirectoryMustMatch) {
  EXPECT_EQ(check("folder", md("name: other\ndescription: d\n")).errors,
            only("Directory name 'folder' must match skill name 'other'"));
}

TEST_F(Validator, DescriptionLength) {
  const std::string ok(1024, 'd'), too_long(1025, 'd');
  EXPECT_TRUE(check("s", md("name: s\ndescription: " + ok + "\n")).valid());
  EXPECT_EQ(check("s", md("name: s\ndescription: " + too_long + "\n")).errors,
            only("Description exceeds 1024 character limit (1025 chars)"));
}

TEST_F(Validator, Compatibility) {
  EXPECT_TRUE(
      check("s", md("name: s\ndescription: d\ncompatibility: " + std::string(500, 'c') + "\n"))
          .valid());
  EXPECT_EQ(
      check("s", md("name: s\ndescription: d\ncompatibility: " + std::string(501, 'c') + "\n"))
          .errors,
      only("Compatibility exceeds 500 character limit (501 chars)"));
  EXPECT_EQ(check("s", md("name: s\ndescription: d\ncompatibility:\n  os: linux\n")).errors,
            only("Field 'compatibility' must be a string"));
}

TEST_F(Validator, NonUtf8IsAnErrorNotACrash) {
  EXPECT_EQ(check("s", md("name: s\ndescription: \xff\n")).errors,
            only("SKILL.md is not valid UTF-8 text"));
}

bool has_warning(const ValidationReport& r, const std::string& part) {
  for (const auto& w : r.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

TEST_F(Validator, UpskillWarningsNeverChangeTheVerdict) {
  std::string long_body;
  for (int i = 0; i < 520; ++i) long_body += "line\n";
  auto lines = check("w", md("name: w\ndescription: Use when <tag> appears\n", long_body));
  EXPECT_TRUE(lines.valid());
  EXPECT_TRUE(has_warning(lines, "lines; the spec recommends under 500"));
  EXPECT_TRUE(has_warning(lines, "contains '<' or '>'"));
  // Most skills are not upskill's: no skill_meta.json is said only when asked.
  EXPECT_FALSE(has_warning(lines, "no skill_meta.json"));
  ValidationOptions upskill_skill;
  upskill_skill.expect_tests = true;
  EXPECT_TRUE(has_warning(validate_skill(tmp / "w", upskill_skill), "no skill_meta.json"));

  std::string many_words;
  for (int i = 0; i < 4000; ++i) many_words += "word ";
  auto tokens = check("t", md("name: t\ndescription: Use when.\n", many_words));
  EXPECT_TRUE(tokens.valid());
  EXPECT_TRUE(has_warning(tokens, "tokens; the spec recommends under 5000"));
  EXPECT_FALSE(has_warning(tokens, "lines; the spec"));

  auto misc = check("claude-helper",
                    md("name: claude-helper\ndescription: Helps.\nallowed-tools: Read, Write\n"
                       "metadata:\n  nested:\n    a: b\n"));
  EXPECT_TRUE(misc.valid());
  EXPECT_TRUE(has_warning(misc, "reserved word 'claude'"));
  EXPECT_TRUE(has_warning(misc, "comma-separated"));
  EXPECT_TRUE(has_warning(misc, "metadata value 'nested' is not a string"));
  EXPECT_TRUE(has_warning(misc, "does not say when to use"));

  auto tools_ok = check(
      "u",
      md("name: u\ndescription: Use when.\nallowed-tools: Bash(git add:*, git commit:*) Read\n"));
  EXPECT_FALSE(has_warning(tools_ok, "comma-separated"));  // commas inside a pattern are fine
}

TEST_F(Validator, LinkWarnings) {
  tmp.write("l/references/guide.md",
            "# guide\nSee [the chained one](chained.md) and "
            "[deep](deep/more.md).\n");
  tmp.write("l/references/chained.md", "# chained");
  tmp.write("l/references/deep/more.md", "# more");
  auto r =
      check("l", md("name: l\ndescription: Use when.\n",
                    "See [guide](references/guide.md), [missing](references/nope.md), "
                    "[deep](references/deep/more.md), [web](https://example.com), [anchor](#top), "
                    "![img](assets/pic%20one.png), [out](../other/SKILL.md).\n"
                    "Inline `[example](not/here.md)` and a block:\n"
                    "```markdown\nSee [setup](references/setup.md)\n```\n"
                    "~~~\n[also](nowhere.md)\n~~~\n"));
  EXPECT_TRUE(r.valid());
  EXPECT_TRUE(has_warning(r, "broken link: 'references/nope.md'"));
  EXPECT_TRUE(has_warning(r, "broken link: 'assets/pic one.png'"));
  EXPECT_TRUE(has_warning(r, "link '../other/SKILL.md' leads outside the skill"));
  // Depth is the reference chain, not the folder: a subfolder file linked from SKILL.md is fine,
  // a file reached only through another reference is not.
  EXPECT_FALSE(has_warning(r, "deep/more.md"));
  EXPECT_TRUE(has_warning(r,
                          "'references/chained.md' is reached only through "
                          "'references/guide.md'"));
  // Links in code are examples, not references.
  EXPECT_FALSE(has_warning(r, "setup.md"));
  EXPECT_FALSE(has_warning(r, "not/here.md"));
  EXPECT_FALSE(has_warning(r, "nowhere.md"));
  EXPECT_FALSE(has_warning(r, "example.com"));
}

TEST_F(Validator, DescriptionsThatSayWhenInOtherWords) {
  for (const char* d :
       {"Converts PDFs. Use for extracting tables from PDF files.",
        "Helps with charts. Use this skill to render plots.", "Triggers on requests about Gradio.",
        "Use it on Hugging Face Jobs.", "Applies whenever a user asks about kernels.",
        "Used for building CUDA kernels.", "Use if the user mentions Trackio."}) {
    SCOPED_TRACE(d);
    EXPECT_FALSE(has_warning(check("d", md(std::string("name: d\ndescription: ") + d + "\n")),
                             "does not say when"));
  }
  EXPECT_TRUE(
      has_warning(check("e", md("name: e\ndescription: A PDF toolkit.\n")), "does not say when"));
}

TEST_F(Validator, StrayFilesAreFlagged) {
  tmp.write("z/Archive.zip", "PK");
  tmp.write("z/scripts/__pycache__/x.cpython-311.pyc", "x");
  tmp.write("z/.DS_Store", "x");
  tmp.write("z/assets/fonts/Inter.ttf", "x");
  auto r = check("z", md("name: z\ndescription: Use when.\n"));
  EXPECT_TRUE(r.valid());
  EXPECT_TRUE(has_warning(r, "Archive.zip is an archive"));
  EXPECT_TRUE(has_warning(r, "x.cpython-311.pyc is a compiled file"));
  EXPECT_TRUE(has_warning(r, ".DS_Store is left by"));
  EXPECT_FALSE(has_warning(r, "Inter.ttf"));  // fonts are assets
  // An archive the skill's own script unpacks is part of the skill (shadcn's components tarball);
  // one that only a binary file or the archive itself mentions is not.
  tmp.write("u/scripts/shadcn-components.tar.gz", "shadcn-components.tar.gz");
  tmp.write("u/scripts/setup.sh",
            "#!/bin/sh\ntar xzf \"$(dirname \"$0\")/shadcn-components.tar.gz\"\n");
  tmp.write("u/assets/other.zip", "PK");
  tmp.write("u/assets/blob.bin", std::string("other.zip\0", 10));
  auto u = check("u", md("name: u\ndescription: Use when.\n"));
  EXPECT_FALSE(has_warning(u, "shadcn-components.tar.gz")) << ::testing::PrintToString(u.warnings);
  EXPECT_TRUE(has_warning(u, "assets/other.zip is an archive"));
}

TEST_F(Validator, AnUnterminatedQuoteIsInvalidYaml) {
  auto r = check("q", "---\nname: q\ndescription: \"Use when testing\n---\nbody\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].rfind("Invalid YAML in frontmatter: found unexpected end of stream", 0), 0u)
      << r.errors[0];
  auto ok = check("q2",
                  "---\nname: q2\ndescription: \"Use when: it's \\\"fine\\\"\n  and more\"\n"
                  "metadata:\n  a: 'it''s'\n  b: x # \"not a quote\n---\nbody\n");
  EXPECT_TRUE(ok.valid()) << (ok.errors.empty() ? "" : ok.errors[0]);
}

TEST_F(Validator, SkillMetaWarnings) {
  std::filesystem::create_directories(tmp / "m/scripts");
  tmp.write("m/skill_meta.json", R"({"metadata": {}, "tests": [{"input": "x", "expectd": 1}]})");
  auto bad = check("m", md("name: m\ndescription: Use when.\n"));
  EXPECT_TRUE(bad.valid());
  EXPECT_TRUE(has_warning(bad, "does not match the test-case schema"));
  EXPECT_TRUE(has_warning(bad, "unknown key 'expectd'"));
  EXPECT_TRUE(has_warning(bad, "scripts/ is empty"));
  tmp.write("m/skill_meta.json", R"({"metadata": {}, "tests": []})");
  EXPECT_TRUE(has_warning(check("m", md("name: m\ndescription: Use when.\n")), "has no tests"));
  tmp.write("m/skill_meta.json",
            R"({"metadata": {}, "tests": [{"input": "x", "expected": {"contains": "x"}}]})");
  tmp.write("m/scripts/run.sh", "echo");
  auto good = check("m", md("name: m\ndescription: Use when.\n"));
  EXPECT_TRUE(good.warnings.empty()) << good.warnings[0];
}

TEST(StrictYaml, EverythingIsAString) {
  auto v = parse_strict_yaml("a: 1\nb: true\nc:\nd: ~\ne: null # note\nf: 'q'\ng:\n  - x\n");
  ASSERT_TRUE(v && *v);
  const auto& m = **v;
  EXPECT_EQ(m.find("a")->text, "1");
  EXPECT_EQ(m.find("b")->text, "true");
  EXPECT_EQ(m.find("c")->text, "");
  EXPECT_EQ(m.find("d")->text, "~");
  EXPECT_EQ(m.find("e")->text, "null");
  EXPECT_EQ(m.find("f")->text, "q");
  EXPECT_EQ(m.find("g")->list.at(0).text, "x");
  auto err = parse_strict_yaml("a: 1\nb: {x: 1}\n", 1);
  ASSERT_FALSE(err);
  EXPECT_NE(err.error().message.find("flow style {} is not allowed (line 3"), std::string::npos)
      << err.error().message;
  auto empty = parse_strict_yaml("\n");
  ASSERT_TRUE(empty);
  EXPECT_FALSE(*empty);
}

}  // namespace
}  // namespace upskill::skill

namespace upskill::skill {
namespace {

std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(UPSKILL_SOURCE_DIR) / "tests/data/skills" / name;
}

TEST(ValidatorOnPublishedShapes, AnthropicStyleSkillIsValid) {
  auto r = validate_skill(fixture("pdf"));
  EXPECT_TRUE(r.valid()) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];  // a published skill: no false alarms
}

TEST(ValidatorOnPublishedShapes, HuggingFaceClaudeCodeSkillNeedsClaudeCodeMode) {
  auto strict = validate_skill(fixture("cuda-kernels"));
  EXPECT_EQ(
      strict.errors,
      std::vector<std::string>{
          std::string("Unexpected fields in frontmatter: argument-hint, disable-model-invocation, "
                      "user-invocable. Only ") +
          kAllowed + " are allowed."});
  ValidationOptions cc;
  cc.claude_code = true;
  auto lenient = validate_skill(fixture("cuda-kernels"), cc);
  EXPECT_TRUE(lenient.valid());
  EXPECT_TRUE(has_warning(lenient, "comma-separated"));
}

TEST(ValidatorOnPublishedShapes, UpskillOutputIsValidWithWarnings) {
  auto r = validate_skill(fixture("upskill-generated"));
  EXPECT_TRUE(r.valid());
  EXPECT_TRUE(has_warning(r, "comma-separated"));
  EXPECT_TRUE(has_warning(r, "has no tests"));  // upskill forgets to save its tests
}

TEST(ValidatorOnPublishedShapes, BrokenSkillReportsEveryRule) {
  auto r = validate_skill(fixture("BrokenSkill"));
  EXPECT_EQ(r.errors, (std::vector<std::string>{
                          std::string("Unexpected fields in frontmatter: version. Only ") +
                              kAllowed + " are allowed.",
                          "Skill name 'Broken_Skill--' must be lowercase",
                          "Skill name cannot start or end with a hyphen",
                          "Skill name cannot contain consecutive hyphens",
                          "Skill name 'Broken_Skill--' contains invalid characters. Only letters, "
                          "digits, and hyphens are "
                          "allowed.",
                          "Directory name 'BrokenSkill' must match skill name 'Broken_Skill--'",
                          "Field 'compatibility' must be a string"}));
  EXPECT_TRUE(has_warning(r, "contains '<' or '>'"));
}

}  // namespace
}  // namespace upskill::skill
