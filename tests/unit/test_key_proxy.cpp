// The key proxy (agent/key_proxy.hpp) against the scripted server, which requires the real key:
// the trial's token is swapped for the key wherever the agent put it (each wire's place), anything
// else is refused, streams and errors pass as they came, and once the trial ends the token opens
// nothing.
#include <gtest/gtest.h>

#include <cstdio>

#include "scripted_server.hpp"
#include "upskill/agent/key_proxy.hpp"
#include "upskill/llm/http.hpp"

namespace upskill::agent {
namespace {

constexpr const char* kKey = "real-key-7d2c";

Json script() {
  return {
      {"require_key", kKey},
      {"rules", Json::array({{{"name", "hello"},
                              {"reply",
                               {{"content", "hello through the proxy"},
                                {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 4}}}}}}})}};
}

llm::HttpResponse post(const std::string& url,
                       std::vector<std::pair<std::string, std::string>> headers, const Json& body,
                       std::function<bool(std::string_view)> on_body = {}) {
  llm::HttpRequest r;
  r.url = url;
  r.headers = std::move(headers);
  r.headers.emplace_back("Content-Type", "application/json");
  r.body = body.dump();
  r.timeout = std::chrono::seconds(20);
  r.on_body = std::move(on_body);
  return llm::CurlTransport().perform(r, nullptr);
}

const Json kChat = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};

struct Fixture {
  testing::ScriptedServer server{script()};
  llm::ResolvedModel model;
  Fixture() {
    server.start();
    model.provider = "generic";
    model.base_url = server.base_url();
    model.api_key = llm::Secret(kKey);
  }
};

TEST(KeyProxy, TheTokenBecomesTheKeyWhereTheAgentPutIt) {
  Fixture f;
  auto proxy = KeyProxy::start(f.model);
  ASSERT_TRUE(proxy) << proxy.error().message;
  const llm::ResolvedModel& through = (*proxy)->through();
  const std::string token = through.api_key.reveal();
  EXPECT_NE(token, kKey);
  EXPECT_TRUE(through.base_url.starts_with("http://127.0.0.1:")) << through.base_url;
  EXPECT_TRUE(through.base_url.ends_with("/v1")) << through.base_url;
  // OpenAI's bearer token, Anthropic's x-api-key, Gemini's x-goog-api-key and ?key=.
  auto bearer =
      post(through.base_url + "/chat/completions", {{"Authorization", "Bearer " + token}}, kChat);
  EXPECT_EQ(bearer.status, 200) << bearer.body;
  EXPECT_NE(bearer.body.find("hello through the proxy"), std::string::npos) << bearer.body;
  auto anthropic = post(through.base_url + "/chat/completions", {{"x-api-key", token}}, kChat);
  EXPECT_EQ(anthropic.status, 200) << anthropic.body;
  auto goog = post(through.base_url + "/chat/completions", {{"x-goog-api-key", token}}, kChat);
  EXPECT_EQ(goog.status, 200) << goog.body;
  auto query = post(through.base_url + "/chat/completions?key=" + token, {}, kChat);
  EXPECT_EQ(query.status, 200) << query.body;
  for (const auto& q : f.server.requests()) {
    EXPECT_FALSE(q.rule.empty()) << "refused by the server: " << q.path;
    for (const auto& [name, value] : q.headers) EXPECT_EQ(value.find(token), std::string::npos);
    EXPECT_EQ(q.path.find(token), std::string::npos) << q.path;
  }
  EXPECT_EQ((*proxy)->forwarded(), 4);
}

TEST(KeyProxy, AnythingButTheTokenIsRefusedAndNeverForwarded) {
  Fixture f;
  auto proxy = KeyProxy::start(f.model);
  ASSERT_TRUE(proxy);
  const std::string url = (*proxy)->through().base_url + "/chat/completions";
  EXPECT_EQ(post(url, {}, kChat).status, 401);
  EXPECT_EQ(post(url, {{"Authorization", "Bearer " + std::string(kKey)}}, kChat).status, 401);
  EXPECT_EQ(post(url, {{"Authorization", "Bearer wrong"}}, kChat).status, 401);
  EXPECT_EQ(post(url + "?key=wrong", {}, kChat).status, 401);
  EXPECT_EQ(f.server.request_count(), 0u);
  EXPECT_EQ((*proxy)->forwarded(), 0);
}

TEST(KeyProxy, StreamsAndErrorsPassAsTheyCame) {
  Fixture f;
  auto proxy = KeyProxy::start(f.model);
  ASSERT_TRUE(proxy);
  const llm::ResolvedModel& through = (*proxy)->through();
  const std::string auth = "Bearer " + through.api_key.reveal();
  Json streamed = kChat;
  streamed["stream"] = true;
  std::string events;
  int pieces = 0;
  auto stream = post(through.base_url + "/chat/completions", {{"Authorization", auth}}, streamed,
                     [&](std::string_view piece) {
                       events.append(piece);
                       ++pieces;
                       return true;
                     });
  EXPECT_EQ(stream.status, 200) << stream.transport_error;
  EXPECT_NE(stream.headers["content-type"].find("text/event-stream"), std::string::npos);
  EXPECT_NE(events.find("data: "), std::string::npos) << events;
  EXPECT_NE(events.find("[DONE]"), std::string::npos) << events;
  EXPECT_GE(pieces, 1);
  // The endpoint's own error (no such route) comes back with its status and body.
  auto missing = post(through.base_url + "/no/such/route", {{"Authorization", auth}}, kChat);
  EXPECT_EQ(missing.status, 404) << missing.body;
}

TEST(KeyProxy, OnceTheTrialEndsTheTokenOpensNothing) {
  Fixture f;
  std::string url, token;
  {
    auto proxy = KeyProxy::start(f.model);
    ASSERT_TRUE(proxy);
    url = (*proxy)->through().base_url + "/chat/completions";
    token = (*proxy)->through().api_key.reveal();
    EXPECT_EQ(post(url, {{"Authorization", "Bearer " + token}}, kChat).status, 200);
  }
  const auto after = post(url, {{"Authorization", "Bearer " + token}}, kChat);
  EXPECT_TRUE(after.unreachable) << after.status << " " << after.transport_error;
  // And the endpoint itself does not take it.
  EXPECT_EQ(
      post(f.server.base_url() + "/chat/completions", {{"Authorization", "Bearer " + token}}, kChat)
          .status,
      401);
}

std::string shell(const std::string& command) {
  std::string out;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  return out;
}

// From a red-team pass over the proxy: a request target that names another host for libcurl
// ("@host/…", decoded "%40"), and a header value that decodes to CR/LF (an added header), are
// refused before anything is forwarded.
TEST(KeyProxy, ATargetOrHeaderThatCouldSendTheKeyElsewhereIsRefused) {
  Fixture f;
  auto proxy = KeyProxy::start(f.model);
  ASSERT_TRUE(proxy);
  const std::string base = (*proxy)->through().base_url;  // http://127.0.0.1:PORT/v1
  const std::string origin = base.substr(0, base.rfind("/v1"));
  const std::string token = (*proxy)->through().api_key.reveal();
  const std::string curl =
      "curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer " + token + "' -d '{}' ";
  for (const std::string target :
       {"@127.0.0.1:" + std::to_string(f.server.port()) + "/v1/chat/completions",
        "%40127.0.0.1:" + std::to_string(f.server.port()) + "/v1/chat/completions",
        std::string("/v1/a\\b")})
    EXPECT_EQ(shell(curl + "--request-target '" + target + "' " + origin), "400") << target;
  EXPECT_EQ(shell(curl + "-H 'X-A: a%0D%0AX-B: b' " + base + "/chat/completions"), "400");
  EXPECT_EQ(f.server.request_count(), 0u);
  EXPECT_EQ((*proxy)->forwarded(), 0);
}

}  // namespace
}  // namespace upskill::agent
