// opencode traces (docs/traces.md): `opencode export` session documents
// {info{id, version, directory, …}, messages[{info{role, modelID, tokens, time, …}, parts[…]}]} and
// `opencode run --format json` event streams ({type, timestamp, sessionID, part} lines). Both carry
// the same parts: text, reasoning, tool{callID, tool, state{status, input, output, error,
// metadata}}, step-start, step-finish{tokens{input, output, reasoning, cache{read, write}}, cost}.
#include "opencode.hpp"

#include <fmt/format.h>

#include <chrono>
#include <limits>

#include "../reading/builder.hpp"
#include "../reading/records.hpp"

namespace upskill::trace::detail {

namespace {

// A token count: a non-negative number, else 0.
long long count_of(const Json& object, const char* key) {
  if (!object.is_object()) return 0;
  const auto it = object.find(key);
  if (it == object.end()) return 0;
  constexpr long long kMax = std::numeric_limits<long long>::max();
  if (it->is_number_unsigned())
    return static_cast<long long>(
        std::min<unsigned long long>(it->get<unsigned long long>(), kMax));
  if (it->is_number_integer()) return std::max(0LL, it->get<long long>());
  if (it->is_number_float()) {
    const double d = it->get<double>();
    return d >= 0 && d < 9e18 ? static_cast<long long>(d) : 0;
  }
  return 0;
}

const Json* object_field(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it != object.end() && it->is_object() ? &*it : nullptr;
}

// Milliseconds since the epoch as ISO 8601 UTC ("" unless a plausible integer).
std::string iso_time(const Json* time, const char* key) {
  if (!time || !time->contains(key) || !(*time)[key].is_number_integer()) return {};
  const long long ms = (*time)[key].get<long long>();
  if (ms < 0 || ms > 253402300799999LL) return {};  // before 1970 or after 9999
  using namespace std::chrono;
  const sys_time<milliseconds> tp{milliseconds(ms)};
  const auto day = floor<days>(tp);
  const year_month_day ymd{day};
  const hh_mm_ss hms{tp - day};
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                     hms.hours().count(), hms.minutes().count(), hms.seconds().count(),
                     hms.subseconds().count());
}

// opencode names tool arguments in camelCase (filePath, oldString, newString, replaceAll,
// patchText); the analysis reads the snake_case names other agents use. A name already present
// is kept; replaceAll is carried only as a boolean.
void rename_arguments(Json& input) {
  if (!input.is_object()) return;
  static constexpr std::pair<const char*, const char*> kNames[] = {{"filePath", "file_path"},
                                                                   {"oldString", "old_string"},
                                                                   {"newString", "new_string"},
                                                                   {"patchText", "patch"}};
  for (const auto& [from, to] : kNames) {
    auto it = input.find(from);
    if (it == input.end() || input.contains(to)) continue;
    Json value = std::move(*it);
    input.erase(from);
    input[to] = std::move(value);
  }
  if (auto it = input.find("replaceAll"); it != input.end()) {
    if (it->is_boolean() && !input.contains("replace_all")) input["replace_all"] = it->get<bool>();
    input.erase("replaceAll");
  }
  if (auto edits = input.find("edits"); edits != input.end() && edits->is_array())
    for (auto& e : *edits) rename_arguments(e);  // multiedit
}

// The exit code a bash tool reports in its state metadata ({exit: N}).
std::optional<int> exit_code_of(const Json& state) {
  const Json* metadata = object_field(state, "metadata");
  if (!metadata || !metadata->contains("exit")) return std::nullopt;
  const Json& exit = (*metadata)["exit"];
  if (!exit.is_number_integer()) return std::nullopt;
  const long long code = exit.get<long long>();
  if (code < std::numeric_limits<int>::min() || code > std::numeric_limits<int>::max())
    return std::nullopt;
  return static_cast<int>(code);
}

// "name: message" of an error object {name, data{message}} (or a bare string).
std::string error_text(const Json& error) {
  if (error.is_string()) return error.get<std::string>();
  std::string message = str_field(error, "message");
  if (const Json* data = object_field(error, "data"); data && message.empty())
    message = str_field(*data, "message");
  const std::string name = str_field(error, "name");
  if (name.empty()) return message;
  return message.empty() ? name : name + ": " + message;
}

class OpencodeReader {
 public:
  explicit OpencodeReader(Trace& trace) : trace_(trace), b_(trace) {}

  // `opencode export`: one message with its parts.
  void message(const Json& m, const std::string& where);
  // `opencode run --format json`: one event line.
  void event(const Json& rec, const std::string& where);

 private:
  void user_message(const Json& info, const Json& parts, const std::string& where);
  void assistant_message(const Json& info, const Json& parts, const std::string& where);
  // A text, reasoning or tool part of the assistant turn `turn`; false for another type.
  bool assistant_part(const Json& part, const std::string& type, std::size_t turn,
                      const std::string& where);
  void tool(const Json& part, const std::string& where);
  // Adds {input, output, reasoning, cache{read, write}}; false when `tokens` is not an object.
  bool add_tokens(const Json* tokens);
  // The assistant turn of a run event's message: a new one when the message id changes.
  std::size_t run_turn(const Json& part);
  void skip(const std::string& what) { ++trace_.stats.skipped[what]; }
  void unknown(const std::string& what) {
    ++trace_.stats.unknown_types[what.empty() ? "(no type)" : what];
  }

  Trace& trace_;
  Builder b_;
  std::string run_message_;  // message id of the run's current assistant turn
};

void OpencodeReader::message(const Json& m, const std::string& where) {
  const Json* info = object_field(m, "info");
  if (!info || !m.contains("parts") || !m["parts"].is_array()) {
    record_failed(trace_, where, "a message needs an info object and a parts array");
    return;
  }
  const std::string role = str_field(*info, "role");
  if (role == "user") {
    user_message(*info, m["parts"], where);
  } else if (role == "assistant") {
    assistant_message(*info, m["parts"], where);
  } else {
    unknown(role.empty() ? "(no role)" : "role/" + role);
    return;
  }
  ++trace_.stats.records;
}

// The user's text parts are the prompt; synthetic ones (file contents opencode read for an
// attachment, reminders) are the harness's and become a separate meta turn; ignored ones were
// never sent to the model.
void OpencodeReader::user_message(const Json& info, const Json& parts, const std::string& where) {
  std::string typed, injected;
  for (std::size_t j = 0; j < parts.size(); ++j) {
    const Json& part = parts[j];
    const std::string type = str_field(part, "type");
    if (type != "text") {
      if (!part.is_object()) {
        record_failed(trace_, fmt::format("{}.parts[{}]", where, j), "not a part object");
        continue;
      }
      skip("user part/" + (type.empty() ? std::string("(no type)") : type));  // file, agent, …
      continue;
    }
    if (flag_field(part, "ignored")) {
      skip("ignored text");
      continue;
    }
    Builder::append(flag_field(part, "synthetic") ? injected : typed, str_field(part, "text"),
                    kMaxText);
  }
  const std::string timestamp = iso_time(object_field(info, "time"), "created");
  if (!typed.empty()) {
    Turn& t = b_.add_turn(Role::user);
    t.text = std::move(typed);
    t.meta = is_injected_user_text(t.text);
    t.timestamp = timestamp;
  }
  if (!injected.empty()) {
    Turn& t = b_.add_turn(Role::user);
    t.text = std::move(injected);
    t.meta = true;
    t.timestamp = timestamp;
  }
}

// An assistant message: one turn. Its tokens are the sum of its step-finish parts (opencode keeps
// only the last step's in the message info); the info's tokens when it has no steps.
void OpencodeReader::assistant_message(const Json& info, const Json& parts,
                                       const std::string& where) {
  const std::size_t turn = trace_.turns.size();
  {
    Turn& t = b_.add_turn(Role::assistant);
    t.model = str_field(info, "modelID");
    t.timestamp = iso_time(object_field(info, "time"), "created");
    b_.add_model(t.model);
  }
  if (const Json* path = object_field(info, "path"); path && trace_.cwd.empty())
    trace_.cwd = str_field(*path, "cwd");
  bool stepped = false;
  for (std::size_t j = 0; j < parts.size(); ++j) {
    const Json& part = parts[j];
    const std::string part_where = fmt::format("{}.parts[{}]", where, j);
    if (!part.is_object()) {
      record_failed(trace_, part_where, "not a part object");
      continue;
    }
    const std::string type = str_field(part, "type");
    if (assistant_part(part, type, turn, part_where)) continue;
    if (type == "step-finish") {
      stepped = add_tokens(object_field(part, "tokens")) || stepped;
    } else if (type == "step-start" || type == "snapshot" || type == "patch" || type == "file" ||
               type == "agent" || type == "retry" || type == "compaction" || type == "subtask") {
      skip("part/" + type);  // bookkeeping: snapshots, the files a step changed, retries
    } else {
      unknown("part/" + type);
    }
  }
  if (!stepped) add_tokens(object_field(info, "tokens"));
  if (info.contains("error") && !info["error"].is_null()) {
    trace_.stats.note(
        fmt::format("{}: the message ended with an error: {}", where, error_text(info["error"])));
    // MessageAbortedError: the user stopped the message (Esc) — their choice, not what broke the
    // run; the session went on or ended there.
    if (str_field(info["error"], "name") != "MessageAbortedError")
      trace_.run_error(error_text(info["error"]));
  }
}

bool OpencodeReader::assistant_part(const Json& part, const std::string& type, std::size_t turn,
                                    const std::string& where) {
  if (type == "text") {
    if (flag_field(part, "ignored")) {
      skip("ignored text");
    } else {
      Builder::append(trace_.turns.at(turn).text, str_field(part, "text"), kMaxText);
    }
  } else if (type == "reasoning") {
    Builder::append(trace_.turns.at(turn).thinking, str_field(part, "text"), kMaxThinking);
  } else if (type == "tool") {
    tool(part, where);
  } else {
    return false;
  }
  return true;
}

// A tool part: the call, and its result once the state is completed (output; a bash tool's exit
// code from metadata.exit, nonzero is an error) or error (the error text). A pending or running
// tool never finished: a call without a result.
void OpencodeReader::tool(const Json& part, const std::string& where) {
  const std::string name = str_field(part, "tool");
  const Json* state = object_field(part, "state");
  if (name.empty() || !state) {
    record_failed(trace_, where, "a tool part needs a tool name and a state object");
    return;
  }
  std::string id = str_field(part, "callID");
  if (id.empty()) id = str_field(part, "id");
  if (id.empty()) id = "opencode-" + where;
  Json input = state->contains("input") ? (*state)["input"] : Json::object();
  rename_arguments(input);
  if (!b_.add_call(id, name, std::move(input))) return;  // a call id seen before
  const std::string status = str_field(*state, "status");
  const std::optional<int> exit_code = exit_code_of(*state);
  if (status == "completed")
    b_.attach_result(id, str_field(*state, "output"), exit_code && *exit_code != 0, exit_code);
  else if (status == "error")
    b_.attach_result(id, error_text(state->contains("error") ? (*state)["error"] : Json()), true,
                     exit_code);
}

bool OpencodeReader::add_tokens(const Json* tokens) {
  if (!tokens) return false;
  const Json* cache = object_field(*tokens, "cache");
  const long long read = cache ? count_of(*cache, "read") : 0;
  const long long write = cache ? count_of(*cache, "write") : 0;
  trace_.usage.input += count_of(*tokens, "input") + read + write;
  // Output includes reasoning, as OpenAI counts it (opencode reports it apart).
  trace_.usage.output += count_of(*tokens, "output") + count_of(*tokens, "reasoning");
  trace_.usage.reasoning += count_of(*tokens, "reasoning");
  trace_.usage.cache_read += read;
  trace_.usage.cache_write += write;
  trace_.usage.reported = true;
  return true;
}

std::size_t OpencodeReader::run_turn(const Json& part) {
  const std::string id = str_field(part, "messageID");
  const Turn* last = b_.last_turn();
  if (!last || last->role != Role::assistant || (!id.empty() && id != run_message_)) {
    b_.add_turn(Role::assistant);
    run_message_ = id;
  }
  return trace_.turns.size() - 1;
}

void OpencodeReader::event(const Json& rec, const std::string& where) {
  const std::string type = str_field(rec, "type");
  if (type == "error") {
    const std::string error = error_text(rec.contains("error") ? rec["error"] : Json());
    trace_.stats.note(fmt::format("{}: error: {}", where, error));
    trace_.run_error(error);
    ++trace_.stats.records;
    return;
  }
  const bool known = type == "step_start" || type == "step_finish" || type == "text" ||
                     type == "reasoning" || type == "tool_use";
  if (!known) {
    // Newer runs also print permission prompts and their answers: not part of the conversation.
    if (type == "awaiting_approval" || type == "approval_resolved")
      skip(type);
    else
      unknown(type);
    return;
  }
  const Json* part = object_field(rec, "part");
  if (!part) {
    record_failed(trace_, where, "an event needs a part object");
    return;
  }
  trace_.format_version = "opencode run --format json";
  if (type == "step_finish") {
    add_tokens(object_field(*part, "tokens"));
  } else if (type != "step_start") {
    const std::size_t turn = run_turn(*part);
    assistant_part(*part, type == "tool_use" ? "tool" : type, turn, where);
    if (trace_.turns[turn].timestamp.empty() && rec.contains("timestamp"))
      trace_.turns[turn].timestamp = iso_time(&rec, "timestamp");
  }
  ++trace_.stats.records;
}

}  // namespace

void parse_opencode_export(const Json& doc, Trace& trace) {
  OpencodeReader reader(trace);
  trace.format_version = "opencode";
  if (const Json* info = object_field(doc, "info")) {
    if (const std::string version = str_field(*info, "version"); !version.empty())
      trace.format_version = "opencode " + version;
    trace.cwd = str_field(*info, "directory");
  }
  if (!doc.is_object() || !doc.contains("messages") || !doc["messages"].is_array()) {
    trace.stats.note("the document has no message list");
    return;
  }
  const Json& messages = doc["messages"];
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string where = fmt::format("messages[{}]", i);
    contain_record(trace, where, [&] { reader.message(messages[i], where); });
  }
}

void parse_opencode_run(LineSource& lines, Trace& trace) {
  OpencodeReader reader(trace);
  each_record(lines, trace,
              [&](const Json& rec, const std::string& where) { reader.event(rec, where); });
}

}  // namespace upskill::trace::detail
