// Gemini CLI sessions (docs/traces.md): the JSON document older versions kept and the JSON lines
// current versions keep, replayed into one message list and read into turns and tool calls.
#include "gemini.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../reading/builder.hpp"
#include "../reading/records.hpp"
#include "messages.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace::detail {

// Gemini CLI sessions (~/.gemini/tmp/<project>/chats/session-*.json, or .jsonl replayed below):
// {sessionId, projectHash, startTime, lastUpdated, messages[{type: user|gemini|info|error|warning,
// content, timestamp}]}; gemini messages add thoughts[], tokens{input, output, cached, thoughts,
// tool, total}, model and toolCalls[{id, name, args, result[{functionResponse{response{output}}}],
// status}].
namespace {

// A tool call's result: the functionResponse outputs (or errors), joined.
std::string gemini_result(const Json& result) {
  std::string out;
  for (const auto& part : result.is_array() ? result : Json::array()) {
    const Json* response = part.is_object() && part.contains("functionResponse") &&
                                   part["functionResponse"].is_object() &&
                                   part["functionResponse"].contains("response")
                               ? &part["functionResponse"]["response"]
                               : nullptr;
    if (!response) continue;
    const std::string text = response->is_object()
                                 ? str_field(*response, "output") + str_field(*response, "error")
                                 : content_text(*response);
    Builder::append(out, text, kMaxText);
  }
  return out;
}

// run_shell_command reports "Output: …\nExit Code: N\n…" after the whole output (its status is
// "success" whatever the command's code was): the last such line.
std::optional<int> gemini_exit_code(std::string_view result) {
  static constexpr std::string_view kMark = "\nExit Code: ";
  const std::size_t at = result.rfind(kMark);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view digits = result.substr(at + kMark.size());
  int code = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), code);
  if (ec != std::errc() || end == digits.data()) return std::nullopt;
  return code;
}

// A shell call the command did not finish: killed by a signal ("Signal: SIGKILL" or its number —
// "(none)" or "0" in versions that always print the line) or cancelled for its timeout
// ("Command was automatically cancelled because it exceeded the timeout …").
bool gemini_stopped(std::string_view result) {
  static constexpr std::string_view kCancelled = "Command was automatically cancelled";
  for (std::size_t at = result.find(kCancelled); at != std::string_view::npos;
       at = result.find(kCancelled, at + 1))
    if (at == 0 || result[at - 1] == '\n') return true;
  for (std::size_t at = result.find("Signal: "); at != std::string_view::npos;
       at = result.find("Signal: ", at + 1)) {
    if (at > 0 && result[at - 1] != '\n') continue;
    const std::string_view value = result.substr(at + 8, result.find('\n', at) - at - 8);
    // A signal's name (SIGKILL) or a nonzero number; "(none)" and "0" say there was none.
    if (value.starts_with("SIG") ||
        (!value.empty() && value.find_first_not_of("0123456789") == std::string_view::npos &&
         value.find_first_not_of('0') != std::string_view::npos))
      return true;
  }
  return false;
}

void gemini_message(Builder& b, Trace& trace, const Json& m, std::size_t index) {
  const std::string type = str_field(m, "type");
  const std::string text = content_text(m.contains("content") ? m["content"] : Json());
  if (type == "user") {
    ++trace.stats.records;
    // Gemini CLI 0.61 records the function responses it sends back as user messages; their
    // contents are the results of the calls (attached from the calls below), not anyone's words.
    if (text::trim(text).empty()) {
      ++trace.stats.skipped["user record without text (function responses)"];
      return;
    }
    Turn& t = b.add_turn(Role::user);
    t.text = bound_text(text, kMaxText);
    // /compress puts the model's summary of the history in its place, as a user message.
    t.compaction_summary = text::trim(text).starts_with("<state_snapshot>");
    t.meta = t.compaction_summary || is_injected_user_text(text);
    t.timestamp = str_field(m, "timestamp");
    return;
  }
  if (type != "gemini") {
    ++trace.stats.skipped[type.empty() ? "(no type)" : type];  // info, error, warning
    return;
  }
  ++trace.stats.records;
  Turn& t = b.add_turn(Role::assistant);
  t.text = bound_text(text, kMaxText);
  t.timestamp = str_field(m, "timestamp");
  t.model = str_field(m, "model");
  b.add_model(t.model);
  for (const auto& th :
       m.contains("thoughts") && m["thoughts"].is_array() ? m["thoughts"] : Json::array()) {
    const std::string subject = str_field(th, "subject"),
                      description = str_field(th, "description");
    Builder::append(t.thinking, subject.empty() ? description : subject + ": " + description,
                    kMaxThinking);
  }
  if (auto u = m.find("tokens"); u != m.end() && u->is_object()) {
    trace.usage.input += count_field(*u, "input");
    // Output includes the thoughts, as OpenAI counts reasoning (Gemini reports them apart).
    trace.usage.output += count_field(*u, "output") + count_field(*u, "thoughts");
    trace.usage.cache_read += count_field(*u, "cached");
    trace.usage.reasoning += count_field(*u, "thoughts");
    trace.usage.reported = true;
  }
  const Json& calls =
      m.contains("toolCalls") && m["toolCalls"].is_array() ? m["toolCalls"] : Json::array();
  for (std::size_t j = 0; j < calls.size(); ++j) {
    const Json& c = calls[j];
    std::string id = str_field(c, "id");
    if (id.empty()) id = fmt::format("gemini-{}-{}", index, j);
    b.add_call(id, str_field(c, "name"), c.contains("args") ? c["args"] : Json::object());
    const std::string status = str_field(c, "status");
    const std::string result = gemini_result(c.contains("result") ? c["result"] : Json());
    b.attach_result(id, result,
                    status == "error" || status == "cancelled" || gemini_stopped(result),
                    gemini_exit_code(result));
  }
}

}  // namespace

namespace {

// Current Gemini CLI sessions are JSON lines (session-*.jsonl): a header {sessionId, projectHash,
// startTime, kind}, then message records {id, type, …} appended as they change (a record with an
// id already seen replaces it, in its first place), {"$set": {…}} updates of the session's fields
// ("messages" there is the history the model goes on with — after /compress, a <state_snapshot>
// in place of the messages it summarises: those happened, so they stay, and the list's new
// messages follow them) and {"$rewindTo": id}, which drops that message and every later one (the
// user undid them). Replayed here into the messages that stand at the end, in order: pointers into
// the records, which are not copied.
std::vector<const Json*> replay_gemini_lines(const Json& records, Trace& trace) {
  std::vector<std::string> order;
  std::map<std::string, const Json*> by_id;
  auto upsert = [&](const Json& m) {
    const std::string id = str_field(m, "id");
    if (!by_id.contains(id)) order.push_back(id);
    by_id[id] = &m;
  };
  auto merge = [&](const Json& list) {
    for (const auto& m : list)
      if (m.is_object() && m.contains("id") && m["id"].is_string()) upsert(m);
  };
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Json& r = records[i];
    if (!r.is_object()) {
      ++trace.stats.malformed;
      trace.stats.note(fmt::format("record {}: not an object (skipped)", i + 1));
      continue;
    }
    if (r.contains("$rewindTo") && r["$rewindTo"].is_string()) {
      const auto at = std::find(order.begin(), order.end(), r["$rewindTo"].get<std::string>());
      for (auto it = at; it != order.end(); ++it) by_id.erase(*it);
      if (at == order.end()) by_id.clear();
      order.erase(at == order.end() ? order.begin() : at, order.end());
    } else if (r.contains("id") && r["id"].is_string()) {
      upsert(r);
    } else if (r.contains("$set") && r["$set"].is_object()) {
      // The session's other fields (lastUpdated, summary) hold nothing a turn keeps.
      if (const auto m = r["$set"].find("messages"); m != r["$set"].end() && m->is_array())
        merge(*m);
    } else if (r.contains("sessionId") && r.contains("projectHash")) {
      if (r.contains("messages") && r["messages"].is_array())
        for (const auto& m : r["messages"])
          if (m.is_object() && m.contains("id") && m["id"].is_string()) upsert(m);
    } else {
      ++trace.stats.skipped["(unknown session record)"];
    }
  }
  std::vector<const Json*> messages;
  for (const auto& id : order)
    if (const auto it = by_id.find(id); it != by_id.end()) messages.push_back(it->second);
  return messages;
}

}  // namespace

void parse_gemini(const Json& input, Trace& trace) {
  Builder b(trace);
  trace.format_version = "Gemini CLI";
  // JSON lines arrive as an array of records; a session document has its message list.
  std::vector<const Json*> messages;
  if (input.is_array()) {
    messages = replay_gemini_lines(input, trace);
  } else if (const Json* list = message_list(input, trace)) {
    for (const Json& m : *list) messages.push_back(&m);
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Json& m = *messages[i];
    if (!m.is_object()) {
      ++trace.stats.malformed;
      trace.stats.note(fmt::format("messages[{}]: not a message object (skipped)", i));
      continue;
    }
    contain_record(trace, fmt::format("messages[{}]", i), [&] { gemini_message(b, trace, m, i); });
  }
}

}  // namespace upskill::trace::detail
