#pragma once
// `upskill install`: copy a validated bundle to where an agent looks for skills.
#include <filesystem>
#include <string>
#include <vector>

#include "upskill/core/error.hpp"

namespace upskill::skill {

struct InstallOptions {
  // Where the agent reads skills (agent::skills_folders): below the project, and below $HOME with
  // `global`. The cross-client location by default.
  std::filesystem::path project_skills_dir = ".agents/skills";
  std::filesystem::path user_skills_dir = ".agents/skills";
  bool claude_code = false;  // validate Claude Code's own front-matter keys (model, hooks, ...) too
  bool global = false;
  bool force = false;
  bool validate =
      true;  // false: validation errors are warnings (an official skill that breaks a rule)
  std::filesystem::path project_dir;  // defaults to the current directory
  std::filesystem::path home;         // defaults to $HOME
};

struct InstallResult {
  std::filesystem::path destination;
  std::size_t files = 0;
  bool replaced = false;
  std::vector<std::string> warnings;  // validator warnings, skipped symlinks
};

// Validates the bundle (errors refuse with exit code 1, unless `validate` is off), refuses an
// existing destination unless `force` (exit code 2), then copies via a temporary sibling folder
// renamed into place.
Result<InstallResult> install_skill(const std::filesystem::path& skill_dir,
                                    const InstallOptions& options);

}  // namespace upskill::skill
