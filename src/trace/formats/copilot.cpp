// Copilot CLI traces (docs/traces.md): the session events it keeps
// (~/.copilot/session-state/<id>/events.jsonl) and prints (`--output-format json`), one
// {type, data, id, timestamp, parentId} object per line: user.message{content},
// assistant.message{model, content, toolRequests[{toolCallId, name, arguments}]},
// tool.execution_complete{toolCallId, success, result{content}, shellExecution{exitCode}},
// session.usage_record{usage{inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens}};
// streaming deltas and bookkeeping events are skipped.
#include "copilot.hpp"

#include <charconv>

#include "../reading/builder.hpp"
#include "../reading/records.hpp"

namespace upskill::trace::detail {

namespace {

// The code of a trailing "<exited with exit code N>" (or "<… completed with exit code N>").
std::optional<int> exit_code_at_end(std::string_view text) {
  text = text.substr(text.size() > 200 ? text.size() - 200 : 0);
  const std::size_t at = text.rfind("with exit code ");
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view rest = text.substr(at + 15);
  int code = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), code);
  if (ec != std::errc() || end == rest.data() || end == rest.data() + rest.size() || *end != '>')
    return std::nullopt;
  return code;
}

const Json& object_at(const Json& object, const char* key) {
  static const Json kEmpty = Json::object();
  if (!object.is_object()) return kEmpty;
  const auto it = object.find(key);
  return it != object.end() && it->is_object() ? *it : kEmpty;
}

long long tokens(const Json& usage, const char* key) {
  const auto it = usage.find(key);
  return it != usage.end() && it->is_number() ? std::max(0LL, it->get<long long>()) : 0;
}

class CopilotReader {
 public:
  explicit CopilotReader(Trace& trace) : b_(trace), trace_(trace) {}

  void event(const Json& rec) {
    const std::string type = str_field(rec, "type");
    const Json& data = object_at(rec, "data");
    if (type == "session.start") {
      const Json& context = object_at(data, "context");
      if (trace_.cwd.empty()) trace_.cwd = str_field(context, "cwd");
      trace_.format_version = "Copilot CLI " + str_field(data, "copilotVersion");
    } else if (type == "user.message") {
      ++trace_.stats.records;
      Turn& t = b_.add_turn(Role::user);
      t.text = bound_text(str_field(data, "content"), kMaxText);
      t.timestamp = str_field(rec, "timestamp");
    } else if (type == "assistant.message") {
      ++trace_.stats.records;
      Turn& t = b_.add_turn(Role::assistant);
      t.text = bound_text(str_field(data, "content"), kMaxText);
      t.timestamp = str_field(rec, "timestamp");
      t.model = str_field(data, "model");
      b_.add_model(t.model);
      const auto requests = data.find("toolRequests");
      if (requests != data.end() && requests->is_array())
        for (const Json& call : *requests) {
          if (!call.is_object() || str_field(call, "name").empty()) continue;
          const auto args = call.find("arguments");
          b_.add_call(str_field(call, "toolCallId"), str_field(call, "name"),
                      args != call.end() ? *args : Json::object());
        }
    } else if (type == "tool.execution_complete") {
      const Json& result = object_at(data, "result");
      std::string text = str_field(result, "content");
      const Json& shell = object_at(data, "shellExecution");
      std::optional<int> exit_code;
      if (auto it = shell.find("exitCode"); it != shell.end() && it->is_number_integer())
        exit_code = static_cast<int>(std::clamp<long long>(it->get<long long>(), -255, 255));
      // Releases without shellExecution end a shell's output with "<exited with exit code 2>"
      // ("success" is true whatever the code was).
      if (!exit_code) exit_code = exit_code_at_end(text);
      const auto success = data.find("success");
      const bool failed = success != data.end() && success->is_boolean() && !success->get<bool>();
      b_.attach_result(str_field(data, "toolCallId"), text, failed, exit_code);
    } else if (type == "session.usage_record") {
      const Json& usage = object_at(data, "usage");
      trace_.usage.input += tokens(usage, "inputTokens");
      trace_.usage.output += tokens(usage, "outputTokens");
      trace_.usage.cache_read += tokens(usage, "cacheReadTokens");
      trace_.usage.cache_write += tokens(usage, "cacheWriteTokens");
      trace_.usage.reported = true;
    } else {
      ++trace_.stats.skipped[type.empty() ? "(no type)" : type];
    }
  }

 private:
  Builder b_;
  Trace& trace_;
};

}  // namespace

void parse_copilot_events(LineSource& lines, Trace& trace) {
  CopilotReader reader(trace);
  each_record(lines, trace, [&](const Json& rec, const std::string&) { reader.event(rec); });
}

}  // namespace upskill::trace::detail
