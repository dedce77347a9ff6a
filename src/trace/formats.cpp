// Names of trace formats (the `--format` values and the "format" field of `upskill trace --json`)
// and of turn roles.
#include <array>

#include "upskill/core/enum_names.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace {

namespace {

constexpr enum_names::Table<Format, 16> kFormats{{
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
    {Format::copilot_events, "copilot-events"},
    {Format::fast_agent_text, "fast-agent-text"},
    {Format::markdown, "markdown"},
    {Format::text, "text"},
}};

constexpr enum_names::Table<Role, 3> kRoles{
    {{Role::user, "user"}, {Role::assistant, "assistant"}, {Role::system, "system"}}};

}  // namespace

std::string_view to_string(Format format) {
  return enum_names::name(kFormats, format, "text");
}

std::optional<Format> format_from_string(std::string_view name) {
  return enum_names::parse(kFormats, name);
}

const std::vector<std::string>& format_names() {
  static const std::vector<std::string> names = enum_names::all(kFormats);
  return names;
}

std::string_view to_string(Role role) {
  return enum_names::name(kRoles, role, "user");
}

}  // namespace upskill::trace
