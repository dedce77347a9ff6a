#pragma once
// Internal to the trace module: Codex CLI rollouts, `codex exec --json` streams and Responses API
// items (codex.cpp), which Codex's response_item payloads are.
#include <map>
#include <string>
#include <vector>

#include "../reading/builder.hpp"
#include "../reading/line_source.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

void parse_codex_rollout(LineSource& lines, Trace& trace);
void parse_codex_exec(LineSource& lines, Trace& trace);
void parse_responses(const Json& doc, Trace& trace);

// Responses API items, one at a time.
class ResponsesReader {
 public:
  explicit ResponsesReader(Builder& b) : b_(b) {}
  // Returns false for an item type it does not know.
  bool item(const Json& item);

 private:
  Builder& b_;
  bool results_since_assistant_ = true;
  // A code-mode script's call id → the ids of the tool calls read from it (codex_code_mode.hpp).
  std::map<std::string, std::vector<std::string>> script_calls_;
  // Unified exec: a command still running when its call returned ("Process running with session
  // ID 57") → its call id; a later write_stdin to that session that says "Process exited with code
  // N" is its outcome.
  std::map<std::string, std::string> running_;
  void follow_session(const std::string& id, ToolCall& call, const std::string& output);
  Turn& assistant_turn();
  bool script_call(const std::string& id, const Json& input);
  void script_output(const std::vector<std::string>& ids, const Json& output);
};

}  // namespace upskill::trace::detail
