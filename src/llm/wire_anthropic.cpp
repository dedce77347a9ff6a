// The Anthropic Messages dialect: requests, responses and stream events (see wire.hpp).
#include <fmt/format.h>

#include <map>

#include "upskill/core/text.hpp"
#include "upskill/llm/wire.hpp"

namespace upskill::llm {

namespace {

constexpr long long kDefaultAnthropicMaxTokens = 8192;  // the API requires max_tokens

Json parse_arguments(const std::string& arguments) {
  try {
    Json j = Json::parse(arguments.empty() ? "{}" : arguments);
    return j.is_object() ? j : Json{{"value", j}};
  } catch (const nlohmann::json::exception&) {
    return Json{{"raw", arguments}};
  }
}

Json anthropic_messages(const std::vector<Message>& messages) {
  Json out = Json::array();
  for (const auto& m : messages) {
    if (m.role == Role::system) continue;  // top-level "system"
    if (m.role == Role::tool) {
      Json block = {
          {"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", m.content}};
      // Consecutive tool results travel in one user message.
      if (!out.empty() && out.back()["role"] == "user" && out.back()["content"].is_array() &&
          !out.back()["content"].empty() &&
          out.back()["content"].back().value("type", "") == "tool_result") {
        out.back()["content"].push_back(block);
      } else {
        out.push_back({{"role", "user"}, {"content", Json::array({block})}});
      }
      continue;
    }
    if (m.role == Role::assistant && !m.tool_calls.empty()) {
      Json blocks = Json::array();
      if (!m.content.empty()) blocks.push_back({{"type", "text"}, {"text", m.content}});
      for (const auto& c : m.tool_calls)
        blocks.push_back({{"type", "tool_use"},
                          {"id", c.id},
                          {"name", c.name},
                          {"input", parse_arguments(c.arguments)}});
      out.push_back({{"role", "assistant"}, {"content", blocks}});
      continue;
    }
    out.push_back({{"role", std::string(to_string(m.role))}, {"content", m.content}});
  }
  return out;
}

std::string stop_reason(const std::string& s) {
  if (s == "end_turn" || s == "stop_sequence") return "stop";
  if (s == "max_tokens") return "length";
  if (s == "tool_use") return "tool_calls";
  if (s == "refusal") return "content_filter";
  return s;
}

void add_usage(Usage& usage, const Json& u) {
  const long long cache_read = u.value("cache_read_input_tokens", 0LL);
  const long long cache_write = u.value("cache_creation_input_tokens", 0LL);
  if (u.contains("input_tokens"))
    usage.input = u.value("input_tokens", 0LL) + cache_read + cache_write;
  if (u.contains("cache_read_input_tokens")) usage.cached = cache_read;
  if (u.contains("output_tokens")) usage.output = u.value("output_tokens", 0LL);
}

class AnthropicStream : public StreamDecoder {
 public:
  std::optional<LlmFailure> on_event(const SseEvent& event) override {
    if (event.data.empty()) return std::nullopt;
    auto parsed = parse_server_json(event.data, "stream");
    if (!parsed) return parsed.error();
    const Json& j = *parsed;
    const std::string type = j.value("type", event.event);
    if (type == "error" || event.event == "error") return failure_from_error_json(j);
    if (type == "message_start") {
      const Json message = j.value("message", Json::object());
      response_.model = message.value("model", "");
      add_usage(response_.usage, message.value("usage", Json::object()));
      has_usage_ = message.contains("usage");
    } else if (type == "content_block_start") {
      const Json block = j.value("content_block", Json::object());
      Block& b = blocks_[j.value("index", 0)];
      b.type = block.value("type", "");
      b.id = block.value("id", "");
      b.name = block.value("name", "");
      if (b.type == "text") b.text = block.value("text", "");
    } else if (type == "content_block_delta") {
      const Json delta = j.value("delta", Json::object());
      Block& b = blocks_[j.value("index", 0)];
      const std::string dt = delta.value("type", "");
      if (dt == "text_delta") b.text += delta.value("text", "");
      if (dt == "thinking_delta") b.text += delta.value("thinking", "");
      if (dt == "input_json_delta") b.text += delta.value("partial_json", "");
    } else if (type == "message_delta") {
      const Json delta = j.value("delta", Json::object());
      if (auto s = delta.find("stop_reason"); s != delta.end() && s->is_string())
        response_.finish_reason = stop_reason(s->get<std::string>());
      add_usage(response_.usage, j.value("usage", Json::object()));
    } else if (type == "message_stop") {
      stopped_ = true;
    }
    return std::nullopt;
  }

  std::expected<ChatResponse, LlmFailure> finish() override {
    if (response_.finish_reason.empty())
      return std::unexpected(LlmFailure{FailureKind::stream_error, 200,
                                        stopped_ ? "stream ended without a stop reason"
                                                 : "stream ended early (no message_stop)"});
    for (const auto& [_, b] : blocks_) {
      if (b.type == "text") response_.content += b.text;
      if (b.type == "thinking") response_.reasoning += b.text;
      if (b.type == "tool_use")
        response_.tool_calls.push_back({b.id, b.name, b.text.empty() ? "{}" : b.text});
    }
    if (response_.reasoning.empty()) response_.reasoning = take_think_block(response_.content);
    response_.usage.requests = 1;
    response_.usage.estimated = !has_usage_;
    return response_;
  }

 private:
  struct Block {
    std::string type, id, name, text;
  };
  std::map<int, Block> blocks_;
  ChatResponse response_;
  bool has_usage_ = false;
  bool stopped_ = false;
};

}  // namespace

Json anthropic_request_body(const ChatRequest& request, const ResolvedModel& model, bool stream) {
  const auto& o = model.options;
  std::string system;
  for (const auto& m : request.messages)
    if (m.role == Role::system) system += (system.empty() ? "" : "\n\n") + m.content;
  Json body = {{"model", model.model},
               {"max_tokens", request.sampling.max_tokens.value_or(
                                  o.max_tokens.value_or(kDefaultAnthropicMaxTokens))},
               {"messages", anthropic_messages(request.messages)}};
  if (!system.empty()) body["system"] = system;
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (const auto& t : request.tools)
      tools.push_back(
          {{"name", t.name}, {"description", t.description}, {"input_schema", t.parameters}});
    body["tools"] = tools;
  }
  if (auto t = request.sampling.temperature ? request.sampling.temperature : o.temperature)
    body["temperature"] = *t;
  if (auto p = request.sampling.top_p ? request.sampling.top_p : o.top_p) body["top_p"] = *p;
  if (!request.sampling.stop.empty()) body["stop_sequences"] = request.sampling.stop;
  if (stream) body["stream"] = true;
  if (o.extra_body) body.merge_patch(*o.extra_body);
  return body;
}

std::expected<ChatResponse, LlmFailure> parse_anthropic_response(std::string_view text) {
  auto parsed = parse_server_json(text, "response");
  if (!parsed) return std::unexpected(parsed.error());
  const Json& j = *parsed;
  if (j.value("type", "") == "error" || j.contains("error"))
    return std::unexpected(failure_from_error_json(j));
  if (!j.contains("content") || !j.at("content").is_array())
    return std::unexpected(LlmFailure{FailureKind::invalid_response, 200,
                                      "response has no content: " + text::excerpt(text, 120)});
  ChatResponse r;
  for (const auto& block : j.at("content")) {
    const std::string type = block.value("type", "");
    if (type == "text") r.content += block.value("text", "");
    if (type == "thinking") r.reasoning += block.value("thinking", "");
    if (type == "tool_use")
      r.tool_calls.push_back({block.value("id", ""), block.value("name", ""),
                              block.value("input", Json::object()).dump()});
  }
  if (r.reasoning.empty()) r.reasoning = take_think_block(r.content);
  r.finish_reason = stop_reason(j.value("stop_reason", ""));
  r.model = j.value("model", "");
  r.usage.requests = 1;
  if (auto u = j.find("usage"); u != j.end() && u->is_object())
    add_usage(r.usage, *u);
  else
    r.usage.estimated = true;
  return r;
}

std::unique_ptr<StreamDecoder> make_anthropic_stream_decoder() {
  return std::make_unique<AnthropicStream>();
}

}  // namespace upskill::llm
