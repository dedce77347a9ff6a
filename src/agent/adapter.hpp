#pragma once
// Internal to the agent module: what differs from one coding agent to the next, in one place — an
// adapter a file in src/agent/agents/, gathered into the registry by the build (src/CMakeLists.txt
// writes agent_registry.cpp from the folder's files). Adding an agent is adding its file
// (docs/ARCHITECTURE.md, "Coding agents").
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "upskill/agent/cli_agent.hpp"

namespace upskill::agent {

// Written with designated initialisers; a part the agent does not have is left out (nullptr).
// Defined `constinit` (only names, function pointers and flags): the registry and the tables built
// from it never depend on another file's initialisation. The adapter whose output is "text" reads
// every configured plain-text agent too, so it has the reader only (AgentAdapters test).
struct Adapter {
  std::string_view name;  // as in `-m cli.<name>` and `cli_providers.<name>`
  // How it prints its work: the reader `cli_providers.<any agent>.output` names. Unique.
  std::string_view output;
  // Its settings: the command and arguments that run it without questions, the variables it must
  // not inherit, its skills folder, its state below $HOME, what to run when it is not logged in.
  CliAgent (*settings)() = nullptr;
  // Points it at a `models:` entry through what it reads. nullptr: upskill does not know how.
  Status (*point_at_model)(CliAgent& agent, const llm::ResolvedModel& model, int retries) = nullptr;
  // Reads what it printed.
  void (*read_output)(CliReading& reading, std::string_view printed) = nullptr;
  // Its own record of the session `id` (from its output; never empty, never holding a '/') below
  // its home: the text, "" when not found. nullptr: it keeps none upskill reads.
  std::string (*session_file)(const std::string& id, const std::filesystem::path& home) = nullptr;
  // What that record adds to the reading (Copilot CLI's tokens, Gemini CLI's tool inputs).
  // nullptr: nothing.
  void (*read_session)(CliReading& reading, std::string_view session) = nullptr;
  // Where it reads skills for every project, below $HOME (its project's folder is its settings'
  // skills_dir): `upskill install --agent <name> --global`.
  std::string_view user_skills_dir;
  // The shorter name `upskill install --agent` also takes for it ("" when none).
  std::string_view install_name = "";
  // Its skills are validated with Claude Code's own front-matter keys too.
  bool claude_code_skills = false;
};

// Every adapter, in the order of their files' names.
std::span<const Adapter* const> adapters();
const Adapter* adapter_named(std::string_view name);
const Adapter* adapter_reading(std::string_view output);

}  // namespace upskill::agent
