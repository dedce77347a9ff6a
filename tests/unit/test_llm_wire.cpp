// llm/wire*: both dialects' requests, responses and streams, and every error-body shape.
#include <gtest/gtest.h>

#include "upskill/llm/errors.hpp"
#include "upskill/llm/sse.hpp"
#include "upskill/llm/wire.hpp"

namespace upskill::llm {
namespace {

TEST(Sse, SplitsEventsAcrossArbitraryChunksWithCrlfCommentsAndEventNames) {
  const std::string stream =
      ": OPENROUTER PROCESSING\r\n\r\nevent: message_start\r\ndata: {\"a\":1}\r\n\r\ndata: "
      "line1\ndata: line2\n\n"
      "id: 7\nretry: 10\ndata: [DONE]\n\n";
  for (std::size_t split : {1u, 3u, 7u, 1000u}) {
    SseParser parser;
    std::vector<SseEvent> events;
    for (std::size_t i = 0; i < stream.size(); i += split)
      for (auto& e : parser.feed(std::string_view(stream).substr(i, split))) events.push_back(e);
    for (auto& e : parser.finish()) events.push_back(e);
    ASSERT_EQ(events.size(), 3u) << "split " << split;
    EXPECT_EQ(events[0].event, "message_start");
    EXPECT_EQ(events[0].data, "{\"a\":1}");
    EXPECT_EQ(events[1].data, "line1\nline2");
    EXPECT_EQ(events[2].data, "[DONE]");
  }
}

TEST(Sse, LegacyErrorLineAndUnterminatedLastEvent) {
  SseParser parser;
  auto events = parser.feed("data: {\"x\":1}\n\nerror: {\"error\":{\"message\":\"boom\"}}\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].event, "error");
  EXPECT_EQ(events[1].data, "{\"error\":{\"message\":\"boom\"}}");
  EXPECT_TRUE(parser.feed("data: tail").empty());
  auto rest = parser.finish();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].data, "tail");
}

TEST(Errors, EveryBodyShapeIsUnderstood) {
  auto openai = parse_error_body(
      R"({"error":{"message":"m1","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}})");
  ASSERT_TRUE(openai);
  EXPECT_EQ(openai->message, "m1");
  EXPECT_EQ(openai->code, "context_length_exceeded");
  auto vllm = parse_error_body(
      R"({"object":"error","message":"m2","type":"BadRequestError","param":null,"code":400})");
  ASSERT_TRUE(vllm);
  EXPECT_EQ(vllm->message, "m2");
  EXPECT_EQ(vllm->code, "400");
  auto ollama = parse_error_body(R"({"error":"model 'x' not found"})");
  ASSERT_TRUE(ollama);
  EXPECT_EQ(ollama->message, "model 'x' not found");
  auto openrouter =
      parse_error_body(R"({"error":{"code":429,"message":"m3","metadata":{"provider_name":"p"}}})");
  ASSERT_TRUE(openrouter);
  EXPECT_EQ(openrouter->code, "429");
  auto anthropic = parse_error_body(
      R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"r"})");
  ASSERT_TRUE(anthropic);
  EXPECT_EQ(anthropic->type, "overloaded_error");
  auto llamacpp = parse_error_body(
      R"({"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error","n_prompt_tokens":9,"n_ctx":8}})");
  ASSERT_TRUE(llamacpp);
  EXPECT_FALSE(parse_error_body("<html>502 Bad Gateway</html>"));
  EXPECT_FALSE(parse_error_body(R"({"choices":[]})"));
}

TEST(Errors, Classification) {
  auto body = [](const char* text) { return parse_error_body(text); };
  EXPECT_EQ(classify(429, body(R"({"error":{"message":"slow down","type":"requests"}})")),
            FailureKind::rate_limited);
  EXPECT_EQ(
      classify(
          429,
          body(
              R"({"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}})")),
      FailureKind::quota_exhausted);
  EXPECT_EQ(classify(402, std::nullopt), FailureKind::quota_exhausted);
  EXPECT_EQ(classify(529, std::nullopt), FailureKind::overloaded);
  EXPECT_EQ(classify(500, std::nullopt), FailureKind::server_error);
  EXPECT_EQ(classify(503, std::nullopt), FailureKind::server_error);
  EXPECT_EQ(classify(408, std::nullopt), FailureKind::timeout);
  EXPECT_EQ(classify(401, std::nullopt), FailureKind::auth);
  EXPECT_EQ(classify(403, std::nullopt), FailureKind::auth);
  EXPECT_EQ(
      classify(
          404,
          body(R"({"error":{"message":"The model `x` does not exist","code":"model_not_found"}})")),
      FailureKind::not_found);
  EXPECT_EQ(classify(400, std::nullopt), FailureKind::bad_request);
  EXPECT_EQ(classify(400, body(R"({"error":{"code":"context_length_exceeded","message":"m"}})")),
            FailureKind::context_overflow);
  EXPECT_EQ(classify(400, body(R"({"error":{"type":"exceed_context_size_error","message":"m"}})")),
            FailureKind::context_overflow);
  EXPECT_EQ(
      classify(
          500,
          body(
              R"({"error":{"message":"the request exceeds the available context size, try increasing it"}})")),
      FailureKind::context_overflow);  // older llama.cpp sent 500
  EXPECT_EQ(classify(0, body(R"({"error":{"code":429,"message":"m"}})")),
            FailureKind::rate_limited);
  EXPECT_EQ(classify(0, body(R"({"error":{"message":"upstream failed","code":502}})")),
            FailureKind::stream_error);
  for (auto k : {FailureKind::rate_limited, FailureKind::overloaded, FailureKind::server_error,
                 FailureKind::timeout, FailureKind::transport, FailureKind::stream_error,
                 FailureKind::invalid_response})
    EXPECT_TRUE(is_retryable(k)) << to_string(k);
  for (auto k : {FailureKind::quota_exhausted, FailureKind::context_overflow, FailureKind::auth,
                 FailureKind::not_found, FailureKind::bad_request, FailureKind::cassette_miss,
                 FailureKind::cancelled})
    EXPECT_FALSE(is_retryable(k)) << to_string(k);
}

TEST(Errors, RetryAfterSecondsAndHttpDate) {
  const auto now =
      std::chrono::system_clock::from_time_t(1445412480);  // Wed, 21 Oct 2015 07:28:00 GMT
  EXPECT_EQ(parse_retry_after("2", now)->count(), 2000);
  EXPECT_EQ(parse_retry_after("0.5", now)->count(), 500);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now)->count(), 30000);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now)->count(), 0);  // in the past
  EXPECT_EQ(parse_retry_after("1m30s", now)->count(), 90000);
  EXPECT_EQ(parse_retry_after("2s", now)->count(), 2000);
  EXPECT_EQ(parse_retry_after("250ms", now)->count(), 250);
  EXPECT_EQ(parse_retry_after("1h", now)->count(), 3600000);
  EXPECT_FALSE(parse_retry_after("soon", now));
  EXPECT_FALSE(parse_retry_after("", now));
}

TEST(Errors, Redact) {
  EXPECT_EQ(redact("key sk-123 and sk-123", "sk-123"), "key [REDACTED] and [REDACTED]");
  EXPECT_EQ(redact("nothing", ""), "nothing");
}

ResolvedModel openai_model() {
  ResolvedModel m;
  m.name = "m";
  m.model = "gpt-x";
  m.base_url = "http://h/v1";
  m.options.max_tokens_field = "max_completion_tokens";
  m.options.max_tokens = 100;
  m.options.chat_template_kwargs = Json{{"enable_thinking", false}};
  m.options.extra_body = Json{{"top_k", 20}};
  m.reasoning_effort = "low";
  m.api_key = Secret("sk-secret");
  return m;
}

ChatRequest sample_request() {
  ChatRequest r;
  r.messages = {Message::system("sys"), Message::user("hi")};
  Message call = Message::assistant("");
  call.tool_calls = {{"call_1", "write_file", R"({"path":"a"})"}};
  r.messages.push_back(call);
  r.messages.push_back(Message::tool_result("call_1", "write_file", "ok"));
  r.messages.push_back(Message::tool_result("call_2", "read_file", "data"));
  r.tools = {{"write_file", "Write a file", Json{{"type", "object"}}}};
  r.sampling.temperature = 0.2;
  r.sampling.seed = 7;
  r.response_format.kind = ResponseFormat::Kind::json_schema;
  r.response_format.schema = Json{{"type", "object"}};
  return r;
}

TEST(WireOpenAi, RequestBodyCarriesEveryOption) {
  const Json body = request_body(sample_request(), openai_model(), true);
  EXPECT_EQ(body["model"], "gpt-x");
  EXPECT_EQ(body["max_completion_tokens"], 100);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_EQ(body["reasoning_effort"], "low");
  EXPECT_EQ(body["chat_template_kwargs"]["enable_thinking"], false);
  EXPECT_EQ(body["top_k"], 20);
  EXPECT_EQ(body["temperature"], 0.2);
  EXPECT_EQ(body["seed"], 7);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["response_format"]["json_schema"]["schema"]["type"], "object");
  EXPECT_EQ(body["messages"][2]["tool_calls"][0]["function"]["name"], "write_file");
  EXPECT_TRUE(body["messages"][2]["content"].is_null());
  EXPECT_EQ(body["messages"][3]["tool_call_id"], "call_1");
  EXPECT_EQ(body["tools"][0]["function"]["name"], "write_file");
  EXPECT_EQ(body.dump().find("sk-secret"), std::string::npos);
  const auto headers = request_headers(openai_model());
  EXPECT_EQ(headers.back().second, "Bearer sk-secret");
}

TEST(WireOpenAi, ResponseWithUsageToolCallsAndReasoningOrder) {
  auto r = parse_response(
      R"({"model":"served-id","choices":[{"message":{"content":"<think>ignored</think>answer",
      "reasoning_content":"rc","reasoning":"r","reasoning_details":[{"type":"reasoning.text","text":"rd"}],
      "tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],
      "usage":{"prompt_tokens":100,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":40},
               "completion_tokens_details":{"reasoning_tokens":7}}})",
      Dialect::openai);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->reasoning, "rd");    // reasoning_details first
  EXPECT_EQ(r->content, "answer");  // a <think> block never reaches the answer
  EXPECT_EQ(r->model, "served-id");
  EXPECT_EQ(r->finish_reason, "tool_calls");
  ASSERT_EQ(r->tool_calls.size(), 1u);
  EXPECT_EQ(r->tool_calls[0].arguments, "{\"a\":1}");
  EXPECT_EQ(r->usage.input, 100);
  EXPECT_EQ(r->usage.output, 20);
  EXPECT_EQ(r->usage.cached, 40);
  EXPECT_EQ(r->usage.reasoning, 7);
  EXPECT_FALSE(r->usage.estimated);

  auto rc = parse_response(
      R"({"choices":[{"message":{"content":"a","reasoning_content":"rc","reasoning":"r"},"finish_reason":"stop"}]})",
      Dialect::openai);
  EXPECT_EQ(rc->reasoning, "rc");
  EXPECT_TRUE(rc->usage.estimated);
  auto r2 = parse_response(
      R"({"choices":[{"message":{"content":"a","reasoning":"r"},"finish_reason":"stop"}]})",
      Dialect::openai);
  EXPECT_EQ(r2->reasoning, "r");
  auto think = parse_response(
      R"({"choices":[{"message":{"content":"  <think>t</think>\nanswer"},"finish_reason":"stop"}],
      "usage":{"prompt_tokens":3,"completion_tokens":2,"cached_tokens":1}})",
      Dialect::openai);
  EXPECT_EQ(think->reasoning, "t");
  EXPECT_EQ(think->content, "answer");
  EXPECT_EQ(think->usage.cached, 1);  // llama.cpp's top-level cached_tokens
}

TEST(WireOpenAi, ResponseFailures) {
  auto malformed = parse_response("{\"choices\": [", Dialect::openai);
  ASSERT_FALSE(malformed);
  EXPECT_EQ(malformed.error().kind, FailureKind::invalid_response);
  auto empty = parse_response(R"({"choices":[]})", Dialect::openai);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().kind, FailureKind::invalid_response);
  auto error200 = parse_response(R"({"error":{"message":"upstream","code":429}})", Dialect::openai);
  ASSERT_FALSE(error200);
  EXPECT_EQ(error200.error().kind, FailureKind::rate_limited);
}

std::expected<ChatResponse, LlmFailure> decode(Dialect d, const std::string& stream) {
  auto decoder = make_stream_decoder(d);
  SseParser parser;
  for (const auto& e : parser.feed(stream))
    if (auto f = decoder->on_event(e)) return std::unexpected(*f);
  for (const auto& e : parser.finish())
    if (auto f = decoder->on_event(e)) return std::unexpected(*f);
  return decoder->finish();
}

TEST(WireOpenAi, StreamAssemblesContentToolCallsAndUsage) {
  const std::string stream =
      "data: "
      "{\"model\":\"m\",\"choices\":[{\"delta\":{\"role\":\"assistant\",\"reasoning_content\":"
      "\"thin\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"king\",\"content\":\"Hel\"}}]}\n\n"
      "data: "
      "{\"choices\":[{\"delta\":{\"content\":\"lo\",\"tool_calls\":[{\"index\":0,\"id\":\"c1\","
      "\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\n"
      "data: "
      "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":1}\"}}"
      "]},\"finish_reason\":\"tool_calls\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":4}}\n\n"
      "data: [DONE]\n\n";
  auto r = decode(Dialect::openai, stream);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->content, "Hello");
  EXPECT_EQ(r->reasoning, "thinking");
  ASSERT_EQ(r->tool_calls.size(), 1u);
  EXPECT_EQ(r->tool_calls[0].arguments, "{\"a\":1}");
  EXPECT_EQ(r->usage.input, 11);
  EXPECT_EQ(r->usage.output, 4);
  EXPECT_EQ(r->model, "m");
}

TEST(WireOpenAi, StreamFailures) {
  auto no_finish = decode(
      Dialect::openai, "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n");
  ASSERT_FALSE(no_finish);
  EXPECT_EQ(no_finish.error().kind, FailureKind::stream_error);
  EXPECT_NE(no_finish.error().message.find("without a finish reason"), std::string::npos);
  auto cut = decode(Dialect::openai, "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n");
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message.find("ended early"), std::string::npos);
  auto after200 = decode(Dialect::openai,
                         "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: "
                         "{\"error\":{\"message\":\"provider died\",\"code\":502}}\n\n");
  ASSERT_FALSE(after200);
  EXPECT_EQ(after200.error().message, "provider died");
  auto legacy = decode(Dialect::openai,
                       "error: {\"error\":{\"message\":\"slot unavailable\",\"code\":503}}\n\n");
  ASSERT_FALSE(legacy);
  EXPECT_EQ(legacy.error().message, "slot unavailable");
  auto garbage = decode(Dialect::openai, "data: {\"choices\": [\n\n");
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().kind, FailureKind::invalid_response);
  auto no_usage = decode(
      Dialect::openai,
      "data: {\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}\n\n");
  ASSERT_TRUE(no_usage);
  EXPECT_TRUE(no_usage->usage.estimated);
}

TEST(WireAnthropic, RequestBody) {
  ResolvedModel m = openai_model();
  m.dialect = Dialect::anthropic;
  m.options.max_tokens.reset();
  m.options.extra_body.reset();
  const Json body = request_body(sample_request(), m, false);
  EXPECT_EQ(body["system"], "sys");
  EXPECT_EQ(body["max_tokens"], 8192);  // required by the API
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["messages"][1]["content"][0]["type"], "tool_use");
  EXPECT_EQ(body["messages"][1]["content"][0]["input"]["path"], "a");
  ASSERT_EQ(body["messages"].size(), 3u);  // the two tool results share one user message
  EXPECT_EQ(body["messages"][2]["content"].size(), 2u);
  EXPECT_EQ(body["tools"][0]["input_schema"]["type"], "object");
  EXPECT_FALSE(body.contains("stream"));
  const auto headers = request_headers(m);
  EXPECT_EQ(headers[1].first, "x-api-key");
  EXPECT_EQ(headers[2].second, "2023-06-01");
}

TEST(WireAnthropic, ResponseAndStream) {
  auto r = parse_response(
      R"({"type":"message","model":"claude-x","content":[{"type":"thinking","thinking":"hmm"},
      {"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}],"stop_reason":"tool_use",
      "usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":30,"cache_creation_input_tokens":2}})",
      Dialect::anthropic);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->content, "hi");
  EXPECT_EQ(r->reasoning, "hmm");
  EXPECT_EQ(r->finish_reason, "tool_calls");
  EXPECT_EQ(r->tool_calls[0].arguments, "{\"a\":1}");
  EXPECT_EQ(r->usage.input, 42);  // input + cache reads + cache writes
  EXPECT_EQ(r->usage.cached, 30);
  EXPECT_EQ(r->usage.output, 5);
  auto error = parse_response(
      R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
      Dialect::anthropic);
  ASSERT_FALSE(error);
  EXPECT_EQ(error.error().kind, FailureKind::overloaded);

  const std::string stream =
      "event: message_start\ndata: "
      "{\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":"
      "9,\"output_tokens\":1}}}\n\n"
      "event: ping\ndata: {\"type\":\"ping\"}\n\n"
      "event: content_block_start\ndata: "
      "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":"
      "\"\"}}\n\n"
      "event: content_block_delta\ndata: "
      "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"
      "\"Hi\"}}\n\n"
      "event: content_block_start\ndata: "
      "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\","
      "\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\n"
      "event: content_block_delta\ndata: "
      "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
      "\"partial_json\":\"{\\\"a\\\":\"}}\n\n"
      "event: content_block_delta\ndata: "
      "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
      "\"partial_json\":\"2}\"}}\n\n"
      "event: message_delta\ndata: "
      "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_"
      "tokens\":6}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  auto s = decode(Dialect::anthropic, stream);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->content, "Hi");
  EXPECT_EQ(s->tool_calls[0].arguments, "{\"a\":2}");
  EXPECT_EQ(s->usage.input, 9);
  EXPECT_EQ(s->usage.output, 6);
  EXPECT_EQ(s->finish_reason, "stop");
  auto mid = decode(Dialect::anthropic,
                    "event: error\ndata: "
                    "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
                    "\"Overloaded\"}}\n\n");
  ASSERT_FALSE(mid);
  EXPECT_EQ(mid.error().kind, FailureKind::overloaded);
  auto cut = decode(Dialect::anthropic, stream.substr(0, stream.find("event: message_delta")));
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().kind, FailureKind::stream_error);
}

TEST(Types, ThinkBlocks) {
  std::string c = "<think>a\nb</think>\n\nanswer";
  EXPECT_EQ(take_think_block(c), "a\nb");
  EXPECT_EQ(c, "answer");
  std::string open = "<think>never closed";
  EXPECT_EQ(take_think_block(open), "never closed");
  EXPECT_EQ(open, "");
  std::string none = "answer <think>x</think>";
  EXPECT_EQ(take_think_block(none), "");
  EXPECT_EQ(none, "answer <think>x</think>");
}

}  // namespace
}  // namespace upskill::llm
