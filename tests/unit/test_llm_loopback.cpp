// The client against our scripted server over real HTTP on loopback: every fault, both dialects.
#include <gtest/gtest.h>

#include "scripted_server.hpp"
#include "support/temp_dir.hpp"
#include "upskill/llm/client.hpp"
#include "upskill/llm/ping.hpp"

namespace upskill::llm {
namespace {

using namespace std::chrono_literals;
using testing::ScriptedServer;

constexpr const char* kKey = "sk-test-SECRET-0123456789";

Json reply(const std::string& content = "hello there") {
  return {{"content", content},
          {"usage",
           {{"prompt_tokens", 123},
            {"completion_tokens", 45},
            {"cached_tokens", 20},
            {"reasoning_tokens", 6}}}};
}

Json script_with(Json faults, Json r = reply()) {
  return {{"rules", Json::array({{{"name", "main"}, {"reply", r}, {"faults", faults}}})}};
}

ResolvedModel model_for(const ScriptedServer& server, bool anthropic = false,
                        std::optional<bool> stream = std::nullopt) {
  ResolvedModel m;
  m.name = anthropic ? "claude-local" : "glm-local";
  m.provider = anthropic ? "anthropic" : "generic";
  m.dialect = anthropic ? Dialect::anthropic : Dialect::openai;
  m.base_url = server.base_url();
  m.model = "student-model";
  m.api_key = Secret(kKey);
  m.api_key_env = "TEST_KEY";
  m.options.stream = stream;
  m.max_concurrency = 8;
  return m;
}

RetryPolicy fast_policy() {
  RetryPolicy p;
  p.max_retries = 4;
  p.base_delay = 5ms;
  p.max_delay = 20ms;
  p.total_budget = 20s;
  p.request_timeout = 10s;
  return p;
}

CallOptions repeat_index(int repeat) {
  CallOptions options;
  options.repeat = repeat;
  return options;
}

ChatRequest hello() {
  ChatRequest r;
  r.messages = {Message::system("be brief"), Message::user("say hello")};
  return r;
}

struct Harness {
  ScriptedServer server;
  CurlTransport transport;
  ChatClient client;
  explicit Harness(Json script, RetryPolicy policy = fast_policy(), Cassette* cassette = nullptr)
      : server(std::move(script)), client(transport, policy, cassette) {
    server.start();
  }
};

void expect_exact_usage(const ChatResponse& r) {
  EXPECT_EQ(r.usage.input, 123);
  EXPECT_EQ(r.usage.output, 45);
  EXPECT_EQ(r.usage.cached, 20);
  EXPECT_FALSE(r.usage.estimated);
}

class BothWays : public ::testing::TestWithParam<std::tuple<bool, bool>> {};  // anthropic?, stream?

TEST_P(BothWays, PlainChatAndExactUsage) {
  const auto [anthropic, stream] = GetParam();
  Harness h(script_with(Json::array()));
  auto r = h.client.complete(model_for(h.server, anthropic, stream), hello());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->content, "hello there");
  EXPECT_EQ(r->attempts, 1);
  EXPECT_EQ(r->finish_reason, "stop");
  expect_exact_usage(*r);
  if (!anthropic) {
    EXPECT_EQ(r->usage.reasoning, 6);
  }
  const auto requests = h.server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, anthropic ? "/v1/messages" : "/v1/chat/completions");
  EXPECT_EQ(requests[0].json["model"], "student-model");
  EXPECT_EQ(requests[0].json.value("stream", false), stream);
  if (anthropic) {
    EXPECT_EQ(requests[0].headers.at("x-api-key"), kKey);
    EXPECT_EQ(requests[0].json["system"], "be brief");
  } else {
    EXPECT_EQ(requests[0].headers.at("Authorization"), std::string("Bearer ") + kKey);
  }
}

TEST_P(BothWays, ToolCallsAndReasoning) {
  const auto [anthropic, stream] = GetParam();
  Json r = reply("");
  r["reasoning"] = "let me think";
  r["tool_calls"] = Json::array({{{"id", "call_9"},
                                  {"name", "write_file"},
                                  {"arguments", {{"path", "a.txt"}, {"content", "x"}}}}});
  Harness h(script_with(Json::array(), r));
  auto out = h.client.complete(model_for(h.server, anthropic, stream), hello());
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->reasoning, "let me think");
  ASSERT_EQ(out->tool_calls.size(), 1u);
  EXPECT_EQ(out->tool_calls[0].id, "call_9");
  EXPECT_EQ(out->tool_calls[0].name, "write_file");
  EXPECT_EQ(Json::parse(out->tool_calls[0].arguments)["path"], "a.txt");
  EXPECT_EQ(out->finish_reason, "tool_calls");
}

INSTANTIATE_TEST_SUITE_P(Dialects, BothWays,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "Anthropic" : "OpenAi") +
                                  (std::get<1>(info.param) ? "Stream" : "Plain");
                         });

struct Fault {
  const char* name;
  Json fault;
  bool stream;
  bool anthropic;
};
void PrintTo(const Fault& f, std::ostream* os) {
  *os << f.name;
}

class RetriedFaults : public ::testing::TestWithParam<Fault> {};

TEST_P(RetriedFaults, SucceedAfterRetryWithExactUsage) {
  Harness h(script_with(Json::array({GetParam().fault})));
  auto r = h.client.complete(model_for(h.server, GetParam().anthropic, GetParam().stream), hello());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(h.server.request_count(), 2u);
  EXPECT_EQ(r->content, "hello there");
  expect_exact_usage(*r);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, RetriedFaults,
    ::testing::Values(
        Fault{"rate_limit_429",
              {{"type", "status"}, {"status", 429}, {"retry_after", "0"}},
              false,
              false},
        Fault{"server_500", {{"type", "status"}, {"status", 500}}, false, false},
        Fault{"bad_gateway_502_html",
              {{"type", "status"}, {"status", 502}, {"body", "<html>bad gateway</html>"}},
              false,
              false},
        Fault{"unavailable_503", {{"type", "status"}, {"status", 503}}, true, false},
        Fault{"timeout_408", {{"type", "status"}, {"status", 408}}, false, false},
        Fault{"overloaded_529", {{"type", "overloaded"}}, false, true},
        Fault{"overloaded_529_stream", {{"type", "overloaded"}}, true, true},
        Fault{"connection_reset", {{"type", "reset"}}, false, false},
        Fault{"connection_reset_stream", {{"type", "reset"}}, true, false},
        Fault{"truncated_stream", {{"type", "truncated_stream"}}, true, false},
        Fault{"truncated_stream_anthropic", {{"type", "truncated_stream"}}, true, true},
        Fault{"mid_stream_error", {{"type", "mid_stream_error"}}, true, false},
        Fault{"mid_stream_error_anthropic", {{"type", "mid_stream_error"}}, true, true},
        Fault{"error_after_200", {{"type", "error_after_200"}}, false, false},
        Fault{"legacy_error_line", {{"type", "legacy_error_line"}}, true, false},
        Fault{"malformed_json", {{"type", "malformed_json"}}, false, false},
        Fault{"malformed_json_stream", {{"type", "malformed_json"}}, true, false},
        Fault{"no_finish_reason", {{"type", "no_finish"}}, true, false},
        Fault{"no_finish_reason_anthropic", {{"type", "no_finish"}}, true, true}),
    [](const auto& info) { return std::string(info.param.name); });

struct Final {
  const char* name;
  Json fault;
  FailureKind kind;
};
void PrintTo(const Final& f, std::ostream* os) {
  *os << f.name;
}

class FinalFaults : public ::testing::TestWithParam<Final> {};

TEST_P(FinalFaults, AreNotRetriedAndClassified) {
  Harness h(script_with(Json::array({GetParam().fault})));
  auto r = h.client.complete(model_for(h.server), hello());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, GetParam().kind) << r.error().message;
  EXPECT_EQ(r.error().attempts, 1);
  EXPECT_EQ(h.server.request_count(), 1u);
  EXPECT_NE(
      r.error().message.find("model glm-local at " + h.server.base_url() + "/chat/completions"),
      std::string::npos)
      << r.error().message;
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, FinalFaults,
    ::testing::Values(
        Final{"unauthorised_401", {{"type", "status"}, {"status", 401}}, FailureKind::auth},
        Final{"forbidden_403", {{"type", "status"}, {"status", 403}}, FailureKind::auth},
        Final{"not_found_404", {{"type", "status"}, {"status", 404}}, FailureKind::not_found},
        Final{"bad_request_400", {{"type", "status"}, {"status", 400}}, FailureKind::bad_request},
        Final{"quota_429", {{"type", "quota"}}, FailureKind::quota_exhausted},
        Final{"context_openai", {{"type", "context_overflow"}}, FailureKind::context_overflow},
        Final{"context_llamacpp",
              {{"type", "context_overflow"}, {"style", "llamacpp"}},
              FailureKind::context_overflow}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Streaming, ServerThatIgnoresStreamAnswersWithOneBody) {
  Harness h(script_with(Json::array({{{"type", "ignore_stream"}}})));
  auto r = h.client.complete(model_for(h.server, false, true), hello());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->attempts, 1);
  EXPECT_EQ(r->content, "hello there");
  expect_exact_usage(*r);
}

TEST(Retries, GiveUpAfterTheRetryCount) {
  Json faults = Json::array();
  for (int i = 0; i < 5; ++i) faults.push_back({{"type", "status"}, {"status", 500}});
  RetryPolicy policy = fast_policy();
  policy.max_retries = 2;
  Harness h(script_with(faults), policy);
  auto r = h.client.complete(model_for(h.server), hello());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, FailureKind::server_error);
  EXPECT_EQ(r.error().attempts, 3);
  EXPECT_EQ(h.server.request_count(), 3u);
  EXPECT_NE(r.error().message.find("server error (HTTP 500) after 3 attempts"), std::string::npos)
      << r.error().message;
}

TEST(Retries, HonourRetryAfter) {
  Harness h(
      script_with(Json::array({{{"type", "status"}, {"status", 429}, {"retry_after", "1"}}})));
  const auto start = std::chrono::steady_clock::now();
  auto r = h.client.complete(model_for(h.server), hello());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_GE(std::chrono::steady_clock::now() - start, 950ms);
}

TEST(Retries, RetryAfterBeyondTheBudgetFailsAtOnce) {
  RetryPolicy policy = fast_policy();
  policy.total_budget = 2s;
  Harness h(
      script_with(Json::array({{{"type", "status"}, {"status", 429}, {"retry_after", "30"}}})),
      policy);
  const auto start = std::chrono::steady_clock::now();
  auto r = h.client.complete(model_for(h.server), hello());
  ASSERT_FALSE(r);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_EQ(r.error().kind, FailureKind::rate_limited);
  EXPECT_NE(r.error().message.find("retry budget"), std::string::npos) << r.error().message;
}

TEST(Retries, SlowFirstByteTimesOutAndIsRetried) {
  Harness h(script_with(Json::array({{{"type", "slow_first_byte"}, {"delay_ms", 1500}}})));
  ResolvedModel m = model_for(h.server);
  m.options.timeout_s = 0.4;
  const auto start = std::chrono::steady_clock::now();
  auto r = h.client.complete(m, hello());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->attempts, 2);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1400ms);  // never waited for the slow reply
}

TEST(Retries, UnreachableEndpointIsATransportFailure) {
  CurlTransport transport;
  RetryPolicy policy = fast_policy();
  policy.max_retries = 1;
  ChatClient client(transport, policy);
  ResolvedModel m;
  m.name = "down";
  m.base_url = "http://127.0.0.1:9/v1";  // discard port: nothing listens
  m.model = "x";
  auto r = client.complete(m, hello());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, FailureKind::transport);
  EXPECT_EQ(r.error().attempts, 2);
}

TEST(Usage, MissingUsageIsEstimatedAndMarked) {
  Json r = reply("a reply of several words");
  r["usage"] = nullptr;
  for (bool stream : {false, true}) {
    Harness h(script_with(Json::array(), r));
    auto out = h.client.complete(model_for(h.server, false, stream), hello());
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_TRUE(out->usage.estimated);
    EXPECT_GT(out->usage.input, 0);
    EXPECT_GT(out->usage.output, 0);
    EXPECT_EQ(out->usage.requests, 1);
  }
}

TEST(Concurrency, PerModelLimitIsRespected) {
  auto run = [](int limit) {
    Json faults = Json::array();
    for (int i = 0; i < 6; ++i) faults.push_back({{"type", "slow_first_byte"}, {"delay_ms", 200}});
    Harness h(script_with(faults));
    ResolvedModel m = model_for(h.server);
    m.max_concurrency = limit;
    const auto start = std::chrono::steady_clock::now();
    std::atomic<int> ok{0};
    parallel_for(6, 6, [&](std::size_t) { ok += h.client.complete(m, hello()).has_value(); });
    EXPECT_EQ(ok.load(), 6);
    return std::chrono::steady_clock::now() - start;
  };
  const auto two_at_a_time = run(2);
  EXPECT_GE(two_at_a_time, 580ms);   // three waves of two: the limit held
  EXPECT_LT(run(6), two_at_a_time);  // six at a time is faster (kept loose for loaded machines)
}

TEST(Cancellation, StopsAnInFlightRequestAndLaterOnes) {
  Harness h(script_with(Json::array({{{"type", "slow_first_byte"}, {"delay_ms", 3000}}})));
  CancelToken cancel;
  std::jthread canceller([&] {
    std::this_thread::sleep_for(200ms);
    cancel.cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  auto r = h.client.complete(model_for(h.server), hello(),
                             {.repeat = 0, .stream = std::nullopt, .cancel = &cancel});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, FailureKind::cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  auto later = h.client.complete(model_for(h.server), hello(),
                                 {.repeat = 0, .stream = std::nullopt, .cancel = &cancel});
  ASSERT_FALSE(later);
  EXPECT_EQ(later.error().kind, FailureKind::cancelled);
}

TEST(Cassette, RecordThenReplayWithoutNetwork) {
  testing::TempDir dir;
  const auto path = dir / "cassette.jsonl";
  std::string base_url;
  {
    auto cassette = Cassette::open_record(path);
    ASSERT_TRUE(cassette);
    Harness h(script_with(Json::array()), fast_policy(), cassette->get());
    base_url = h.server.base_url();
    ResolvedModel m = model_for(h.server);
    ASSERT_TRUE(h.client.complete(m, hello(), repeat_index(0)));
    ASSERT_TRUE(h.client.complete(m, hello(), repeat_index(1)));  // a repeat is its own entry
    EXPECT_EQ((*cassette)->size(), 2u);
  }
  const std::string text = testing::read_file(path);
  EXPECT_EQ(text.find(kKey), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);

  auto replay = Cassette::open_replay(path);
  ASSERT_TRUE(replay) << replay.error().message;
  CurlTransport transport;
  ChatClient client(transport, fast_policy(), replay->get());
  ResolvedModel m;
  m.name = "glm-local";
  m.base_url = base_url;  // the server is gone: only the cassette can answer
  m.model = "student-model";
  auto first = client.complete(m, hello(), repeat_index(0));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->content, "hello there");
  EXPECT_TRUE(first->from_cassette);
  expect_exact_usage(*first);
  EXPECT_TRUE(client.complete(m, hello(), repeat_index(1)));
  auto miss = client.complete(m, hello(), repeat_index(2));
  ASSERT_FALSE(miss);
  EXPECT_EQ(miss.error().kind, FailureKind::cassette_miss);
  EXPECT_NE(miss.error().message.find("no recording of this request"), std::string::npos);
  ChatRequest other = hello();
  other.messages.back().content = "something else";
  EXPECT_FALSE(client.complete(m, other, repeat_index(0)));
}

TEST(Cassette, MalformedLineNamesFileAndLine) {
  testing::TempDir dir;
  dir.write("c.jsonl", "{\"key\":\"a\",\"response\":{}}\nnot json\n");
  auto c = Cassette::open_replay(dir / "c.jsonl");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("c.jsonl:2"), std::string::npos) << c.error().message;
}

TEST(Secrets, NeverInFailureMessages) {
  // A server that echoes the key back in its error (some proxies do).
  Json fault = {
      {"type", "status"},
      {"status", 401},
      {"body", {{"error", {{"message", std::string("Incorrect API key provided: ") + kKey}}}}}};
  Harness h(script_with(Json::array({fault})));
  auto r = h.client.complete(model_for(h.server), hello());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.find(kKey), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("[REDACTED]"), std::string::npos);
}

TEST(Ping, WaitsForLoadingModelThenChats) {
  Json script = script_with(Json::array(), reply("pong"));
  script["health"] = {{"loading", 2}};
  script["models"] = Json::array({"student-model"});
  Harness h(script);
  PingOptions options;
  options.poll_interval = 10ms;
  const PingReport report = ping_model(model_for(h.server), h.transport, h.client, options);
  EXPECT_TRUE(report.ok()) << report.chat_error;
  EXPECT_EQ(report.health, "ok");
  EXPECT_TRUE(report.model_listed);
  ASSERT_TRUE(report.chat);
  EXPECT_EQ(report.chat->content, "pong");
  int health_calls = 0;
  for (const auto& req : h.server.requests()) health_calls += req.path == "/health";
  EXPECT_EQ(health_calls, 3);
}

TEST(Ping, GivesUpOnAModelThatNeverLoads) {
  Json script = script_with(Json::array());
  script["health"] = {{"loading", 1000}};
  Harness h(script);
  PingOptions options;
  options.health_wait = 100ms;
  options.poll_interval = 10ms;
  const PingReport report = ping_model(model_for(h.server), h.transport, h.client, options);
  EXPECT_FALSE(report.ok());
  EXPECT_NE(report.health.find("still loading"), std::string::npos);
}

}  // namespace
}  // namespace upskill::llm
