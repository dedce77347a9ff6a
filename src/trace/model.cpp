// The normalised trace model: names, bounding, tool classification, and the analysis that turns
// tool calls into commands, files (with final contents) and error → fix pairs.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <regex>

#include "upskill/core/text.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace {

namespace {

struct FormatName {
  Format format;
  const char* name;
};
constexpr std::array<FormatName, 11> kFormats{{
    {Format::claude_jsonl, "claude-jsonl"},
    {Format::claude_stream, "claude-stream-json"},
    {Format::claude_export, "claude-export"},
    {Format::codex_rollout, "codex-rollout"},
    {Format::openai_chat, "openai-chat"},
    {Format::responses, "responses"},
    {Format::anthropic, "anthropic-messages"},
    {Format::fast_agent_json, "fast-agent-json"},
    {Format::fast_agent_text, "fast-agent-text"},
    {Format::markdown, "markdown"},
    {Format::text, "text"},
}};

// Start of the UTF-8 character at or before `i`.
std::size_t char_start(std::string_view s, std::size_t i) {
  while (i > 0 && i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}

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

std::string_view to_string(ToolKind kind) {
  switch (kind) {
    case ToolKind::shell:
      return "shell";
    case ToolKind::write:
      return "write";
    case ToolKind::edit:
      return "edit";
    case ToolKind::multi_edit:
      return "multi_edit";
    case ToolKind::patch:
      return "patch";
    case ToolKind::read:
      return "read";
    case ToolKind::other:
      return "other";
  }
  return "other";
}

void ParseStats::note(std::string message) {
  if (notes.size() < 20) notes.push_back(std::move(message));
}

std::string bound_text(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  // Errors and results tend to sit at the end of output: keep more of the tail.
  const std::size_t head = char_start(text, max_bytes / 3);
  const std::size_t tail_from = char_start(text, text.size() - (max_bytes - head));
  return fmt::format("{}\n[… {} bytes omitted …]\n{}", text.substr(0, head), tail_from - head,
                     text.substr(tail_from));
}

namespace {

std::string lower(std::string_view s) {
  return text::to_lower_ascii(s);
}

const Json* field(const Json& input, std::initializer_list<const char*> names) {
  if (!input.is_object()) return nullptr;
  for (const char* n : names) {
    auto it = input.find(n);
    if (it != input.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

std::string string_field(const Json& input, std::initializer_list<const char*> names) {
  const Json* v = field(input, names);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

bool is_shell_name(const std::string& n) {
  static const std::vector<std::string> names = {"bash",
                                                 "shell",
                                                 "shell_command",
                                                 "exec_command",
                                                 "local_shell",
                                                 "run_command",
                                                 "execute_command",
                                                 "execute",
                                                 "run_terminal_cmd",
                                                 "terminal",
                                                 "run_shell",
                                                 "container.exec",
                                                 "run"};
  return std::find(names.begin(), names.end(), n) != names.end();
}

}  // namespace

ToolKind classify_tool(const ToolCall& call) {
  const std::string n = lower(call.name);
  if (is_shell_name(n)) return ToolKind::shell;
  if (n == "apply_patch" || n == "patch") return ToolKind::patch;
  if (n == "multiedit" || n == "multi_edit") return ToolKind::multi_edit;
  if (n == "str_replace_editor" || n == "str_replace_based_edit_tool") {
    const std::string command = string_field(call.input, {"command"});
    if (command == "create") return ToolKind::write;
    if (command == "str_replace") return ToolKind::edit;
    if (command == "view") return ToolKind::read;
    return ToolKind::other;
  }
  if (n == "write" || n == "write_file" || n == "create_file" || n == "write_to_file")
    return ToolKind::write;
  if (n == "edit" || n == "edit_file" || n == "str_replace" || n == "replace_in_file" ||
      n == "update")
    return ToolKind::edit;
  if (n == "read" || n == "read_file" || n == "view" || n == "cat") return ToolKind::read;
  // A JSON patch argument to an unknown tool still reads as a patch.
  if (call.input.is_string() && call.input.get<std::string>().starts_with("*** Begin Patch"))
    return ToolKind::patch;
  return ToolKind::other;
}

std::string shell_command_of(const ToolCall& call) {
  if (classify_tool(call) != ToolKind::shell) return {};
  const Json& in = call.input;
  if (in.is_string()) return in.get<std::string>();
  const Json* cmd = field(in, {"command", "cmd", "script", "commands"});
  if (!cmd) {
    if (const Json* action = field(in, {"action"})) cmd = field(*action, {"command"});
  }
  if (!cmd) return {};
  if (cmd->is_string()) return cmd->get<std::string>();
  if (cmd->is_array()) {
    std::vector<std::string> parts;
    for (const auto& p : *cmd)
      if (p.is_string()) parts.push_back(p.get<std::string>());
    // ["bash", "-lc", "make -j"] is the command "make -j".
    if (parts.size() == 3 &&
        (parts[0] == "bash" || parts[0] == "sh" || parts[0] == "zsh" ||
         parts[0].ends_with("/bash") || parts[0].ends_with("/sh")) &&
        (parts[1] == "-lc" || parts[1] == "-c"))
      return parts[2];
    return text::join(parts, " ");
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// apply_patch

Result<std::vector<PatchFile>> parse_patch(std::string_view patch) {
  std::vector<PatchFile> out;
  bool begun = false;
  int line_no = 0;
  for (const std::string& line : text::split_lines(patch)) {
    ++line_no;
    if (line.starts_with("*** Begin Patch")) {
      begun = true;
      continue;
    }
    if (line.starts_with("*** End Patch")) break;
    if (!begun) continue;
    auto header = [&](std::string_view prefix, PatchFile::Op op) {
      if (!line.starts_with(prefix)) return false;
      PatchFile f;
      f.op = op;
      f.path = text::trim(std::string_view(line).substr(prefix.size()));
      out.push_back(std::move(f));
      return true;
    };
    if (header("*** Add File: ", PatchFile::Op::add) ||
        header("*** Update File: ", PatchFile::Op::update) ||
        header("*** Delete File: ", PatchFile::Op::remove))
      continue;
    if (line.starts_with("*** Move to: ")) {
      if (out.empty())
        return fail(Error::usage(fmt::format("patch line {}: Move to before a file", line_no)));
      out.back().move_to = text::trim(std::string_view(line).substr(13));
      continue;
    }
    if (line.starts_with("*** End of File")) continue;
    if (out.empty()) {
      if (text::trim(line).empty()) continue;
      return fail(Error::usage(
          fmt::format("patch line {}: '{}' before any file header", line_no, text::excerpt(line))));
    }
    out.back().lines.push_back(line);
  }
  if (!begun) return fail(Error::usage("not an apply_patch text (no '*** Begin Patch')"));
  return out;
}

namespace {

// Finds `needle` (a run of lines) in `hay` at or after `from`; trailing whitespace is ignored on a
// second try, as apply_patch does.
std::optional<std::size_t> find_lines(const std::vector<std::string>& hay,
                                      const std::vector<std::string>& needle, std::size_t from) {
  if (needle.empty()) return from;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = from; i + needle.size() <= hay.size(); ++i) {
      bool ok = true;
      for (std::size_t k = 0; k < needle.size() && ok; ++k) {
        if (pass == 0)
          ok = hay[i + k] == needle[k];
        else
          ok = text::trim(hay[i + k]) == text::trim(needle[k]);
      }
      if (ok) return i;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<std::string> apply_patch_update(const std::string& content, const PatchFile& file) {
  std::vector<std::string> lines = text::split_lines(content);
  const bool trailing_newline = content.empty() || content.ends_with('\n');
  std::size_t cursor = 0;
  std::vector<std::string> old_chunk, new_chunk;
  auto flush = [&]() -> Status {
    if (old_chunk.empty() && new_chunk.empty()) return {};
    auto at = find_lines(lines, old_chunk, cursor);
    if (!at) at = find_lines(lines, old_chunk, 0);
    if (!at)
      return fail(Error::usage(fmt::format("{}: hunk context not found ('{}')", file.path,
                                           text::excerpt(old_chunk.front()))));
    lines.erase(lines.begin() + static_cast<long>(*at),
                lines.begin() + static_cast<long>(*at + old_chunk.size()));
    lines.insert(lines.begin() + static_cast<long>(*at), new_chunk.begin(), new_chunk.end());
    cursor = *at + new_chunk.size();
    old_chunk.clear();
    new_chunk.clear();
    return {};
  };
  for (const std::string& l : file.lines) {
    if (l.starts_with("@@")) {
      UPSKILL_RETURN_IF_ERROR(flush());
      continue;
    }
    const char tag = l.empty() ? ' ' : l[0];
    const std::string rest = l.empty() ? std::string() : l.substr(1);
    if (tag == '-') {
      old_chunk.push_back(rest);
    } else if (tag == '+') {
      new_chunk.push_back(rest);
    } else {
      // Context: part of both sides.
      old_chunk.push_back(rest);
      new_chunk.push_back(rest);
    }
  }
  UPSKILL_RETURN_IF_ERROR(flush());
  std::string out = text::join(lines, "\n");
  if (trailing_newline && !lines.empty()) out += '\n';
  return out;
}

// ---------------------------------------------------------------------------------------------
// Analysis

namespace {

std::optional<int> exit_code_in_text(std::string_view result) {
  static const std::regex re(
      R"((?:^|\n)\s*(?:Error:\s*)?(?:Exit code:?|exit code:?|Process exited with code|exit status)\s*(-?\d+))");
  std::match_results<std::string_view::const_iterator> m;
  const std::string_view head = result.substr(0, 400);
  if (std::regex_search(head.begin(), head.end(), m, re)) return std::stoi(m[1].str());
  return std::nullopt;
}

class FileTracker {
 public:
  explicit FileTracker(std::string cwd) : cwd_(std::move(cwd)) {
    if (!cwd_.empty() && !cwd_.ends_with('/')) cwd_ += '/';
  }

  FileTouch& touch(const std::string& raw_path, std::size_t turn) {
    const std::string path = relative(raw_path);
    auto it = index_.find(path);
    if (it == index_.end()) {
      index_[path] = files_.size();
      files_.push_back(FileTouch{});
      files_.back().path = path;
      it = index_.find(path);
    }
    FileTouch& f = files_[it->second];
    f.last_turn = turn;
    return f;
  }
  void rename(const std::string& from, const std::string& to, std::size_t turn) {
    FileTouch& src = touch(from, turn);
    std::optional<std::string> content = src.content;
    src.deleted = true;
    FileTouch& dst = touch(to, turn);
    dst.content = std::move(content);
    dst.deleted = false;
    ++dst.writes;
  }
  std::vector<FileTouch> take() { return std::move(files_); }
  std::string relative(const std::string& p) const {
    if (!cwd_.empty() && p.starts_with(cwd_)) return p.substr(cwd_.size());
    if (p.starts_with("./")) return p.substr(2);
    return p;
  }

 private:
  std::string cwd_;
  std::map<std::string, std::size_t> index_;
  std::vector<FileTouch> files_;
};

void unknown(FileTouch& f, std::string why) {
  f.content.reset();
  if (f.unknown_reason.empty()) f.unknown_reason = std::move(why);
}

void apply_edit(FileTouch& f, const std::string& old_s, const std::string& new_s, bool all) {
  ++f.edits;
  if (!f.content) {
    unknown(f, "edited, but the trace never showed the whole file");
    return;
  }
  std::string& c = *f.content;
  const std::size_t at = c.find(old_s);
  if (old_s.empty() || at == std::string::npos) {
    unknown(f, "an edit's old text was not found in the reconstructed file");
    return;
  }
  if (!all) {
    c.replace(at, old_s.size(), new_s);
    return;
  }
  std::string out;
  std::size_t from = 0;
  for (std::size_t p = c.find(old_s); p != std::string::npos; p = c.find(old_s, from)) {
    out.append(c, from, p - from);
    out += new_s;
    from = p + old_s.size();
  }
  out.append(c, from, std::string::npos);
  c = std::move(out);
}

// Applies a write, edit or patch; returns the (relative) paths it touched.
std::vector<std::string> apply_file_call(FileTracker& files, const ToolCall& call, ToolKind kind,
                                         std::size_t turn, ParseStats& stats) {
  const Json& in = call.input;
  std::vector<std::string> touched;
  if (kind == ToolKind::patch) {
    const std::string patch =
        in.is_string() ? in.get<std::string>() : string_field(in, {"input", "patch", "diff"});
    auto parsed = parse_patch(patch);
    if (!parsed) {
      stats.note(fmt::format("apply_patch call {}: {}", call.id, parsed.error().message));
      return touched;
    }
    for (const PatchFile& pf : *parsed) {
      touched.push_back(files.relative(pf.path));
      FileTouch& f = files.touch(pf.path, turn);
      if (pf.op == PatchFile::Op::remove) {
        f.deleted = true;
        f.content.reset();
        continue;
      }
      if (pf.op == PatchFile::Op::add) {
        std::string content;
        for (const auto& l : pf.lines)
          if (l.starts_with('+')) content += l.substr(1) + "\n";
        f.content = std::move(content);
        f.deleted = false;
        f.unknown_reason.clear();
        ++f.writes;
      } else {
        ++f.edits;
        if (!f.content) {
          unknown(f, "patched, but the trace never showed the whole file");
        } else if (auto updated = apply_patch_update(*f.content, pf)) {
          f.content = std::move(*updated);
        } else {
          unknown(f, updated.error().message);
        }
      }
      if (pf.move_to) files.rename(pf.path, *pf.move_to, turn);
    }
    return touched;
  }
  const std::string path = string_field(in, {"file_path", "path", "filename", "target_file"});
  if (path.empty()) return touched;
  touched.push_back(files.relative(path));
  FileTouch& f = files.touch(path, turn);
  f.deleted = false;
  if (kind == ToolKind::write) {
    const Json* content = field(in, {"content", "file_text", "contents", "text"});
    ++f.writes;
    if (content && content->is_string()) {
      f.content = content->get<std::string>();
      f.unknown_reason.clear();
    } else {
      unknown(f, "written, but the trace does not show the contents");
    }
  } else if (kind == ToolKind::edit) {
    apply_edit(f, string_field(in, {"old_string", "old_str", "old_text"}),
               string_field(in, {"new_string", "new_str", "new_text"}),
               in.is_object() && in.value("replace_all", false));
  } else if (kind == ToolKind::multi_edit) {
    if (const Json* edits = field(in, {"edits"}); edits && edits->is_array())
      for (const auto& e : *edits)
        apply_edit(f, string_field(e, {"old_string", "old_str"}),
                   string_field(e, {"new_string", "new_str"}),
                   e.is_object() && e.value("replace_all", false));
  }
  return touched;
}

// "cd build && CUDA_HOME=/x make -j8" -> "make": the program a command is about.
std::string program_of(const std::string& command) {
  std::string c = command;
  for (;;) {
    const auto amp = c.find("&&");
    const std::string first = text::trim(c.substr(0, amp));
    if (amp != std::string::npos && (first.starts_with("cd ") || first.starts_with("source ") ||
                                     first.starts_with("export ") || first.starts_with(". "))) {
      c = c.substr(amp + 2);
      continue;
    }
    break;
  }
  std::vector<std::string> words;
  std::string w;
  for (char ch : text::trim(c)) {
    if (ch == ' ' || ch == '\t' || ch == '\n') {
      if (!w.empty()) words.push_back(w);
      w.clear();
      if (words.size() > 8) break;
    } else {
      w += ch;
    }
  }
  if (!w.empty()) words.push_back(w);
  std::size_t i = 0;
  while (i < words.size() && (words[i].find('=') != std::string::npos || words[i] == "sudo" ||
                              words[i] == "time" || words[i] == "env"))
    ++i;
  if (i >= words.size()) return text::trim(c);
  std::string program = words[i];
  // "python -m pytest", "uv run x", "npx y": the tool after the runner.
  if ((program == "python" || program == "python3" || program == "uv" || program == "npx" ||
       program == "cargo" || program == "make" || program == "cmake" || program == "git" ||
       program == "kernel-builder" || program == "nix") &&
      i + 1 < words.size())
    program += " " + words[i + 1];
  return program;
}

// Files shown as fenced code blocks in text traces (markdown, fast-agent text, /export): a block
// whose info string, preceding line or first-line comment names a path.
std::vector<std::pair<std::string, std::string>> fenced_files(const std::string& text) {
  static const std::regex path_token(R"(([A-Za-z0-9_.\-]+/)*[A-Za-z0-9_\-]+\.[A-Za-z0-9]{1,8})");
  static const std::regex hint_line(R"([`*"']([A-Za-z0-9_./\-]+\.[A-Za-z0-9]{1,8})[`*"'])");
  static const std::regex title(R"re((?:title|file|filename|path)=["']?([^"'\s]+))re");
  static const std::regex comment(
      R"(^\s*(?://|#|--)\s*(?:file:\s*)?([A-Za-z0-9_./\-]+\.[A-Za-z0-9]{1,8})\s*$)");
  std::vector<std::pair<std::string, std::string>> out;
  const std::vector<std::string> lines = text::split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string opener = text::trim(lines[i]);
    if (!opener.starts_with("```")) continue;
    const std::size_t ticks = opener.find_first_not_of('`');
    const std::string fence = opener.substr(0, ticks == std::string::npos ? opener.size() : ticks);
    const std::string info = ticks == std::string::npos ? "" : text::trim(opener.substr(ticks));
    std::size_t end = i + 1;
    while (end < lines.size() && !text::trim(lines[end]).starts_with(fence)) ++end;
    if (end >= lines.size()) break;  // unclosed: not a file
    std::string path;
    std::smatch m;
    if (std::regex_search(info, m, title)) {
      path = m[1].str();
    } else if (const std::string first = info.substr(0, info.find(' '));
               first.find(':') != std::string::npos &&
               std::regex_match(first.substr(first.find(':') + 1), path_token)) {
      path = first.substr(first.find(':') + 1);  // ```cpp:src/x.cpp
    } else if (std::regex_match(info, path_token)) {
      path = info;  // ```build.toml
    }
    for (std::size_t back = 1; path.empty() && back <= 2 && back <= i; ++back) {
      const std::string& prev = lines[i - back];
      if (text::trim(prev).empty()) continue;
      if (std::regex_search(prev, m, hint_line)) path = m[1].str();
      break;
    }
    if (path.empty() && i + 1 < end && std::regex_match(lines[i + 1], m, comment))
      path = m[1].str();
    if (!path.empty() && !path.starts_with("/") && path.find("..") == std::string::npos) {
      std::string content;
      for (std::size_t k = i + 1; k < end; ++k) content += lines[k] + "\n";
      out.emplace_back(path, std::move(content));
    }
    i = end;
  }
  return out;
}

}  // namespace

void analyse(Trace& trace) {
  trace.files.clear();
  trace.commands.clear();
  trace.fixes.clear();
  trace.tool_counts.clear();
  FileTracker files(trace.cwd);
  // Which files changed between commands: the file indices touched after each command.
  std::vector<std::pair<std::size_t, std::string>> changes;  // (commands so far, path)
  for (std::size_t t = 0; t < trace.turns.size(); ++t) {
    Turn& turn = trace.turns[t];
    for (std::size_t c = 0; c < turn.tool_calls.size(); ++c) {
      ToolCall& call = turn.tool_calls[c];
      ++trace.tool_counts[call.name];
      const ToolKind kind = classify_tool(call);
      if (kind == ToolKind::shell) {
        CommandRun run;
        run.command = shell_command_of(call);
        run.turn = t;
        run.call = c;
        run.sidechain = turn.sidechain;
        run.exit_code = call.exit_code;
        if (!run.exit_code && call.has_result) run.exit_code = exit_code_in_text(call.result);
        if (run.exit_code) call.exit_code = run.exit_code;
        run.failed = call.is_error || (run.exit_code && *run.exit_code != 0);
        trace.commands.push_back(std::move(run));
      } else if (kind == ToolKind::write || kind == ToolKind::edit ||
                 kind == ToolKind::multi_edit || kind == ToolKind::patch) {
        if (call.is_error) continue;  // a failed write or edit changed nothing
        for (std::string& path : apply_file_call(files, call, kind, t, trace.stats))
          changes.emplace_back(trace.commands.size(), std::move(path));
      }
    }
  }
  // Text traces show files as fenced blocks; the last block for a path is its final version.
  const bool text_format = trace.format == Format::markdown ||
                           trace.format == Format::fast_agent_text ||
                           trace.format == Format::text || trace.format == Format::claude_export;
  if (text_format) {
    for (std::size_t t = 0; t < trace.turns.size(); ++t) {
      if (trace.turns[t].role != Role::assistant) continue;
      for (auto& [path, content] : fenced_files(trace.turns[t].text)) {
        FileTouch& f = files.touch(path, t);
        f.content = std::move(content);
        f.unknown_reason.clear();
        ++f.writes;
      }
    }
  }
  trace.files = files.take();

  // Error → fix: the next successful run of the same program, and the files changed in between.
  for (std::size_t i = 0; i < trace.commands.size(); ++i) {
    const CommandRun& failed = trace.commands[i];
    if (!failed.failed) continue;
    ErrorFix fix;
    fix.failed = i;
    const std::string program = program_of(failed.command);
    for (std::size_t j = i + 1; j < trace.commands.size(); ++j) {
      const CommandRun& later = trace.commands[j];
      if (later.failed || program_of(later.command) != program) continue;
      fix.fixed_by = j;
      break;
    }
    const std::size_t end = fix.fixed_by ? *fix.fixed_by : trace.commands.size();
    for (const auto& [commands_before, path] : changes) {
      if (commands_before <= i || commands_before > end) continue;
      if (std::find(fix.files_changed.begin(), fix.files_changed.end(), path) ==
          fix.files_changed.end())
        fix.files_changed.push_back(path);
    }
    // The agent's first words after seeing the failure.
    for (std::size_t t = failed.turn + 1; t < trace.turns.size(); ++t) {
      const Turn& turn = trace.turns[t];
      if (turn.role != Role::assistant) continue;
      const std::string said = text::trim(turn.text.empty() ? turn.thinking : turn.text);
      if (said.empty()) continue;
      fix.explanation = text::excerpt(said, 400);
      break;
    }
    trace.fixes.push_back(std::move(fix));
  }
}

TraceCounts count(const Trace& trace) {
  TraceCounts c;
  c.turns = trace.turns.size();
  for (const Turn& t : trace.turns) {
    if (t.sidechain) ++c.sidechain_turns;
    if (t.role == Role::user && !t.meta && !t.sidechain) ++c.user_prompts;
    if (t.role == Role::assistant) ++c.assistant_messages;
    c.tool_calls += t.tool_calls.size();
    for (const auto& call : t.tool_calls) c.tool_errors += call.is_error ? 1 : 0;
  }
  c.commands = trace.commands.size();
  for (const auto& cmd : trace.commands) c.failed_commands += cmd.failed ? 1 : 0;
  c.files = trace.files.size();
  return c;
}

Json summary_json(const Trace& trace) {
  const TraceCounts c = count(trace);
  Json j;
  j["schema"] = "upskill.trace/1";
  j["source"] = trace.source.string();
  j["bytes"] = trace.bytes;
  j["sha256"] = trace.sha256;
  j["format"] = std::string(to_string(trace.format));
  j["detected_by"] = trace.detected_by;
  j["format_version"] = trace.format_version;
  j["cwd"] = trace.cwd;
  j["models"] = trace.models;
  j["counts"] = {{"turns", c.turns},
                 {"user_prompts", c.user_prompts},
                 {"assistant_messages", c.assistant_messages},
                 {"tool_calls", c.tool_calls},
                 {"tool_errors", c.tool_errors},
                 {"commands", c.commands},
                 {"failed_commands", c.failed_commands},
                 {"files", c.files},
                 {"sidechain_turns", c.sidechain_turns}};
  j["tools"] = Json::object();
  for (const auto& [name, n] : trace.tool_counts) j["tools"][name] = n;
  j["commands"] = Json::array();
  for (const CommandRun& r : trace.commands) {
    Json cmd{{"command", r.command}, {"turn", r.turn + 1}, {"failed", r.failed}};
    cmd["exit_code"] = r.exit_code ? Json(*r.exit_code) : Json();
    if (r.sidechain) cmd["subagent"] = true;
    j["commands"].push_back(std::move(cmd));
  }
  j["files"] = Json::array();
  for (const FileTouch& f : trace.files) {
    Json file{{"path", f.path},
              {"writes", f.writes},
              {"edits", f.edits},
              {"deleted", f.deleted},
              {"last_turn", f.last_turn + 1}};
    file["final_size"] = f.content ? Json(f.content->size()) : Json();
    if (!f.content && !f.deleted) file["unknown_reason"] = f.unknown_reason;
    j["files"].push_back(std::move(file));
  }
  j["fixes"] = Json::array();
  for (const ErrorFix& fx : trace.fixes) {
    Json fix{{"failed", trace.commands[fx.failed].command},
             {"turn", trace.commands[fx.failed].turn + 1},
             {"files_changed", fx.files_changed},
             {"explanation", fx.explanation}};
    fix["fixed_by"] = fx.fixed_by ? Json(trace.commands[*fx.fixed_by].command) : Json();
    j["fixes"].push_back(std::move(fix));
  }
  j["usage"] = {{"reported", trace.usage.reported},       {"input", trace.usage.input},
                {"output", trace.usage.output},           {"cache_read", trace.usage.cache_read},
                {"cache_write", trace.usage.cache_write}, {"reasoning", trace.usage.reasoning}};
  Json stats{{"lines", trace.stats.lines},
             {"records", trace.stats.records},
             {"malformed", trace.stats.malformed},
             {"truncated_last_line", trace.stats.truncated_last_line},
             {"duplicates", trace.stats.duplicates},
             {"unknown_types", Json::object()},
             {"skipped", Json::object()},
             {"notes", trace.stats.notes}};
  for (const auto& [t, n] : trace.stats.unknown_types) stats["unknown_types"][t] = n;
  for (const auto& [t, n] : trace.stats.skipped) stats["skipped"][t] = n;
  j["parse"] = std::move(stats);
  j["subagent_files"] = Json::array();
  for (const auto& p : trace.subagent_files) j["subagent_files"].push_back(p.string());
  return j;
}

}  // namespace upskill::trace
