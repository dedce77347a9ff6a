#pragma once
// Internal to the trace module: Codex's code mode (docs/traces.md, "Codex"). From Codex 0.144 a
// rollout may hold, instead of shell and patch calls, calls of one tool named `exec` whose input is
// a JavaScript script calling the real tools: `tools.exec_command({"cmd": …})`,
// `tools.apply_patch(patch)` with `const patch = "*** Begin Patch…"`, `tools.write_stdin(…)`.
// This reads the calls out of the script, so that they are commands and patches like any other.
#include <string>
#include <string_view>
#include <vector>

#include "upskill/core/json.hpp"

namespace upskill::trace::detail {

struct ScriptCall {
  std::string name;  // exec_command, apply_patch, write_stdin, …
  Json input;        // exec_command's object; apply_patch's patch text
};

// The tool calls a code-mode script makes, in order; empty when it makes none this can read (an
// argument built at run time rather than written out).
std::vector<ScriptCall> code_mode_calls(std::string_view script);

// A code-mode call's output without the script's own frame ("Script completed\nWall time 0.1
// seconds\nOutput:\n…"; "Script error:\n" before a thrown error's message), and whether the
// script failed.
struct ScriptOutput {
  std::string text;
  bool failed = false;
};
ScriptOutput code_mode_output(std::string_view output);

}  // namespace upskill::trace::detail
