#pragma once
// A skill bundle: SKILL.md (YAML front matter + markdown body), references/, scripts/, assets/, any
// other files, and skill_meta.json. Loading is lenient like agent clients are (the validator is
// the strict judge); saving an unchanged bundle reproduces it byte for byte.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "upskill/core/error.hpp"
#include "upskill/skill/skill_meta.hpp"

namespace upskill::skill {

namespace fs = std::filesystem;

struct SkillFrontmatter {
  std::string name;
  std::string description;
  std::optional<std::string> license;
  std::optional<std::string> compatibility;
  std::optional<std::vector<std::string>> allowed_tools;  // written space-separated (the spec)
  std::optional<std::vector<std::pair<std::string, std::string>>> metadata;
  // Keys we do not model (Claude Code's argument-hint, model, ...): kept with their YAML values.
  std::vector<std::pair<std::string, YAML::Node>> extra;
  // Key order as read, so a re-rendered file keeps its layout.
  std::vector<std::string> key_order;
};

// Splits "Read, Bash(git add:*)" (upskill's comma style), "Read Bash(git add:*)" (the spec's
// space style) into tool patterns; spaces inside parentheses belong to the pattern.
std::vector<std::string> split_allowed_tools(std::string_view text);

// Parses SKILL.md text. `file` names it in errors (which carry the line).
struct ParsedSkillMd {
  SkillFrontmatter frontmatter;
  std::string body;
  std::string frontmatter_text;       // between the --- lines, as written
  std::string frontmatter_rendering;  // what render_frontmatter gave right after parsing
  std::string newline = "\n";         // "\r\n" when the file used CRLF
  std::string opening;                // BOM and opening fence line as written
  std::string closing;                // closing fence line as written
};
Result<ParsedSkillMd> parse_skill_md(std::string_view text, const std::string& file);

// The front matter as YAML lines (without the --- fences).
std::string render_frontmatter(const SkillFrontmatter& fm);

struct BundleFile {
  std::string content;
  bool executable = false;
};

// Names that are never part of a bundle (caches and editor litter).
bool is_bundle_junk(const fs::path& relative);

struct SkillBundle {
  fs::path directory;  // where it was loaded from; empty for a new bundle
  std::string skill_md_name = "SKILL.md";
  SkillFrontmatter frontmatter;
  std::string body;
  std::map<std::string, BundleFile> files;  // every other file, by relative path ('/' separated)
  std::optional<SkillMeta> meta;            // skill_meta.json
  std::vector<std::string> warnings;        // lenient-load notes (e.g. lower-case skill.md)

  // Round-trip memory (see ParsedSkillMd).
  std::string source_frontmatter_text;
  std::string source_frontmatter_rendering;
  std::string source_opening;
  std::string source_closing;
  std::string newline = "\n";

  const std::string& name() const { return frontmatter.name; }
  const std::string& description() const { return frontmatter.description; }
  // Files under references/, scripts/ or assets/ (relative paths including the folder).
  std::vector<std::string> files_under(std::string_view folder) const;
  const std::vector<cases::TestCase>& tests() const;

  // `path` is the bundle directory or its SKILL.md.
  static Result<SkillBundle> load(const fs::path& path);
  std::string render_skill_md() const;
  // Writes SKILL.md, skill_meta.json and every file into `dir` atomically file by file. Files in
  // `dir` that the bundle does not have are left alone.
  Status save(const fs::path& dir) const;
};

// The SKILL.md of a directory: SKILL.md, or skill.md as the spec's reference validator accepts.
std::optional<fs::path> find_skill_md(const fs::path& dir);

// The skill folders at or below `root` (root itself when it holds a SKILL.md), sorted: hidden
// folders such as .curated/ included, a skill's own subfolders and .git, node_modules,
// __pycache__ and virtual environments not searched, at most `max_depth` levels down.
std::vector<fs::path> find_skills(const fs::path& root, int max_depth = 6);

}  // namespace upskill::skill
