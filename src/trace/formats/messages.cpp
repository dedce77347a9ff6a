// Message-array traces: OpenAI chat, Anthropic Messages and fast-agent history JSON.
#include "messages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "../reading/builder.hpp"
#include "../reading/records.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace::detail {

const Json* message_list(const Json& doc, Trace& trace) {
  if (doc.is_array()) return &doc;
  if (doc.is_object() && doc.contains("messages") && doc["messages"].is_array())
    return &doc["messages"];
  trace.stats.note("the document has no message list");
  return nullptr;
}

long long count_field(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number() ? it->get<long long>() : 0;
}

namespace {

// Each entry of a message list that is a message, read inside contain_record ("messages[i]") and
// counted as a record; an entry that is not one is counted as malformed (is_message).
template <class F>
void each_message(const Json& messages, Trace& trace, F&& handle) {
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    if (!is_message(m, i, trace)) continue;
    contain_record(trace, fmt::format("messages[{}]", i), [&] {
      ++trace.stats.records;
      handle(m, i);
    });
  }
}

void add_system_text(Builder& b, const Json& system) {
  const std::string text = content_text(system);
  if (text.empty()) return;
  Turn& t = b.add_turn(Role::system);
  t.text = bound_text(text, kMaxText);
  t.meta = true;
}

// ShareGPT {"conversations": [{"from", "value"}]} as chat messages.
Json sharegpt_to_chat(const Json& doc) {
  Json out = Json::array();
  for (const auto& c : doc["conversations"]) {
    if (!c.is_object()) continue;
    const std::string from = str_field(c, "from");
    const std::string role = from == "human" || from == "user"               ? "user"
                             : from == "system"                              ? "system"
                             : from == "tool" || from == "function_response" ? "tool"
                                                                             : "assistant";
    out.push_back(Json{{"role", role}, {"content", str_field(c, "value")}});
  }
  return out;
}

}  // namespace

void parse_openai_chat(const Json& doc, Trace& trace) {
  if (doc.is_object() && doc.contains("conversations")) {
    parse_openai_chat(sharegpt_to_chat(doc), trace);
    return;
  }
  Builder b(trace);
  const Json* messages = message_list(doc, trace);
  if (!messages) return;
  if (doc.is_object() && doc.contains("model") && doc["model"].is_string())
    b.add_model(doc["model"]);
  each_message(*messages, trace, [&](const Json& m, std::size_t i) {
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

// Anthropic content blocks: text, thinking, tool_use, tool_result, image.
void parse_anthropic(const Json& doc, Trace& trace) {
  Builder b(trace);
  const Json* messages = message_list(doc, trace);
  if (!messages) return;
  if (doc.is_object() && doc.contains("system")) add_system_text(b, doc["system"]);
  if (doc.is_object() && doc.contains("model") && doc["model"].is_string())
    b.add_model(doc["model"]);
  each_message(*messages, trace, [&](const Json& m, std::size_t) {
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
        trace.usage.input += count_field(*u, "input_tokens") +
                             count_field(*u, "cache_read_input_tokens") +
                             count_field(*u, "cache_creation_input_tokens");
        trace.usage.output += count_field(*u, "output_tokens");
        trace.usage.cache_read += count_field(*u, "cache_read_input_tokens");
        trace.usage.cache_write += count_field(*u, "cache_creation_input_tokens");
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

// fast-agent's PromptMessageExtended: MCP content blocks, tool_calls / tool_results keyed by id,
// channels (reasoning, fast-agent-usage).
void parse_fast_agent_json(const Json& doc, Trace& trace) {
  Builder b(trace);
  const Json* messages = message_list(doc, trace);
  if (!messages) return;
  trace.format_version = "fast-agent";
  each_message(*messages, trace, [&](const Json& m, std::size_t) {
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
            trace.usage.input += count_field(turn, "input_tokens");
            trace.usage.output += count_field(turn, "output_tokens");
            trace.usage.reported = true;
            if (turn.contains("model") && turn["model"].is_string()) b.add_model(turn["model"]);
          }
        }
      }
      if (auto calls = m.find("tool_calls"); calls != m.end() && calls->is_object()) {
        for (const auto& [id, c] : calls->items()) {
          const Json params = c.value("params", Json::object());
          b.add_call(id, str_field(params, "name"),
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

}  // namespace upskill::trace::detail
