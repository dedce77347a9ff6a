// Names of trace formats (the `--format` values and the "format" field of `upskill trace --json`)
// and of turn roles.
#include <array>

#include "upskill/trace/trace.hpp"

namespace upskill::trace {

namespace {

struct FormatName {
  Format format;
  const char* name;
};
constexpr std::array<FormatName, 15> kFormats{{
    {Format::claude_jsonl, "claude-jsonl"},
    {Format::claude_stream, "claude-stream-json"},
    {Format::claude_export, "claude-export"},
    {Format::codex_rollout, "codex-rollout"},
    {Format::codex_exec, "codex-exec-json"},
    {Format::openai_chat, "openai-chat"},
    {Format::responses, "responses"},
    {Format::anthropic, "anthropic-messages"},
    {Format::fast_agent_json, "fast-agent-json"},
    {Format::gemini, "gemini-cli"},
    {Format::opencode, "opencode"},
    {Format::opencode_run, "opencode-run"},
    {Format::fast_agent_text, "fast-agent-text"},
    {Format::markdown, "markdown"},
    {Format::text, "text"},
}};

}  // namespace

std::string_view to_string(Format format) {
  for (const auto& f : kFormats)
    if (f.format == format) return f.name;
  return "text";
}

std::optional<Format> format_from_string(std::string_view name) {
  for (const auto& f : kFormats)
    if (name == f.name) return f.format;
  return std::nullopt;
}

const std::vector<std::string>& format_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& f : kFormats) out.emplace_back(f.name);
    return out;
  }();
  return names;
}

std::string_view to_string(Role role) {
  switch (role) {
    case Role::user:
      return "user";
    case Role::assistant:
      return "assistant";
    case Role::system:
      return "system";
  }
  return "user";
}

}  // namespace upskill::trace
