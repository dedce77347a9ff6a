// The scripted OpenAI-compatible and Anthropic server of the tests and the demo (see
// scripted_server.hpp).
#include "scripted_server.hpp"

#include <httplib.h>

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

std::string anthropic_body(const Json& reply, const std::string& model) {
  Json body = {{"id", "msg_scripted"},
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
  Json start_message = {{"id", "msg_scripted"},
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

Json default_error_body(int status, bool anthropic) {
  std::string type = status == 429   ? "rate_limit_error"
                     : status >= 500 ? "server_error"
                                     : "invalid_request_error";
  if (status == 529) type = "overloaded_error";
  const std::string message = "scripted failure " + std::to_string(status);
  if (anthropic) return {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
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

ScriptedServer::Rule* ScriptedServer::match(const Json& body, bool anthropic) {
  const std::string model = body.value("model", "");
  const int turn = turn_of(body);
  for (auto& rule : rules_) {
    const Json& m = rule.match;
    if (m.contains("model") && m["model"].get<std::string>() != model) continue;
    if (m.contains("turn") && m["turn"].get<int>() != turn) continue;
    if (m.contains("results") && m["results"].get<int>() != results_of(body)) continue;
    if (m.contains("api") && m["api"].get<std::string>() != (anthropic ? "anthropic" : "openai"))
      continue;
    if (m.contains("message") &&
        !std::regex_search(last_user_text(body), std::regex(m["message"].get<std::string>())))
      continue;
    if (m.contains("any_message") &&
        !std::regex_search(all_text(body), std::regex(m["any_message"].get<std::string>())))
      continue;
    // Over the whole request as sent (tool definitions included: an agent lists its skills there).
    if (m.contains("request") &&
        !std::regex_search(body.dump(), std::regex(m["request"].get<std::string>())))
      continue;
    if (m.contains("no_request") &&
        std::regex_search(body.dump(), std::regex(m["no_request"].get<std::string>())))
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

  auto chat = [this, record](const httplib::Request& req, httplib::Response& res, bool anthropic) {
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
      res.set_content(default_error_body(401, anthropic).dump(), "application/json");
      return;
    }
    Json reply, fault;
    std::string rule_name;
    {
      std::lock_guard lock(mutex_);
      Rule* rule = match(body, anthropic);
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
    const std::string model = body.value("model", "scripted");
    const bool stream = body.value("stream", false);
    const std::string type = fault.is_object() ? fault.value("type", "") : "";
    if (type == "slow_first_byte")
      std::this_thread::sleep_for(std::chrono::milliseconds(fault.value("delay_ms", 1000)));
    else if (delay_ms_ > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    if (type == "status" || type == "quota" || type == "context_overflow" || type == "overloaded") {
      int status = fault.value("status", 500);
      Json error_body =
          fault.contains("body") ? fault["body"] : default_error_body(status, anthropic);
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
        res.set_content(default_error_body(500, anthropic).dump(), "application/json");
        return;
      }
      res.status = 200;
      res.set_content(anthropic ? anthropic_body(reply, model) : openai_body(reply, model),
                      "application/json");
      return;
    }
    const bool with_finish = type != "no_finish";
    auto events = anthropic ? anthropic_stream(reply, model, with_finish)
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

  server_->Post("/v1/chat/completions",
                [chat](const httplib::Request& q, httplib::Response& s) { chat(q, s, false); });
  server_->Post("/chat/completions",
                [chat](const httplib::Request& q, httplib::Response& s) { chat(q, s, false); });
  server_->Post("/v1/messages",
                [chat](const httplib::Request& q, httplib::Response& s) { chat(q, s, true); });
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
