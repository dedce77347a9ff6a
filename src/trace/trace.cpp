// Detection (docs/traces.md, applied to the first 64 KB) and the entry points
// that read a trace file, dispatch to its parser and analyse the result.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <future>
#include <regex>
#include <set>
#include <sstream>

#include "parsers.hpp"
#include "upskill/core/hash.hpp"
#include "upskill/core/text.hpp"
#include "upskill/core/unicode.hpp"

namespace upskill::trace {

namespace {

constexpr std::size_t kHeadBytes = 64 * 1024;

std::string_view skip_bom_and_space(std::string_view s) {
  if (s.starts_with("\xEF\xBB\xBF")) s.remove_prefix(3);
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\n' || s.front() == '\r' || s.front() == '\t'))
    s.remove_prefix(1);
  return s;
}

// The message list of a JSON document, if it has one.
const Json* messages_of(const Json& doc) {
  if (doc.is_array()) return &doc;
  if (doc.is_object() && doc.contains("messages") && doc["messages"].is_array())
    return &doc["messages"];
  return nullptr;
}

bool is_responses_item_type(const std::string& t) {
  static const std::set<std::string> types = {
      "message",          "function_call",           "function_call_output", "reasoning",
      "custom_tool_call", "custom_tool_call_output", "local_shell_call",     "web_search_call"};
  return types.contains(t);
}

// `opencode export`: {info, messages[{info, parts}]}.
bool is_opencode_export(const Json& doc) {
  if (!doc.is_object() || !doc.contains("info") || !doc["info"].is_object() ||
      !doc.contains("messages") || !doc["messages"].is_array())
    return false;
  return std::any_of(doc["messages"].begin(), doc["messages"].end(), [](const Json& m) {
    return m.is_object() && m.contains("parts") && m["parts"].is_array();
  });
}

}  // namespace

Detection detect_json_document(const Json& doc) {
  if (doc.is_object() && doc.contains("sessionId") && doc.contains("projectHash") &&
      doc.contains("messages"))
    return {Format::gemini, "a Gemini CLI session (sessionId, projectHash, messages)"};
  if (is_opencode_export(doc))
    return {Format::opencode, "an opencode export (info, messages with parts)"};
  if (doc.is_object() && doc.contains("conversations"))
    return {Format::openai_chat, "ShareGPT conversations (read as chat messages)"};
  if (doc.is_object() && (doc.contains("output") || doc.contains("input")) &&
      !doc.contains("messages"))
    return {Format::responses, "a Responses API request or response (input/output items)"};
  const Json* messages = messages_of(doc);
  if (!messages) return {Format::text, "JSON without a message list (read as plain text)"};
  bool anthropic_blocks = false, fast_agent_keys = false, openai_keys = false,
       response_items = false, text_blocks = false, string_content = false;
  for (const auto& m : *messages) {
    if (!m.is_object()) continue;
    if (!m.contains("role") && m.contains("type") && m["type"].is_string() &&
        is_responses_item_type(m["type"].get<std::string>()))
      response_items = true;
    if ((m.contains("tool_calls") && m["tool_calls"].is_object()) || m.contains("tool_results") ||
        m.contains("channels"))
      fast_agent_keys = true;
    if ((m.contains("tool_calls") && m["tool_calls"].is_array()) || m.contains("tool_call_id"))
      openai_keys = true;
    if (m.contains("type") && m["type"] == "message") response_items = true;
    const Json content = m.value("content", Json());
    if (content.is_string()) string_content = true;
    if (content.is_array())
      for (const auto& block : content) {
        const std::string type = detail::str_field(block, "type");
        if (type == "tool_use" || type == "tool_result" || type == "thinking")
          anthropic_blocks = true;
        if (type == "input_text" || type == "output_text") response_items = true;
        if (type == "text") text_blocks = true;
      }
  }
  if (anthropic_blocks) return {Format::anthropic, "messages with tool_use/tool_result blocks"};
  if (fast_agent_keys) return {Format::fast_agent_json, "messages with fast-agent tool maps"};
  if (openai_keys) return {Format::openai_chat, "messages with tool_calls / tool_call_id"};
  if (response_items) return {Format::responses, "Responses API items"};
  if (text_blocks && doc.is_object() && doc.size() == 1)
    return {Format::fast_agent_json, "{\"messages\": [...]} with MCP text blocks"};
  if (text_blocks) return {Format::anthropic, "messages with content blocks"};
  if (string_content) return {Format::openai_chat, "messages with role and string content"};
  return {Format::openai_chat, "a message list"};
}

namespace {

Detection detect_jsonl(const std::vector<Json>& records) {
  bool codex = false, claude = false, stream = false, items = false, chat = false,
       codex_exec = false, opencode_run = false, gemini = false, copilot = false;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Json& r = records[i];
    const std::string type = detail::str_field(r, "type");  // a "type" of another kind is none
    if (r.contains("$set") || r.contains("$rewindTo") ||
        (type.empty() && r.contains("sessionId") && r.contains("projectHash")) ||
        (type == "gemini" && r.contains("id")))
      gemini = true;  // a Gemini CLI session: header, updates, its model's messages
    else if (r.contains("data") && r.contains("id") &&
             (type.starts_with("session.") || type.starts_with("assistant.") ||
              type.starts_with("user.") || type.starts_with("tool.")))
      copilot = true;  // Copilot CLI events
    else if (type == "session_meta" || type == "response_item" || type == "event_msg" ||
        type == "turn_context" || type == "compacted" ||
        (r.contains("timestamp") && r.contains("payload") && !type.empty()))
      codex = true;
    else if (i == 0 && type.empty() && r.contains("id") && r.contains("instructions"))
      codex = true;  // legacy rollout header
    // Session records name their session `sessionId`; `claude -p --output-format stream-json`
    // lines carry a uuid too, but `session_id`.
    else if ((type == "user" || type == "assistant" || type == "summary" ||
              type == "file-history-snapshot" || type == "system" || type == "queue-operation" ||
              type == "ai-title") &&
             (r.contains("sessionId") || r.contains("leafUuid") ||
              (r.contains("uuid") && !r.contains("session_id"))))
      claude = true;
    else if (type == "result" || type == "stream_event" || type == "system" ||
             ((type == "user" || type == "assistant") && r.contains("message")))
      stream = true;
    else if (type.starts_with("thread.") || type.starts_with("turn.") || type.starts_with("item."))
      codex_exec = true;
    else if (r.contains("sessionID") &&
             (type == "step_start" || type == "step_finish" || type == "tool_use" ||
              type == "text" || type == "reasoning"))
      opencode_run = true;
    else if (is_responses_item_type(type))
      items = true;
    else if (r.contains("role"))
      chat = true;
  }
  if (codex) return {Format::codex_rollout, "JSON lines with Codex rollout records"};
  if (gemini) return {Format::gemini, "JSON lines of a Gemini CLI session"};
  if (copilot) return {Format::copilot_events, "JSON lines of Copilot CLI session events"};
  if (claude) return {Format::claude_jsonl, "JSON lines with Claude Code session records"};
  if (stream) return {Format::claude_stream, "JSON lines of claude -p stream-json"};
  if (items) return {Format::codex_rollout, "JSON lines of Responses API items"};
  if (chat) return {Format::openai_chat, "JSON lines of chat messages"};
  if (codex_exec) return {Format::codex_exec, "JSON lines of a `codex exec --json` stream"};
  if (opencode_run)
    return {Format::opencode_run, "JSON lines of an `opencode run --format json` stream"};
  return {Format::text, "JSON lines of an unknown kind (read as plain text)"};
}

bool is_export_marker(const std::string& line) {
  return line.starts_with("⏺ ") || line.starts_with("● ") ||
         (line.find("⎿") != std::string::npos && text::trim(line).starts_with("⎿"));
}

}  // namespace

// A single object: a JSON document unless it is one JSONL record.
Detection detect_one_object(const Json& object) {
  const Detection one = detect_jsonl({object});
  if (one.format == Format::codex_rollout || one.format == Format::claude_jsonl ||
      one.format == Format::opencode_run || one.format == Format::copilot_events)
    return one;
  return detect_json_document(object);
}

Detection detect_format(std::string_view head, bool whole_file) {
  const std::string_view s = skip_bom_and_space(head);
  if (s.empty()) return {Format::text, "empty"};
  if (s.front() == '[' || s.front() == '{') {
    // JSON lines when the first line is a whole object and more follows; bad lines in between
    // and a line cut at 64 KB are tolerated.
    std::vector<Json> records;
    std::size_t pos = 0;
    bool first_line = true, jsonl = false;
    while (pos < s.size() && records.size() < 20) {
      const std::size_t end = s.find('\n', pos);
      const bool last = end == std::string_view::npos;
      const std::string line = text::trim(s.substr(pos, last ? s.npos : end - pos));
      pos = last ? s.size() : end + 1;
      if (line.empty()) continue;
      Json r = Json::parse(line, nullptr, false);
      if (first_line) {
        first_line = false;
        if (r.is_discarded() || !r.is_object()) break;  // a document spread over lines
        jsonl = !last && text::trim(s.substr(pos)).size() > 0;
        if (!jsonl && !whole_file) jsonl = true;  // one object, then the rest past 64 KB
      }
      if (!r.is_discarded() && r.is_object()) records.push_back(std::move(r));
    }
    if (jsonl) return detect_jsonl(records);
    if (records.size() == 1 && whole_file) return detect_one_object(records.front());
    if (whole_file) {
      Json doc = Json::parse(s, nullptr, false);
      if (!doc.is_discarded()) return detect_json_document(doc);
    }
    return {Format::openai_chat, "a JSON document (kind decided once it is read whole)"};
  }
  // Text.
  int export_markers = 0;
  bool banner = false, delimited = false, roles = false;
  for (const std::string& line : text::split_lines(s)) {
    if (line.find("Claude Code") != std::string::npos && line.find("╭") != std::string::npos)
      banner = true;
    if (is_export_marker(line)) ++export_markers;
    const std::string t = text::trim(line);
    if (t == "---USER" || t == "---ASSISTANT") delimited = true;
    if (detail::has_role_marker(line)) roles = true;
  }
  if (banner || export_markers >= 2)
    return {Format::claude_export,
            banner ? "the Claude Code banner" : "⏺ / ⎿ transcript markers"};
  if (delimited) return {Format::fast_agent_text, "---USER / ---ASSISTANT delimiters"};
  if (roles) return {Format::markdown, "role headings"};
  return {Format::text, "no known markers"};
}

namespace {

// ShareGPT {"conversations": [{"from", "value"}]} as chat messages.
Json sharegpt_to_chat(const Json& doc) {
  Json out = Json::array();
  for (const auto& c : doc["conversations"]) {
    if (!c.is_object()) continue;
    const std::string from = detail::str_field(c, "from");
    const std::string role = from == "human" || from == "user"               ? "user"
                             : from == "system"                              ? "system"
                             : from == "tool" || from == "function_response" ? "tool"
                                                                             : "assistant";
    out.push_back(Json{{"role", role}, {"content", detail::str_field(c, "value")}});
  }
  return out;
}

void parse_document(const Json& doc, Format format, Trace& trace) {
  switch (format) {
    case Format::openai_chat:
      detail::parse_openai_chat(
          doc.is_object() && doc.contains("conversations") ? sharegpt_to_chat(doc) : doc, trace);
      return;
    case Format::responses:
      detail::parse_responses(doc, trace);
      return;
    case Format::anthropic:
      detail::parse_anthropic(doc, trace);
      return;
    case Format::fast_agent_json:
      detail::parse_fast_agent_json(doc, trace);
      return;
    case Format::gemini:
      detail::parse_gemini(doc, trace);
      return;
    case Format::opencode:
      detail::parse_opencode_export(doc, trace);
      return;
    default:
      return;
  }
}

bool is_document_format(Format f) {
  return f == Format::openai_chat || f == Format::responses || f == Format::anthropic ||
         f == Format::fast_agent_json || f == Format::gemini || f == Format::opencode;
}

// JSON lines of chat messages: gathered into one array.
Json gather_lines(std::istream& in, Trace& trace) {
  Json out = Json::array();
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (text::trim(line).empty()) continue;
    ++trace.stats.lines;
    Json r = Json::parse(line, nullptr, false);
    if (r.is_discarded()) {
      ++trace.stats.malformed;
      trace.stats.note(fmt::format("line {}: not JSON (skipped)", n));
      continue;
    }
    out.push_back(std::move(r));
  }
  return out;
}

Status parse_stream(std::istream& in, const std::string& name, Format format, Trace& trace) {
  detail::LineSource lines(in, name);
  switch (format) {
    case Format::claude_jsonl:
    case Format::claude_stream:
      detail::parse_claude_jsonl(lines, trace, false);
      return {};
    case Format::codex_rollout:
      detail::parse_codex_rollout(lines, trace);
      return {};
    case Format::codex_exec:
      detail::parse_codex_exec(lines, trace);
      return {};
    case Format::opencode_run:
      detail::parse_opencode_run(lines, trace);
      return {};
    case Format::copilot_events:
      detail::parse_copilot_events(lines, trace);
      return {};
    case Format::claude_export:
      detail::parse_claude_export(lines, trace);
      return {};
    case Format::fast_agent_text:
      detail::parse_fast_agent_text(lines, trace);
      return {};
    case Format::markdown:
      detail::parse_markdown(lines, trace);
      return {};
    case Format::text:
      detail::parse_plain_text(lines, trace);
      return {};
    default:
      break;
  }
  return fail(Error::usage(name + ": a document format cannot be read line by line"));
}

// A document format detected from the head, decided with the whole text: the kind of the JSON
// value — or JSON lines whose first line was longer than the head, judged on their first whole
// lines. `doc` receives the parsed value (discarded when the text is not one JSON value).
Detection settle_document(const std::string& all, Detection tentative, Json& doc) {
  doc = Json::parse(all, nullptr, false);
  if (!doc.is_discarded()) return detect_json_document(doc);
  std::vector<Json> records;
  std::istringstream lines(all);
  std::string line;
  while (records.size() < 20 && std::getline(lines, line)) {
    Json r = Json::parse(line, nullptr, false);
    if (!r.is_discarded() && r.is_object()) records.push_back(std::move(r));
  }
  return records.size() >= 2 ? detect_jsonl(records) : tentative;
}

// Reads a trace whose whole text is in memory: the document formats from `doc` (already parsed,
// or JSON lines of messages), the others line by line.
Status parse_all(const std::string& all, Json doc, const std::string& name, Format format,
                 Trace& trace) {
  if (!is_document_format(format)) {
    std::istringstream in(all);
    return parse_stream(in, name, format, trace);
  }
  if (doc.is_discarded()) {
    std::istringstream again(all);
    doc = gather_lines(again, trace);
    if (doc.empty()) {
      auto parsed = parse_json_document(all, name);  // for the line and column of the error
      return fail(parsed ? Error::usage(name + ": not a readable trace")
                         : Error::usage(parsed.error().message));
    }
  }
  parse_document(doc, format, trace);
  return {};
}

// The session's subagent files: <dir>/<session>/subagents/agent-*.jsonl, and agent-*.jsonl
// beside the session whose records name the same session.
std::vector<fs::path> subagent_files(const fs::path& session) {
  std::vector<fs::path> out;
  std::error_code ec;
  const fs::path nested = session.parent_path() / session.stem() / "subagents";
  for (const fs::path& dir : {nested, session.parent_path()}) {
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (!name.starts_with("agent-") || !name.ends_with(".jsonl")) continue;
      if (dir != nested) {
        std::ifstream in(entry.path());
        std::string first;
        std::getline(in, first);
        const Json r = Json::parse(first, nullptr, false);
        if (r.is_discarded() || detail::str_field(r, "sessionId") != session.stem().string())
          continue;
      }
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// No trace format holds a NUL byte: a file with one in its first 64 KB is binary (or UTF-16) and
// is refused rather than read as one long user message.
Status refuse_binary(std::string_view head, const std::string& name) {
  const std::size_t nul = unicode::first_nul(head);
  if (nul == head.size()) return {};
  return fail(Error::usage(fmt::format(
      "{}: binary data, not a trace (a NUL byte at offset {}); a UTF-16 file must be converted "
      "to UTF-8 first",
      name, nul)));
}

Status finish(Trace& trace, const std::string& name) {
  analyse(trace);
  if (trace.turns.empty() && trace.stats.records == 0)
    return fail(Error::usage(fmt::format(
        "{}: nothing readable as a trace in the {} format ({} line(s), {} malformed{})", name,
        to_string(trace.format), trace.stats.lines, trace.stats.malformed,
        trace.stats.notes.empty() ? "" : "; first problem: " + trace.stats.notes.front())));
  return {};
}

}  // namespace

namespace {

Result<Trace> parse_text(std::string_view text, const std::string& name,
                         const ParseOptions& options) {
  Trace trace;
  trace.source = name;
  trace.bytes = text.size();
  trace.sha256 = hash::sha256_hex(text);
  if (!options.format) UPSKILL_RETURN_IF_ERROR(refuse_binary(text.substr(0, kHeadBytes), name));
  Detection d = options.format
                    ? Detection{*options.format, "--format"}
                    : detect_format(text.substr(0, kHeadBytes), text.size() <= kHeadBytes);
  const std::string all(text);
  Json doc(Json::value_t::discarded);
  if (is_document_format(d.format)) {
    if (options.format)
      doc = Json::parse(all, nullptr, false);
    else
      d = settle_document(all, d, doc);
  }
  trace.format = d.format;
  trace.detected_by = d.reason;
  UPSKILL_RETURN_IF_ERROR(parse_all(all, std::move(doc), name, d.format, trace));
  UPSKILL_RETURN_IF_ERROR(finish(trace, name));
  return trace;
}

// The session's subagent files, read after the main conversation and marked as sidechain work.
void add_subagents(Trace& trace, const fs::path& path) {
  for (const fs::path& agent : subagent_files(path)) {
    std::ifstream sub(agent, std::ios::binary);
    if (!sub) continue;
    detail::LineSource lines(sub, agent.string());
    Trace part;
    part.cwd = trace.cwd;
    detail::parse_claude_jsonl(lines, part, true);
    for (auto& t : part.turns) trace.turns.push_back(std::move(t));
    trace.usage.input += part.usage.input;
    trace.usage.output += part.usage.output;
    trace.usage.cache_read += part.usage.cache_read;
    trace.usage.cache_write += part.usage.cache_write;
    trace.stats.malformed += part.stats.malformed;
    trace.stats.lines += part.stats.lines;
    trace.stats.records += part.stats.records;
    trace.stats.shortened += part.stats.shortened;
    for (const auto& n : part.stats.notes) trace.stats.note(n);
    for (const auto& m : part.models)
      if (std::find(trace.models.begin(), trace.models.end(), m) == trace.models.end())
        trace.models.push_back(m);
    trace.subagent_files.push_back(agent);
  }
}

// Detects the format of an open trace file and parses it into `trace`.
Status read_file(std::ifstream& in, const fs::path& path, const ParseOptions& options,
                 Trace& trace) {
  std::string head(kHeadBytes, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const bool whole = trace.bytes <= kHeadBytes;
  if (!options.format) UPSKILL_RETURN_IF_ERROR(refuse_binary(head, path.string()));
  Detection d =
      options.format ? Detection{*options.format, "--format"} : detect_format(head, whole);
  in.clear();
  in.seekg(0);
  const std::string name = path.string();
  // A file whose first line is longer than the head, an object: read that line as lines are read
  // (a huge string in it cut as it is read, parsers.hpp) rather than the whole file at once; the
  // line decides the kind.
  const std::string_view start = skip_bom_and_space(head);
  if (!options.format && !whole && head.find('\n') == std::string::npos && start.starts_with('{')) {
    detail::LineSource first_lines(in, name);
    std::string first;
    Json object = first_lines.next(first) ? Json::parse(first, nullptr, false) : Json();
    in.clear();
    in.seekg(0);
    if (!object.is_discarded() && object.is_object()) {
      d = detect_one_object(object);
      d.reason += " (its first line read alone: longer than 64 KB)";
      if (is_document_format(d.format)) {
        trace.format = d.format;
        trace.detected_by = d.reason;
        return parse_all(first, std::move(object), name, d.format, trace);
      }
    }
  }
  if (is_document_format(d.format)) {
    // Read once: the whole document decides the format and is parsed from the same text.
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Json doc(Json::value_t::discarded);
    if (options.format)
      doc = Json::parse(all, nullptr, false);
    else
      d = settle_document(all, d, doc);
    trace.format = d.format;
    trace.detected_by = d.reason;
    UPSKILL_RETURN_IF_ERROR(parse_all(all, std::move(doc), name, d.format, trace));
  } else {
    trace.format = d.format;
    trace.detected_by = d.reason;
    UPSKILL_RETURN_IF_ERROR(parse_stream(in, name, d.format, trace));
  }
  if (trace.format == Format::claude_jsonl && options.subagents) add_subagents(trace, path);
  return {};
}

Result<Trace> parse_file(const fs::path& path, const ParseOptions& options) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return fail(Error::usage(fmt::format("{}: is a directory, not a trace file", path.string())));
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Error::usage(fmt::format("{}: cannot read the trace", path.string())));
  Trace trace;
  trace.source = path;
  trace.bytes = fs::file_size(path, ec);
  // The file's hash is computed on another thread while it is parsed (docs/PERFORMANCE.md); a
  // failure to hash it still comes first.
  auto sha256 = std::async(std::launch::async | std::launch::deferred,
                           [&path] { return hash::sha256_file(path); });
  const Status read = read_file(in, path, options, trace);
  UPSKILL_ASSIGN_OR_RETURN(trace.sha256, sha256.get());
  UPSKILL_RETURN_IF_ERROR(read);
  UPSKILL_RETURN_IF_ERROR(finish(trace, path.string()));
  return trace;
}

// The last line of defence: a reader that throws on input it did not foresee turns into a usage
// error naming the file, never an exception escaping into a front end (records are contained one
// by one before this; see contain_record).
template <class F>
Result<Trace> guarded(const std::string& name, F&& parse) {
  try {
    return parse();
  } catch (const std::exception& e) {
    return fail(Error::usage(fmt::format("{}: cannot be read as a trace: {}", name, e.what())));
  }
}

}  // namespace

Result<Trace> parse_trace_text(std::string_view text, const std::string& name,
                               const ParseOptions& options) {
  return guarded(name, [&] { return parse_text(text, name, options); });
}

Result<Trace> parse_trace_file(const fs::path& path, const ParseOptions& options) {
  return guarded(path.string(), [&] { return parse_file(path, options); });
}

}  // namespace upskill::trace
