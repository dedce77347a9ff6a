// The format registry (see registry.hpp): every trace format's name, reader and detection rules,
// in one place (docs/traces.md, "Detection"), and the names of turn roles.
#include "registry.hpp"

#include <array>
#include <set>

#include "../reading/records.hpp"
#include "claude.hpp"
#include "claude_export.hpp"
#include "codex.hpp"
#include "copilot.hpp"
#include "gemini.hpp"
#include "messages.hpp"
#include "opencode.hpp"
#include "text_formats.hpp"
#include "upskill/core/enum_names.hpp"

namespace upskill::trace {

namespace detail {

namespace {

void read_claude_session(LineSource& lines, Trace& trace) {
  parse_claude_jsonl(lines, trace, false);
}

constexpr std::array<FormatEntry, Format::kCount> kEntries{{
    {Format::claude_jsonl, "claude-jsonl", read_claude_session, nullptr, true},
    {Format::claude_stream, "claude-stream-json", read_claude_session, nullptr, false},
    {Format::claude_export, "claude-export", parse_claude_export, nullptr, false, true},
    {Format::codex_rollout, "codex-rollout", parse_codex_rollout, nullptr, true},
    {Format::codex_exec, "codex-exec-json", parse_codex_exec, nullptr, false},
    {Format::openai_chat, "openai-chat", nullptr, parse_openai_chat, false},
    {Format::responses, "responses", nullptr, parse_responses, false},
    {Format::anthropic, "anthropic-messages", nullptr, parse_anthropic, false},
    {Format::fast_agent_json, "fast-agent-json", nullptr, parse_fast_agent_json, false},
    {Format::gemini, "gemini-cli", nullptr, parse_gemini, false},
    {Format::opencode, "opencode", nullptr, parse_opencode_export, false},
    {Format::opencode_run, "opencode-run", parse_opencode_run, nullptr, true},
    {Format::copilot_events, "copilot-events", parse_copilot_events, nullptr, true},
    {Format::fast_agent_text, "fast-agent-text", parse_fast_agent_text, nullptr, false, true},
    {Format::markdown, "markdown", parse_markdown, nullptr, false, true},
    {Format::text, "text", parse_plain_text, nullptr, false, true},
}};

constexpr bool in_index_order() {
  for (std::size_t i = 0; i < kEntries.size(); ++i)
    if (kEntries[i].format.index() != i || kEntries[i].name.empty() ||
        (kEntries[i].read_lines == nullptr) == (kEntries[i].read_document == nullptr))
      return false;
  return true;
}
static_assert(in_index_order(), "one entry a format, in Format::index() order, with one reader");

bool starts_with_any(const std::string& type, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes)
    if (type.starts_with(p)) return true;
  return false;
}

// In claim order. Ranks: Codex rollouts first, then Gemini sessions, Copilot events, Claude
// sessions, Claude streams, Responses items, chat messages, codex exec, opencode run.
const std::array<LineRule, 9> kLineRules{{
    {Format::gemini, 2, "JSON lines of a Gemini CLI session",
     [](const Json& r, std::size_t, const std::string& type) {
       // Its header, its updates, its model's messages.
       return r.contains("$set") || r.contains("$rewindTo") ||
              (type.empty() && r.contains("sessionId") && r.contains("projectHash")) ||
              (type == "gemini" && r.contains("id"));
     }},
    {Format::copilot_events, 3, "JSON lines of Copilot CLI session events",
     [](const Json& r, std::size_t, const std::string& type) {
       return r.contains("data") && r.contains("id") &&
              starts_with_any(type, {"session.", "assistant.", "user.", "tool."});
     }},
    {Format::codex_rollout, 1, "JSON lines with Codex rollout records",
     [](const Json& r, std::size_t index, const std::string& type) {
       return type == "session_meta" || type == "response_item" || type == "event_msg" ||
              type == "turn_context" || type == "compacted" ||
              (r.contains("timestamp") && r.contains("payload") && !type.empty()) ||
              // the legacy rollout header
              (index == 0 && type.empty() && r.contains("id") && r.contains("instructions"));
     }},
    {Format::claude_jsonl, 4, "JSON lines with Claude Code session records",
     [](const Json& r, std::size_t, const std::string& type) {
       // Session records name their session `sessionId`; `claude -p --output-format
       // stream-json` lines carry a uuid too, but `session_id`.
       static const std::set<std::string> types{"user",
                                                "assistant",
                                                "summary",
                                                "system",
                                                "queue-operation",
                                                "ai-title",
                                                "file-history-snapshot"};
       return types.contains(type) && (r.contains("sessionId") || r.contains("leafUuid") ||
                                       (r.contains("uuid") && !r.contains("session_id")));
     }},
    {Format::claude_stream, 5, "JSON lines of claude -p stream-json",
     [](const Json& r, std::size_t, const std::string& type) {
       return type == "result" || type == "stream_event" || type == "system" ||
              ((type == "user" || type == "assistant") && r.contains("message"));
     }},
    {Format::codex_exec, 8, "JSON lines of a `codex exec --json` stream",
     [](const Json&, std::size_t, const std::string& type) {
       return starts_with_any(type, {"thread.", "turn.", "item."});
     }},
    {Format::opencode_run, 9, "JSON lines of an `opencode run --format json` stream",
     [](const Json& r, std::size_t, const std::string& type) {
       // A run that failed at once prints only its error event.
       return r.contains("sessionID") &&
              (type == "step_start" || type == "step_finish" || type == "tool_use" ||
               type == "text" || type == "reasoning" || (type == "error" && r.contains("error")));
     }},
    {Format::codex_rollout, 6, "JSON lines of Responses API items",
     [](const Json&, std::size_t, const std::string& type) {
       return is_responses_item_type(type);
     }},
    {Format::openai_chat, 7, "JSON lines of chat messages",
     [](const Json& r, std::size_t, const std::string&) { return r.contains("role"); }},
}};

// `opencode export`: {info, messages[{info, parts}]}.
bool is_opencode_export(const Json& doc) {
  if (!doc.is_object() || !doc.contains("info") || !doc["info"].is_object() ||
      !doc.contains("messages") || !doc["messages"].is_array())
    return false;
  const Json& messages = doc["messages"];
  for (const Json& m : messages)
    if (m.is_object() && m.contains("parts") && m["parts"].is_array()) return true;
  return false;
}

const std::array<DocumentRule, 13> kDocumentRules{{
    {Format::gemini, "a Gemini CLI session (sessionId, projectHash, messages)",
     [](const Json& doc, const DocumentShape&) {
       return doc.is_object() && doc.contains("sessionId") && doc.contains("projectHash") &&
              doc.contains("messages");
     }},
    {Format::opencode, "an opencode export (info, messages with parts)",
     [](const Json& doc, const DocumentShape&) { return is_opencode_export(doc); }},
    {Format::openai_chat, "ShareGPT conversations (read as chat messages)",
     [](const Json& doc, const DocumentShape&) {
       return doc.is_object() && doc.contains("conversations");
     }},
    {Format::responses, "a Responses API request or response (input/output items)",
     [](const Json& doc, const DocumentShape&) {
       return doc.is_object() && (doc.contains("output") || doc.contains("input")) &&
              !doc.contains("messages");
     }},
    {Format::text, "JSON without a message list (read as plain text)",
     [](const Json&, const DocumentShape& s) { return s.messages == nullptr; }},
    {Format::anthropic, "messages with tool_use/tool_result blocks",
     [](const Json&, const DocumentShape& s) { return s.anthropic_blocks; }},
    {Format::fast_agent_json, "messages with fast-agent tool maps",
     [](const Json&, const DocumentShape& s) { return s.fast_agent_keys; }},
    {Format::openai_chat, "messages with tool_calls / tool_call_id",
     [](const Json&, const DocumentShape& s) { return s.openai_keys; }},
    {Format::responses, "Responses API items",
     [](const Json&, const DocumentShape& s) { return s.response_items; }},
    {Format::fast_agent_json, "{\"messages\": [...]} with MCP text blocks",
     [](const Json& doc, const DocumentShape& s) {
       return s.text_blocks && doc.is_object() && doc.size() == 1;
     }},
    {Format::anthropic, "messages with content blocks",
     [](const Json&, const DocumentShape& s) { return s.text_blocks; }},
    {Format::openai_chat, "messages with role and string content",
     [](const Json&, const DocumentShape& s) { return s.string_content; }},
    {Format::openai_chat, "a message list", [](const Json&, const DocumentShape&) { return true; }},
}};

const std::array<TextRule, 5> kTextRules{{
    {Format::claude_export, "the Claude Code banner", [](const TextShape& s) { return s.banner; }},
    {Format::claude_export, "⏺ / ⎿ transcript markers",
     [](const TextShape& s) { return s.export_markers >= 2; }},
    {Format::fast_agent_text, "---USER / ---ASSISTANT delimiters",
     [](const TextShape& s) { return s.delimited; }},
    {Format::markdown, "role headings", [](const TextShape& s) { return s.roles; }},
    {Format::text, "no known markers", [](const TextShape&) { return true; }},
}};

}  // namespace

std::span<const FormatEntry> format_entries() {
  return kEntries;
}

const FormatEntry& entry_of(Format format) {
  return kEntries[format.index() < kEntries.size() ? format.index() : Format::text.index()];
}

std::span<const LineRule> line_rules() {
  return kLineRules;
}

std::span<const DocumentRule> document_rules() {
  return kDocumentRules;
}

std::span<const TextRule> text_rules() {
  return kTextRules;
}

bool is_responses_item_type(const std::string& t) {
  static const std::set<std::string> types = {
      "message",          "function_call",           "function_call_output", "reasoning",
      "custom_tool_call", "custom_tool_call_output", "local_shell_call",     "web_search_call"};
  return types.contains(t);
}

}  // namespace detail

std::string_view to_string(Format format) {
  return detail::entry_of(format).name;
}

std::optional<Format> format_from_string(std::string_view name) {
  for (const auto& e : detail::format_entries())
    if (e.name == name) return e.format;
  return std::nullopt;
}

const std::vector<std::string>& format_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& e : detail::format_entries()) out.emplace_back(e.name);
    return out;
  }();
  return names;
}

namespace {

constexpr enum_names::Table<Role, 3> kRoles{
    {{Role::user, "user"}, {Role::assistant, "assistant"}, {Role::system, "system"}}};

}  // namespace

std::string_view to_string(Role role) {
  return enum_names::name(kRoles, role, "user");
}

}  // namespace upskill::trace
