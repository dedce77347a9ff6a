// Chat calls that survive real servers: retries with backoff, concurrency limits, cancellation,
// streaming, usage estimates and cassettes (see client.hpp).
#include "upskill/llm/client.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>

#include "upskill/core/text.hpp"
#include "upskill/llm/sse.hpp"
#include "upskill/llm/wire.hpp"

namespace upskill::llm {

RetryPolicy retry_policy(const config::Config& config) {
  RetryPolicy retry;
  retry.max_retries = config.retries;
  retry.base_delay = std::chrono::milliseconds(std::llround(config.retry_delay_s * 1000));
  return retry;
}

Json to_json(const RetryPolicy& p) {
  return {{"retries", p.max_retries},
          {"retry_delay_s", static_cast<double>(p.base_delay.count()) / 1000},
          {"max_delay_s", static_cast<double>(p.max_delay.count()) / 1000},
          {"request_timeout_s", static_cast<double>(p.request_timeout.count()) / 1000}};
}

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

void ConcurrencyLimiter::acquire(const std::string& name, int limit) {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return in_flight_[name] < std::max(1, limit); });
  ++in_flight_[name];
}

void ConcurrencyLimiter::release(const std::string& name) {
  {
    std::lock_guard lock(mutex_);
    --in_flight_[name];
  }
  cv_.notify_all();
}

void estimate_usage(ChatResponse& response, const ChatRequest& request) {
  if (!response.usage.estimated) return;
  long long input = 0;
  for (const auto& m : request.messages)
    input += static_cast<long long>(text::estimate_tokens(m.content)) + 4;
  long long output = static_cast<long long>(text::estimate_tokens(response.content) +
                                            text::estimate_tokens(response.reasoning));
  for (const auto& c : response.tool_calls)
    output += static_cast<long long>(text::estimate_tokens(c.arguments));
  response.usage.input = input;
  response.usage.output = output;
  response.usage.requests = std::max(response.usage.requests, 1);
}

ChatClient::ChatClient(HttpTransport& transport, RetryPolicy policy, Cassette* cassette)
    : transport_(transport), policy_(policy), cassette_(cassette) {}

milliseconds ChatClient::backoff(int retry) {
  const double base = static_cast<double>(policy_.base_delay.count()) * std::pow(2.0, retry - 1);
  const double capped = std::min(base, static_cast<double>(policy_.max_delay.count()));
  std::lock_guard lock(rng_mutex_);
  std::uniform_real_distribution<double> jitter(0.5,
                                                1.0);  // "equal jitter": spreads a thundering herd
  return milliseconds(static_cast<long long>(capped * jitter(rng_)));
}

ChatResult ChatClient::attempt(const ResolvedModel& model, const Json& body, bool stream,
                               const CancelToken* cancel) {
  HttpRequest request;
  request.url = chat_endpoint(model);
  request.headers = request_headers(model);
  request.body = body.dump();
  request.timeout = model.options.timeout_s
                        ? milliseconds(static_cast<long long>(*model.options.timeout_s * 1000))
                        : policy_.request_timeout;
  std::unique_ptr<StreamDecoder> decoder;
  SseParser parser;
  std::optional<LlmFailure> stream_failure;
  std::string raw;  // kept in case the server ignores "stream" and answers with one JSON body
  std::size_t events = 0;
  if (stream) {
    decoder = make_stream_decoder(model.dialect);
    request.on_body = [&](std::string_view bytes) {
      if (events == 0 && raw.size() < (1u << 24)) raw.append(bytes);
      for (const auto& event : parser.feed(bytes)) {
        ++events;
        if (auto failure = decoder->on_event(event)) {
          stream_failure = std::move(failure);
          return false;
        }
      }
      return true;
    };
  }
  HttpResponse response = transport_.perform(request, cancel);
  if (response.cancelled)
    return std::unexpected(LlmFailure{FailureKind::cancelled, 0, "cancelled"});
  if (stream_failure) return std::unexpected(*stream_failure);
  if (!response.transport_error.empty() &&
      (response.status < 200 || response.status >= 300 || !stream)) {
    if (response.status >= 400) {
      // The error body arrived but the connection broke after it: classify by status.
    } else {
      LlmFailure failure{response.timed_out ? FailureKind::timeout : FailureKind::transport,
                         response.status, response.transport_error};
      failure.unreachable = response.unreachable;
      return std::unexpected(std::move(failure));
    }
  }
  if (response.status < 200 || response.status >= 300) {
    auto error = parse_error_body(response.body);
    LlmFailure f;
    f.kind = classify(response.status, error);
    f.status = response.status;
    f.message =
        error && !error->message.empty() ? error->message : text::excerpt(response.body, 200);
    if (auto it = response.headers.find("retry-after"); it != response.headers.end())
      f.retry_after = parse_retry_after(it->second, std::chrono::system_clock::now());
    return std::unexpected(f);
  }
  if (stream && events == 0) {
    const auto type = response.headers.find("content-type");
    if (type != response.headers.end() && type->second.find("json") != std::string::npos)
      return parse_response(raw, model.dialect);
  }
  if (stream) {
    for (const auto& event : parser.finish())
      if (auto failure = decoder->on_event(event)) return std::unexpected(*failure);
    if (!response.transport_error.empty()) {
      auto partial = decoder->finish();
      if (!partial) {
        partial.error().kind = response.timed_out ? FailureKind::timeout : FailureKind::transport;
        partial.error().message = "stream broke off: " + response.transport_error;
      }
      return partial;
    }
    return decoder->finish();
  }
  return parse_response(response.body, model.dialect);
}

ChatResult ChatClient::complete(const ResolvedModel& model, const ChatRequest& request,
                                const CallOptions& options) {
  const bool stream = options.stream.value_or(model.options.stream.value_or(false));
  const Json body = request_body(request, model, stream);
  const std::string key = request_key(model, body, options.repeat);
  const std::string where = fmt::format("model {} at {}", model.name, chat_endpoint(model));
  auto finish_failure = [&](LlmFailure f) {
    std::string status = f.status >= 400 ? fmt::format(" (HTTP {})", f.status) : "";
    std::string tries = f.attempts > 1 ? fmt::format(" after {} attempts", f.attempts) : "";
    f.message = redact(fmt::format("{}: {}{}{}: {}", where, to_string(f.kind), status, tries,
                                   text::excerpt(f.message, 300)),
                       model.api_key.reveal());
    return std::unexpected(std::move(f));
  };

  if (cassette_ && cassette_->mode() == Cassette::Mode::replay) {
    if (auto hit = cassette_->find(key)) return *hit;
    return finish_failure(
        {FailureKind::cassette_miss, 0,
         fmt::format("no recording of this request in {} (key {}); record it with --record",
                     cassette_->path().string(), key.substr(0, 12))});
  }

  const auto deadline = Clock::now() + policy_.total_budget;
  LlmFailure last;
  bool always_unreachable = true;  // every attempt failed to connect
  for (int attempt_number = 1;; ++attempt_number) {
    if (options.cancel && options.cancel->cancelled())
      return finish_failure({FailureKind::cancelled, 0, "cancelled"});
    limiter_.acquire(model.name, model.max_concurrency);
    const auto started = Clock::now();
    ChatResult result = attempt(model, body, stream, options.cancel);
    limiter_.release(model.name);
    if (result) {
      result->latency_ms =
          std::chrono::duration<double, std::milli>(Clock::now() - started).count();
      result->attempts = attempt_number;
      estimate_usage(*result, request);
      if (cassette_ && cassette_->mode() == Cassette::Mode::record) {
        if (auto recorded = cassette_->record(key, model, body, options.repeat, *result); !recorded)
          spdlog::warn("{}", recorded.error().message);
      }
      return result;
    }
    last = std::move(result).error();
    last.attempts = attempt_number;
    always_unreachable = always_unreachable && last.unreachable;
    last.unreachable = always_unreachable;
    last.message =
        redact(std::move(last.message), model.api_key.reveal());  // before it reaches a log line
    if (!last.retryable() || attempt_number > policy_.max_retries) break;
    // Retry-After is a floor: never earlier than the server asked, never sooner than our backoff.
    const milliseconds delay =
        std::max(last.retry_after.value_or(milliseconds(0)), backoff(attempt_number));
    if (Clock::now() + delay > deadline) {
      last.message +=
          fmt::format(" (retry budget of {} s used up)", policy_.total_budget.count() / 1000);
      break;
    }
    spdlog::debug("{}: {} ({}); retry {} in {} ms", where, to_string(last.kind),
                  text::excerpt(last.message, 120), attempt_number, delay.count());
    if (!sleep_unless_cancelled(delay, options.cancel))
      return finish_failure({FailureKind::cancelled, 0, "cancelled"});
  }
  return finish_failure(std::move(last));
}

}  // namespace upskill::llm
