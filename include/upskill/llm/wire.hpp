#pragma once
// The two wire dialects: request bodies and headers, whole responses, and streams. Pure functions
// over JSON, so every server quirk can be tested without a network.
#include <expected>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "upskill/core/json.hpp"
#include "upskill/llm/errors.hpp"
#include "upskill/llm/model.hpp"
#include "upskill/llm/sse.hpp"
#include "upskill/llm/types.hpp"

namespace upskill::llm {

using Headers = std::vector<std::pair<std::string, std::string>>;

// The JSON body for a chat request (with `stream` set when streaming).
Json request_body(const ChatRequest& request, const ResolvedModel& model, bool stream);
// Headers including the key (the only place the key is used).
Headers request_headers(const ResolvedModel& model);

// Parses a complete (non-streamed) response body. Failures carry no model/endpoint prefix.
std::expected<ChatResponse, LlmFailure> parse_response(std::string_view body, Dialect dialect);

// Turns a stream of server-sent events into a response.
class StreamDecoder {
 public:
  virtual ~StreamDecoder() = default;
  // Returns a failure as soon as the stream reports one (an error event after HTTP 200).
  virtual std::optional<LlmFailure> on_event(const SseEvent& event) = 0;
  // At the end of the stream; a stream that never finished is a failure.
  virtual std::expected<ChatResponse, LlmFailure> finish() = 0;
};
std::unique_ptr<StreamDecoder> make_stream_decoder(Dialect dialect);

// Reasoning from an OpenAI-style message or delta, in the order reasoning_details →
// reasoning_content → reasoning (the leading <think> block is handled on the content).
std::string reasoning_of(const Json& message);

}  // namespace upskill::llm
