#pragma once
// Internal to the trace module: Claude Code's session JSONL and `claude -p --output-format
// stream-json` (claude.cpp).
#include "../reading/line_source.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

// `sidechain`: the lines are a subagent's (their turns are marked as sidechain work).
void parse_claude_jsonl(LineSource& lines, Trace& trace, bool sidechain);

}  // namespace upskill::trace::detail
