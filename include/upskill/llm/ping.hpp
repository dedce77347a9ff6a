#pragma once
// `upskill models --ping`: is each endpoint up, which models does it serve, and does a tiny chat
// work (latency, tokens)?
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "upskill/llm/client.hpp"

namespace upskill::llm {

struct PingOptions {
  std::chrono::milliseconds health_wait{
      std::chrono::seconds(120)};  // while /health says "Loading model"
  std::chrono::milliseconds poll_interval{std::chrono::seconds(1)};
  const CancelToken* cancel = nullptr;
  bool endpoint_checks = true;  // false under --replay: only the chat, answered from the cassette
};

struct PingReport {
  std::string health;     // "ok", "no /health endpoint", "loading (gave up after N s)", error text
  bool health_ok = true;  // false only when the server is unreachable or stuck loading
  std::vector<std::string> served;  // ids from GET {base}/models
  std::string models_error;
  bool model_listed = false;         // our model id is among them
  std::optional<ChatResponse> chat;  // the tiny chat, when it worked
  std::string chat_error;
  bool ok() const { return health_ok && chat.has_value(); }
};

PingReport ping_model(const ResolvedModel& model, HttpTransport& transport, ChatClient& client,
                      const PingOptions& options = {});

}  // namespace upskill::llm
