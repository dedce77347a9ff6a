// The OpenAI chat-completions dialect, with its servers' quirks: requests, responses and stream
// chunks (see wire.hpp).
#include <fmt/format.h>

#include "upskill/core/text.hpp"
#include "upskill/llm/wire.hpp"

namespace upskill::llm {

namespace {

Json openai_messages(const std::vector<Message>& messages) {
  Json out = Json::array();
  for (const auto& m : messages) {
    Json j = {{"role", std::string(to_string(m.role))}};
    if (m.role == Role::tool) {
      j["tool_call_id"] = m.tool_call_id;
      j["content"] = m.content;
    } else if (m.role == Role::assistant && !m.tool_calls.empty()) {
      j["content"] = m.content.empty() ? Json(nullptr) : Json(m.content);
      Json calls = Json::array();
      for (const auto& c : m.tool_calls)
        calls.push_back({{"id", c.id},
                         {"type", "function"},
                         {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      j["tool_calls"] = calls;
    } else {
      j["content"] = m.content;
    }
    out.push_back(std::move(j));
  }
  return out;
}

std::string finish_reason_of(const Json& choice) {
  const Json& f = choice.contains("finish_reason") ? choice.at("finish_reason") : Json();
  return f.is_string() ? f.get<std::string>() : "";
}

Usage openai_usage(const Json& u) {
  Usage usage;
  usage.requests = 1;
  usage.input = u.value("prompt_tokens", 0LL);
  usage.output = u.value("completion_tokens", 0LL);
  if (auto d = u.find("prompt_tokens_details"); d != u.end() && d->is_object())
    usage.cached = d->value("cached_tokens", 0LL);
  else
    usage.cached = u.value("cached_tokens", 0LL);  // llama.cpp puts it at the top level
  if (auto d = u.find("completion_tokens_details"); d != u.end() && d->is_object())
    usage.reasoning = d->value("reasoning_tokens", 0LL);
  return usage;
}

std::string content_text(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array())  // content parts
    for (const auto& part : content)
      if (part.is_object() && part.value("type", "") == "text") out += part.value("text", "");
  return out;
}

void split_reasoning(ChatResponse& r, std::string reasoning) {
  std::string think = take_think_block(r.content);
  r.reasoning = !reasoning.empty() ? std::move(reasoning) : std::move(think);
}

class OpenAiStream : public StreamDecoder {
 public:
  std::optional<LlmFailure> on_event(const SseEvent& event) override {
    if (event.event == "error") return failure_from_text(event.data);
    if (event.data == "[DONE]") {
      done_ = true;
      return std::nullopt;
    }
    auto parsed = parse_server_json(event.data, "stream");
    if (!parsed) return parsed.error();
    const Json& chunk = *parsed;
    if (chunk.contains("error")) return failure_from_error_json(chunk);
    if (auto m = chunk.find("model"); m != chunk.end() && m->is_string())
      response_.model = m->get<std::string>();
    if (auto u = chunk.find("usage"); u != chunk.end() && u->is_object()) {
      response_.usage = openai_usage(*u);
      has_usage_ = true;
    }
    for (const auto& choice : chunk.value("choices", Json::array())) {
      const Json delta = choice.value("delta", Json::object());
      if (auto c = delta.find("content"); c != delta.end() && c->is_string())
        response_.content += c->get<std::string>();
      reasoning_ += reasoning_of(delta);
      for (const auto& call : delta.value("tool_calls", Json::array())) {
        const std::size_t index = call.value("index", calls_.size());
        if (calls_.size() <= index) calls_.resize(index + 1);
        ToolCall& c = calls_[index];
        if (auto id = call.find("id"); id != call.end() && id->is_string())
          c.id = id->get<std::string>();
        const Json fn = call.value("function", Json::object());
        if (auto n = fn.find("name"); n != fn.end() && n->is_string())
          c.name += n->get<std::string>();
        if (auto a = fn.find("arguments"); a != fn.end() && a->is_string())
          c.arguments += a->get<std::string>();
      }
      if (std::string f = finish_reason_of(choice); !f.empty()) response_.finish_reason = f;
    }
    return std::nullopt;
  }

  std::expected<ChatResponse, LlmFailure> finish() override {
    if (response_.finish_reason.empty())
      return std::unexpected(LlmFailure{FailureKind::stream_error, 200,
                                        done_
                                            ? "stream ended without a finish reason"
                                            : "stream ended early (no finish reason, no [DONE])"});
    response_.tool_calls = calls_;
    split_reasoning(response_, reasoning_);
    if (!has_usage_) response_.usage.requests = 1;
    response_.usage.estimated = !has_usage_;
    return response_;
  }

 private:
  ChatResponse response_;
  std::string reasoning_;
  std::vector<ToolCall> calls_;
  bool done_ = false;
  bool has_usage_ = false;

  static LlmFailure failure_from_text(const std::string& data) {
    try {
      return failure_from_error_json(Json::parse(data));
    } catch (const nlohmann::json::exception&) {
      return LlmFailure{FailureKind::stream_error, 200, text::excerpt(data, 200)};
    }
  }
};

}  // namespace

std::string reasoning_of(const Json& message) {
  if (auto d = message.find("reasoning_details");
      d != message.end() && d->is_array() && !d->empty()) {
    std::string out;
    for (const auto& item : *d) {
      if (!item.is_object()) continue;
      for (const char* key : {"text", "summary"})
        if (auto t = item.find(key); t != item.end() && t->is_string())
          out += t->get<std::string>();
    }
    if (!out.empty()) return out;
  }
  for (const char* key : {"reasoning_content", "reasoning"})
    if (auto r = message.find(key);
        r != message.end() && r->is_string() && !r->get<std::string>().empty())
      return r->get<std::string>();
  return {};
}

Json openai_request_body(const ChatRequest& request, const ResolvedModel& model, bool stream) {
  const auto& o = model.options;
  Json body = {{"model", model.model}, {"messages", openai_messages(request.messages)}};
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (const auto& t : request.tools)
      tools.push_back(
          {{"type", "function"},
           {"function",
            {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
    body["tools"] = tools;
  }
  if (auto t = request.sampling.temperature ? request.sampling.temperature : o.temperature)
    body["temperature"] = *t;
  if (auto p = request.sampling.top_p ? request.sampling.top_p : o.top_p) body["top_p"] = *p;
  if (auto m = request.sampling.max_tokens ? request.sampling.max_tokens : o.max_tokens)
    body[o.max_tokens_field.value_or("max_tokens")] = *m;
  if (request.sampling.seed) body["seed"] = *request.sampling.seed;
  if (!request.sampling.stop.empty()) body["stop"] = request.sampling.stop;
  if (model.reasoning_effort) body["reasoning_effort"] = *model.reasoning_effort;
  if (o.chat_template_kwargs) body["chat_template_kwargs"] = *o.chat_template_kwargs;
  switch (request.response_format.kind) {
    case ResponseFormat::Kind::text:
      break;
    case ResponseFormat::Kind::json_object:
      body["response_format"] = {{"type", "json_object"}};
      break;
    case ResponseFormat::Kind::json_schema:
      body["response_format"] = {
          {"type", "json_schema"},
          {"json_schema",
           {{"name",
             request.response_format.name.empty() ? "response" : request.response_format.name},
            {"schema", request.response_format.schema},
            {"strict", true}}}};
      break;
  }
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  if (o.extra_body) body.merge_patch(*o.extra_body);
  return body;
}

std::expected<ChatResponse, LlmFailure> parse_openai_response(std::string_view text) {
  auto parsed = parse_server_json(text, "response");
  if (!parsed) return std::unexpected(parsed.error());
  const Json& j = *parsed;
  if (j.contains("error") || j.value("object", "") == "error")
    return std::unexpected(failure_from_error_json(j));
  const Json choices = j.value("choices", Json::array());
  if (!choices.is_array() || choices.empty() || !choices[0].is_object())
    return std::unexpected(LlmFailure{FailureKind::invalid_response, 200,
                                      "response has no choices: " + text::excerpt(text, 120)});
  const Json message = choices[0].value("message", Json::object());
  ChatResponse r;
  r.content = content_text(message.value("content", Json()));
  for (const auto& call : message.value("tool_calls", Json::array())) {
    const Json fn = call.value("function", Json::object());
    Json args = fn.value("arguments", Json(""));
    r.tool_calls.push_back({call.value("id", ""), fn.value("name", ""),
                            args.is_string() ? args.get<std::string>() : args.dump()});
  }
  r.finish_reason = finish_reason_of(choices[0]);
  split_reasoning(r, reasoning_of(message));
  r.model = j.value("model", "");
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    r.usage = openai_usage(*u);
  } else {
    r.usage.requests = 1;
    r.usage.estimated = true;
  }
  return r;
}

std::unique_ptr<StreamDecoder> make_openai_stream_decoder() {
  return std::make_unique<OpenAiStream>();
}

}  // namespace upskill::llm
