#pragma once
// Internal to the trace module: text traces (text_formats.cpp) — fast-agent's delimited history,
// markdown transcripts with role markers, and plain text.
#include <string>

#include "../reading/line_source.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

void parse_fast_agent_text(LineSource& lines, Trace& trace);
void parse_markdown(LineSource& lines, Trace& trace);
void parse_plain_text(LineSource& lines, Trace& trace);

// "## User", "**Assistant:**", "Human: …": a markdown role marker.
bool has_role_marker(const std::string& line);

}  // namespace upskill::trace::detail
