#pragma once
// Chat calls that survive real servers: retries with jittered exponential backoff that honour
// Retry-After within a retry count and a total time budget, a per-model concurrency limit,
// cancellation, streaming, usage estimation when the server sends none, and cassettes.
#include <chrono>
#include <condition_variable>
#include <expected>
#include <map>
#include <mutex>
#include <random>

#include "upskill/core/cancel.hpp"
#include "upskill/llm/cassette.hpp"
#include "upskill/llm/errors.hpp"
#include "upskill/llm/http.hpp"
#include "upskill/llm/model.hpp"
#include "upskill/llm/types.hpp"

namespace upskill::llm {

struct RetryPolicy {
  int max_retries = 4;                         // attempts = max_retries + 1
  std::chrono::milliseconds base_delay{1000};  // doubled each retry, with jitter
  std::chrono::milliseconds max_delay{30000};
  std::chrono::milliseconds total_budget{600000};     // no retry starts past this
  std::chrono::milliseconds request_timeout{600000};  // one attempt (a model's timeout_s wins)
};

// The retry policy the configuration asks for (retries, retry_delay_s): the one place it is read,
// for the command line and the Python module alike.
RetryPolicy retry_policy(const config::Config& config);
Json to_json(const RetryPolicy& policy);

struct CallOptions {
  int repeat = 0;              // run/repeat index: part of the cassette key
  std::optional<bool> stream;  // default: the model's `stream` setting, else false
  const CancelToken* cancel = nullptr;
};

using ChatResult = std::expected<ChatResponse, LlmFailure>;

// Limits requests in flight per model name.
class ConcurrencyLimiter {
 public:
  void acquire(const std::string& name, int limit);
  void release(const std::string& name);

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::string, int> in_flight_;
};

class ChatClient {
 public:
  ChatClient(HttpTransport& transport, RetryPolicy policy = {}, Cassette* cassette = nullptr);

  // Thread-safe. Failures carry a one-line message naming the model and endpoint, never the key.
  ChatResult complete(const ResolvedModel& model, const ChatRequest& request,
                      const CallOptions& options = {});

 private:
  HttpTransport& transport_;
  RetryPolicy policy_;
  Cassette* cassette_;
  ConcurrencyLimiter limiter_;
  std::mutex rng_mutex_;
  std::mt19937_64 rng_{std::random_device{}()};

  ChatResult attempt(const ResolvedModel& model, const Json& body, bool stream,
                     const CancelToken* cancel);
  std::chrono::milliseconds backoff(int retry);
};

// Fills usage from text when the server sent none (marked estimated).
void estimate_usage(ChatResponse& response, const ChatRequest& request);

}  // namespace upskill::llm
