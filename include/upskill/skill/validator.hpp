#pragma once
// `upskill validate`: the Agent Skills rules with the reference validator's (skills-ref) exact
// wording and verdicts, plus upskill's own checks as warnings.
#include <filesystem>
#include <string>
#include <vector>

namespace upskill::skill {

struct ValidationOptions {
  bool claude_code = false;   // also allow Claude Code's front-matter keys
  bool expect_tests = false;  // warn when there is no skill_meta.json (upskill's own skills)
};

struct ValidationReport {
  std::filesystem::path skill_dir;    // the directory judged (a SKILL.md path maps to its folder)
  bool not_a_skill = false;           // missing path, not a directory, or no SKILL.md
  std::vector<std::string> errors;    // skills-ref's messages
  std::vector<std::string> warnings;  // upskill's checks; never change the verdict

  bool valid() const { return !not_a_skill && errors.empty(); }
};

ValidationReport validate_skill(const std::filesystem::path& path,
                                const ValidationOptions& options = {});

// skills-ref's allowed front-matter keys, and Claude Code's additions.
const std::vector<std::string>& spec_frontmatter_keys();
const std::vector<std::string>& claude_code_frontmatter_keys();

}  // namespace upskill::skill
