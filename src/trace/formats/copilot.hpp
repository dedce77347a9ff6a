#pragma once
// Internal to the trace module: Copilot CLI session events and `--output-format json`
// (copilot.cpp).
#include "../reading/line_source.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

void parse_copilot_events(LineSource& lines, Trace& trace);

}  // namespace upskill::trace::detail
