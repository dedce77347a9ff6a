#pragma once
// A long Claude Code session whose facts that matter are at the end: `filler` failing builds and
// written sources, then the final build.toml, the last error and its fix. Markers: the task
// "Build the fused kernel project.", "LAST-ERROR unknown field", "FINAL-CONFIG" (the edit that
// fixed the build), and "kernel-builder build" succeeding last.
#include <string>

#include "upskill/core/json.hpp"

namespace upskill::testing {

inline std::string long_claude_session(int filler) {
  std::string s;
  int n = 0;
  auto line = [&](const Json& j) { s += j.dump() + "\n"; };
  auto call = [&](const std::string& name, const Json& input, const std::string& result,
                  bool error) {
    ++n;
    const std::string id = "t" + std::to_string(n);
    line({{"type", "assistant"},
          {"uuid", "a" + std::to_string(n)},
          {"sessionId", "long"},
          {"message",
           {{"id", "m" + std::to_string(n)},
            {"role", "assistant"},
            {"content",
             Json::array(
                 {{{"type", "text"}, {"text", "step " + std::to_string(n)}},
                  {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", input}}})}}}});
    line({{"type", "user"},
          {"uuid", "u" + std::to_string(n)},
          {"sessionId", "long"},
          {"message",
           {{"role", "user"},
            {"content", Json::array({{{"type", "tool_result"},
                                      {"tool_use_id", id},
                                      {"content", result},
                                      {"is_error", error}}})}}}});
  };
  line({{"type", "user"},
        {"uuid", "first"},
        {"sessionId", "long"},
        {"message", {{"role", "user"}, {"content", "Build the fused kernel project."}}}});
  for (int i = 0; i < filler; ++i) {
    call("Bash", {{"command", "make attempt" + std::to_string(i)}},
         "Exit code 1\nerror: early failure " + std::to_string(i) + "\n" + std::string(2000, 'e'),
         true);
    call("Write",
         {{"file_path", "src/f" + std::to_string(i) + ".cu"}, {"content", std::string(3000, 'c')}},
         "ok", false);
  }
  call("Write",
       {{"file_path", "build.toml"}, {"content", "[general]\nname = \"fused\"\nPLACEHOLDER\n"}},
       "ok", false);
  call("Bash", {{"command", "kernel-builder build"}},
       "Exit code 1\nerror: LAST-ERROR unknown field `capabilities`", true);
  call("Edit",
       {{"file_path", "build.toml"},
        {"old_string", "PLACEHOLDER"},
        {"new_string", "cuda-capabilities = [\"9.0\"]  # FINAL-CONFIG"}},
       "ok", false);
  call("Bash", {{"command", "kernel-builder build"}}, "built", false);
  return s;
}

}  // namespace upskill::testing
