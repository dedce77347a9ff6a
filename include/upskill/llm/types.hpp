#pragma once
// One request/response model for every chat API upskill talks to; the wire dialects translate it.
#include <optional>
#include <string>
#include <vector>

#include "upskill/core/json.hpp"

namespace upskill::llm {

enum class Role { system, user, assistant, tool };
std::string_view to_string(Role role);

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text, as the model wrote it
};

struct Message {
  Role role = Role::user;
  std::string content;
  std::vector<ToolCall> tool_calls;  // assistant
  std::string tool_call_id;          // tool result
  std::string name;                  // tool name of a tool result

  static Message system(std::string text) { return {Role::system, std::move(text), {}, {}, {}}; }
  static Message user(std::string text) { return {Role::user, std::move(text), {}, {}, {}}; }
  static Message assistant(std::string text) {
    return {Role::assistant, std::move(text), {}, {}, {}};
  }
  static Message tool_result(std::string id, std::string tool, std::string text) {
    return {Role::tool, std::move(text), {}, std::move(id), std::move(tool)};
  }
};

struct ToolSpec {
  std::string name;
  std::string description;
  Json parameters = Json::object();  // JSON Schema
};

struct ResponseFormat {
  enum class Kind { text, json_object, json_schema };
  Kind kind = Kind::text;
  std::string name;  // json_schema
  Json schema;       // json_schema
};

struct SamplingOptions {
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<long long> max_tokens;
  std::optional<long long> seed;
  std::vector<std::string> stop;
};

struct ChatRequest {
  std::vector<Message> messages;
  std::vector<ToolSpec> tools;
  SamplingOptions sampling;
  ResponseFormat response_format;
};

// Token usage, normalised across dialects. `input` counts every prompt token, cached ones included
// (OpenAI's prompt_tokens; Anthropic's input + cache reads + cache writes); `output` counts every
// generated token, reasoning included.
struct Usage {
  long long input = 0;
  long long output = 0;
  long long cached = 0;
  long long reasoning = 0;
  int requests = 0;
  bool estimated = false;  // no usage from the server; counted from text

  long long total() const { return input + output; }
  Usage& operator+=(const Usage& other);
};

struct ChatResponse {
  std::string content;    // the answer, reasoning removed
  std::string reasoning;  // reasoning text, if the server or the model exposed any
  std::vector<ToolCall> tool_calls;
  std::string finish_reason;  // normalised: stop, length, tool_calls, content_filter
  Usage usage;
  std::string model;  // the id the server reported
  double latency_ms = 0;
  int attempts = 1;
  bool from_cassette = false;
};

Json to_json(const Usage& usage);
Usage usage_from_json(const Json& j);
Json to_json(const ChatResponse& response);
ChatResponse response_from_json(const Json& j);

// Splits a leading <think>...</think> block off `content` (llama.cpp --reasoning-format none,
// DeepSeek-style models). Returns the reasoning; `content` keeps the rest.
std::string take_think_block(std::string& content);

}  // namespace upskill::llm
