#pragma once
// Internal to the trace module: message-array traces (messages.cpp) — OpenAI chat, Anthropic
// Messages and fast-agent history JSON — and the helpers other document readers share.
#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

void parse_openai_chat(const Json& doc, Trace& trace);
void parse_anthropic(const Json& doc, Trace& trace);
void parse_fast_agent_json(const Json& doc, Trace& trace);

// The message list of a document: a bare array or {"messages": [...]}; nullptr (noted) otherwise.
const Json* message_list(const Json& doc, Trace& trace);
// A numeric field as a count; 0 when absent or not a number.
long long count_field(const Json& obj, const char* key);

}  // namespace upskill::trace::detail
