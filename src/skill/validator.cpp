// `upskill validate`: the Agent Skills rules with the reference validator's (skills-ref) exact
// wording and verdicts, plus upskill's own checks as warnings (see validator.hpp).
#include "upskill/skill/validator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>

#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/core/unicode.hpp"
#include "upskill/skill/skill_bundle.hpp"
#include "upskill/skill/skill_meta.hpp"
#include "upskill/skill/strict_yaml.hpp"

namespace upskill::skill {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxNameLength = 64;
constexpr std::size_t kMaxDescriptionLength = 1024;
constexpr std::size_t kMaxCompatibilityLength = 500;
constexpr std::size_t kMaxLines = 500;
constexpr std::size_t kMaxBodyTokens = 5000;

// Python's repr() of a list of plain strings: ['a', 'b'].
std::string python_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", '" : "'") + items[i] + "'";
  return out + "]";
}

// The directory's own name, as Path(arg).name would give for a sensible argument ("." included).
std::string directory_name(const fs::path& dir) {
  fs::path p = fs::absolute(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

struct Frontmatter {
  StrictYamlValue fields;
  std::string body;
};

void validate_name(const StrictYamlValue& value, const fs::path& dir,
                   std::vector<std::string>& errors) {
  if (!value.is_string() || unicode::strip(value.text).empty()) {
    errors.emplace_back("Field 'name' must be a non-empty string");
    return;
  }
  const std::string name = unicode::nfkc(unicode::strip(value.text));
  const std::size_t length = unicode::codepoint_count(name);
  if (length > kMaxNameLength)
    errors.push_back(fmt::format("Skill name '{}' exceeds {} character limit ({} chars)", name,
                                 kMaxNameLength, length));
  if (name != unicode::lower(name))
    errors.push_back(fmt::format("Skill name '{}' must be lowercase", name));
  if (name.front() == '-' || name.back() == '-')
    errors.emplace_back("Skill name cannot start or end with a hyphen");
  if (name.find("--") != std::string::npos)
    errors.emplace_back("Skill name cannot contain consecutive hyphens");
  if (!unicode::is_alnum_or_hyphen(name))
    errors.push_back(
        fmt::format("Skill name '{}' contains invalid characters. Only letters, digits, and "
                    "hyphens are allowed.",
                    name));
  const std::string dir_name = directory_name(dir);
  if (unicode::nfkc(dir_name) != name)
    errors.push_back(fmt::format("Directory name '{}' must match skill name '{}'", dir_name, name));
}

void validate_description(const StrictYamlValue& value, std::vector<std::string>& errors) {
  if (!value.is_string() || unicode::strip(value.text).empty()) {
    errors.emplace_back("Field 'description' must be a non-empty string");
    return;
  }
  const std::size_t length = unicode::codepoint_count(value.text);
  if (length > kMaxDescriptionLength)
    errors.push_back(fmt::format("Description exceeds {} character limit ({} chars)",
                                 kMaxDescriptionLength, length));
}

void validate_compatibility(const StrictYamlValue& value, std::vector<std::string>& errors) {
  if (!value.is_string()) {
    errors.emplace_back("Field 'compatibility' must be a string");
    return;
  }
  const std::size_t length = unicode::codepoint_count(value.text);
  if (length > kMaxCompatibilityLength)
    errors.push_back(fmt::format("Compatibility exceeds {} character limit ({} chars)",
                                 kMaxCompatibilityLength, length));
}

void validate_fields(const StrictYamlValue& fm, const fs::path& dir,
                     const ValidationOptions& options, std::vector<std::string>& errors) {
  std::vector<std::string> allowed = spec_frontmatter_keys();
  if (options.claude_code) {
    const auto& extra = claude_code_frontmatter_keys();
    allowed.insert(allowed.end(), extra.begin(), extra.end());
  }
  std::sort(allowed.begin(), allowed.end());
  std::set<std::string> unexpected;
  for (const auto& [key, _] : fm.map)
    if (!std::binary_search(allowed.begin(), allowed.end(), key)) unexpected.insert(key);
  if (!unexpected.empty())
    errors.push_back(fmt::format("Unexpected fields in frontmatter: {}. Only {} are allowed.",
                                 text::join({unexpected.begin(), unexpected.end()}, ", "),
                                 python_list(allowed)));

  if (const auto* name = fm.find("name"))
    validate_name(*name, dir, errors);
  else
    errors.emplace_back("Missing required field in frontmatter: name");
  if (const auto* description = fm.find("description"))
    validate_description(*description, errors);
  else
    errors.emplace_back("Missing required field in frontmatter: description");
  if (const auto* compatibility = fm.find("compatibility"))
    validate_compatibility(*compatibility, errors);
}

// Markdown text without its code: fenced blocks (``` or ~~~) and inline code spans are blanked, so
// an example link inside them is never taken for a reference.
std::string without_code(const std::string& markdown) {
  std::string out;
  std::string fence;
  for (const auto& line : text::split_lines(markdown)) {
    const std::string trimmed = text::trim(line);
    if (fence.empty() && (trimmed.starts_with("```") || trimmed.starts_with("~~~"))) {
      fence = trimmed.substr(0, 3);
      out += "\n";
      continue;
    }
    if (!fence.empty()) {
      if (trimmed.starts_with(fence)) fence.clear();
      out += "\n";
      continue;
    }
    // Inline code: text between runs of backticks of the same length.
    std::string kept;
    for (std::size_t i = 0; i < line.size();) {
      if (line[i] != '`') {
        kept += line[i++];
        continue;
      }
      std::size_t run = line.find_first_not_of('`', i);
      if (run == std::string::npos) run = line.size();
      const std::string ticks = line.substr(i, run - i);
      const std::size_t close = line.find(ticks, run);
      if (close == std::string::npos) {
        kept += ticks;
        i = run;
        continue;
      }
      i = close + ticks.size();
    }
    out += kept + "\n";
  }
  return out;
}

// The relative file links of a markdown text (code left out), decoded, without anchors.
std::vector<std::string> local_links(const std::string& markdown) {
  static const std::regex kLink(R"(!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\))");
  static const std::regex kScheme(R"(^[A-Za-z][A-Za-z0-9+.-]*:)");
  const std::string prose = without_code(markdown);
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(prose.begin(), prose.end(), kLink);
       it != std::sregex_iterator(); ++it) {
    std::string target = (*it)[1].str();
    if (target.empty() || target.front() == '#' || target.front() == '/' ||
        std::regex_search(target, kScheme))
      continue;
    target = target.substr(0, target.find_first_of("#?"));
    std::string decoded;
    for (std::size_t i = 0; i < target.size(); ++i) {
      if (target[i] == '%' && i + 2 < target.size() &&
          std::isxdigit(static_cast<unsigned char>(target[i + 1])) &&
          std::isxdigit(static_cast<unsigned char>(target[i + 2]))) {
        decoded.push_back(static_cast<char>(std::stoi(target.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else {
        decoded.push_back(target[i]);
      }
    }
    if (!decoded.empty()) out.push_back(fs::path(decoded).lexically_normal().generic_string());
  }
  return out;
}

// Links from SKILL.md to files that do not exist, and references reached only through another
// reference: the spec keeps file references one level deep from SKILL.md (a chain SKILL.md → a.md
// → b.md is what it warns against; a file in a subfolder linked from SKILL.md is one level).
void check_links(const std::string& body, const fs::path& dir, std::vector<std::string>& warnings) {
  std::set<std::string> direct;
  std::error_code ec;
  for (const auto& link : local_links(body)) {
    if (!direct.insert(link).second) continue;
    if (link.starts_with(".."))
      warnings.push_back(fmt::format("link '{}' leads outside the skill", link));
    else if (!fs::exists(dir / link, ec))
      warnings.push_back(fmt::format("broken link: '{}' does not exist in the skill", link));
  }
  std::set<std::string> chained;
  for (const auto& link : direct) {
    if (!link.ends_with(".md") || link.starts_with("..")) continue;
    auto text = files::read_text(dir / link);
    if (!text) continue;
    const fs::path base = fs::path(link).parent_path();
    for (const auto& next : local_links(*text)) {
      const std::string target = (base / next).lexically_normal().generic_string();
      if (direct.contains(target) || target.starts_with("..") || !fs::exists(dir / target, ec) ||
          !chained.insert(target).second)
        continue;
      warnings.push_back(fmt::format(
          "'{}' is reached only through '{}'; link it from SKILL.md (references one level deep)",
          target, link));
    }
  }
}

// The archives of `archives` (file names) that one of the skill's own text files (SKILL.md, its
// scripts and references) names: an archive a script unpacks, or a reference tells the agent to
// unpack, is part of the skill. Each text file is read once.
std::set<std::string> named_by_the_skill(const fs::path& dir, const std::vector<fs::path>& files,
                                         const std::set<std::string>& archives) {
  constexpr std::uintmax_t kMaxText = 1 << 20;
  std::set<std::string> named;
  for (const auto& p : files) {
    if (named.size() == archives.size()) break;
    std::error_code ec;
    const fs::path full = dir / p;
    if (archives.contains(p.filename().string()) || fs::file_size(full, ec) > kMaxText || ec)
      continue;
    auto text = files::read_text(full);
    if (!text || text->find('\0') != std::string::npos) continue;  // binary
    for (const auto& name : archives)
      if (text->find(name) != std::string::npos) named.insert(name);
  }
  return named;
}

// Files an agent cannot use that a skill should not ship: archives (unless the skill's own files
// name them), compiled objects, OS litter.
void check_stray_files(const fs::path& dir, std::vector<std::string>& warnings) {
  static const std::vector<std::string> archive_kinds{".zip", ".tar", ".gz",  ".tgz", ".bz2", ".xz",
                                                      ".7z",  ".rar", ".jar", ".whl", ".egg"};
  static const std::vector<std::string> compiled{".pyc",   ".pyo", ".o",   ".obj",  ".so",
                                                 ".dylib", ".dll", ".exe", ".class"};
  const auto is_archive = [](const fs::path& p) {
    const std::string ext = text::to_lower_ascii(p.extension().string());
    return std::find(archive_kinds.begin(), archive_kinds.end(), ext) != archive_kinds.end();
  };
  std::vector<fs::path> relative;
  std::set<std::string> archives;
  for (const auto& listed : files::list_files(dir)) {
    relative.push_back(listed.is_absolute() ? listed.lexically_relative(dir) : listed);
    if (is_archive(relative.back())) archives.insert(relative.back().filename().string());
  }
  const std::set<std::string> named =
      archives.empty() ? std::set<std::string>{} : named_by_the_skill(dir, relative, archives);
  for (const fs::path& p : relative) {
    const std::string rel = p.generic_string();
    const std::string ext = text::to_lower_ascii(p.extension().string());
    const std::string name = p.filename().string();
    std::string what;
    if (is_archive(p)) {
      if (!named.contains(name))
        what =
            "an archive (agents cannot read inside it; unpack what the skill needs, or name it "
            "in the script that unpacks it)";
    } else if (std::find(compiled.begin(), compiled.end(), ext) != compiled.end()) {
      what = "a compiled file (ship the source)";
    } else if (name == ".DS_Store" || name == "Thumbs.db" ||
               rel.find("__pycache__/") != std::string::npos) {
      what = "left by the operating system or Python";
    }
    if (!what.empty()) warnings.push_back(fmt::format("{} is {}", rel, what));
  }
}

// Whether a description says when to use the skill: "when", "whenever", "if …", "use/used for …",
// "use to/on/in/with …", "triggers".
bool says_when(const std::string& description) {
  static const std::regex kWhen(
      R"(\b(when|whenever|if|use(d|s)? (it |this( skill)? )?(for|to|on|in|with|during|while|after|before|as)|triggers?|invoke (it|this))\b)",
      std::regex::icase);
  return std::regex_search(description, kWhen);
}

void upskill_warnings(const StrictYamlValue& fm, const std::string& body,
                      const std::string& skill_md_text, const fs::path& dir,
                      const ValidationOptions& options, std::vector<std::string>& warnings) {
  const std::size_t lines = text::split_lines(skill_md_text).size();
  if (lines > kMaxLines)
    warnings.push_back(fmt::format(
        "SKILL.md has {} lines; the spec recommends under {} (move details to references/)", lines,
        kMaxLines));
  const std::size_t tokens = text::estimate_tokens(body);
  if (tokens > kMaxBodyTokens)
    warnings.push_back(
        fmt::format("body is about {} tokens; the spec recommends under {} (move details to "
                    "references/)",
                    tokens, kMaxBodyTokens));
  if (const auto* d = fm.find("description"); d && d->is_string()) {
    if (d->text.find_first_of("<>") != std::string::npos)
      warnings.emplace_back(
          "description contains '<' or '>'; the Anthropic API rejects XML tags in descriptions");
    if (!says_when(d->text))
      warnings.emplace_back(
          "description does not say when to use the skill (for example 'Use when ...')");
  }
  if (const auto* n = fm.find("name"); n && n->is_string()) {
    for (const char* reserved : {"anthropic", "claude"})
      if (text::icontains(n->text, reserved))
        warnings.push_back(fmt::format(
            "name contains the reserved word '{}'; the Anthropic API rejects it", reserved));
  }
  if (const auto* tools = fm.find("allowed-tools"); tools && tools->is_string()) {
    int depth = 0;
    for (char c : tools->text) {
      depth += (c == '(') - (c == ')' && depth > 0);
      if (c == ',' && depth == 0) {
        warnings.emplace_back(
            "allowed-tools is comma-separated; the spec separates tools with spaces");
        break;
      }
    }
  }
  if (const auto* meta = fm.find("metadata")) {
    if (!meta->is_mapping())
      warnings.emplace_back("metadata should be a mapping of string keys to string values");
    else
      for (const auto& [k, v] : meta->map)
        if (!v.is_string())
          warnings.push_back(fmt::format("metadata value '{}' is not a string", k));
  }
  check_links(body, dir, warnings);
  check_stray_files(dir, warnings);
  for (const char* folder : {"references", "scripts", "assets"}) {
    std::error_code ec;
    if (fs::is_directory(dir / folder, ec) && files::list_files(dir / folder).empty())
      warnings.push_back(fmt::format("{}/ is empty", folder));
  }
  const fs::path meta_path = dir / "skill_meta.json";
  std::error_code ec;
  if (!fs::exists(meta_path, ec)) {
    // Most skills are not upskill's: say it only when asked.
    if (options.expect_tests)
      warnings.emplace_back(
          "no skill_meta.json: the skill has no test cases (eval --test-gen-model writes them)");
    return;
  }
  auto meta_text = files::read_text(meta_path);
  if (!meta_text) {
    warnings.push_back(meta_text.error().message);
    return;
  }
  auto meta = parse_skill_meta(*meta_text, meta_path.string());
  if (!meta) {
    warnings.push_back("skill_meta.json does not match the test-case schema: " +
                       meta.error().message);
    return;
  }
  for (const auto& w : meta->warnings) warnings.push_back(w);
  if (meta->tests.empty())
    warnings.emplace_back("skill_meta.json has no tests, so the skill cannot be evaluated");
}

}  // namespace

const std::vector<std::string>& spec_frontmatter_keys() {
  static const std::vector<std::string> keys{"name",          "description", "license",
                                             "allowed-tools", "metadata",    "compatibility"};
  return keys;
}

const std::vector<std::string>& claude_code_frontmatter_keys() {
  static const std::vector<std::string> keys{"argument-hint",  "disable-model-invocation",
                                             "user-invocable", "model",
                                             "effort",         "context",
                                             "agent",          "hooks"};
  return keys;
}

ValidationReport validate_skill(const fs::path& path, const ValidationOptions& options) {
  ValidationReport report;
  std::error_code ec;
  fs::path dir = path;
  if (fs::is_regular_file(path, ec) &&
      (path.filename() == "SKILL.md" || path.filename() == "skill.md"))
    dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  report.skill_dir = dir;
  auto not_a_skill = [&](std::string message) {
    report.not_a_skill = true;
    report.errors.push_back(std::move(message));
    return report;
  };
  if (!fs::exists(dir, ec))
    return not_a_skill(fmt::format("Path does not exist: {}", dir.string()));
  if (!fs::is_directory(dir, ec))
    return not_a_skill(fmt::format("Not a directory: {}", dir.string()));
  const auto skill_md = find_skill_md(dir);
  if (!skill_md) return not_a_skill("Missing required file: SKILL.md");
  if (skill_md->filename() != "SKILL.md")
    report.warnings.emplace_back("the file is named skill.md; agents look for SKILL.md");

  auto content = files::read_text(*skill_md);
  if (!content) {
    report.errors.push_back(content.error().message);
    return report;
  }
  if (!unicode::is_valid_utf8(*content)) {
    report.errors.emplace_back("SKILL.md is not valid UTF-8 text");
    return report;
  }
  // skills-ref: content.startswith("---"), then content.split("---", 2).
  if (!content->starts_with("---")) {
    report.errors.emplace_back("SKILL.md must start with YAML frontmatter (---)");
    return report;
  }
  const std::size_t second = content->find("---", 3);
  if (second == std::string::npos) {
    report.errors.emplace_back("SKILL.md frontmatter not properly closed with ---");
    return report;
  }
  const std::string frontmatter = content->substr(3, second - 3);
  const std::string body = unicode::strip(std::string_view(*content).substr(second + 3));
  auto parsed = parse_strict_yaml(frontmatter);
  if (!parsed) {
    report.errors.push_back("Invalid YAML in frontmatter: " + parsed.error().message);
    return report;
  }
  if (!*parsed || !(*parsed)->is_mapping()) {
    report.errors.emplace_back("SKILL.md frontmatter must be a YAML mapping");
    return report;
  }
  validate_fields(**parsed, dir, options, report.errors);
  upskill_warnings(**parsed, body, *content, dir, options, report.warnings);
  return report;
}

}  // namespace upskill::skill
