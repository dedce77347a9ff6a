#pragma once
// Internal to the trace module: opencode's `export` documents and `run --format json` streams
// (opencode.cpp).
#include "../reading/line_source.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

void parse_opencode_export(const Json& doc, Trace& trace);
void parse_opencode_run(LineSource& lines, Trace& trace);

}  // namespace upskill::trace::detail
