// The two wire dialects: request bodies and headers, whole responses, and streams (see wire.hpp).
#include "upskill/llm/wire.hpp"

namespace upskill::llm {

// Defined in wire_openai.cpp / wire_anthropic.cpp.
Json openai_request_body(const ChatRequest&, const ResolvedModel&, bool);
Json anthropic_request_body(const ChatRequest&, const ResolvedModel&, bool);
std::expected<ChatResponse, LlmFailure> parse_openai_response(std::string_view);
std::expected<ChatResponse, LlmFailure> parse_anthropic_response(std::string_view);
std::unique_ptr<StreamDecoder> make_openai_stream_decoder();
std::unique_ptr<StreamDecoder> make_anthropic_stream_decoder();

Json request_body(const ChatRequest& request, const ResolvedModel& model, bool stream) {
  return model.dialect == Dialect::anthropic ? anthropic_request_body(request, model, stream)
                                             : openai_request_body(request, model, stream);
}

Headers request_headers(const ResolvedModel& model) {
  Headers h{{"Content-Type", "application/json"}};
  if (model.dialect == Dialect::anthropic) {
    if (!model.api_key.empty()) h.emplace_back("x-api-key", model.api_key.reveal());
    h.emplace_back("anthropic-version", model.options.anthropic_version.value_or("2023-06-01"));
  } else if (!model.api_key.empty()) {
    h.emplace_back("Authorization", "Bearer " + model.api_key.reveal());
  }
  return h;
}

std::expected<ChatResponse, LlmFailure> parse_response(std::string_view body, Dialect dialect) {
  return dialect == Dialect::anthropic ? parse_anthropic_response(body)
                                       : parse_openai_response(body);
}

std::unique_ptr<StreamDecoder> make_stream_decoder(Dialect dialect) {
  return dialect == Dialect::anthropic ? make_anthropic_stream_decoder()
                                       : make_openai_stream_decoder();
}

}  // namespace upskill::llm
