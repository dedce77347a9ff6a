#pragma once
// Internal to the trace module: Claude Code /export transcripts (claude_export.cpp), what the
// terminal showed read back into turns and tool calls.
#include "../reading/line_source.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

void parse_claude_export(LineSource& lines, Trace& trace);

}  // namespace upskill::trace::detail
