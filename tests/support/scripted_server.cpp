// The scripted OpenAI-compatible and Anthropic server of the tests and the demo (see
// scripted_server.hpp).
#include "scripted_server.hpp"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <regex>

namespace upskill::testing {

namespace {

using namespace std::chrono_literals;

int turn_of(const Json& body) {
  int assistants = 0;
  for (const auto& m : body.value("messages", Json::array()))
    if (m.value("role", "") == "assistant") ++assistants;
  return assistants + 1;
}

// The tool results a request carries: OpenAI `tool` messages, Anthropic `tool_result` blocks (an
// agent may merge several into one message, so messages are not counted).
int results_of(const Json& body) {
  int n = 0;
  for (const auto& m : body.value("messages", Json::array())) {
    if (m.value("role", "") == "tool") ++n;
    const Json content = m.value("content", Json());
    if (content.is_array())
      for (const auto& part : content)
        if (part.is_object() && part.value("type", "") == "tool_result") ++n;
  }
  return n;
}

std::string text_of(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array())
    for (const auto& part : content) {
      if (part.is_object() && part.contains("text") && part["text"].is_string())
        out += part["text"].get<std::string>();
      if (part.is_object() && part.contains("content") && part["content"].is_string())
        out += part["content"].get<std::string>();
    }
  return out;
}

std::string last_user_text(const Json& body) {
  const Json messages = body.value("messages", Json::array());
  for (auto it = messages.rbegin(); it != messages.rend(); ++it)
    if (it->value("role", "") == "user" || it->value("role", "") == "tool")
      return text_of(it->value("content", Json()));
  return {};
}

std::string all_text(const Json& body) {
  std::string out = body.contains("system") ? text_of(body["system"]) : "";
  for (const auto& m : body.value("messages", Json::array()))
    out += "\n" + text_of(m.value("content", Json()));
  return out;
}

Json usage_of(const Json& reply) {
  if (reply.contains("usage")) return reply["usage"];
  return Json{{"prompt_tokens", 10}, {"completion_tokens", 5}};
}

Json tool_calls_of(const Json& reply) {
  Json calls = Json::array();
  int n = 0;
  for (const auto& c : reply.value("tool_calls", Json::array())) {
    const Json args = c.value("arguments", Json::object());
    calls.push_back({{"id", c.value("id", "call_" + std::to_string(++n))},
                     {"name", c.value("name", "")},
                     {"arguments", args.is_string() ? args.get<std::string>() : args.dump()}});
  }
  return calls;
}

std::string finish_of(const Json& reply) {
  if (reply.contains("finish_reason")) return reply["finish_reason"].get<std::string>();
  return reply.value("tool_calls", Json::array()).empty() ? "stop" : "tool_calls";
}

// ---- OpenAI ----

Json openai_message(const Json& reply) {
  Json message = {{"role", "assistant"}};
  std::string content = reply.value("content", "");
  const std::string reasoning = reply.value("reasoning", "");
  const std::string field = reply.value("reasoning_field", "reasoning_content");
  if (!reasoning.empty()) {
    if (field == "think")
      content = "<think>" + reasoning + "</think>\n" + content;
    else if (field == "reasoning_details")
      message["reasoning_details"] =
          Json::array({{{"type", "reasoning.text"}, {"text", reasoning}}});
    else
      message[field] = reasoning;
  }
  message["content"] = content;
  Json calls = Json::array();
  for (const auto& c : tool_calls_of(reply))
    calls.push_back({{"id", c["id"]},
                     {"type", "function"},
                     {"function", {{"name", c["name"]}, {"arguments", c["arguments"]}}}});
  if (!calls.empty()) message["tool_calls"] = calls;
  return message;
}

Json openai_usage(const Json& u) {
  Json out = {{"prompt_tokens", u.value("prompt_tokens", 0)},
              {"completion_tokens", u.value("completion_tokens", 0)},
              {"total_tokens", u.value("prompt_tokens", 0) + u.value("completion_tokens", 0)}};
  if (u.contains("cached_tokens"))
    out["prompt_tokens_details"] = {{"cached_tokens", u["cached_tokens"]}};
  if (u.contains("reasoning_tokens"))
    out["completion_tokens_details"] = {{"reasoning_tokens", u["reasoning_tokens"]}};
  return out;
}

std::string openai_body(const Json& reply, const std::string& model) {
  Json body = {{"id", "chatcmpl-scripted"},
               {"object", "chat.completion"},
               {"model", reply.value("model", model)},
               {"choices", Json::array({{{"index", 0},
                                         {"message", openai_message(reply)},
                                         {"finish_reason", finish_of(reply)}}})}};
  const Json usage = usage_of(reply);
  if (!usage.is_null()) body["usage"] = openai_usage(usage);
  return body.dump();
}

std::string sse(const Json& j) {
  return "data: " + j.dump() + "\n\n";
}

std::vector<std::string> openai_stream(const Json& reply, const std::string& model,
                                       bool with_finish) {
  const std::string m = reply.value("model", model);
  auto chunk = [&](Json delta, Json finish = nullptr) {
    return sse(
        {{"id", "chatcmpl-scripted"},
         {"object", "chat.completion.chunk"},
         {"model", m},
         {"choices", Json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}});
  };
  std::vector<std::string> events;
  events.push_back(": keep-alive comment\n\n");
  events.push_back(chunk({{"role", "assistant"}, {"content", ""}}));
  const std::string reasoning = reply.value("reasoning", "");
  const std::string field = reply.value("reasoning_field", "reasoning_content");
  std::string content = reply.value("content", "");
  if (!reasoning.empty()) {
    if (field == "think")
      content = "<think>" + reasoning + "</think>\n" + content;
    else if (field == "reasoning_details")
      events.push_back(chunk({{"reasoning_details",
                               Json::array({{{"type", "reasoning.text"}, {"text", reasoning}}})}}));
    else
      events.push_back(chunk({{field, reasoning}}));
  }
  for (std::size_t i = 0; i < content.size(); i += 7)
    events.push_back(chunk({{"content", content.substr(i, 7)}}));
  int index = 0;
  for (const auto& c : tool_calls_of(reply)) {
    const std::string args = c["arguments"];
    const std::size_t half = args.size() / 2;
    events.push_back(chunk(
        {{"tool_calls",
          Json::array(
              {{{"index", index},
                {"id", c["id"]},
                {"type", "function"},
                {"function", {{"name", c["name"]}, {"arguments", args.substr(0, half)}}}}})}}));
    events.push_back(chunk(
        {{"tool_calls",
          Json::array({{{"index", index}, {"function", {{"arguments", args.substr(half)}}}}})}}));
    ++index;
  }
  if (with_finish) events.push_back(chunk(Json::object(), finish_of(reply)));
  const Json usage = usage_of(reply);
  if (!usage.is_null())
    events.push_back(sse({{"id", "chatcmpl-scripted"},
                          {"object", "chat.completion.chunk"},
                          {"model", m},
                          {"choices", Json::array()},
                          {"usage", openai_usage(usage)}}));
  events.push_back("data: [DONE]\n\n");
  return events;
}

// ---- Anthropic ----

std::string anthropic_stop(const std::string& finish) {
  if (finish == "length") return "max_tokens";
  if (finish == "tool_calls") return "tool_use";
  return "end_turn";
}

Json anthropic_usage(const Json& u) {
  const int cached = u.value("cached_tokens", 0);
  return {{"input_tokens", u.value("prompt_tokens", 0) - cached},
          {"output_tokens", u.value("completion_tokens", 0)},
          {"cache_read_input_tokens", cached},
          {"cache_creation_input_tokens", 0}};
}

Json anthropic_blocks(const Json& reply) {
  Json blocks = Json::array();
  if (reply.contains("reasoning"))
    blocks.push_back({{"type", "thinking"}, {"thinking", reply["reasoning"]}, {"signature", "x"}});
  blocks.push_back({{"type", "text"}, {"text", reply.value("content", "")}});
  for (const auto& c : tool_calls_of(reply))
    blocks.push_back({{"type", "tool_use"},
                      {"id", c["id"]},
                      {"name", c["name"]},
                      {"input", Json::parse(c["arguments"].get<std::string>())}});
  return blocks;
}

// Each response its own id, as real APIs give: agents group a response's records by it (Claude
// Code writes one session record per content block, all carrying the message's id).
std::string response_id(const char* prefix) {
  static std::atomic<unsigned long> next{0};
  return prefix + std::to_string(++next);
}

std::string anthropic_body(const Json& reply, const std::string& model) {
  Json body = {{"id", response_id("msg_scripted_")},
               {"type", "message"},
               {"role", "assistant"},
               {"model", reply.value("model", model)},
               {"content", anthropic_blocks(reply)},
               {"stop_reason", anthropic_stop(finish_of(reply))}};
  const Json usage = usage_of(reply);
  if (!usage.is_null()) body["usage"] = anthropic_usage(usage);
  return body.dump();
}

std::string named(const std::string& event, const Json& data) {
  return "event: " + event + "\ndata: " + data.dump() + "\n\n";
}

std::vector<std::string> anthropic_stream(const Json& reply, const std::string& model,
                                          bool with_finish) {
  const Json usage = usage_of(reply);
  Json u = usage.is_null() ? Json() : anthropic_usage(usage);
  std::vector<std::string> events;
  Json start_message = {{"id", response_id("msg_scripted_")},
                        {"type", "message"},
                        {"role", "assistant"},
                        {"model", reply.value("model", model)},
                        {"content", Json::array()}};
  if (!u.is_null())
    start_message["usage"] = {{"input_tokens", u["input_tokens"]},
                              {"output_tokens", 1},
                              {"cache_read_input_tokens", u["cache_read_input_tokens"]}};
  events.push_back(named("message_start", {{"type", "message_start"}, {"message", start_message}}));
  events.push_back(named("ping", {{"type", "ping"}}));
  int index = 0;
  for (const auto& block : anthropic_blocks(reply)) {
    const std::string type = block["type"];
    Json start = block;
    if (type == "text") start["text"] = "";
    if (type == "thinking") start["thinking"] = "";
    if (type == "tool_use") start["input"] = Json::object();
    events.push_back(
        named("content_block_start",
              {{"type", "content_block_start"}, {"index", index}, {"content_block", start}}));
    Json delta;
    if (type == "text") delta = {{"type", "text_delta"}, {"text", block["text"]}};
    if (type == "thinking") delta = {{"type", "thinking_delta"}, {"thinking", block["thinking"]}};
    if (type == "tool_use")
      delta = {{"type", "input_json_delta"}, {"partial_json", block["input"].dump()}};
    events.push_back(named("content_block_delta",
                           {{"type", "content_block_delta"}, {"index", index}, {"delta", delta}}));
    events.push_back(
        named("content_block_stop", {{"type", "content_block_stop"}, {"index", index}}));
    ++index;
  }
  if (with_finish) {
    Json md = {{"type", "message_delta"},
               {"delta", {{"stop_reason", anthropic_stop(finish_of(reply))}}}};
    if (!u.is_null()) md["usage"] = {{"output_tokens", u["output_tokens"]}};
    events.push_back(named("message_delta", md));
  }
  events.push_back(named("message_stop", {{"type", "message_stop"}}));
  return events;
}

// ---- OpenAI Responses API (Codex) ----

// A Responses request seen as chat messages, for the rules: `instructions` is the system text,
// input messages keep their role, a model's consecutive output items (text, function calls) make
// one assistant message, each function/tool call output is a `tool` message.
Json chat_view_of_responses(const Json& body) {
  Json view = {{"model", body.value("model", "")}, {"messages", Json::array()}};
  if (body.contains("instructions") && body["instructions"].is_string())
    view["system"] = body["instructions"];
  const Json input = body.value("input", Json::array());
  if (input.is_string()) {
    view["messages"].push_back({{"role", "user"}, {"content", input}});
    return view;
  }
  bool in_assistant = false;
  for (const auto& item : input) {
    if (!item.is_object()) continue;
    const std::string type = item.value("type", "message");
    const std::string role = item.value("role", "");
    if (type.ends_with("_call_output") || type == "function_call_output") {
      const Json out = item.value("output", Json(""));
      view["messages"].push_back(
          {{"role", "tool"}, {"content", out.is_string() ? out.get<std::string>() : out.dump()}});
      in_assistant = false;
    } else if (type == "message" && role != "assistant") {
      view["messages"].push_back({{"role", role}, {"content", item.value("content", Json(""))}});
      in_assistant = false;
    } else if (type == "message" || type.ends_with("_call") || type == "reasoning") {
      if (!in_assistant) view["messages"].push_back({{"role", "assistant"}, {"content", ""}});
      in_assistant = true;
      if (type == "message") view["messages"].back()["content"] = item.value("content", Json(""));
    }
  }
  return view;
}

Json responses_usage(const Json& u) {
  const int in = u.value("prompt_tokens", 0), out = u.value("completion_tokens", 0);
  return {{"input_tokens", in},
          {"input_tokens_details", {{"cached_tokens", u.value("cached_tokens", 0)}}},
          {"output_tokens", out},
          {"output_tokens_details", {{"reasoning_tokens", u.value("reasoning_tokens", 0)}}},
          {"total_tokens", in + out}};
}

// The output items of a reply: a reasoning item, the message, the function calls.
Json responses_items(const Json& reply) {
  Json items = Json::array();
  int n = 0;
  if (reply.contains("reasoning"))
    items.push_back(
        {{"type", "reasoning"},
         {"id", "rs_" + std::to_string(++n)},
         {"summary", Json::array({{{"type", "summary_text"}, {"text", reply["reasoning"]}}})}});
  const std::string content = reply.value("content", "");
  if (!content.empty())
    items.push_back({{"type", "message"},
                     {"id", "msg_" + std::to_string(++n)},
                     {"role", "assistant"},
                     {"status", "completed"},
                     {"content", Json::array({{{"type", "output_text"},
                                               {"text", content},
                                               {"annotations", Json::array()}}})}});
  for (const auto& c : tool_calls_of(reply))
    items.push_back({{"type", "function_call"},
                     {"id", "fc_" + std::to_string(++n)},
                     {"call_id", c["id"]},
                     {"name", c["name"]},
                     {"arguments", c["arguments"]},
                     {"status", "completed"}});
  return items;
}

Json responses_object(const Json& reply, const std::string& model, const std::string& status,
                      const Json& output) {
  Json r = {{"id", "resp_scripted"},
            {"object", "response"},
            {"created_at", 1767225600},
            {"status", status},
            {"model", reply.value("model", model)},
            {"output", output}};
  const Json usage = usage_of(reply);
  if (status == "completed" && !usage.is_null()) r["usage"] = responses_usage(usage);
  return r;
}

std::vector<std::string> responses_stream(const Json& reply, const std::string& model,
                                          bool with_finish) {
  std::vector<std::string> events;
  int seq = 0;
  auto event = [&](const std::string& type, Json data) {
    data["type"] = type;
    data["sequence_number"] = seq++;
    events.push_back(named(type, data));
  };
  event("response.created",
        {{"response", responses_object(reply, model, "in_progress", Json::array())}});
  const Json items = responses_items(reply);
  int index = 0;
  for (const auto& item : items) {
    Json added = item;
    if (item["type"] == "message") added["content"] = Json::array();
    if (item["type"] == "function_call") added["arguments"] = "";
    event("response.output_item.added", {{"output_index", index}, {"item", added}});
    if (item["type"] == "message") {
      const std::string text = item["content"][0]["text"];
      for (std::size_t i = 0; i < text.size(); i += 7)
        event("response.output_text.delta", {{"item_id", item["id"]},
                                             {"output_index", index},
                                             {"content_index", 0},
                                             {"delta", text.substr(i, 7)}});
      event(
          "response.output_text.done",
          {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0}, {"text", text}});
    }
    if (item["type"] == "function_call")
      event("response.function_call_arguments.done",
            {{"item_id", item["id"]}, {"output_index", index}, {"arguments", item["arguments"]}});
    event("response.output_item.done", {{"output_index", index}, {"item", item}});
    ++index;
  }
  if (with_finish)
    event("response.completed", {{"response", responses_object(reply, model, "completed", items)}});
  return events;
}

// ---- Gemini API (Gemini CLI) ----

// A generateContent request seen as chat messages: `model` turns are the assistant's, each
// functionResponse part is a tool result.
Json chat_view_of_gemini(const Json& body, const std::string& model) {
  Json view = {{"model", model}, {"messages", Json::array()}};
  const Json system = body.value("systemInstruction", Json::object());
  if (system.is_object()) view["system"] = system.value("parts", Json::array());
  if (system.is_string()) view["system"] = system;
  for (const auto& c : body.value("contents", Json::array())) {
    if (!c.is_object()) continue;
    const std::string role = c.value("role", "user");
    Json text_parts = Json::array();
    for (const auto& part : c.value("parts", Json::array())) {
      if (!part.is_object()) continue;
      if (part.contains("functionResponse"))
        view["messages"].push_back(
            {{"role", "tool"},
             {"content", part["functionResponse"].value("response", Json()).dump()}});
      else if (part.contains("text"))
        text_parts.push_back({{"type", "text"}, {"text", part["text"]}});
    }
    if (role == "model")
      view["messages"].push_back({{"role", "assistant"}, {"content", text_parts}});
    else if (!text_parts.empty())
      view["messages"].push_back({{"role", "user"}, {"content", text_parts}});
  }
  return view;
}

Json gemini_chunk(const Json& parts, const Json& finish, const Json& usage,
                  const std::string& model) {
  Json candidate = {{"content", {{"role", "model"}, {"parts", parts}}}, {"index", 0}};
  if (!finish.is_null()) candidate["finishReason"] = finish;
  Json chunk = {{"candidates", Json::array({candidate})}, {"modelVersion", model}};
  if (!usage.is_null()) {
    const int in = usage.value("prompt_tokens", 0), out = usage.value("completion_tokens", 0),
              thoughts = usage.value("reasoning_tokens", 0);
    chunk["usageMetadata"] = {{"promptTokenCount", in},
                              {"candidatesTokenCount", out - thoughts},
                              {"thoughtsTokenCount", thoughts},
                              {"cachedContentTokenCount", usage.value("cached_tokens", 0)},
                              {"totalTokenCount", in + out}};
  }
  return chunk;
}

Json gemini_parts(const Json& reply) {
  Json parts = Json::array();
  if (reply.contains("reasoning"))
    parts.push_back({{"text", reply["reasoning"]}, {"thought", true}});
  const std::string content = reply.value("content", "");
  if (!content.empty()) parts.push_back({{"text", content}});
  for (const auto& c : tool_calls_of(reply))
    parts.push_back({{"functionCall",
                      {{"id", c["id"]},
                       {"name", c["name"]},
                       {"args", Json::parse(c["arguments"].get<std::string>())}}}});
  return parts;
}

std::string gemini_body(const Json& reply, const std::string& model) {
  return gemini_chunk(gemini_parts(reply), "STOP", usage_of(reply), reply.value("model", model))
      .dump();
}

std::vector<std::string> gemini_stream(const Json& reply, const std::string& model,
                                       bool with_finish) {
  const std::string m = reply.value("model", model);
  std::vector<std::string> events;
  const Json parts = gemini_parts(reply);
  // Each part a chunk of its own; the last carries the finish reason and the usage.
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    events.push_back(
        sse(gemini_chunk(Json::array({parts[i]}), last && with_finish ? Json("STOP") : Json(),
                         last ? usage_of(reply) : Json(), m)));
  }
  if (parts.empty()) events.push_back(sse(gemini_chunk(Json::array(), "STOP", usage_of(reply), m)));
  return events;
}

Json default_error_body(int status, Api api) {
  const bool anthropic = api == Api::anthropic;
  std::string type = status == 429   ? "rate_limit_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  if (status == 529) type = "overloaded_error";
  const std::string message = "scripted failure " + std::to_string(status);
  if (anthropic) return {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
  if (api == Api::gemini) {
    const std::string code = status == 401   ? "UNAUTHENTICATED"
                             : status == 429 ? "RESOURCE_EXHAUSTED"
                             : status >= 500 ? "INTERNAL"
                                             : "INVALID_ARGUMENT";
    return {{"error", {{"code", status}, {"message", message}, {"status", code}}}};
  }
  return {{"error", {{"message", message}, {"type", type}, {"code", nullptr}}}};
}

// The key as an OpenAI client (Authorization: Bearer), an Anthropic client (x-api-key) or Gemini
// (x-goog-api-key, ?key=) sends it.
bool has_key(const httplib::Request& req, const std::string& key) {
  return req.get_header_value("Authorization") == "Bearer " + key ||
         req.get_header_value("x-api-key") == key ||
         req.get_header_value("x-goog-api-key") == key || req.get_param_value("key") == key;
}

void send_events(httplib::Response& res, std::vector<std::string> events, bool close_early,
                 std::string tail = "") {
  auto shared = std::make_shared<std::vector<std::string>>(std::move(events));
  auto tail_text = std::make_shared<std::string>(std::move(tail));
  res.set_chunked_content_provider(
      "text/event-stream", [shared, close_early, tail_text](size_t, httplib::DataSink& sink) {
        const std::size_t n = close_early ? shared->size() / 2 : shared->size();
        for (std::size_t i = 0; i < n; ++i) sink.write((*shared)[i].data(), (*shared)[i].size());
        if (!tail_text->empty()) sink.write(tail_text->data(), tail_text->size());
        if (close_early) return false;  // drop the connection mid-stream
        sink.done();
        return true;
      });
}

}  // namespace

ScriptedServer::ScriptedServer(Json script) : script_(std::move(script)) {
  int n = 0;
  for (const auto& r : script_.value("rules", Json::array())) {
    Rule rule;
    rule.name = r.value("name", "rule" + std::to_string(++n));
    rule.match = r.value("match", Json::object());
    rule.reply = r.value("reply", Json::object());
    for (const auto& f : r.value("faults", Json::array())) rule.faults.push_back(f);
    rules_.push_back(std::move(rule));
  }
  health_loading_ = script_.value("health", Json::object()).value("loading", 0);
  required_key_ = script_.value("require_key", "");
  delay_ms_ = script_.value("delay_ms", 0);
  server_ = std::make_unique<httplib::Server>();
  install_routes();
}

ScriptedServer::~ScriptedServer() {
  stop();
}

int ScriptedServer::start(int port) {
  port_ = port == 0 ? server_->bind_to_any_port("127.0.0.1")
                    : (server_->bind_to_port("127.0.0.1", port) ? port : -1);
  if (port_ <= 0) return port_;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return port_;
}

void ScriptedServer::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string ScriptedServer::base_url() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/v1";
}

std::vector<RecordedRequest> ScriptedServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::size_t ScriptedServer::request_count() const {
  std::lock_guard lock(mutex_);
  return requests_.size();
}

static const char* api_name(Api api) {
  switch (api) {
    case Api::anthropic:
      return "anthropic";
    case Api::responses:
      return "responses";
    case Api::gemini:
      return "gemini";
    case Api::openai:
      break;
  }
  return "openai";
}

ScriptedServer::Rule* ScriptedServer::match(const Json& body, const std::string& raw, Api api) {
  const std::string model = body.value("model", "");
  const int turn = turn_of(body);
  for (auto& rule : rules_) {
    const Json& m = rule.match;
    if (m.contains("model") && m["model"].get<std::string>() != model) continue;
    if (m.contains("turn") && m["turn"].get<int>() != turn) continue;
    if (m.contains("results") && m["results"].get<int>() != results_of(body)) continue;
    if (m.contains("api") && m["api"].get<std::string>() != api_name(api)) continue;
    if (m.contains("message") &&
        !std::regex_search(last_user_text(body), std::regex(m["message"].get<std::string>())))
      continue;
    if (m.contains("any_message") &&
        !std::regex_search(all_text(body), std::regex(m["any_message"].get<std::string>())))
      continue;
    // Over the whole request as sent (tool definitions included: an agent lists its skills there).
    if (m.contains("request") &&
        !std::regex_search(raw, std::regex(m["request"].get<std::string>())))
      continue;
    if (m.contains("no_request") &&
        std::regex_search(raw, std::regex(m["no_request"].get<std::string>())))
      continue;
    return &rule;
  }
  return nullptr;
}

void ScriptedServer::install_routes() {
  auto record = [this](const httplib::Request& req, const std::string& rule) {
    RecordedRequest r{req.method, req.path, {}, req.body, Json(), rule};
    for (const auto& [k, v] : req.headers) r.headers[k] = v;
    try {
      r.json = Json::parse(req.body);
    } catch (...) {
    }
    requests_.push_back(std::move(r));
  };

  auto chat = [this, record](const httplib::Request& req, httplib::Response& res, Api api) {
    const bool anthropic = api == Api::anthropic;
    Json body;
    try {
      body = Json::parse(req.body);
    } catch (...) {
      res.status = 400;
      res.set_content(
          R"({"error":{"message":"request body is not JSON","type":"invalid_request_error"}})",
          "application/json");
      return;
    }
    if (!required_key_.empty() && !has_key(req, required_key_)) {
      std::lock_guard lock(mutex_);
      record(req, "");
      res.status = 401;
      res.set_content(default_error_body(401, api).dump(), "application/json");
      return;
    }
    // Gemini names the model in the path: /v1beta/models/MODEL:streamGenerateContent.
    std::string model = body.value("model", "scripted");
    bool stream = body.value("stream", false);
    if (api == Api::gemini) {
      const std::size_t slash = req.path.rfind("/models/"), colon = req.path.rfind(':');
      if (slash != std::string::npos && colon != std::string::npos && colon > slash + 8)
        model = req.path.substr(slash + 8, colon - slash - 8);
      stream = req.path.ends_with(":streamGenerateContent");
    }
    const Json view = api == Api::responses ? chat_view_of_responses(body)
                      : api == Api::gemini  ? chat_view_of_gemini(body, model)
                                            : body;
    Json reply, fault;
    std::string rule_name;
    {
      std::lock_guard lock(mutex_);
      Rule* rule = match(view, req.body, api);
      rule_name = rule ? rule->name : "";
      record(req, rule_name);
      if (!rule) {
        res.status = 400;
        res.set_content(Json{{"error",
                              {{"message", "no scripted rule matches this request"},
                               {"type", "invalid_request_error"}}}}
                            .dump(),
                        "application/json");
        return;
      }
      ++rule->hits;
      reply = rule->reply;
      if (rule->next_fault < rule->faults.size()) fault = rule->faults[rule->next_fault++];
    }
    const std::string type = fault.is_object() ? fault.value("type", "") : "";
    if (type == "slow_first_byte")
      std::this_thread::sleep_for(std::chrono::milliseconds(fault.value("delay_ms", 1000)));
    else if (delay_ms_ > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    if (type == "status" || type == "quota" || type == "context_overflow" || type == "overloaded") {
      int status = fault.value("status", 500);
      Json error_body = fault.contains("body") ? fault["body"] : default_error_body(status, api);
      if (type == "quota") {
        status = 429;
        error_body = {
            {"error",
             {{"message",
               "You exceeded your current quota, please check your plan and billing details."},
              {"type", "insufficient_quota"},
              {"code", "insufficient_quota"}}}};
      } else if (type == "overloaded") {
        status = 529;
        error_body = {{"type", "error"},
                      {"error", {{"type", "overloaded_error"}, {"message", "Overloaded"}}}};
      } else if (type == "context_overflow") {
        status = 400;
        error_body =
            fault.value("style", "openai") == "llamacpp"
                ? Json{{"error",
                        {{"code", 400},
                         {"type", "exceed_context_size_error"},
                         {"n_prompt_tokens", 40000},
                         {"n_ctx", 32768},
                         {"message",
                          "the request exceeds the available context size, try increasing it"}}}}
                : Json{{"error",
                        {{"message", "This model's maximum context length is 8192 tokens."},
                         {"type", "invalid_request_error"},
                         {"code", "context_length_exceeded"}}}};
      }
      res.status = status;
      if (fault.contains("retry_after"))
        res.set_header("Retry-After", fault["retry_after"].get<std::string>());
      res.set_content(error_body.is_string() ? error_body.get<std::string>() : error_body.dump(),
                      "application/json");
      return;
    }
    if (type == "malformed_json") {
      res.status = 200;
      res.set_content(stream ? "data: {\"choices\": [{\"delta\": {\"content\": \"tru\n\n"
                             : "{\"choices\": [ {\"message\": ",
                      stream ? "text/event-stream" : "application/json");
      return;
    }
    if (type == "reset") {
      // Headers go out, then the connection drops before any body.
      res.set_chunked_content_provider("application/json",
                                       [](size_t, httplib::DataSink&) { return false; });
      return;
    }
    if (!stream || type == "ignore_stream") {
      if (type == "mid_stream_error" || type == "error_after_200") {
        res.status = 200;
        res.set_content(default_error_body(500, api).dump(), "application/json");
        return;
      }
      res.status = 200;
      const std::string text =
          api == Api::anthropic ? anthropic_body(reply, model)
          : api == Api::responses
              ? responses_object(reply, model, "completed", responses_items(reply)).dump()
          : api == Api::gemini ? gemini_body(reply, model)
                               : openai_body(reply, model);
      res.set_content(text, "application/json");
      return;
    }
    const bool with_finish = type != "no_finish";
    auto events = api == Api::anthropic   ? anthropic_stream(reply, model, with_finish)
                  : api == Api::responses ? responses_stream(reply, model, with_finish)
                  : api == Api::gemini    ? gemini_stream(reply, model, with_finish)
                                          : openai_stream(reply, model, with_finish);
    if (type == "truncated_stream") {
      send_events(res, events, true);
    } else if (type == "mid_stream_error" || type == "legacy_error_line") {
      events.resize(std::min<std::size_t>(events.size(), 3));
      const Json err =
          anthropic ? Json{{"type", "error"},
                           {"error", {{"type", "overloaded_error"}, {"message", "Overloaded"}}}}
                    : Json{{"error", {{"message", "upstream provider failed"}, {"code", 502}}}};
      std::string tail = type == "legacy_error_line" ? "error: " + err.dump() + "\n\n"
                         : anthropic                 ? "event: error\ndata: " + err.dump() + "\n\n"
                                                     : "data: " + err.dump() + "\n\n";
      send_events(res, events, false, tail);
    } else {
      send_events(res, events, false);
    }
  };

  auto route = [this, chat](const std::string& pattern, Api api) {
    server_->Post(
        pattern, [chat, api](const httplib::Request& q, httplib::Response& s) { chat(q, s, api); });
  };
  route("/v1/chat/completions", Api::openai);
  route("/chat/completions", Api::openai);
  route("/v1/messages", Api::anthropic);
  route("/v1/responses", Api::responses);
  route("/responses", Api::responses);
  // Gemini: /v1beta/models/MODEL:generateContent and :streamGenerateContent (?alt=sse).
  route(R"(/v1(?:beta|alpha)?/models/[^/:]+:(?:stream)?[gG]enerateContent)", Api::gemini);
  server_->Get("/health", [this, record](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mutex_);
    record(req, "");
    if (health_loading_ > 0) {
      --health_loading_;
      res.status = 503;
      res.set_content(
          R"({"error":{"code":503,"message":"Loading model","type":"unavailable_error"}})",
          "application/json");
      return;
    }
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  server_->Get("/v1/models", [this, record](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mutex_);
    record(req, "");
    Json data = Json::array();
    for (const auto& id : script_.value("models", Json::array({"scripted-model"})))
      data.push_back({{"id", id}, {"object", "model"}, {"owned_by", "scripted"}});
    res.set_content(Json{{"object", "list"}, {"data", data}}.dump(), "application/json");
  });
}

}  // namespace upskill::testing
