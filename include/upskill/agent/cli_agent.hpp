#pragma once
// Coding agents as students (docs/agents.md): Claude Code, Codex, Gemini CLI, opencode, GitHub
// Copilot CLI and Kiro, run non-interactively in a trial's workspace with the skill installed where
// the agent looks for skills (or inlined into the prompt, as the Python upskill does). What each
// agent printed is read back — the answer, tokens, cost, turns, tool calls — and its transcript is
// searched for the moments it loaded the skill.
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "upskill/config/config.hpp"
#include "upskill/core/sandbox.hpp"
#include "upskill/llm/model.hpp"
#include "upskill/llm/types.hpp"
#include "upskill/skill/skill_bundle.hpp"

namespace upskill::agent {

struct CliAgent {
  std::string name;     // claude-code, codex, gemini, opencode, copilot, kiro (or a configured one)
  std::string command;  // the program, looked up in PATH
  // The arguments; "{prompt}" is replaced by the task. Without "{prompt}" the task goes to the
  // program's stdin (any size; an argument holds at most 128 KiB). `args` follow (upskill main's
  // extra args).
  std::vector<std::string> argv;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;  // set for the agent
  std::vector<std::string> unset_env;      // never passed, even when in pass_env or env
  std::vector<std::string> pass_env;       // taken from upskill's environment when set
  std::optional<double> timeout_s = 600;   // nullopt: no limit
  std::string skills_dir;                  // where it looks for skills, below its working folder
  // Folders and files below $HOME it keeps its login and state in: the only places outside the
  // workspace it may write.
  std::vector<std::string> state_paths;
  // How it prints its work, the reader upskill reads it with: claude (stream-json or one JSON
  // result), codex (exec --json events), gemini (--output-format json), opencode (run --format
  // json events), copilot (--output-format json events), text (plain). Each known agent's adapter
  // (src/agent/agents/) names its own; it also decides how the agent is pointed at a model and
  // where its session record is.
  std::string output = "text";
  std::string login_hint;  // what to run when it is not logged in
  // Run as an ordinary user: as root, inside the sandbox's user namespace (docs/agents.md). Claude
  // Code refuses bypassPermissions as root.
  bool as_user = true;
  // `cli_providers.<name>.model`: a models: entry the agent runs on instead of its login.
  std::optional<std::string> model;
  // Filled by point_at_model: what it was pointed at, and the variables that carry the key. They
  // reach only the agent's process; nothing writes them anywhere. run_cli_agent points each run
  // afresh — the settings as they were before pointing, at the trial's key proxy (key_proxy.hpp)
  // — so the agent's process holds only the trial's token, never the key.
  std::optional<llm::ResolvedModel> pointed_at;
  std::shared_ptr<const CliAgent> before_pointing;
  int pointed_retries = 0;
  std::map<std::string, std::string> secret_env;
  // Files written below the trial's own home before the agent starts (relative path → content),
  // when it runs on a models: entry (Gemini CLI: the sign-in its settings select). Never a key.
  std::map<std::string, std::string> home_files;
};

// Points the agent at a model through what that agent reads: Claude Code — ANTHROPIC_BASE_URL,
// ANTHROPIC_AUTH_TOKEN (ANTHROPIC_API_KEY for Anthropic itself) and --model; Codex — a model
// provider given with -c and its env_key; Gemini CLI — GOOGLE_GEMINI_BASE_URL, GEMINI_API_KEY and
// -m; opencode — a provider in OPENCODE_CONFIG_CONTENT and -m; Copilot CLI — its custom provider
// variables (COPILOT_PROVIDER_BASE_URL, _TYPE, _API_KEY, COPILOT_MODEL). Other agents: a usage
// error.
// `retries` (the config's) bounds the agent's own retries where it has a setting for them.
Status point_at_model(CliAgent& agent, const llm::ResolvedModel& model, int retries);

// The agents upskill knows, one adapter each (src/agent/agents/); `cli_providers` in the config
// adds agents or changes these, key by key.
const std::vector<std::string>& cli_agent_names();
Result<CliAgent> cli_agent(const std::string& name, const config::Config& config);

// What an agent's output says.
struct CliReading {
  std::string answer;
  llm::Usage usage;
  bool tokens_available = false;
  double cost_usd = 0;
  int turns = 0;
  int tool_calls = 0;
  std::map<std::string, int> tool_call_map;
  std::vector<std::string> tool_inputs;  // "name input" of every tool call, for skill detection
  std::optional<std::string> error;      // the agent reported a failure
  std::string model;
  // The agent's id for the session: Claude Code's `system` line session_id, Codex's thread_id,
  // Gemini CLI's session_id.
  std::string session_id;
};
// `output` names the reader (CliAgent::output); an unknown one reads plain text.
CliReading read_cli_output(std::string_view output, std::string_view text);

// Whether the agent loaded this skill, installed in `skill_dir` for an agent working in
// `workspace`: a tool call that reads `skill_dir`/SKILL.md — by the path the call names, resolved
// from the workspace (`.`, `..` and links followed), never by a name that merely ends the same way
// — or an activation record naming this skill exactly (Claude Code's Skill, Gemini CLI's
// activate_skill, opencode's skill); and how often it read a file below `skill_dir`/references/ or
// scripts/. The agents' own built-in skills live elsewhere and never count (docs/agents.md).
struct SkillUse {
  bool known = false;  // the agent's output shows its tool calls (text-only agents do not)
  bool loaded = false;
  int skill_reads = 0;
  int reference_reads = 0;
};
SkillUse skill_use(const CliReading& reading, const std::string& skill_name,
                   const std::filesystem::path& skill_dir, const std::filesystem::path& workspace);

// Delivering the skill: installed (copied to <workspace>/<skills_dir>/<name>/) or inlined (the
// Python upskill's prompt: an introduction, SKILL.md, a --- line, the task).
Status install_skill_for(const CliAgent& agent, const skill::SkillBundle& skill,
                         const std::filesystem::path& workspace);
std::string inline_skill_prompt(const skill::SkillBundle& skill, const std::string& task);

struct CliRun {
  CliReading reading;
  std::string transcript;  // stdout and stderr as the agent printed them
  // The agent's own record of the session (Claude Code's project JSONL, the Codex rollout, the
  // Gemini CLI session, Copilot CLI's events.jsonl), "" when it keeps none upskill can find;
  // readable by `upskill trace` (all but Copilot's).
  std::string session;
  int exit_code = -1;
  bool not_started = false;  // the program could not be started (not on PATH)
  // Cost: the agent's own estimate (`cost_source` "agent"), or, when it runs on a models: entry
  // with prices, those prices times the tokens ("prices"); "none" when neither is known.
  std::string cost_source = "agent";
  bool timed_out = false;
  double latency_ms = 0;
  std::optional<std::string> failure;  // the trial's error: not found, login, exit, timeout
  sandbox::Protections protections;
};

// Runs the agent in `workspace` (its scratch `tmp` beside it) with the scrubbed environment, the
// wall-clock limit and writes confined to the workspace, the scratch folder and its state paths.
CliRun run_cli_agent(const CliAgent& agent, const std::string& prompt,
                     const std::filesystem::path& workspace, const std::filesystem::path& scratch);

}  // namespace upskill::agent
