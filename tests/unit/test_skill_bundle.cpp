// skill/: a skill's folder loaded and saved (front matter, files, skill_meta.json) as written.
#include <gtest/gtest.h>

#include "support/temp_dir.hpp"
#include "upskill/skill/skill_bundle.hpp"

namespace upskill::skill {
namespace {

using testing::read_file;
using testing::TempDir;

constexpr const char* kSkillMd = R"(---
name: pdf-tools
description: 'Work with PDFs: split, merge. Use when a PDF is involved.'
argument-hint: "[file]"
allowed-tools: Read, Bash(git add:*)
metadata:
  author: someone
  version: "1.0"
hooks:
  PreToolUse:
    - matcher: Bash
---
# PDF tools

Body with [a link](references/guide.md).
)";

constexpr const char* kMeta = R"({
  "metadata": {"version": "1.0", "generated_by": "sonnet", "custom": {"x": 1}},
  "tests": [
    {"input": "Split a.pdf", "expected": {"contains": ["split"]}},
    {"id": "merge", "input": "Merge", "expected": {"contains": "merge"}}
  ]
}
)";

void lay_out(const TempDir& tmp) {
  tmp.write("pdf-tools/SKILL.md", kSkillMd);
  tmp.write("pdf-tools/skill_meta.json", kMeta);
  tmp.write("pdf-tools/references/guide.md", "# Guide\n");
  tmp.write("pdf-tools/scripts/split.py", "print('split')\n");
  tmp.write("pdf-tools/assets/logo.bin", std::string("\x00\x01\xff", 3));
  tmp.write("pdf-tools/NOTES.txt", "other files are allowed\n");
  tmp.write("pdf-tools/scripts/__pycache__/split.cpython-311.pyc", "junk");
  std::filesystem::permissions(tmp / "pdf-tools/scripts/split.py",
                               std::filesystem::perms::owner_exec,
                               std::filesystem::perm_options::add);
}

TEST(SkillBundle, LoadsEveryPart) {
  TempDir tmp;
  lay_out(tmp);
  auto bundle = SkillBundle::load(tmp / "pdf-tools");
  ASSERT_TRUE(bundle) << bundle.error().message;
  EXPECT_EQ(bundle->name(), "pdf-tools");
  EXPECT_EQ(bundle->description(), "Work with PDFs: split, merge. Use when a PDF is involved.");
  EXPECT_EQ(*bundle->frontmatter.allowed_tools,
            (std::vector<std::string>{"Read", "Bash(git add:*)"}));
  ASSERT_TRUE(bundle->frontmatter.metadata);
  EXPECT_EQ(bundle->frontmatter.metadata->at(1).second, "1.0");
  ASSERT_EQ(bundle->frontmatter.extra.size(), 2u);  // argument-hint and hooks kept as YAML
  EXPECT_EQ(bundle->frontmatter.extra[0].first, "argument-hint");
  EXPECT_EQ(bundle->body, "# PDF tools\n\nBody with [a link](references/guide.md).\n");
  EXPECT_EQ(bundle->files_under("references"), (std::vector<std::string>{"references/guide.md"}));
  EXPECT_EQ(bundle->files_under("scripts"),
            (std::vector<std::string>{"scripts/split.py"}));  // no __pycache__
  EXPECT_TRUE(bundle->files.at("scripts/split.py").executable);
  EXPECT_EQ(bundle->files.at("assets/logo.bin").content.size(), 3u);
  EXPECT_TRUE(bundle->files.contains("NOTES.txt"));
  ASSERT_EQ(bundle->tests().size(), 2u);
  EXPECT_EQ(bundle->tests()[1].id, "merge");
  EXPECT_EQ(bundle->meta->metadata["generated_by"], "sonnet");
}

TEST(SkillBundle, RoundTripIsByteForByte) {
  TempDir tmp;
  lay_out(tmp);
  auto bundle = SkillBundle::load(tmp / "pdf-tools/SKILL.md");  // a SKILL.md path works too
  ASSERT_TRUE(bundle) << bundle.error().message;
  ASSERT_TRUE(bundle->save(tmp / "copy"));
  EXPECT_EQ(read_file(tmp / "copy/SKILL.md"), kSkillMd);
  EXPECT_EQ(read_file(tmp / "copy/skill_meta.json"), kMeta);
  EXPECT_EQ(read_file(tmp / "copy/assets/logo.bin"), std::string("\x00\x01\xff", 3));
  EXPECT_EQ(read_file(tmp / "copy/NOTES.txt"), "other files are allowed\n");
  const auto perms = std::filesystem::status(tmp / "copy/scripts/split.py").permissions();
  EXPECT_NE(perms & std::filesystem::perms::owner_exec, std::filesystem::perms::none);
  EXPECT_FALSE(std::filesystem::exists(tmp / "copy/scripts/__pycache__"));
}

TEST(SkillBundle, SymlinksAreLeftOutNotFollowed) {
  TempDir tmp;
  tmp.write("s/SKILL.md", "---\nname: s\ndescription: d\n---\n");
  std::filesystem::create_symlink("/etc/hostname", tmp / "s/secret.txt");
  auto b = SkillBundle::load(tmp / "s");
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_TRUE(b->files.empty());
  ASSERT_EQ(b->warnings.size(), 1u);
  EXPECT_NE(b->warnings[0].find("symbolic link left out"), std::string::npos);
}

TEST(SkillBundle, CrlfAndBomRoundTrip) {
  TempDir tmp;
  const std::string text = "\xEF\xBB\xBF---\r\nname: crlf\r\ndescription: d\r\n---  \r\nBody\r\n";
  tmp.write("crlf/SKILL.md", text);
  auto bundle = SkillBundle::load(tmp / "crlf");
  ASSERT_TRUE(bundle) << bundle.error().message;
  EXPECT_EQ(bundle->render_skill_md(), text);
  bundle->frontmatter.description = "changed";
  EXPECT_EQ(bundle->render_skill_md(),
            "---\r\nname: crlf\r\ndescription: changed\r\n---\r\nBody\r\n");
}

TEST(SkillBundle, EditedFrontmatterKeepsOrderAndUnknownKeys) {
  TempDir tmp;
  lay_out(tmp);
  auto bundle = SkillBundle::load(tmp / "pdf-tools");
  ASSERT_TRUE(bundle);
  bundle->frontmatter.description = "New: description";
  bundle->frontmatter.license = "MIT";
  const std::string md = bundle->render_skill_md();
  EXPECT_NE(md.find("allowed-tools: Read Bash(git add:*)\n"), std::string::npos)
      << md;  // spec: space-separated
  EXPECT_NE(md.find("argument-hint: \"[file]\""), std::string::npos) << md;
  EXPECT_NE(md.find("PreToolUse"), std::string::npos) << md;
  EXPECT_LT(md.find("name:"), md.find("description:"));
  EXPECT_LT(md.find("hooks:"), md.find("license: MIT"));  // new keys go last
  // And it loads back to the same values.
  tmp.write("again/SKILL.md", md);
  auto again = SkillBundle::load(tmp / "again");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->description(), "New: description");
  EXPECT_EQ(*again->frontmatter.license, "MIT");
  EXPECT_EQ(*again->frontmatter.allowed_tools, *bundle->frontmatter.allowed_tools);
  EXPECT_EQ(again->frontmatter.extra.size(), 2u);
  EXPECT_EQ(again->body, bundle->body);
}

TEST(SkillBundle, NewBundleRendersCanonically) {
  SkillBundle b;
  b.frontmatter.name = "new-skill";
  b.frontmatter.description = "true";  // would read back as a boolean unquoted
  b.frontmatter.allowed_tools = std::vector<std::string>{"Read", "Write"};
  b.frontmatter.metadata = std::vector<std::pair<std::string, std::string>>{{"version", "1.0"}};
  b.body = "# Body\n";
  EXPECT_EQ(b.render_skill_md(),
            "---\nname: new-skill\ndescription: \"true\"\nallowed-tools: Read Write\nmetadata:\n  "
            "version: \"1.0\"\n"
            "---\n# Body\n");
  TempDir tmp;
  b.meta = SkillMeta{};
  ASSERT_TRUE(b.save(tmp / "new-skill"));
  EXPECT_EQ(read_file(tmp / "new-skill/skill_meta.json"),
            "{\n  \"metadata\": {},\n  \"tests\": []\n}\n");
}

TEST(SkillBundle, SplitAllowedTools) {
  EXPECT_EQ(split_allowed_tools("Read, Write"), (std::vector<std::string>{"Read", "Write"}));
  EXPECT_EQ(split_allowed_tools("Bash(git:*) Read"),
            (std::vector<std::string>{"Bash(git:*)", "Read"}));
  EXPECT_EQ(split_allowed_tools("Bash(git add:*, git commit:*)"),
            (std::vector<std::string>{"Bash(git add:*, git commit:*)"}));
  EXPECT_TRUE(split_allowed_tools("  ").empty());
}

TEST(SkillBundle, LenientLoadQuotesColonValues) {
  TempDir tmp;
  tmp.write("c/SKILL.md", "---\nname: c\ndescription: Use when: things happen\n---\nbody\n");
  auto b = SkillBundle::load(tmp / "c");
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->description(), "Use when: things happen");
}

struct BadSkill {
  const char* skill_md;
  const char* message;
};
void PrintTo(const BadSkill& c, std::ostream* os) {
  *os << c.skill_md;
}

class SkillLoadErrors : public ::testing::TestWithParam<BadSkill> {};

TEST_P(SkillLoadErrors, NameFileAndLine) {
  TempDir tmp;
  tmp.write("s/SKILL.md", GetParam().skill_md);
  auto b = SkillBundle::load(tmp / "s");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find(GetParam().message), std::string::npos) << b.error().message;
  EXPECT_NE(b.error().message.find("SKILL.md:"), std::string::npos) << b.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    AllPaths, SkillLoadErrors,
    ::testing::Values(BadSkill{"no front matter\n",
                               ":1: SKILL.md must start with YAML front matter"},
                      BadSkill{"---\nname: s\n", ":1: front matter is not closed"},
                      BadSkill{"---", ":1: front matter is not closed"},
                      BadSkill{"---\nname: s\n  x: [\n---\n", "invalid YAML in front matter"},
                      BadSkill{"---\n- a\n---\n", ":2: front matter must be a YAML mapping"},
                      BadSkill{"---\ndescription: d\n---\n", "front matter has no 'name'"},
                      BadSkill{"---\nname: s\n---\n", "front matter has no 'description'"}));

TEST(SkillBundle, DirectoryErrors) {
  TempDir tmp;
  EXPECT_NE(SkillBundle::load(tmp / "absent").error().message.find("no such skill directory"),
            std::string::npos);
  std::filesystem::create_directories(tmp / "empty");
  EXPECT_NE(SkillBundle::load(tmp / "empty").error().message.find("no SKILL.md"),
            std::string::npos);
  tmp.write("bad-meta/SKILL.md", "---\nname: bad-meta\ndescription: d\n---\n");
  tmp.write("bad-meta/skill_meta.json", "{\"metadata\": {},\n \"tests\": [{\"input\": 1}]}");
  auto b = SkillBundle::load(tmp / "bad-meta");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("skill_meta.json:2:"), std::string::npos) << b.error().message;
  tmp.write("bad-meta/skill_meta.json", "{\"tests\": [], \"extra\": 1}");
  EXPECT_NE(SkillBundle::load(tmp / "bad-meta").error().message.find("unknown key 'extra'"),
            std::string::npos);
  tmp.write("bad-meta/skill_meta.json", "{\"metadata\": [], \"tests\": []}");
  EXPECT_NE(
      SkillBundle::load(tmp / "bad-meta").error().message.find("'metadata' must be an object"),
      std::string::npos);
}

TEST(SkillMeta, EditedMetaIsRenderedCanonically) {
  auto meta = parse_skill_meta(kMeta, "skill_meta.json");
  ASSERT_TRUE(meta) << meta.error().message;
  EXPECT_EQ(render_skill_meta(*meta), kMeta);
  meta->metadata["test_pass_rate"] = 0.5;
  const std::string out = render_skill_meta(*meta);
  EXPECT_NE(out, kMeta);
  auto again = parse_skill_meta(out, "skill_meta.json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->metadata["test_pass_rate"], 0.5);
  EXPECT_EQ(again->metadata["custom"]["x"], 1);  // unknown metadata kept
  EXPECT_EQ(again->tests, meta->tests);
}

}  // namespace
}  // namespace upskill::skill
