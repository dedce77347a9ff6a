#pragma once
// `upskill install`: copy a validated bundle to where an agent looks for skills.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "upskill/core/error.hpp"

namespace upskill::skill {

enum class Agent { claude, codex, cursor, opencode, agents };

std::optional<Agent> agent_from_string(std::string_view name);
std::string_view to_string(Agent agent);
const std::vector<std::string>& agent_names();

// The skills folder an agent reads: project-level (under `project_dir`) or per-user (`home`).
//   claude   .claude/skills           ~/.claude/skills
//   codex    .agents/skills           ~/.agents/skills
//   cursor   .cursor/skills           ~/.cursor/skills
//   opencode .opencode/skills         ~/.config/opencode/skills
//   agents   .agents/skills           ~/.agents/skills   (the cross-client location)
std::filesystem::path skills_folder(Agent agent, bool global,
                                    const std::filesystem::path& project_dir,
                                    const std::filesystem::path& home);

struct InstallOptions {
  Agent agent = Agent::agents;
  bool global = false;
  bool force = false;
  bool validate = true;  // false: validation errors are warnings (an official skill that breaks a rule)
  std::filesystem::path project_dir;  // defaults to the current directory
  std::filesystem::path home;         // defaults to $HOME
};

struct InstallResult {
  std::filesystem::path destination;
  std::size_t files = 0;
  bool replaced = false;
  std::vector<std::string> warnings;  // validator warnings, skipped symlinks
};

// Validates the bundle (errors refuse with exit code 1, unless `validate` is off), refuses an existing destination unless
// `force` (exit code 2), then copies via a temporary sibling folder renamed into place.
Result<InstallResult> install_skill(const std::filesystem::path& skill_dir,
                                    const InstallOptions& options);

}  // namespace upskill::skill
