// Claude Code /export transcripts: what the terminal showed, read back into turns and tool calls.
#include "claude_export.hpp"

#include <fmt/format.h>

#include <regex>

#include "../reading/builder.hpp"
#include "../reading/records.hpp"
#include "export_files.hpp"
#include "export_layout.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace::detail {

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

// Exports are what the terminal showed: non-breaking and other fixed-width spaces (after "⎿",
// inside previews) stand where the agent wrote plain spaces.
std::string normalise_export_line(const std::string& raw) {
  std::string out;
  out.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const std::string_view at = std::string_view(raw).substr(i);
    if (at.starts_with("\u00a0")) {  // NO-BREAK SPACE
      out += ' ';
      i += 1;
    } else if (at.starts_with("\u202f") || at.starts_with("\u2007") ||
               at.starts_with("\u2009")) {  // narrow no-break, figure, thin space
      out += ' ';
      i += 2;
    } else if (raw[i] != '\r') {
      out += raw[i];
    }
  }
  return out;
}

// Some releases (2.1.34) end a message's last row with its time and model, right-aligned after
// the row's padding ("…done.            09:32 PM  glm-5"): not words of the message.
std::string without_time_stamp(std::string line) {
  if (line.size() > kMaxPatternLine ||
      (line.find(" PM ") == std::string::npos && line.find(" AM ") == std::string::npos))
    return line;
  static const std::regex stamp_re(R"( {8,}\d{1,2}:\d{2} [AP]M {1,3}[\w.:/-]+$)");
  std::smatch m;
  if (std::regex_search(line, m, stamp_re)) line.resize(static_cast<std::size_t>(m.position(0)));
  return line;
}

// The quoted value of `key: "…"` in a tool's shown argument (`pattern: "**/*.cu", path: "src"`).
std::optional<std::string> quoted_argument(const std::string& arg, const std::string& key) {
  const std::regex re(key + R"re(:\s*"((?:[^"\\]|\\.)*)")re");
  std::smatch m;
  if (!std::regex_search(arg, m, re)) return std::nullopt;
  return m[1].str();
}

// /export shows Grep and Glob alike as "Search"; a pattern that names paths is a Glob.
bool is_glob_pattern(const std::string& pattern) {
  return pattern.find("**") != std::string::npos || pattern.starts_with("*.") ||
         (pattern.find('*') != std::string::npos && pattern.find('/') != std::string::npos &&
          pattern.find_first_of("\\()|^$+") == std::string::npos);
}

// "Update" is how /export shows the Edit tool, "Search" Grep (or Glob), "List" LS.
std::string export_tool_name(const std::string& shown, const std::string& arg) {
  if (shown == "Update") return "Edit";
  if (shown == "Search")
    return is_glob_pattern(quoted_argument(arg, "pattern").value_or(arg)) ? "Glob" : "Grep";
  if (shown == "List") return "LS";
  if (shown == "Fetch") return "WebFetch";
  if (shown == "Web Search") return "WebSearch";
  if (shown == "Update Todos") return "TodoWrite";
  return shown;
}

// The tool's main argument as its input object.
Json export_tool_input(const std::string& tool, const std::string& arg) {
  if (tool == "Bash" || tool == "PowerShell")
    return Json{{"command", arg.starts_with("command: ")
                                ? quoted_argument(arg, "command").value_or(arg.substr(9))
                                : arg}};
  if (tool == "Read" || tool == "Write" || tool == "Edit" || tool == "MultiEdit") {
    // Early versions name the argument: `file_path: "TODO.md"` or `file_path: TODO.md`.
    if (arg.starts_with("file_path: "))
      return Json{
          {"file_path", quoted_argument(arg, "file_path").value_or(text::trim(arg.substr(11)))}};
    return Json{{"file_path", arg}};
  }
  if (tool == "Grep" || tool == "Glob") {
    Json input{{"pattern", quoted_argument(arg, "pattern").value_or(arg)}};
    if (auto path = quoted_argument(arg, "path")) input["path"] = *path;
    return input;
  }
  return arg.empty() ? Json::object() : Json{{"argument", arg}};
}

bool is_elision_marker(const std::string& s) {
  if (s.size() > 200) return false;
  static const std::regex elided_re(R"(^…\s*\+\s*\d+\s+lines?\b|^\.\.\.\s*\+\d+ lines)");
  return std::regex_search(s, elided_re);
}

// Banner, box drawing and spinner lines carry no conversation.
bool is_decoration(const std::string& line) {
  return line.starts_with("╭") || line.starts_with("│") || line.starts_with("╰") ||
         line.starts_with("✻") || line.starts_with("✽") || line.starts_with("✢") ||
         line.starts_with("· ");
}

// Reads a transcript line by line, one method per kind of line: "> " user text, "⏺ " assistant
// text or tool call, "  ⎿ " tool result, and indented continuations of whatever came last.
class ExportReader {
 public:
  explicit ExportReader(Trace& trace) : trace_(trace), b_(trace) {}

  // One line, already normalised (normalise_export_line) and joined where the terminal wrapped.
  void line(const std::string& line);
  // Ends a tool call or result still open and bounds every turn's text.
  void finish();

 private:
  enum class In { nothing, user, assistant, tool_args, result, summary };

  void tool_args_line(const std::string& line);
  void user_line(std::string_view rest);
  void assistant_line(std::string_view rest);
  void result_line(std::string_view rest);
  void continuation_line(const std::string& line);
  void start_call(const std::string& shown, std::string arg);
  void finish_result();
  void take_write_preview(ToolCall& call);
  bool collapsed_calls(const std::string& line);

  Trace& trace_;
  Builder b_;
  In in_ = In::nothing;
  std::string pending_args_;  // a tool call whose argument wraps over lines
  std::string pending_tool_;
  int call_counter_ = 0;
  std::string result_;
  std::string result_call_;
  bool result_elided_ = false;
  std::optional<std::size_t> wrote_expected_;  // "Wrote N lines to p": the preview that follows
  std::vector<std::string> wrote_lines_;
};

void ExportReader::line(const std::string& line) {
  static const std::regex version_re(R"(Claude Code v?([0-9][0-9.]*))");
  ++trace_.stats.lines;
  if (line.size() > kMaxPatternLine) return continuation_line(line);
  std::smatch m;
  if (trace_.format_version.empty() && std::regex_search(line, m, version_re))
    trace_.format_version = "Claude Code " + m[1].str();
  std::string_view rest;
  if (in_ == In::tool_args) return tool_args_line(line);
  if (is_decoration(line)) {
    ++trace_.stats.skipped["decoration"];
    return;
  }
  if (starts_with_any(line, {"> ", "❯ ", ">\u00a0"}, rest) || line == ">" || line == "❯")
    return user_line(rest);
  // Some 2.1 releases draw a run of collapsed calls with the message glyph: "● Read 1 file
  // (ctrl+o to expand)".
  if (starts_with_any(line, {"⏺ ", "● "}, rest) && collapsed_calls("  " + std::string(rest)))
    return;
  if (starts_with_any(line, {"⏺ ", "● ", "⏺", "●"}, rest)) return assistant_line(rest);
  if (starts_with_any(line, {"  ⎿  ", "  ⎿ ", "⎿  ", "  ⎿"}, rest)) return result_line(rest);
  if (collapsed_calls(line)) return;
  continuation_line(line);
}

// Claude Code 2.1 shows runs of read-only or shell tool calls collapsed, on one line of their own:
// "  Listed 1 directory · 1 failed (ctrl+o to expand)", "  Ran 2 shell commands (ctrl+o to
// expand)", "  Read 3 files, searched for 1 pattern (ctrl+o to expand)", "  Searched for 1
// pattern · 1 failed (ctrl+o to expand)". Each becomes as many
// calls as it counts — what they ran is not shown, so the call says so — and the failed ones as
// many failures (which of them failed is not shown either: the first).
bool ExportReader::collapsed_calls(const std::string& line) {
  static const std::regex line_re(
      R"(^  ([A-Z][a-z]+(?: for)? \d+ [^()]*?) \(ctrl\+[a-z] to expand\)\s*$)");
  static const std::regex part_re(R"(^([A-Za-z]+)(?: for)? (\d+) ([a-z ]+)$)");
  std::smatch m;
  if (in_ == In::tool_args || !std::regex_match(line, m, line_re)) return false;
  std::string summary = m[1].str();
  std::size_t failed = 0;
  if (const auto dot = summary.find(" · "); dot != std::string::npos) {
    static const std::regex failed_re(R"((\d+) failed)");
    std::smatch fm;
    const std::string tail = summary.substr(dot);
    if (std::regex_search(tail, fm, failed_re)) failed = parse_count(fm[1].str()).value_or(0);
    summary.resize(dot);
  }
  std::vector<std::pair<std::string, std::size_t>> parts;
  for (const std::string& part : text::split_list(summary, ',')) {
    std::smatch pm;
    const std::string p = text::trim(part);
    if (!std::regex_match(p, pm, part_re)) return false;
    std::string verb = pm[1].str();
    verb[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(verb[0])));
    const auto n = parse_count(pm[2].str());
    if (!n || *n > 1000) return false;
    parts.emplace_back(verb == "Ran" ? "Bash" : verb, *n);
  }
  finish_result();
  ++trace_.stats.records;
  for (const auto& [name, n] : parts)
    for (std::size_t i = 0; i < n; ++i) {
      start_call(name, "");
      if (ToolCall* call = b_.find_call(result_call_)) {
        call->input = Json{{"command", "(collapsed in the export: " + text::trim(line) + ")"}};
        const bool error = failed > 0;
        failed -= error ? 1 : 0;
        b_.attach_result(result_call_, error ? "failed (the export does not show its output)" : "",
                         error);
      }
      result_call_.clear();
    }
  in_ = In::nothing;
  return true;
}

void ExportReader::finish() {
  if (in_ == In::tool_args) start_call(pending_tool_, pending_args_);
  finish_result();
  for (Turn& t : trace_.turns) {
    while (t.text.ends_with("\n")) t.text.pop_back();
    // A blank line before the next "⏺ " paragraph, and the paragraph break added for it.
    for (std::size_t at; (at = t.text.find("\n\n\n")) != std::string::npos;) t.text.erase(at, 1);
    t.text = bound_text(t.text, kMaxText);
  }
}

void ExportReader::tool_args_line(const std::string& line) {
  pending_args_ += "\n" + line;
  if (text::trim(line).ends_with(")") || pending_args_.size() > kMaxPatternLine) {
    in_ = In::result;
    start_call(pending_tool_, pending_args_);
  }
}

void ExportReader::user_line(std::string_view rest) {
  finish_result();
  Turn& t = b_.add_turn(Role::user);
  t.text = std::string(rest);
  // The terminal pads the prompt's row to its width.
  t.text.erase(t.text.find_last_not_of(' ') + 1);
  t.meta = is_injected_user_text(t.text);
  ++trace_.stats.records;
  in_ = In::user;
}

// Assistant text, or a tool call "Name(argument)" whose argument may wrap over lines.
void ExportReader::assistant_line(std::string_view rest) {
  static const std::regex tool_re(R"(^([A-Z][A-Za-z0-9_]*(?: [A-Z][a-z]+)?|mcp__[\w-]+)\((.*)$)");
  finish_result();
  ++trace_.stats.records;
  const std::string body = text::trim(rest);
  std::smatch m;
  if (std::regex_match(body, m, tool_re)) {
    const std::string shown = m[1].str();
    std::string arg = m[2].str();
    // Early versions end the header with "…": `Update(file_path: TODO.md)…`.
    if (arg.ends_with(")…")) arg.resize(arg.size() - std::string_view("…").size());
    if (text::trim(arg).ends_with(")") || arg.empty()) {
      start_call(shown, arg);
      in_ = In::result;
    } else {
      pending_tool_ = shown;
      pending_args_ = arg;
      in_ = In::tool_args;
    }
    return;
  }
  // "● Compact summary", then "⎿  This session is being continued…": the summary Claude Code
  // wrote when it compacted the conversation, the only record of what came before.
  if (body == "Compact summary") {
    Turn& t = b_.add_turn(Role::user);
    t.meta = true;
    t.compaction_summary = true;
    in_ = In::summary;
    return;
  }
  if (body == "Update Todos" || body == "Read Todos") {
    start_call(body, "");
    in_ = In::result;
    return;
  }
  Turn* last = b_.last_turn();
  // Consecutive assistant paragraphs with no tool call between them belong together.
  if (!last || last->role != Role::assistant || !last->tool_calls.empty())
    last = &b_.add_turn(Role::assistant);
  Builder::append(last->text, body, kMaxText);
  in_ = In::assistant;
}

void ExportReader::result_line(std::string_view rest) {
  static const std::regex wrote_re(R"(^Wrote (\d+) lines to (.+)$)");
  const std::string r = std::string(rest);
  if (in_ == In::summary) {
    Turn& t = trace_.turns.back();
    t.text += (t.text.empty() ? "" : "\n") + r;
    return;
  }
  // A slash command answered under the prompt itself ("❯ /usage", then "  ⎿  …"), before the model
  // said anything, is one Claude Code ran itself: it asked the model nothing.
  if (in_ == In::user)
    if (Turn* last = b_.last_turn();
        last && last->role == Role::user && last->text.starts_with('/'))
      last->meta = true;
  if (is_elision_marker(r)) {
    result_elided_ = true;
    return;
  }
  std::smatch m;
  if (std::regex_match(r, m, wrote_re)) {
    wrote_expected_ = parse_count(m[1].str());
    wrote_lines_.clear();
  }
  if (!result_.empty()) result_ += "\n";
  result_ += r;
  in_ = In::result;
}

// Continuation lines: indented text of whatever came last.
void ExportReader::continuation_line(const std::string& line) {
  const std::string trimmed = text::trim(line);
  if (in_ == In::result) {
    if (is_elision_marker(trimmed)) {
      result_elided_ = true;
      return;
    }
    const std::string shown = line.starts_with("     ") ? line.substr(5) : trimmed;
    if (wrote_expected_) wrote_lines_.push_back(shown);
    result_ += "\n" + shown;
    return;
  }
  if (in_ == In::summary) {  // under "⎿  ": its text starts five columns in
    Turn& t = trace_.turns.back();
    t.text += "\n" + (line.starts_with("     ") ? line.substr(5) : trimmed);
    return;
  }
  if (in_ == In::user || in_ == In::assistant) {
    Turn& t = trace_.turns.back();
    t.text += "\n" + (line.starts_with("  ") ? line.substr(2) : line);
    return;
  }
  if (!trimmed.empty()) ++trace_.stats.skipped["text outside any turn"];
}

void ExportReader::start_call(const std::string& shown, std::string arg) {
  const std::string name = export_tool_name(shown, arg);
  arg = text::trim(arg);
  if (!arg.empty() && arg.back() == ')') arg.pop_back();
  Turn* last = b_.last_turn();
  if (!last || last->role != Role::assistant) b_.add_turn(Role::assistant);
  const std::string id = fmt::format("export-{}", ++call_counter_);
  b_.add_call(id, name, export_tool_input(name, text::trim(arg)));
  result_call_ = id;
}

void ExportReader::finish_result() {
  if (result_call_.empty()) return;
  const std::string r = text::trim(result_);
  const bool error = r.starts_with("Error") || r.starts_with("error:") ||
                     r.starts_with("Couldn't ") || r.starts_with("Failed to ") ||
                     r.find("Exit code") != std::string::npos;
  ToolCall* call = b_.attach_result(result_call_, r, error);
  // "Interrupted · What should Claude do instead?": the user stopped the call.
  if (call && r.starts_with("Interrupted")) Builder::no_outcome(*call);
  if (ToolCall* call = b_.find_call(result_call_)) {
    call->result_truncated_in_trace = result_elided_;
    take_write_preview(*call);
  }
  result_.clear();
  result_call_.clear();
  result_elided_ = false;
  wrote_expected_.reset();
  wrote_lines_.clear();
}

// A Write's preview is the whole file when nothing was elided and every line is there (numbered
// 1..N in some versions, plain in others): it becomes the call's content.
void ExportReader::take_write_preview(ToolCall& call) {
  static const std::regex numbered_re(R"(^\s*(\d+) ?(.*)$)");
  while (!wrote_lines_.empty() && text::trim(wrote_lines_.back()).empty()) wrote_lines_.pop_back();
  if (call.name != "Write" || result_elided_ || !wrote_expected_ ||
      wrote_lines_.size() != *wrote_expected_)
    return;
  std::vector<std::string> plain;
  bool numbered = true;
  for (std::size_t i = 0; i < wrote_lines_.size() && numbered; ++i) {
    std::smatch nm;
    numbered =
        std::regex_match(wrote_lines_[i], nm, numbered_re) && nm[1].str() == std::to_string(i + 1);
    if (numbered) plain.push_back(nm[2].str());
  }
  call.input["content"] = text::join(numbered ? plain : wrote_lines_, "\n") + "\n";
}

}  // namespace

// Exports are small (what a terminal showed): read whole, so that the export's width is known
// before the lines it wrapped are joined back.
void parse_claude_export(LineSource& lines, Trace& trace) {
  std::vector<std::string> all;
  for (std::string line; lines.next(line);) {
    std::string normal = without_time_stamp(normalise_export_line(line));
    // A call whose result Claude Code drew on the same row ("● Write(a.sh)  ⎿  Wrote 9 lines to
    // a.sh", or on the last row of a wrapped header: "       va)  ⎿  Error writing file"): the
    // header, then the result on a row of its own, as it is drawn when there is room.
    static constexpr std::string_view kResult = "  ⎿ ";
    if (const std::size_t at = normal.find(kResult);
        at != std::string::npos && at > 0 && normal.find_first_not_of(' ') < at &&
        normal.find_last_not_of(' ', at - 1) != std::string::npos &&
        normal[normal.find_last_not_of(' ', at - 1)] == ')') {
      all.push_back(normal.substr(0, normal.find_last_not_of(' ', at - 1) + 1));
      normal = normal.substr(at);
    }
    all.push_back(std::move(normal));
  }
  // Without a width the terminal wrapped at, only paragraphs wrapped narrower are joined.
  const std::optional<std::size_t> width = export_width(all);
  if (const std::size_t tables = rebuild_box_tables(all); tables > 0)
    trace.stats.note(fmt::format("{}: {} table(s) drawn with box characters read back as markdown",
                                 lines.name(), tables));
  if (const std::size_t joins = join_soft_wraps(all, width.value_or(kMaxPatternLine)); joins > 0)
    trace.stats.note(width ? fmt::format("{}: {} line(s) wrapped at the export's width of {} "
                                         "columns joined back",
                                         lines.name(), joins, *width)
                           : fmt::format("{}: {} line(s) of wrapped paragraphs joined back",
                                         lines.name(), joins));
  ExportReader reader(trace);
  for (const std::string& line : all) reader.line(line);
  reader.finish();
}

}  // namespace upskill::trace::detail
