// Message-array traces: OpenAI chat, Anthropic Messages and fast-agent history JSON.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "parsers.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace::detail {

namespace {

// The message list of a document: a bare array or {"messages": [...]}.
const Json* message_list(const Json& doc, Trace& trace) {
  if (doc.is_array()) return &doc;
  if (doc.is_object() && doc.contains("messages") && doc["messages"].is_array())
    return &doc["messages"];
  trace.stats.note("the document has no message list");
  return nullptr;
}

long long num(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number() ? it->get<long long>() : 0;
}

void add_system_text(Builder& b, const Json& system) {
  const std::string text = content_text(system);
  if (text.empty()) return;
  Turn& t = b.add_turn(Role::system);
  t.text = bound_text(text, kMaxText);
  t.meta = true;
}

}  // namespace

void parse_openai_chat(const Json& doc, Trace& trace) {
  Builder b(trace);
  const Json* messages = message_list(doc, trace);
  if (!messages) return;
  if (doc.is_object() && doc.contains("model") && doc["model"].is_string())
    b.add_model(doc["model"]);
  for (std::size_t i = 0; i < messages->size(); ++i) {
    const Json& m = (*messages)[i];
    if (!is_message(m, i, trace)) continue;
    contain_record(trace, fmt::format("messages[{}]", i), [&] {
      ++trace.stats.records;
      const std::string role = str_field(m, "role");
      const std::string text = content_text(m.contains("content") ? m["content"] : Json());
      if (role == "system" || role == "developer") {
        add_system_text(b, m["content"]);
      } else if (role == "user") {
        Turn& t = b.add_turn(Role::user);
        t.text = bound_text(text, kMaxText);
        t.meta = is_injected_user_text(text);
      } else if (role == "assistant") {
        Turn& t = b.add_turn(Role::assistant);
        t.text = bound_text(text, kMaxText);
        for (const char* key : {"reasoning_content", "reasoning", "thinking"})
          if (m.contains(key) && m[key].is_string())
            Builder::append(t.thinking, m[key].get<std::string>(), kMaxThinking);
        if (m.contains("model") && m["model"].is_string()) {
          t.model = m["model"];
          b.add_model(t.model);
        }
        if (auto calls = m.find("tool_calls"); calls != m.end() && calls->is_array()) {
          for (const auto& c : *calls) {
            const Json fn = c.value("function", Json::object());
            b.add_call(str_field(c, "id"), str_field(fn, "name"),
                       decode_arguments(fn.contains("arguments") ? fn["arguments"] : Json()));
          }
        }
        // The legacy single function_call.
        if (auto fc = m.find("function_call"); fc != m.end() && fc->is_object())
          b.add_call(fmt::format("function-{}", i), fc->value("name", ""),
                     decode_arguments(fc->contains("arguments") ? (*fc)["arguments"] : Json()));
      } else if (role == "tool" || role == "function") {
        std::string id = str_field(m, "tool_call_id");
        if (id.empty()) id = fmt::format("function-{}", i - 1);
        // Agents often prefix failures; there is no error flag in this format.
        const std::string head = text::to_lower_ascii(text.substr(0, 200));
        const bool error = head.starts_with("error") || head.find("traceback") != std::string::npos;
        b.attach_result(id, text, error);
      } else {
        --trace.stats.records;
        ++trace.stats.unknown_types["role " + role];
      }
    });
  }
}

// Anthropic content blocks: text, thinking, tool_use, tool_result, image.
void parse_anthropic(const Json& doc, Trace& trace) {
  Builder b(trace);
  const Json* messages = message_list(doc, trace);
  if (!messages) return;
  if (doc.is_object() && doc.contains("system")) add_system_text(b, doc["system"]);
  if (doc.is_object() && doc.contains("model") && doc["model"].is_string())
    b.add_model(doc["model"]);
  for (std::size_t i = 0; i < messages->size(); ++i) {
    const Json& m = (*messages)[i];
    if (!is_message(m, i, trace)) continue;
    contain_record(trace, fmt::format("messages[{}]", i), [&] {
      ++trace.stats.records;
      const std::string role = str_field(m, "role");
      const Json content = m.contains("content") ? m["content"] : Json();
      if (role == "assistant") {
        Turn& t = b.add_turn(Role::assistant);
        if (m.contains("model") && m["model"].is_string()) {
          t.model = m["model"];
          b.add_model(t.model);
        }
        if (content.is_string()) t.text = bound_text(content.get<std::string>(), kMaxText);
        for (const auto& block : content.is_array() ? content : Json::array()) {
          const std::string type = str_field(block, "type");
          if (type == "text") {
            Builder::append(t.text, str_field(block, "text"), kMaxText);
          } else if (type == "thinking") {
            Builder::append(t.thinking, str_field(block, "thinking"), kMaxThinking);
          } else if (type == "tool_use" || type == "server_tool_use") {
            b.add_call(str_field(block, "id"), str_field(block, "name"),
                       block.contains("input") ? block["input"] : Json());
          }
        }
        if (auto u = m.find("usage"); u != m.end() && u->is_object()) {
          trace.usage.input += num(*u, "input_tokens") + num(*u, "cache_read_input_tokens") +
                               num(*u, "cache_creation_input_tokens");
          trace.usage.output += num(*u, "output_tokens");
          trace.usage.cache_read += num(*u, "cache_read_input_tokens");
          trace.usage.cache_write += num(*u, "cache_creation_input_tokens");
          trace.usage.reported = true;
        }
        return;
      }
      std::string text;
      if (content.is_string()) text = content.get<std::string>();
      for (const auto& block : content.is_array() ? content : Json::array()) {
        const std::string type = str_field(block, "type");
        if (type == "tool_result") {
          b.attach_result(str_field(block, "tool_use_id"),
                          content_text(block.contains("content") ? block["content"] : Json()),
                          flag_field(block, "is_error"));
        } else if (type == "text") {
          Builder::append(text, str_field(block, "text"), kMaxText);
        }
      }
      if (text::trim(text).empty()) return;
      Turn& t = b.add_turn(role == "user" ? Role::user : Role::system);
      t.text = bound_text(text, kMaxText);
      t.meta = role != "user" || is_injected_user_text(text);
    });
  }
}

// fast-agent's PromptMessageExtended: MCP content blocks, tool_calls / tool_results keyed by id,
// channels (reasoning, fast-agent-usage).
void parse_fast_agent_json(const Json& doc, Trace& trace) {
  Builder b(trace);
  const Json* messages = message_list(doc, trace);
  if (!messages) return;
  trace.format_version = "fast-agent";
  for (std::size_t i = 0; i < messages->size(); ++i) {
    const Json& m = (*messages)[i];
    if (!is_message(m, i, trace)) continue;
    contain_record(trace, fmt::format("messages[{}]", i), [&] {
      ++trace.stats.records;
      const std::string role = str_field(m, "role");
      const std::string text = content_text(m.contains("content") ? m["content"] : Json());
      if (auto results = m.find("tool_results"); results != m.end() && results->is_object()) {
        for (const auto& [id, r] : results->items())
          b.attach_result(id, content_text(r.contains("content") ? r["content"] : Json()),
                          flag_field(r, "isError"));
      }
      if (role == "assistant") {
        Turn& t = b.add_turn(Role::assistant);
        t.text = bound_text(text, kMaxText);
        if (auto ch = m.find("channels"); ch != m.end() && ch->is_object()) {
          if (ch->contains("reasoning"))
            t.thinking = bound_text(content_text((*ch)["reasoning"]), kMaxThinking);
          if (ch->contains("fast-agent-usage") && (*ch)["fast-agent-usage"].is_array()) {
            for (const auto& block : (*ch)["fast-agent-usage"]) {
              const Json u = Json::parse(str_field(block, "text"), nullptr, false);
              if (!u.is_object() || !u.contains("turn")) continue;
              const Json& turn = u["turn"];
              trace.usage.input += num(turn, "input_tokens");
              trace.usage.output += num(turn, "output_tokens");
              trace.usage.reported = true;
              if (turn.contains("model") && turn["model"].is_string()) b.add_model(turn["model"]);
            }
          }
        }
        if (auto calls = m.find("tool_calls"); calls != m.end() && calls->is_object()) {
          for (const auto& [id, c] : calls->items()) {
            const Json params = c.value("params", Json::object());
            b.add_call(
                id, str_field(params, "name"),
                decode_arguments(params.contains("arguments") ? params["arguments"] : Json()));
          }
        }
      } else if (!text::trim(text).empty()) {
        Turn& t = b.add_turn(role == "user" ? Role::user : Role::system);
        t.text = bound_text(text, kMaxText);
        t.meta = role != "user" || is_injected_user_text(text);
      }
    });
  }
}

// Gemini CLI sessions (~/.gemini/tmp/<project>/chats/session-*.json, or .jsonl replayed below): {sessionId, projectHash,
// startTime, lastUpdated, messages[{type: user|gemini|info|error|warning, content, timestamp}]};
// gemini messages add thoughts[], tokens{input, output, cached, thoughts, tool, total}, model and
// toolCalls[{id, name, args, result[{functionResponse{response{output}}}], status}].
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

void gemini_message(Builder& b, Trace& trace, const Json& m, std::size_t index) {
  const std::string type = str_field(m, "type");
  const std::string text = content_text(m.contains("content") ? m["content"] : Json());
  if (type == "user") {
    ++trace.stats.records;
    Turn& t = b.add_turn(Role::user);
    t.text = bound_text(text, kMaxText);
    t.meta = is_injected_user_text(text);
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
    trace.usage.input += num(*u, "input");
    trace.usage.output += num(*u, "output");
    trace.usage.cache_read += num(*u, "cached");
    trace.usage.reasoning += num(*u, "thoughts");
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
    b.attach_result(id, result, status == "error" || status == "cancelled",
                    gemini_exit_code(result));
  }
}

}  // namespace

namespace {

// Current Gemini CLI sessions are JSON lines (session-*.jsonl): a header {sessionId, projectHash,
// startTime, kind}, then message records {id, type, …} appended as they change (a record with an
// id already seen replaces it, in its first place), {"$set": {…}} updates of the session's fields
// ("messages" there replaces the whole list) and {"$rewindTo": id}, which drops that message and
// every later one. Replayed here into the one-document form.
Json replay_gemini_lines(const Json& records, Trace& trace) {
  Json doc = Json::object();
  std::vector<std::string> order;
  std::map<std::string, Json> by_id;
  auto upsert = [&](const Json& m) {
    const std::string id = str_field(m, "id");
    if (!by_id.contains(id)) order.push_back(id);
    by_id[id] = m;
  };
  auto replace_all = [&](const Json& list) {
    order.clear();
    by_id.clear();
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
      for (const auto& [key, value] : r["$set"].items()) {
        if (key == "messages" && value.is_array())
          replace_all(value);
        else if (key != "messages")
          doc[key] = value;
      }
    } else if (r.contains("sessionId") && r.contains("projectHash")) {
      for (const auto& [key, value] : r.items())
        if (key != "messages") doc[key] = value;
      if (r.contains("messages") && r["messages"].is_array())
        for (const auto& m : r["messages"])
          if (m.is_object() && m.contains("id") && m["id"].is_string()) upsert(m);
    } else {
      ++trace.stats.skipped["(unknown session record)"];
    }
  }
  doc["messages"] = Json::array();
  for (const auto& id : order)
    if (by_id.contains(id)) doc["messages"].push_back(std::move(by_id[id]));
  return doc;
}

}  // namespace

void parse_gemini(const Json& input, Trace& trace) {
  Builder b(trace);
  trace.format_version = "Gemini CLI";
  // JSON lines arrive as an array of records.
  const Json doc = input.is_array() ? replay_gemini_lines(input, trace) : input;
  const Json* messages = message_list(doc, trace);
  if (!messages) return;
  for (std::size_t i = 0; i < messages->size(); ++i) {
    const Json& m = (*messages)[i];
    if (!m.is_object()) {
      ++trace.stats.malformed;
      trace.stats.note(fmt::format("messages[{}]: not a message object (skipped)", i));
      continue;
    }
    contain_record(trace, fmt::format("messages[{}]", i), [&] { gemini_message(b, trace, m, i); });
  }
}

}  // namespace upskill::trace::detail
