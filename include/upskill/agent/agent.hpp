#pragma once
// Agent mode: the student works in a workspace through tools — write_file, read_file, list_files
// and, when allowed, run (a shell command in the sandbox) — over the OpenAI tool-calling protocol,
// for at most a number of turns. The workspace's files are what workspace and kernel checks see.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "upskill/core/sandbox.hpp"
#include "upskill/llm/client.hpp"

namespace upskill::agent {

struct AgentOptions {
  int max_turns = 12;
  bool allow_run = false;        // offer the `run` tool
  sandbox::Limits run_limits{};  // for `run`
  std::size_t max_read_bytes = 200000;
};

// Per-tool counts, as upskill's stats report them.
struct ToolStats {
  int turns = 0;
  int tool_calls = 0;
  int tool_errors = 0;
  int run_calls = 0;  // upskill's execute_calls
  std::map<std::string, int> call_map;
  std::map<std::string, int> error_map;
};

struct AgentOutcome {
  std::string final_text;
  std::string reasoning;
  llm::Usage usage;
  double latency_ms = 0;
  ToolStats stats;
  std::string reported_model;
  bool hit_turn_limit = false;
  std::optional<llm::LlmFailure> failure;  // a model call failed after retries
};

std::vector<llm::ToolSpec> agent_tools(bool allow_run);

// Executes one tool call in the workspace; returns the text given back to the model and whether it
// was an error (bad arguments, a path outside the workspace, a missing file, a failing command).
std::pair<std::string, bool> execute_tool(const llm::ToolCall& call,
                                          const std::filesystem::path& workspace,
                                          const AgentOptions& options);

AgentOutcome run_agent(llm::ChatClient& client, const llm::ResolvedModel& model,
                       std::vector<llm::Message> messages, const std::filesystem::path& workspace,
                       const AgentOptions& options, const llm::CallOptions& call_options,
                       const llm::SamplingOptions& sampling = {});

}  // namespace upskill::agent
