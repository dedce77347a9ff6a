// Codex CLI rollouts ({timestamp, type, payload} lines; legacy unwrapped items) and Responses API
// items, which Codex's response_item payloads are. event_msg records mirror response items and
// are used only when a rollout has no response items of that kind.
#include "codex.hpp"

#include <fmt/format.h>

#include <charconv>
#include <regex>

#include "../reading/json_lines.hpp"
#include "../reading/records.hpp"
#include "codex_code_mode.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace::detail {

namespace {

// An exit code as written, or nullopt when it is no int (a number too large for one).
std::optional<int> parse_int(const std::string& digits) {
  int value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

long long num(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number() ? it->get<long long>() : 0;
}

// A function_call_output's output: a string, maybe JSON {"output", "metadata": {"exit_code"}},
// or shell_command's "Exit code: N\nWall time: …\nOutput:\n…" text.
struct ToolOutput {
  std::string text;
  std::optional<int> exit_code;
  bool is_error = false;
};

ToolOutput decode_output(const Json& output) {
  ToolOutput out;
  Json value = output;
  if (output.is_object() && output.contains("content")) value = output["content"];
  if (value.is_string()) {
    Json parsed = parse_json_lenient(value.get<std::string>());
    if (parsed.is_object() && parsed.contains("output")) {
      out.text = content_text(parsed["output"]);
      if (auto md = parsed.find("metadata"); md != parsed.end() && md->is_object() &&
                                             md->contains("exit_code") &&
                                             (*md)["exit_code"].is_number_integer())
        out.exit_code = (*md)["exit_code"].get<int>();
    } else {
      out.text = value.get<std::string>();
    }
  } else {
    out.text = content_text(value);
  }
  if (output.is_object() && output.value("success", true) == false) out.is_error = true;
  static const std::regex exit_re(R"(^Exit code:\s*(-?\d+))");
  std::smatch m;
  const std::string head = out.text.substr(0, 64);
  if (!out.exit_code && std::regex_search(head, m, exit_re)) out.exit_code = parse_int(m[1].str());
  if (out.exit_code && *out.exit_code != 0) out.is_error = true;
  return out;
}

}  // namespace

Turn& ResponsesReader::assistant_turn() {
  Turn* last = b_.last_turn();
  if (!last || last->role != Role::assistant || results_since_assistant_) {
    results_since_assistant_ = false;
    return b_.add_turn(Role::assistant);
  }
  return *last;
}

bool ResponsesReader::item(const Json& item) {
  Trace& trace = b_.trace();
  std::string type = str_field(item, "type");
  if (type.empty() && item.contains("role")) type = "message";
  if (type == "message") {
    const std::string role = item.value("role", "user");
    const std::string text = content_text(item.contains("content") ? item["content"] : Json());
    if (role == "assistant") {
      Turn& t = assistant_turn();
      Builder::append(t.text, text, kMaxText);
      if (item.contains("model") && item["model"].is_string()) b_.add_model(item["model"]);
    } else {
      Turn& t = b_.add_turn(role == "user" ? Role::user : Role::system);
      t.text = bound_text(text, kMaxText);
      t.meta = role != "user" || is_injected_user_text(text);
      results_since_assistant_ = true;
    }
    return true;
  }
  if (type == "reasoning") {
    std::string thinking;
    if (auto s = item.find("summary"); s != item.end()) thinking = content_text(*s);
    if (thinking.empty() && item.contains("content")) thinking = content_text(item["content"]);
    Turn& t = assistant_turn();
    Builder::append(t.thinking, thinking, kMaxThinking);
    return true;
  }
  if (type == "function_call" || type == "custom_tool_call" || type == "local_shell_call" ||
      type == "web_search_call" || type == "tool_search_call") {
    assistant_turn();
    std::string id = item.value("call_id", str_field(item, "id"));
    std::string name = str_field(item, "name");
    Json input;
    if (type == "function_call") {
      input = decode_arguments(item.contains("arguments") ? item["arguments"] : Json());
    } else if (type == "custom_tool_call") {
      input = item.contains("input") ? item["input"] : Json();
      if (name == "exec" && script_call(id, input)) return true;
    } else if (type == "local_shell_call") {
      name = "local_shell";
      input = item.contains("action") ? item["action"] : Json::object();
    } else {
      name = type.substr(0, type.size() - 5);  // web_search / tool_search
      input = item.contains("action") ? item["action"] : Json::object();
    }
    ToolCall* call = b_.add_call(std::move(id), std::move(name), std::move(input));
    if (call && type == "web_search_call") {
      call->has_result = true;
      call->is_error = item.value("status", "completed") == "failed";
    }
    return true;
  }
  if (type == "function_call_output" || type == "custom_tool_call_output" ||
      type == "local_shell_call_output") {
    const std::string id = str_field(item, "call_id");
    if (auto script = script_calls_.find(id); script != script_calls_.end()) {
      script_output(script->second, item.contains("output") ? item["output"] : Json());
      script_calls_.erase(script);
      results_since_assistant_ = true;
      return true;
    }
    const ToolOutput out = decode_output(item.contains("output") ? item["output"] : Json());
    if (ToolCall* call = b_.attach_result(id, out.text, out.is_error, out.exit_code))
      follow_session(id, *call, out.text);
    results_since_assistant_ = true;
    return true;
  }
  if (type == "ghost_snapshot" || type == "compaction" || type == "compaction_summary") {
    ++trace.stats.skipped[type];
    return true;
  }
  return false;
}

// Unified exec (exec_command, then write_stdin to its session): a command whose call returned
// while it ran has no outcome yet; the write_stdin output that says how it exited gives it one —
// its exit code, and what it printed then after what it printed before.
void ResponsesReader::follow_session(const std::string& id, ToolCall& call,
                                     const std::string& output) {
  // Most outputs say neither: the patterns run only on one whose head names a process.
  const std::size_t process = output.find("Process ");
  if (process == std::string::npos || process > 400) return;
  static const std::regex running_re(R"((?:^|\n)Process running with session ID (\d+))");
  static const std::regex exited_re(R"((?:^|\n)Process exited with code (-?\d+))");
  const std::string head = output.substr(0, 400);
  std::smatch m;
  if (std::regex_search(head, m, running_re)) {
    // A write_stdin polled a session still running: the outcome is still the command's to get.
    if (call.name == "write_stdin") return;
    running_[m[1].str()] = id;
    Builder::no_outcome(call);
    return;
  }
  if (call.name != "write_stdin" || !std::regex_search(head, m, exited_re)) return;
  const Json* session = call.input.is_object() && call.input.contains("session_id")
                            ? &call.input["session_id"]
                            : nullptr;
  if (!session) return;
  const std::string key = session->is_number()   ? std::to_string(session->get<long long>())
                          : session->is_string() ? session->get<std::string>()
                                                 : "";
  const auto started = running_.find(key);
  if (started == running_.end()) return;
  ToolCall* command = b_.find_call(started->second);
  const std::optional<int> code = parse_int(m[1].str());
  running_.erase(started);
  if (!command || !code) return;
  command->has_result = true;
  command->exit_code = code;
  command->is_error = *code != 0;
  command->result = bound_text(command->result + "\n" + output, kMaxResult);
}

// A code-mode script (`exec` with a script calling `tools.…`): the calls it makes, each a call of
// its own. False when it makes none that can be read: it stays one `exec` call.
bool ResponsesReader::script_call(const std::string& id, const Json& input) {
  if (!input.is_string()) return false;
  std::vector<ScriptCall> calls = code_mode_calls(input.get<std::string>());
  if (calls.empty()) return false;
  std::vector<std::string>& ids = script_calls_[id];
  for (std::size_t k = 0; k < calls.size(); ++k) {
    ids.push_back(k == 0 ? id : fmt::format("{}#{}", id, k + 1));
    b_.add_call(ids.back(), std::move(calls[k].name), std::move(calls[k].input));
  }
  return true;
}

// The script's output is its last call's (the output of one the script ran before it is not
// told apart): a failed script, or an exit code said in it, fails that call.
void ResponsesReader::script_output(const std::vector<std::string>& ids, const Json& output) {
  const ToolOutput out = decode_output(output);
  const ScriptOutput script = code_mode_output(out.text);
  static const std::regex exit_re(R"((?:Process exited with code|"exit_code":)\s*(-?\d+))");
  std::smatch m;
  std::optional<int> exit_code = out.exit_code;
  const std::string head = script.text.substr(0, 4096);
  if (!exit_code && std::regex_search(head, m, exit_re)) exit_code = parse_int(m[1].str());
  for (std::size_t k = 0; k + 1 < ids.size(); ++k) {
    ToolCall* call = b_.attach_result(
        ids[k], "(its output is part of the script's, given with its last call)", false);
    // How a command before the last ended is not told apart.
    if (call && call->name == "exec_command") Builder::no_outcome(*call);
  }
  b_.attach_result(ids.back(), script.text,
                   script.failed || out.is_error || (exit_code && *exit_code != 0), exit_code);
}

void parse_codex_rollout(LineSource& lines, Trace& trace) {
  Builder b(trace);
  ResponsesReader reader(b);
  // event_msg mirrors, kept in case the rollout has no response items of their kind.
  struct Mirror {
    Role role;
    std::string text;
    bool reasoning;
  };
  std::vector<Mirror> mirrors;
  bool saw_message_items = false;
  RecordStream records(lines);
  while (const DecodedLine* d = records.next()) {
    if (!count_record(lines.name(), *d, trace)) continue;
    const Json& rec = d->record;
    const std::string where = fmt::format("{}:{}", lines.name(), d->line);
    contain_record(trace, where, [&] {
      const bool wrapped = rec.contains("payload") && rec["payload"].is_object();
      const std::string type = str_field(rec, "type");
      const Json& payload = wrapped ? rec["payload"] : rec;

      if (type == "session_meta" ||
          (!wrapped && d->line == 1 && rec.contains("id") && rec.contains("instructions"))) {
        ++trace.stats.records;
        if (payload.contains("cwd") && payload["cwd"].is_string()) trace.cwd = payload["cwd"];
        const std::string version = str_field(payload, "cli_version");
        trace.format_version = version.empty() ? "codex (legacy rollout)" : "codex_cli " + version;
        return;
      }
      if (type == "turn_context") {
        ++trace.stats.records;
        if (payload.contains("model") && payload["model"].is_string())
          b.add_model(payload["model"]);
        if (trace.cwd.empty() && payload.contains("cwd") && payload["cwd"].is_string())
          trace.cwd = payload["cwd"];
        return;
      }
      // Codex 0.171's per-call usage records (its token_count events already give the totals)
      // and its snapshots of the environment: read, nothing to take from them.
      if (type == "token_usage_record" || type == "world_state") {
        ++trace.stats.records;
        ++trace.stats.skipped[type];
        return;
      }
      if (type == "event_msg") {
        ++trace.stats.records;
        const std::string et = str_field(payload, "type");
        if (et == "token_count") {
          if (auto info = payload.find("info"); info != payload.end() && info->is_object()) {
            if (auto total = info->find("total_token_usage");
                total != info->end() && total->is_object()) {
              // Cumulative: the last one is the session's total.
              trace.usage.input = num(*total, "input_tokens");
              trace.usage.cache_read = num(*total, "cached_input_tokens");
              trace.usage.output = num(*total, "output_tokens");
              trace.usage.reasoning = num(*total, "reasoning_output_tokens");
              trace.usage.reported = true;
            }
          }
        } else if (et == "user_message") {
          mirrors.push_back({Role::user, str_field(payload, "message"), false});
        } else if (et == "agent_message") {
          mirrors.push_back({Role::assistant, str_field(payload, "message"), false});
        } else if (et == "agent_reasoning") {
          mirrors.push_back({Role::assistant, str_field(payload, "text"), true});
        } else if (et == "exec_command_end") {
          // Mirrors the call's output; its exit code is authoritative.
          if (ToolCall* call = b.find_call(str_field(payload, "call_id"));
              call && payload.contains("exit_code") && payload["exit_code"].is_number_integer()) {
            call->exit_code = payload["exit_code"].get<int>();
            if (*call->exit_code != 0) call->is_error = true;
          }
          ++trace.stats.duplicates;
        } else {
          ++trace.stats.skipped["event_msg/" + et];
        }
        return;
      }
      if (type == "compacted") {
        ++trace.stats.skipped[type];
        return;
      }
      if (type == "response_item" || !wrapped) {
        const std::string it = str_field(payload, "type");
        if (it == "message") saw_message_items = true;
        if (reader.item(payload)) {
          ++trace.stats.records;
        } else {
          const std::string unknown =
              (wrapped ? "response_item/" : "") + (it.empty() ? std::string("(no type)") : it);
          ++trace.stats.unknown_types[unknown];
          trace.stats.note(fmt::format("{}: unknown record '{}' (skipped)", where, unknown));
        }
        return;
      }
      ++trace.stats.unknown_types[type.empty() ? "(no type)" : type];
    });
  }
  if (saw_message_items) {
    trace.stats.duplicates += mirrors.size();
  } else {
    // Only events: rebuild the conversation from them.
    for (const Mirror& m : mirrors) {
      if (m.role == Role::user) {
        Turn& t = b.add_turn(Role::user);
        t.text = bound_text(m.text, kMaxText);
        t.meta = is_injected_user_text(m.text);
      } else {
        Turn* last = b.last_turn();
        Turn& t = (last && last->role == Role::assistant) ? *last : b.add_turn(Role::assistant);
        Builder::append(m.reasoning ? t.thinking : t.text, m.text,
                        m.reasoning ? kMaxThinking : kMaxText);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// `codex exec --json`: thread.started, turn.started, item.started/updated/completed (the completed
// item is authoritative), turn.completed with the turn's usage, turn.failed, error. The prompt is a
// command-line argument, so the stream has no user turn.

namespace {

// An error as codex passes it on: often the provider's JSON body, whose message is the error.
std::string readable_error(const std::string& message) {
  const Json body = Json::parse(message, nullptr, false);
  if (body.is_object()) {
    const Json& e = body.contains("error") ? body["error"] : body;
    if (e.is_object() && e.contains("message") && e["message"].is_string())
      return e["message"].get<std::string>();
    if (e.is_string()) return e.get<std::string>();
  }
  return message;
}

class ExecReader {
 public:
  explicit ExecReader(Trace& trace) : trace_(trace), b_(trace) {}
  void record(const Json& rec, const std::string& where);

 private:
  // False for an item of a kind this reader does not know.
  bool item(const Json& item, const std::string& where);
  Turn& assistant() {
    Turn* last = b_.last_turn();
    return last && last->role == Role::assistant ? *last : b_.add_turn(Role::assistant);
  }
  void call(const std::string& id, const std::string& name, Json input, const std::string& result,
            bool failed, std::optional<int> exit_code = std::nullopt) {
    assistant();
    b_.add_call(id, name, std::move(input));
    b_.attach_result(id, result, failed, exit_code);
  }

  void collab_call(const Json& it);

  Trace& trace_;
  Builder b_;
};

// A call to the run's other agents (docs/traces.md, "Codex"): spawn_agent, send_input, wait or
// close_agent, with the prompt it sent and the agents it reached; its result is each agent's state
// and last message (what a waited-for agent found). It failed when the call did, or an agent it
// reached errored or was not found.
void ExecReader::collab_call(const Json& it) {
  Json input = Json::object();
  if (const std::string prompt = str_field(it, "prompt"); !prompt.empty()) input["prompt"] = prompt;
  if (auto to = it.find("receiver_thread_ids"); to != it.end() && to->is_array())
    input["receiver_thread_ids"] = *to;
  std::string result;
  bool agent_failed = false;
  if (auto states = it.find("agents_states"); states != it.end() && states->is_object())
    for (const auto& [thread, state] : states->items()) {
      const std::string status = str_field(state, "status"), message = str_field(state, "message");
      agent_failed = agent_failed || status == "errored" || status == "not_found";
      result += fmt::format("{}: {}\n", thread, status.empty() ? "(no status)" : status);
      if (!message.empty()) result += message + (message.ends_with('\n') ? "" : "\n");
    }
  const std::string tool = str_field(it, "tool");
  call(str_field(it, "id"), tool.empty() ? "collab_tool_call" : tool, std::move(input), result,
       str_field(it, "status") == "failed" || agent_failed);
}

void ExecReader::record(const Json& rec, const std::string& where) {
  const std::string type = str_field(rec, "type");
  if (type == "item.started" || type == "item.updated") {
    ++trace_.stats.duplicates;  // the completed item says the same, finally
    return;
  }
  if (type == "item.completed" && rec.contains("item") && rec["item"].is_object()) {
    if (item(rec["item"], where)) ++trace_.stats.records;
    return;
  }
  if (type == "thread.started" || type == "turn.started") {
    trace_.format_version = "codex exec --json";
  } else if (type == "turn.completed") {
    if (auto u = rec.find("usage"); u != rec.end() && u->is_object()) {
      trace_.usage.input += num(*u, "input_tokens");
      trace_.usage.cache_read += num(*u, "cached_input_tokens");
      trace_.usage.output += num(*u, "output_tokens");  // reasoning included
      trace_.usage.reasoning += num(*u, "reasoning_output_tokens");
      trace_.usage.reported = true;
    }
  } else if (type == "turn.failed" || type == "error") {
    const Json& error = rec.contains("error") ? rec["error"] : rec;
    trace_.stats.note(fmt::format("{}: {}: {}", where, type, str_field(error, "message")));
    trace_.run_error(readable_error(str_field(error, "message")));
  } else {
    ++trace_.stats.unknown_types[type.empty() ? "(no type)" : type];
    return;
  }
  ++trace_.stats.records;
}

bool ExecReader::item(const Json& it, const std::string& where) {
  const std::string type = str_field(it, "type"), id = str_field(it, "id");
  const std::string status = str_field(it, "status");
  if (type == "agent_message") {
    // Each message of the run is a message of its own: one after another starts a new turn (two
    // messages around a command are not one message); the work before a turn's first message is
    // its own, as a reply that is only tool calls is not shown as a message of its own.
    Turn* last = b_.last_turn();
    Turn& turn = last && last->role == Role::assistant && last->text.empty()
                     ? *last
                     : b_.add_turn(Role::assistant);
    Builder::append(turn.text, str_field(it, "text"), kMaxText);
  } else if (type == "reasoning") {
    Builder::append(assistant().thinking, str_field(it, "text"), kMaxThinking);
  } else if (type == "command_execution") {
    std::optional<int> exit_code;
    if (auto e = it.find("exit_code"); e != it.end() && e->is_number_integer())
      exit_code = e->get<int>();
    // A command the user declined never ran: it is no success.
    const std::string output = status == "declined" && str_field(it, "aggregated_output").empty()
                                   ? "declined: not run"
                                   : str_field(it, "aggregated_output");
    call(id, "shell", Json{{"command", str_field(it, "command")}}, output,
         status == "failed" || status == "declined" || (exit_code && *exit_code != 0), exit_code);
  } else if (type == "file_change") {
    Json changes =
        it.contains("changes") && it["changes"].is_array() ? it["changes"] : Json::array();
    // The files it names are its target: a failed change is retried by a change of the same
    // files, not by any other.
    std::string paths;
    for (const Json& change : changes)
      if (const std::string path = str_field(change, "path"); !path.empty())
        paths += (paths.empty() ? "" : ", ") + path;
    Json input{{"changes", changes}};
    if (!paths.empty()) input["path"] = paths;
    call(id, "file_change", std::move(input), status, status == "failed");
  } else if (type == "mcp_tool_call") {
    // The MCP result: {content: [blocks]} (text blocks joined), or a bare value.
    const Json* result = it.contains("result") ? &it["result"] : nullptr;
    if (result && result->is_object() && result->contains("content"))
      result = &(*result)["content"];
    const std::string error = it.contains("error") && it["error"].is_object()
                                  ? str_field(it["error"], "message")
                                  : str_field(it, "error");
    call(id, fmt::format("mcp__{}__{}", str_field(it, "server"), str_field(it, "tool")),
         it.contains("arguments") ? it["arguments"] : Json::object(),
         !error.empty()                 ? error
         : result && !result->is_null() ? content_text(*result)
                                        : "",
         status == "failed" || !error.empty());
  } else if (type == "collab_tool_call") {
    collab_call(it);
  } else if (type == "web_search") {
    call(id, "web_search", Json{{"query", str_field(it, "query")}}, "", false);
  } else if (type == "todo_list") {
    call(id, "update_plan", Json{{"plan", it.contains("items") ? it["items"] : Json::array()}}, "",
         false);
  } else if (type == "error") {
    trace_.stats.note(fmt::format("{}: error item: {}", where, str_field(it, "message")));
  } else {
    ++trace_.stats.unknown_types["item/" + (type.empty() ? std::string("(no type)") : type)];
    return false;
  }
  return true;
}

}  // namespace

void parse_codex_exec(LineSource& lines, Trace& trace) {
  ExecReader reader(trace);
  RecordStream records(lines);
  while (const DecodedLine* d = records.next()) {
    if (!count_record(lines.name(), *d, trace)) continue;
    const std::string where = fmt::format("{}:{}", lines.name(), d->line);
    contain_record(trace, where, [&] { reader.record(d->record, where); });
  }
}

void parse_responses(const Json& doc, Trace& trace) {
  Builder b(trace);
  ResponsesReader reader(b);
  auto read_items = [&](const Json& items, const std::string& where) {
    for (std::size_t i = 0; i < items.size(); ++i) {
      const Json& item = items[i];
      contain_record(trace, fmt::format("{}[{}]", where, i), [&] {
        if (item.is_object() && reader.item(item)) {
          ++trace.stats.records;
          return;
        }
        std::string type = json_type_name(item);
        if (item.is_object()) {
          const auto t = item.find("type");
          type = t != item.end() && t->is_string() ? t->get<std::string>() : "(no type)";
        }
        ++trace.stats.unknown_types[type];
        trace.stats.note(fmt::format("{}[{}]: unknown item '{}' (skipped)", where, i, type));
      });
    }
  };
  if (doc.is_array()) {
    read_items(doc, "items");
    return;
  }
  // A request ({"input": [...]}), a response ({"output": [...], "usage"}), or both.
  if (doc.contains("model") && doc["model"].is_string()) b.add_model(doc["model"]);
  if (doc.contains("input")) {
    if (doc["input"].is_string()) {
      Turn& t = b.add_turn(Role::user);
      t.text = bound_text(doc["input"].get<std::string>(), kMaxText);
    } else if (doc["input"].is_array()) {
      read_items(doc["input"], "input");
    }
  }
  if (doc.contains("output") && doc["output"].is_array()) read_items(doc["output"], "output");
  if (doc.contains("items") && doc["items"].is_array()) read_items(doc["items"], "items");
  if (auto u = doc.find("usage"); u != doc.end() && u->is_object()) {
    trace.usage.input = num(*u, "input_tokens");
    trace.usage.output = num(*u, "output_tokens");
    if (auto d = u->find("input_tokens_details"); d != u->end() && d->is_object())
      trace.usage.cache_read = num(*d, "cached_tokens");
    if (auto d = u->find("output_tokens_details"); d != u->end() && d->is_object())
      trace.usage.reasoning = num(*d, "reasoning_tokens");
    trace.usage.reported = true;
  }
}

}  // namespace upskill::trace::detail
