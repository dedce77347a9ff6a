#pragma once
// Internal to the trace module: Gemini CLI sessions (gemini.cpp), as one JSON document or as the
// records of a session-*.jsonl gathered into an array.
#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

void parse_gemini(const Json& doc, Trace& trace);

}  // namespace upskill::trace::detail
