#pragma once
// Internal to the trace module: reading a tool call's arguments whatever the agent named them
// (tool_kinds.cpp, which also classifies calls: classify_tool and shell_command_of in
// upskill/trace/trace.hpp).
#include <initializer_list>
#include <string>

#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

// The first of `names` an object input has (and that is not null); nullptr otherwise.
const Json* input_field(const Json& input, std::initializer_list<const char*> names);
// The same field as a string; "" when absent or not a string.
std::string input_string(const Json& input, std::initializer_list<const char*> names);

}  // namespace upskill::trace::detail
