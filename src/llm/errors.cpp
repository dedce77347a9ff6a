// Failures of model calls classified, named and parsed from every error-body shape (see
// errors.hpp).
#include "upskill/llm/errors.hpp"

#include <ctime>
#include <regex>

#include "upskill/core/enum_names.hpp"
#include "upskill/core/text.hpp"

namespace upskill::llm {

namespace {
constexpr enum_names::Table<FailureKind, 15> kFailureKinds{{
    {FailureKind::rate_limited, "rate limited"},
    {FailureKind::quota_exhausted, "quota exhausted"},
    {FailureKind::overloaded, "overloaded"},
    {FailureKind::server_error, "server error"},
    {FailureKind::timeout, "timed out"},
    {FailureKind::transport, "connection failed"},
    {FailureKind::stream_error, "stream failed"},
    {FailureKind::invalid_response, "invalid response"},
    {FailureKind::context_overflow, "context overflow"},
    {FailureKind::auth, "not authorised"},
    {FailureKind::not_found, "not found"},
    {FailureKind::bad_request, "bad request"},
    {FailureKind::cassette_miss, "not in cassette"},
    {FailureKind::agent_failed, "agent failed"},
    {FailureKind::cancelled, "cancelled"},
}};
}  // namespace

std::string_view to_string(FailureKind kind) {
  return enum_names::name(kFailureKinds, kind, "error");
}

std::optional<FailureKind> failure_kind_from_string(std::string_view name) {
  return enum_names::parse(kFailureKinds, name);
}

bool is_retryable(FailureKind kind) {
  switch (kind) {
    case FailureKind::rate_limited:
    case FailureKind::overloaded:
    case FailureKind::server_error:
    case FailureKind::timeout:
    case FailureKind::transport:
    case FailureKind::stream_error:
    case FailureKind::invalid_response:
      return true;
    default:
      return false;
  }
}

namespace {
std::string scalar_text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_null()) return {};
  return v.dump();
}
}  // namespace

std::optional<ServerError> parse_error_json(const Json& j) {
  if (!j.is_object()) return std::nullopt;
  ServerError e;
  if (auto it = j.find("error"); it != j.end()) {
    if (it->is_string()) {  // Ollama: {"error": "message"}
      e.message = it->get<std::string>();
      return e;
    }
    if (!it->is_object()) return std::nullopt;
    // OpenAI / llama.cpp / OpenRouter / Anthropic: {"error": {message, type, code}}
    e.message = scalar_text(it->value("message", Json()));
    e.type = scalar_text(it->value("type", Json()));
    e.code = scalar_text(it->value("code", Json()));
    if (e.message.empty() && it->contains("metadata")) e.message = it->at("metadata").dump();
    return e;
  }
  if (j.value("object", "") == "error") {  // vLLM before 0.10.1: flat
    e.message = scalar_text(j.value("message", Json()));
    e.type = scalar_text(j.value("type", Json()));
    e.code = scalar_text(j.value("code", Json()));
    return e;
  }
  return std::nullopt;
}

std::optional<ServerError> parse_error_body(std::string_view body) {
  try {
    return parse_error_json(Json::parse(body));
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

FailureKind classify(int status, const std::optional<ServerError>& error) {
  const std::string type = error ? text::to_lower_ascii(error->type) : "";
  const std::string code = error ? text::to_lower_ascii(error->code) : "";
  const std::string message = error ? text::to_lower_ascii(error->message) : "";
  if (code == "context_length_exceeded" || type == "exceed_context_size_error" ||
      message.find("exceeds the available context size") != std::string::npos ||
      message.find("maximum context length") != std::string::npos ||
      message.find("prompt is too long") != std::string::npos)
    return FailureKind::context_overflow;
  if (code == "insufficient_quota" || type == "insufficient_quota" || status == 402 ||
      message.find("exceeded your current quota") != std::string::npos)
    return FailureKind::quota_exhausted;
  if (status == 529 || type == "overloaded_error") return FailureKind::overloaded;
  if (status == 429 || type == "rate_limit_error" || code == "rate_limit_exceeded")
    return FailureKind::rate_limited;
  if (status == 408) return FailureKind::timeout;
  if (status >= 500) return FailureKind::server_error;
  if (status == 401 || status == 403) return FailureKind::auth;
  if (status == 404) return FailureKind::not_found;
  if (status >= 400) return FailureKind::bad_request;
  // An error object inside a 200 response or stream: judge by what it says.
  if (code == "429") return FailureKind::rate_limited;
  if (code == "529") return FailureKind::overloaded;
  if (!code.empty() && code.front() == '4' && code.size() == 3)
    return code == "401" || code == "403" ? FailureKind::auth : FailureKind::bad_request;
  return FailureKind::stream_error;
}

std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now) {
  const std::string v = text::trim(value);
  if (v.empty()) return std::nullopt;
  if (v.find_first_not_of("0123456789.") == std::string::npos) {
    try {
      return std::chrono::milliseconds(static_cast<long long>(std::stod(v) * 1000));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  // Durations some gateways send: "1m30s", "2s", "500ms", "1h".
  static const std::regex kDuration(
      R"(^(?:([0-9]+)h)?(?:([0-9]+)m(?!s))?(?:([0-9]+(?:\.[0-9]+)?)s)?(?:([0-9]+)ms)?$)");
  std::smatch m;
  if (std::regex_match(v, m, kDuration) &&
      (m[1].matched || m[2].matched || m[3].matched || m[4].matched)) {
    double ms = 0;
    if (m[1].matched) ms += std::stod(m[1].str()) * 3600000;
    if (m[2].matched) ms += std::stod(m[2].str()) * 60000;
    if (m[3].matched) ms += std::stod(m[3].str()) * 1000;
    if (m[4].matched) ms += std::stod(m[4].str());
    return std::chrono::milliseconds(static_cast<long long>(ms));
  }
  // HTTP date: "Wed, 21 Oct 2015 07:28:00 GMT"
  std::tm tm{};
  if (strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm) == nullptr) return std::nullopt;
  const std::time_t when = timegm(&tm);
  const auto delta = std::chrono::system_clock::from_time_t(when) - now;
  if (delta.count() < 0) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(delta);
}

LlmFailure failure_from_error_json(const Json& j) {
  auto error = parse_error_json(j);
  return LlmFailure(
      classify(0, error), 200,
      error && !error->message.empty() ? error->message : text::excerpt(j.dump(), 200));
}

std::expected<Json, LlmFailure> parse_server_json(std::string_view text, std::string_view what) {
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return std::unexpected(LlmFailure(
        FailureKind::invalid_response, 200,
        std::string("malformed JSON in ") + std::string(what) + ": " + text::excerpt(text, 120)));
  }
}

std::string redact(std::string text, std::string_view secret) {
  if (secret.empty()) return text;
  std::size_t pos = 0;
  while ((pos = text.find(secret, pos)) != std::string::npos) {
    text.replace(pos, secret.size(), "[REDACTED]");
    pos += 10;
  }
  return text;
}

}  // namespace upskill::llm
