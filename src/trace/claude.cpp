// Claude Code: session JSONL (one content block per line, merged by message.id; tool results in
// user records; sidechains), `claude -p --output-format stream-json`, and /export transcripts.
#include <fmt/format.h>

#include <regex>
#include <set>

#include "parsers.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace::detail {

namespace {

struct UsageMax {
  long long input = 0, output = 0, cache_read = 0, cache_write = 0;
};

long long num(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number() ? it->get<long long>() : 0;
}

bool known_skipped_type(const std::string& type) {
  static const std::set<std::string> types = {
      "summary",  "file-history-snapshot", "queue-operation", "ai-title", "progress", "attachment",
      "turn_end", "custom-title",          "stream_event",    "tag",      "x-error"};
  return types.contains(type);
}

// A tool_result block's content: a string or text blocks.
std::string result_text(const Json& block) {
  auto it = block.find("content");
  if (it == block.end()) return {};
  return content_text(*it);
}

}  // namespace

void parse_claude_jsonl(LineSource& lines, Trace& trace, bool sidechain) {
  Builder b(trace);
  std::set<std::string> seen_uuids;
  std::map<std::string, std::size_t> message_turn;  // message.id -> turn index
  std::map<std::string, UsageMax> usage;            // message.id -> usage (max per field)
  std::string line;
  while (lines.next(line)) {
    Json rec;
    if (!read_record(lines, line, trace, rec)) continue;
    const std::string type = rec.value("type", "");
    if (auto u = rec.find("uuid"); u != rec.end() && u->is_string()) {
      if (!seen_uuids.insert(u->get<std::string>()).second) {
        ++trace.stats.duplicates;
        continue;
      }
    }
    if (trace.cwd.empty() && rec.contains("cwd") && rec["cwd"].is_string())
      trace.cwd = rec["cwd"].get<std::string>();
    if (trace.format_version.empty()) {
      if (rec.contains("version") && rec["version"].is_string())
        trace.format_version = "Claude Code " + rec["version"].get<std::string>();
      else if (type == "system" && rec.contains("claude_code_version"))
        trace.format_version = "Claude Code " + rec["claude_code_version"].get<std::string>();
    }
    const bool side = sidechain || rec.value("isSidechain", false);
    const std::string timestamp = rec.value("timestamp", "");

    if (type == "system") {
      // stream-json init carries the model; session logs carry compaction markers.
      if (rec.contains("model") && rec["model"].is_string()) b.add_model(rec["model"]);
      if (trace.cwd.empty() && rec.contains("cwd") && rec["cwd"].is_string())
        trace.cwd = rec["cwd"].get<std::string>();
      ++trace.stats.skipped["system"];
      ++trace.stats.records;
      continue;
    }
    if (type == "result") {
      // The headless summary: usage for the whole run, used when messages carried none.
      if (rec.contains("usage") && rec["usage"].is_object() && usage.empty()) {
        const Json& u = rec["usage"];
        usage["result"] = {num(u, "input_tokens") + num(u, "cache_read_input_tokens") +
                               num(u, "cache_creation_input_tokens"),
                           num(u, "output_tokens"), num(u, "cache_read_input_tokens"),
                           num(u, "cache_creation_input_tokens")};
      }
      ++trace.stats.skipped["result"];
      ++trace.stats.records;
      continue;
    }
    if (type != "user" && type != "assistant") {
      if (known_skipped_type(type))
        ++trace.stats.skipped[type];
      else
        ++trace.stats.unknown_types[type.empty() ? "(no type)" : type];
      continue;
    }
    const Json* message = rec.contains("message") ? &rec["message"] : nullptr;
    if (!message || !message->is_object()) {
      ++trace.stats.malformed;
      trace.stats.note(fmt::format("{}:{}: a {} record without a message", lines.name(),
                                   lines.line_number(), type));
      continue;
    }
    ++trace.stats.records;
    static const Json kNoContent;
    const auto content_it = message->find("content");
    const Json& content = content_it != message->end() ? *content_it : kNoContent;

    if (type == "assistant") {
      const std::string id = message->value("id", "");
      Turn* turn = nullptr;
      if (auto it = message_turn.find(id); !id.empty() && it != message_turn.end()) {
        turn = &trace.turns[it->second];
      } else {
        turn = &b.add_turn(Role::assistant);
        turn->sidechain = side;
        turn->timestamp = timestamp;
        if (!id.empty()) message_turn[id] = trace.turns.size() - 1;
      }
      const std::string model = message->value("model", "");
      if (!model.empty() && model != "<synthetic>") {
        turn->model = model;
        b.add_model(model);
      }
      if (auto u = message->find("usage"); u != message->end() && u->is_object()) {
        UsageMax& m = usage[id.empty() ? fmt::format("line{}", lines.line_number()) : id];
        const long long cr = num(*u, "cache_read_input_tokens");
        const long long cw = num(*u, "cache_creation_input_tokens");
        m.input = std::max(m.input, num(*u, "input_tokens") + cr + cw);
        m.output = std::max(m.output, num(*u, "output_tokens"));
        m.cache_read = std::max(m.cache_read, cr);
        m.cache_write = std::max(m.cache_write, cw);
      }
      const std::size_t turn_index = static_cast<std::size_t>(turn - trace.turns.data());
      if (content.is_string()) Builder::append(turn->text, content.get<std::string>(), kMaxText);
      if (content.is_array()) {
        for (const auto& block : content) {
          if (!block.is_object()) continue;
          const std::string bt = block.value("type", "");
          if (bt == "text") {
            Builder::append(trace.turns[turn_index].text, block.value("text", ""), kMaxText);
          } else if (bt == "thinking" || bt == "redacted_thinking") {
            Builder::append(trace.turns[turn_index].thinking, block.value("thinking", ""),
                            kMaxThinking);
          } else if (bt == "tool_use" || bt == "server_tool_use") {
            // The call belongs to this message's turn, even when other records came between.
            b.add_call_to(turn_index, block.value("id", ""), block.value("name", ""),
                          block.contains("input") ? block["input"] : Json());
          }
        }
      }
      continue;
    }

    // user: typed text, injected text (isMeta, command tags), or tool results.
    const bool meta = rec.value("isMeta", false);
    std::string text;
    bool had_results = false;
    if (content.is_string()) {
      text = content.get<std::string>();
    } else if (content.is_array()) {
      for (const auto& block : content) {
        if (!block.is_object()) continue;
        const std::string bt = block.value("type", "");
        if (bt == "tool_result") {
          had_results = true;
          const std::string id = block.value("tool_use_id", "");
          bool is_error = block.value("is_error", false);
          std::optional<int> exit_code;
          if (auto r = rec.find("toolUseResult"); r != rec.end() && r->is_object()) {
            if (r->contains("returnCode") && (*r)["returnCode"].is_number_integer())
              exit_code = (*r)["returnCode"].get<int>();
            if (r->value("interrupted", false)) is_error = true;
          }
          b.attach_result(id, result_text(block), is_error, exit_code);
        } else if (bt == "text") {
          Builder::append(text, block.value("text", ""), kMaxText);
        } else if (bt == "image") {
          Builder::append(text, "[image]", kMaxText);
        }
      }
    }
    if (text::trim(text).empty()) {
      if (!had_results) ++trace.stats.skipped["empty user record"];
      continue;
    }
    Turn& turn = b.add_turn(Role::user);
    turn.text = bound_text(text, kMaxText);
    turn.meta = meta || is_injected_user_text(text);
    turn.sidechain = side;
    turn.timestamp = timestamp;
  }
  for (const auto& [id, u] : usage) {
    trace.usage.input += u.input;
    trace.usage.output += u.output;
    trace.usage.cache_read += u.cache_read;
    trace.usage.cache_write += u.cache_write;
    trace.usage.reported = true;
  }
}

// ---------------------------------------------------------------------------------------------
// /export transcripts. Glyphs, indentation and truncation markers differ between Claude Code
// versions, so every marker is matched liberally.

namespace {

bool starts_with_any(std::string_view line, std::initializer_list<std::string_view> prefixes,
                     std::string_view& rest) {
  for (auto p : prefixes)
    if (line.starts_with(p)) {
      rest = line.substr(p.size());
      return true;
    }
  return false;
}

// "Update" is how /export shows the Edit tool, "Search" Grep, "List" LS.
std::string export_tool_name(const std::string& shown) {
  if (shown == "Update") return "Edit";
  if (shown == "Search") return "Grep";
  if (shown == "List") return "LS";
  if (shown == "Fetch") return "WebFetch";
  if (shown == "Web Search") return "WebSearch";
  if (shown == "Update Todos") return "TodoWrite";
  return shown;
}

// The tool's main argument as its input object.
Json export_tool_input(const std::string& tool, const std::string& arg) {
  if (tool == "Bash") return Json{{"command", arg}};
  if (tool == "Read" || tool == "Write" || tool == "Edit" || tool == "MultiEdit")
    return Json{{"file_path", arg}};
  if (tool == "Grep" || tool == "Glob") return Json{{"pattern", arg}};
  return arg.empty() ? Json::object() : Json{{"argument", arg}};
}

}  // namespace

void parse_claude_export(LineSource& lines, Trace& trace) {
  Builder b(trace);
  static const std::regex tool_re(R"(^([A-Z][A-Za-z0-9_]*(?: [A-Z][a-z]+)?|mcp__[\w-]+)\((.*)$)");
  static const std::regex version_re(R"(Claude Code v?([0-9][0-9.]*))");
  static const std::regex elided_re(R"(^…\s*\+\s*\d+\s+lines?\b|^\.\.\.\s*\+\d+ lines)");
  static const std::regex wrote_re(R"(^Wrote (\d+) lines to (.+)$)");
  static const std::regex numbered_re(R"(^\s*(\d+) ?(.*)$)");
  enum class In { nothing, user, assistant, tool_args, result };
  In in = In::nothing;
  std::string line;
  std::string pending_args;  // a tool call whose argument wraps over lines
  std::string pending_tool;
  int call_counter = 0;
  std::string result;
  std::string result_call;
  bool result_elided = false;
  std::optional<std::size_t> wrote_expected;  // "Wrote N lines to p": the preview that follows
  std::vector<std::string> wrote_lines;

  auto finish_result = [&] {
    if (result_call.empty()) return;
    const std::string r = text::trim(result);
    const bool error = r.starts_with("Error") || r.starts_with("error:") ||
                       r.find("Exit code") != std::string::npos || r.starts_with("Interrupted");
    b.attach_result(result_call, r, error);
    if (ToolCall* call = b.find_call(result_call)) {
      call->result_truncated_in_trace = result_elided;
      // A Write's preview is the whole file when nothing was elided and every line is there
      // (numbered 1..N in some versions, plain in others).
      while (!wrote_lines.empty() && text::trim(wrote_lines.back()).empty()) wrote_lines.pop_back();
      if (call->name == "Write" && !result_elided && wrote_expected &&
          wrote_lines.size() == *wrote_expected) {
        std::vector<std::string> plain;
        bool numbered = true;
        for (std::size_t i = 0; i < wrote_lines.size() && numbered; ++i) {
          std::smatch nm;
          numbered = std::regex_match(wrote_lines[i], nm, numbered_re) &&
                     nm[1].str() == std::to_string(i + 1);
          if (numbered) plain.push_back(nm[2].str());
        }
        call->input["content"] = text::join(numbered ? plain : wrote_lines, "\n") + "\n";
      }
    }
    result.clear();
    result_call.clear();
    result_elided = false;
    wrote_expected.reset();
    wrote_lines.clear();
  };
  auto start_call = [&](const std::string& shown, std::string arg) {
    const std::string name = export_tool_name(shown);
    if (!arg.empty() && arg.back() == ')') arg.pop_back();
    Turn* last = b.last_turn();
    if (!last || last->role != Role::assistant) b.add_turn(Role::assistant);
    const std::string id = fmt::format("export-{}", ++call_counter);
    b.add_call(id, name, export_tool_input(name, text::trim(arg)));
    result_call = id;
  };

  while (lines.next(line)) {
    ++trace.stats.lines;
    std::smatch m;
    if (trace.format_version.empty() && std::regex_search(line, m, version_re))
      trace.format_version = "Claude Code " + m[1].str();
    std::string_view rest;
    if (in == In::tool_args) {
      pending_args += "\n" + line;
      if (text::trim(line).ends_with(")") || pending_args.size() > 8192) {
        in = In::result;
        start_call(pending_tool, pending_args);
      }
      continue;
    }
    // Banner, box drawing and spinner lines carry no conversation.
    if (line.starts_with("╭") || line.starts_with("│") || line.starts_with("╰") ||
        line.starts_with("✻") || line.starts_with("✽") || line.starts_with("✢") ||
        line.starts_with("· ")) {
      ++trace.stats.skipped["decoration"];
      continue;
    }
    if (starts_with_any(line, {"> ", "❯ ", ">\u00a0"}, rest) || line == ">" || line == "❯") {
      finish_result();
      Turn& t = b.add_turn(Role::user);
      t.text = std::string(rest);
      t.meta = is_injected_user_text(t.text);
      ++trace.stats.records;
      in = In::user;
      continue;
    }
    if (starts_with_any(line, {"⏺ ", "● ", "⏺", "●"}, rest)) {
      finish_result();
      ++trace.stats.records;
      const std::string body = text::trim(rest);
      if (std::regex_match(body, m, tool_re)) {
        const std::string shown = m[1].str();
        const std::string arg = m[2].str();
        if (text::trim(arg).ends_with(")") || arg.empty()) {
          start_call(shown, arg);
          in = In::result;
        } else {
          pending_tool = shown;
          pending_args = arg;
          in = In::tool_args;
        }
        continue;
      }
      if (body == "Update Todos" || body == "Read Todos") {
        start_call(body, "");
        in = In::result;
        continue;
      }
      Turn* last = b.last_turn();
      // Consecutive assistant paragraphs with no tool call between them belong together.
      if (!last || last->role != Role::assistant || !last->tool_calls.empty())
        last = &b.add_turn(Role::assistant);
      Builder::append(last->text, body, kMaxText);
      in = In::assistant;
      continue;
    }
    if (starts_with_any(line, {"  ⎿  ", "  ⎿ ", "⎿  ", "  ⎿"}, rest)) {
      std::string r = std::string(rest);
      if (std::regex_search(r, elided_re)) {
        result_elided = true;
        continue;
      }
      if (std::regex_match(r, m, wrote_re)) {
        wrote_expected = std::stoul(m[1].str());
        wrote_lines.clear();
      }
      if (!result.empty()) result += "\n";
      result += r;
      in = In::result;
      continue;
    }
    // Continuation lines: indented text of whatever came last.
    const std::string trimmed = text::trim(line);
    if (in == In::result) {
      if (std::regex_search(trimmed, elided_re)) {
        result_elided = true;
        continue;
      }
      const std::string shown = line.starts_with("     ") ? line.substr(5) : trimmed;
      if (wrote_expected) wrote_lines.push_back(shown);
      result += "\n" + shown;
      continue;
    }
    if (in == In::user) {
      Turn& t = trace.turns.back();
      t.text += "\n" + (line.starts_with("  ") ? line.substr(2) : line);
      continue;
    }
    if (in == In::assistant) {
      Turn& t = trace.turns.back();
      t.text += "\n" + (line.starts_with("  ") ? line.substr(2) : line);
      continue;
    }
    if (!trimmed.empty()) ++trace.stats.skipped["text outside any turn"];
  }
  if (in == In::tool_args) start_call(pending_tool, pending_args);
  finish_result();
  for (Turn& t : trace.turns) {
    while (t.text.ends_with("\n")) t.text.pop_back();
    t.text = bound_text(t.text, kMaxText);
  }
}

}  // namespace upskill::trace::detail
