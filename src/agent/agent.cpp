// Agent mode: the student's tool loop in a workspace (write_file, read_file, list_files, the
// sandboxed run) over the OpenAI tool-calling protocol (see agent.hpp).
#include "upskill/agent/agent.hpp"

#include <fmt/format.h>

#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"

namespace upskill::agent {

namespace fs = std::filesystem;

std::vector<llm::ToolSpec> agent_tools(bool allow_run) {
  auto object = [](Json properties, std::vector<std::string> required) {
    return Json{{"type", "object"}, {"properties", properties}, {"required", required}};
  };
  std::vector<llm::ToolSpec> tools{
      {"write_file", "Create or overwrite a file in the workspace.",
       object({{"path", {{"type", "string"}, {"description", "relative path"}}},
               {"content", {{"type", "string"}}}},
              {"path", "content"})},
      {"read_file", "Read a file of the workspace.",
       object({{"path", {{"type", "string"}}}}, {"path"})},
      {"list_files", "List the files of the workspace (or of a folder in it).",
       object({{"path", {{"type", "string"}, {"description", "folder; default the workspace"}}}},
              {})},
  };
  if (allow_run)
    tools.push_back(
        {"run",
         "Run a shell command in the workspace (no network) and get its exit code and output.",
         object({{"command", {{"type", "string"}}}}, {"command"})});
  return tools;
}

std::pair<std::string, bool> execute_tool(const llm::ToolCall& call, const fs::path& workspace,
                                          const AgentOptions& options) {
  Json args;
  try {
    args = Json::parse(call.arguments.empty() ? "{}" : call.arguments);
  } catch (const nlohmann::json::exception&) {
    return {"error: the arguments are not valid JSON", true};
  }
  if (!args.is_object()) return {"error: the arguments must be a JSON object", true};
  auto string_arg = [&](const char* key) -> std::optional<std::string> {
    auto it = args.find(key);
    if (it == args.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  if (call.name == "write_file") {
    auto path = string_arg("path");
    auto content = string_arg("content");
    if (!path || !content) return {"error: write_file needs string 'path' and 'content'", true};
    auto target = files::resolve_inside(workspace, *path);
    if (!target) return {"error: " + target.error().message, true};
    if (auto written = files::write_atomic(*target, *content); !written)
      return {"error: cannot write " + *path, true};
    return {fmt::format("wrote {} ({} bytes)", *path, content->size()), false};
  }
  if (call.name == "read_file") {
    auto path = string_arg("path");
    if (!path) return {"error: read_file needs a string 'path'", true};
    auto target = files::resolve_inside(workspace, *path);
    if (!target) return {"error: " + target.error().message, true};
    auto text = files::read_text(*target);
    if (!text) return {fmt::format("error: {} does not exist", *path), true};
    if (text->size() > options.max_read_bytes)
      return {text->substr(0, options.max_read_bytes) + "\n[truncated]", false};
    return {*text, false};
  }
  if (call.name == "list_files") {
    const std::string folder = string_arg("path").value_or(".");
    auto target =
        folder == "." ? Result<fs::path>(workspace) : files::resolve_inside(workspace, folder);
    if (!target) return {"error: " + target.error().message, true};
    std::vector<std::string> names;
    for (const auto& p : files::list_files(*target)) names.push_back(p.generic_string());
    return {names.empty() ? "(no files)" : text::join(names, "\n"), false};
  }
  if (call.name == "run" && options.allow_run) {
    auto command = string_arg("command");
    if (!command) return {"error: run needs a string 'command'", true};
    auto result = sandbox::run_shell(*command, workspace, options.run_limits);
    if (!result) return {"error: " + result.error().message, true};
    const std::string& out = result->output;
    const std::string tail = out.size() > 8000 ? "[…]\n" + out.substr(out.size() - 8000) : out;
    if (result->timed_out) return {"error: the command timed out\n" + tail, true};
    return {fmt::format("exit code {}\n{}", result->exit_code, tail), result->exit_code != 0};
  }
  return {fmt::format("error: unknown tool '{}'", call.name), true};
}

AgentOutcome run_agent(llm::ChatClient& client, const llm::ResolvedModel& model,
                       std::vector<llm::Message> messages, const fs::path& workspace,
                       const AgentOptions& options, const llm::CallOptions& call_options,
                       const llm::SamplingOptions& sampling) {
  AgentOutcome outcome;
  llm::ChatRequest request;
  request.tools = agent_tools(options.allow_run);
  request.sampling = sampling;
  for (int turn = 1; turn <= options.max_turns; ++turn) {
    request.messages = messages;
    auto response = client.complete(model, request, call_options);
    if (!response) {
      outcome.failure = response.error();
      return outcome;
    }
    ++outcome.stats.turns;
    outcome.usage += response->usage;
    outcome.latency_ms += response->latency_ms;
    if (!response->model.empty()) outcome.reported_model = response->model;
    if (!response->reasoning.empty())
      outcome.reasoning += (outcome.reasoning.empty() ? "" : "\n") + response->reasoning;
    outcome.final_text = response->content;
    if (response->tool_calls.empty()) return outcome;
    llm::Message assistant = llm::Message::assistant(response->content);
    assistant.tool_calls = response->tool_calls;
    messages.push_back(assistant);
    for (const auto& call : response->tool_calls) {
      ++outcome.stats.tool_calls;
      ++outcome.stats.call_map[call.name];
      if (call.name == "run") ++outcome.stats.run_calls;
      auto [text, is_error] = execute_tool(call, workspace, options);
      if (is_error) {
        ++outcome.stats.tool_errors;
        ++outcome.stats.error_map[call.name];
      }
      messages.push_back(llm::Message::tool_result(call.id, call.name, text));
    }
  }
  outcome.hit_turn_limit = true;
  return outcome;
}

}  // namespace upskill::agent
