#pragma once
// Internal to the agent module: what the adapters (src/agent/agents/) share to read an agent's
// output and records, and to point it at a model (agent_output.cpp).
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "upskill/agent/cli_agent.hpp"
#include "upskill/core/json.hpp"
#include "upskill/core/lenient.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::agent::output {

// An agent's output is not ours to trust: every field is read leniently.
using lenient::integer_field;
using lenient::number_field;
using lenient::object_field;
using lenient::string_field;
bool has_object(const Json& j, const char* key);

// The JSON objects among an output's lines (other lines are the agent's chatter).
std::vector<Json> json_lines(std::string_view text);

// Tool calls, turns and the model from a transcript in `format`, by upskill's trace reader.
void read_tool_calls(CliReading& r, std::string_view text, trace::Format format);

// Plain text: the answer, one turn.
void read_text(CliReading& r, std::string_view text);

// The server root an agent appends its own API path to (Claude Code: /v1/messages).
std::string without_v1(std::string url);
// Lets the agent have these variables again (pointed at a model, it is given them).
void drop_unset(CliAgent& a, std::initializer_list<const char*> names);
// The variable an agent reads its key from when upskill chose the name (Codex, opencode).
inline constexpr const char* kAgentKeyVariable = "UPSKILL_AGENT_API_KEY";

// The text of the first regular *.jsonl file below `root` (at most 4 folders down) whose name
// `candidate` accepts and whose text `accept` does; "" when none.
std::string first_session(const std::filesystem::path& root,
                          const std::function<bool(const std::string& name)>& candidate,
                          const std::function<bool(const std::string& text)>& accept);

}  // namespace upskill::agent::output
