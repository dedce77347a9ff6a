#pragma once
// Where each agent reads skills (`upskill install --agent NAME`, docs/skills.md): one table, made
// from the coding agents' adapters (src/agent/agents/: the folder a student's skill is installed
// in is the same) and the two places no agent upskill runs has — Cursor's and the cross-client
// `.agents/skills`.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace upskill::agent {

struct SkillsFolder {
  std::string agent;         // as `install --agent` takes it
  std::string project;       // below the project
  std::string user;          // below $HOME (`install --global`)
  bool claude_code = false;  // its skills are validated with Claude Code's own front-matter keys
};

// Every agent's, each adapter by its name and by its shorter install name.
const std::vector<SkillsFolder>& skills_folders();
const SkillsFolder* skills_folder_of(std::string_view agent);
std::vector<std::string> skills_folder_agents();

}  // namespace upskill::agent
