#pragma once
// A scripted OpenAI-compatible, Anthropic, OpenAI Responses and Gemini HTTP server on loopback, for
// tests and the offline demo. Rules match a request (model, message regex, turn, API) to a reply
// (text, reasoning, tool calls, usage) and may inject faults first: HTTP errors with Retry-After,
// 5xx, 529, quota, context overflow, connection resets, slow first bytes, truncated streams, errors
// after HTTP 200, legacy llama.cpp `error:` lines, malformed JSON. Every request received is
// recorded.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "upskill/core/json.hpp"

namespace httplib {
class Server;
}

namespace upskill::testing {

// The wire protocol a request came in: OpenAI chat completions, Anthropic Messages, the OpenAI
// Responses API (Codex), the Gemini API (Gemini CLI).
enum class Api { openai, anthropic, responses, gemini };

struct RecordedRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;
  std::string body;
  Json json;         // parsed body (null if not JSON)
  std::string rule;  // name of the rule that answered ("" when none)
};

class ScriptedServer {
 public:
  // `script` is {"rules": [...], "health": {"loading": N}, "models": [...]} (docs:
  // tests/support/README.md).
  explicit ScriptedServer(Json script);
  ~ScriptedServer();
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  // Binds 127.0.0.1 (port 0: any free port) and serves on a background thread.
  int start(int port = 0);
  void stop();
  int port() const { return port_; }
  std::string base_url() const;  // http://127.0.0.1:PORT/v1

  std::vector<RecordedRequest> requests() const;
  std::size_t request_count() const;

 private:
  struct Rule {
    std::string name;
    Json match;
    Json reply;
    std::vector<Json> faults;
    std::size_t next_fault = 0;
    std::size_t hits = 0;
  };
  Json script_;
  std::vector<Rule> rules_;
  int health_loading_ = 0;
  std::string required_key_;  // chat requests without it get 401
  int delay_ms_ = 0;          // every chat reply waits this long (a run that takes time to kill)
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mutex_;
  std::vector<RecordedRequest> requests_;

  void install_routes();
  // Picks the rule for a request, under the lock: `view` is the request as chat messages (model,
  // system, messages), `raw` the body as sent.
  Rule* match(const Json& view, const std::string& raw, Api api);
};

}  // namespace upskill::testing
