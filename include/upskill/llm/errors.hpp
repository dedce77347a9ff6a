#pragma once
// What went wrong with a model call, whether trying again can help, and a one-line message that
// names the model and the endpoint — never the key.
#include <chrono>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "upskill/core/json.hpp"

namespace upskill::llm {

enum class FailureKind {
  rate_limited,      // 429 (not quota): retry
  quota_exhausted,   // 429 insufficient_quota, 402 credits: do not retry
  overloaded,        // 529 / overloaded_error: retry
  server_error,      // 5xx: retry
  timeout,           // 408, or the request ran past its time limit: retry
  transport,         // connection refused/reset, truncated body: retry
  stream_error,      // error event after HTTP 200, or a stream without a finish: retry
  invalid_response,  // malformed JSON from the server: retry
  context_overflow,  // the prompt does not fit: its own outcome, no retry
  auth,              // 401/403: no retry
  not_found,         // 404 (unknown model or path): no retry
  bad_request,       // other 4xx: no retry
  cassette_miss,     // --replay has no recording of this request
  agent_failed,      // a coding-agent student exited non-zero, timed out or printed no answer
  cancelled,         // Ctrl-C
};

std::string_view to_string(FailureKind kind);
std::optional<FailureKind> failure_kind_from_string(std::string_view name);
bool is_retryable(FailureKind kind);

struct LlmFailure {
  LlmFailure() = default;
  LlmFailure(FailureKind k, int http_status, std::string text)
      : kind(k), status(http_status), message(std::move(text)) {}

  FailureKind kind = FailureKind::server_error;
  int status = 0;       // HTTP status, 0 for transport problems
  std::string message;  // one line: "model M at URL: ..."
  std::optional<std::chrono::milliseconds> retry_after;
  int attempts = 1;
  bool unreachable = false;  // transport: no attempt could connect (refused, unknown host)

  bool retryable() const { return is_retryable(kind); }
  // Every other call to the same model would fail the same way: a rejected key (401/403), an
  // unknown model or path (404), exhausted quota, or an endpoint no attempt could reach.
  bool definitive() const {
    return kind == FailureKind::auth || kind == FailureKind::not_found ||
           kind == FailureKind::quota_exhausted || (kind == FailureKind::transport && unreachable);
  }
};

// What a server's error body says: message, type and code, from any of the shapes servers use
// (OpenAI nested, vLLM flat, Ollama string, OpenRouter, Anthropic, llama.cpp).
struct ServerError {
  std::string message;
  std::string type;
  std::string code;
};
std::optional<ServerError> parse_error_body(std::string_view body);
std::optional<ServerError> parse_error_json(const Json& j);

// Classifies an HTTP failure from its status, Retry-After header value and body.
FailureKind classify(int status, const std::optional<ServerError>& error);

// "120" (seconds) or an HTTP date; nullopt when unparseable.
std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now);

// An error object that arrived in a body or stream after HTTP 200, classified by what it says.
LlmFailure failure_from_error_json(const Json& j);

// A server's JSON, or an invalid-response failure quoting the start of it; `what` is "response" or
// "stream".
std::expected<Json, LlmFailure> parse_server_json(std::string_view text, std::string_view what);

// Replaces every occurrence of `secret` (when non-empty) with "[REDACTED]".
std::string redact(std::string text, std::string_view secret);

}  // namespace upskill::llm
