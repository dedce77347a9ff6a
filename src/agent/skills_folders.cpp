// Where each agent reads skills (see skills_folders.hpp).
#include "upskill/agent/skills_folders.hpp"

#include "adapter.hpp"

namespace upskill::agent {

const std::vector<SkillsFolder>& skills_folders() {
  static const std::vector<SkillsFolder> all = [] {
    std::vector<SkillsFolder> f;
    for (const Adapter* a : adapters()) {
      const CliAgent settings = a->settings();
      for (std::string_view name : {a->install_name, a->name})
        if (!name.empty())
          f.push_back({std::string(name), settings.skills_dir, std::string(a->user_skills_dir),
                       a->claude_code_skills});
    }
    f.push_back({"cursor", ".cursor/skills", ".cursor/skills", false});
    // The cross-client location (the Agent Skills specification's), read by several agents.
    f.push_back({"agents", ".agents/skills", ".agents/skills", false});
    return f;
  }();
  return all;
}

const SkillsFolder* skills_folder_of(std::string_view agent) {
  for (const SkillsFolder& f : skills_folders())
    if (f.agent == agent) return &f;
  return nullptr;
}

std::vector<std::string> skills_folder_agents() {
  std::vector<std::string> names;
  for (const SkillsFolder& f : skills_folders()) names.push_back(f.agent);
  return names;
}

}  // namespace upskill::agent
