// File replay: the files an agent changed and their final contents, found by replaying its writes,
// edits, multi-edits and apply_patch calls (and, in text traces, the files shown as fenced blocks).
#include "file_replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "../formats/export_files.hpp"
#include "tool_kinds.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace::detail {

namespace {

void unknown(FileTouch& f, std::string why) {
  f.content.reset();
  if (f.unknown_reason.empty()) f.unknown_reason = std::move(why);
}

// Removed by a patch, a file_change or `rm`.
void mark_deleted(FileTouch& f) {
  f.deleted = true;
  f.content.reset();
  f.unknown_reason = "deleted";
}

// `replace_all: true`; any other value (a string "yes", a number) reads as false.
bool replace_all(const Json& edit) {
  const Json* all = input_field(edit, {"replace_all"});
  return all && all->is_boolean() && all->get<bool>();
}

// An edit of a file that cannot be replayed is kept as its hunk, for the digest to show.
void keep_hunk(FileTouch& f, const std::string& old_s, const std::string& new_s) {
  if (f.hunks.size() < 20) f.hunks.emplace_back(old_s, new_s);
}

void apply_edit(FileTouch& f, const std::string& old_s, const std::string& new_s, bool all) {
  ++f.edits;
  if (!f.content) {
    unknown(f, "edited, but the trace never showed the whole file");
    keep_hunk(f, old_s, new_s);
    return;
  }
  std::string& c = *f.content;
  const std::size_t at = c.find(old_s);
  if (old_s.empty() || at == std::string::npos) {
    unknown(f, "an edit's old text was not found in the reconstructed file");
    keep_hunk(f, old_s, new_s);
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

// An update of a file that cannot be replayed, kept as its hunks: each "@@" section's context and
// removed lines, then its context and added lines.
void keep_patch_hunks(FileTouch& f, const PatchFile& pf) {
  std::string old_s, new_s;
  auto flush = [&] {
    if (!old_s.empty() || !new_s.empty()) keep_hunk(f, old_s, new_s);
    old_s.clear();
    new_s.clear();
  };
  for (const std::string& l : pf.lines) {
    if (l.starts_with("@@")) {
      flush();
      continue;
    }
    const std::string text = l.empty() ? "" : l.substr(1);
    if (l.empty() || l[0] == ' ' || l[0] == '-') old_s += text + "\n";
    if (l.empty() || l[0] == ' ' || l[0] == '+') new_s += text + "\n";
  }
  flush();
}

// Claude Code records the whole file an edit started from (toolUseResult.originalFile; the
// reader keeps it, as the call's "original_file", for a file's first such edit): a file the trace
// never showed is known from there on.
void start_from_original(FileTouch& f, const ToolCall& call) {
  const Json* original = input_field(call.input, {"original_file"});
  if (f.content || !original || !original->is_string() || call.is_error) return;
  f.content = original->get<std::string>();
  f.unknown_reason.clear();
  f.hunks.clear();
}

// One file of a patch; a move is followed by the caller.
void apply_patch_file(FileTouch& f, const PatchFile& pf) {
  if (pf.op == PatchFile::Op::remove) {
    mark_deleted(f);
    return;
  }
  if (pf.op == PatchFile::Op::add) {
    std::string content;
    for (const auto& l : pf.lines)
      if (l.starts_with('+')) content += l.substr(1) + "\n";
    f.content = std::move(content);
    f.deleted = false;
    f.unknown_reason.clear();
    ++f.writes;
    return;
  }
  ++f.edits;
  if (!f.content) {
    unknown(f, "patched, but the trace never showed the whole file");
    keep_patch_hunks(f, pf);
  } else if (auto updated = apply_patch_update(*f.content, pf)) {
    f.content = std::move(*updated);
  } else {
    unknown(f, updated.error().message);
    keep_patch_hunks(f, pf);
  }
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

FileReplay::FileReplay(std::string cwd) : cwd_(std::move(cwd)) {
  // A Windows working directory ("C:\\Users\\me\\cap"): its paths are the agent's too, with
  // either separator, the drive in either case.
  windows_ = cwd_.size() >= 3 && std::isalpha(static_cast<unsigned char>(cwd_[0])) &&
             cwd_[1] == ':' && (cwd_[2] == '\\' || cwd_[2] == '/');
  if (windows_) {
    std::replace(cwd_.begin(), cwd_.end(), '\\', '/');
    cwd_ = text::to_lower_ascii(cwd_);
  }
  if (!cwd_.empty() && !cwd_.ends_with('/')) cwd_ += '/';
}

FileTouch& FileReplay::touch(const std::string& raw_path, std::size_t turn) {
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

void FileReplay::rename(const std::string& from, const std::string& to, std::size_t turn) {
  FileTouch& src = touch(from, turn);
  std::optional<std::string> content = src.content;
  src.deleted = true;
  FileTouch& dst = touch(to, turn);
  dst.content = std::move(content);
  dst.deleted = false;
  ++dst.writes;
}

std::string FileReplay::relative(const std::string& raw) const {
  std::string p = raw;
  if (windows_) {
    std::replace(p.begin(), p.end(), '\\', '/');
    if (text::to_lower_ascii(p.substr(0, cwd_.size())) == cwd_) return p.substr(cwd_.size());
  }
  if (!cwd_.empty() && p.starts_with(cwd_)) return p.substr(cwd_.size());
  if (p.starts_with("./")) return p.substr(2);
  return p;
}

std::vector<std::string> FileReplay::apply(const ToolCall& call, ToolKind kind, std::size_t turn,
                                           ParseStats& stats) {
  if (kind == ToolKind::patch && call.name == "file_change") return apply_file_changes(call, turn);
  if (kind == ToolKind::patch) return apply_patch_call(call, turn, stats);
  return apply_write_or_edit(call, kind, turn);
}

std::vector<std::string> FileReplay::known_under(const std::string& path) const {
  std::vector<std::string> out;
  std::string folder = path;
  while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
  for (const auto& [known, at] : index_)
    if (!files_[at].deleted && known.starts_with(folder + "/")) out.push_back(known);
  return out;
}

std::optional<std::string> FileReplay::known_file(const std::string& word) const {
  // Only files the trace wrote: by the path, or — a trace that names files by absolute path but
  // does not say its folder (opencode's run stream) — the one file the name ends.
  const std::string path = relative(word);
  if (index_.contains(path)) return path;
  std::vector<std::string> ends;
  for (const auto& [known, at] : index_)
    if (known.ends_with("/" + path)) ends.push_back(known);
  if (ends.size() == 1) return ends.front();
  return std::nullopt;
}

std::vector<std::string> FileReplay::apply_shell_removals(const std::string& command,
                                                          std::size_t turn) {
  std::vector<std::string> changed;
  // Each simple command of the line between &&, ||, ;, | and newlines: `rm [flags] paths…` deletes
  // the files the trace wrote at those paths or under those folders; `mv [flags] from… to` moves
  // them (into `to` when it is a folder the trace wrote into, or ends with /, or more than one
  // thing moves).
  std::string segment;
  auto remove = [&](const std::string& path) {
    FileTouch& f = touch(path, turn);
    sparse_.erase(f.path);
    mark_deleted(f);
    changed.push_back(f.path);
  };
  auto take = [&] {
    std::vector<std::string> words = text::words(segment);
    for (std::string& w : words)
      if (w.size() >= 2 && (w.front() == '\'' || w.front() == '"') && w.back() == w.front())
        w = w.substr(1, w.size() - 2);
    segment.clear();
    if (words.empty()) return;
    const std::string program = words[0].substr(words[0].rfind('/') + 1);
    std::vector<std::string> args;
    for (std::size_t i = 1; i < words.size(); ++i)
      if (!words[i].starts_with('-')) args.push_back(words[i]);
    if (program == "rm") {
      for (const std::string& a : args) {
        if (auto path = known_file(a)) remove(*path);
        for (const std::string& under : known_under(relative(a))) remove(under);
      }
    } else if (program == "mv" && args.size() >= 2) {
      std::string to = relative(args.back());
      const bool into = args.size() > 2 || to.ends_with('/') || !known_under(to).empty();
      while (to.size() > 1 && to.back() == '/') to.pop_back();
      for (std::size_t i = 0; i + 1 < args.size(); ++i) {
        std::string from = relative(args[i]);
        while (from.size() > 1 && from.back() == '/') from.pop_back();
        const std::string name = from.substr(from.rfind('/') + 1);
        const std::string target = into ? to + "/" + name : to;
        if (auto path = known_file(from)) {
          rename(*path, target, turn);
          changed.push_back(*path);
          changed.push_back(target);
        }
        for (const std::string& under : known_under(from)) {
          const std::string moved = target + under.substr(from.size());
          rename(under, moved, turn);
          changed.push_back(under);
          changed.push_back(moved);
        }
      }
    }
  };
  for (char ch : command) {
    if (ch == '&' || ch == '|' || ch == ';' || ch == '\n')
      take();
    else
      segment += ch;
  }
  take();
  return changed;
}

std::vector<std::string> FileReplay::apply_file_changes(const ToolCall& call, std::size_t turn) {
  std::vector<std::string> touched;
  const Json* changes = input_field(call.input, {"changes"});
  if (!changes || !changes->is_array()) return touched;
  for (const Json& change : *changes) {
    const std::string path = input_string(change, {"path"});
    if (path.empty()) continue;
    const std::string kind = input_string(change, {"kind"});
    touched.push_back(relative(path));
    FileTouch& f = touch(path, turn);
    sparse_.erase(f.path);
    if (kind == "delete") {
      mark_deleted(f);
      continue;
    }
    f.deleted = false;
    ++(kind == "add" ? f.writes : f.edits);
    f.content.reset();
    f.unknown_reason = kind == "add" ? "created by a patch; `codex exec --json` shows which files "
                                       "a patch changed, not their contents"
                                     : "changed by a patch; `codex exec --json` shows which files "
                                       "a patch changed, not their contents";
  }
  return touched;
}

std::vector<std::string> FileReplay::apply_patch_call(const ToolCall& call, std::size_t turn,
                                                      ParseStats& stats) {
  const Json& in = call.input;
  std::vector<std::string> touched;
  const std::string patch =
      in.is_string() ? in.get<std::string>() : input_string(in, {"input", "patch", "diff"});
  auto parsed = parse_patch(patch);
  if (!parsed) {
    stats.note(fmt::format("apply_patch call {}: {}", call.id, parsed.error().message));
    return touched;
  }
  for (const PatchFile& pf : *parsed) {
    touched.push_back(relative(pf.path));
    apply_patch_file(touch(pf.path, turn), pf);
    if (pf.op != PatchFile::Op::remove && pf.move_to) rename(pf.path, *pf.move_to, turn);
  }
  return touched;
}

std::vector<std::string> FileReplay::apply_write_or_edit(const ToolCall& call, ToolKind kind,
                                                         std::size_t turn) {
  const Json& in = call.input;
  std::vector<std::string> touched;
  const std::string path = input_string(in, {"file_path", "path", "filename", "target_file"});
  if (path.empty()) return touched;
  touched.push_back(relative(path));
  FileTouch& f = touch(path, turn);
  f.deleted = false;
  if (kind == ToolKind::write) {
    const Json* content = input_field(in, {"content", "file_text", "contents", "text"});
    ++f.writes;
    if (content && content->is_string()) {
      sparse_.erase(f.path);
      f.content = content->get<std::string>();
      f.unknown_reason.clear();
    } else if (auto shown = shown_write(call.result); shown && !shown->lines.empty()) {
      sparse_.erase(f.path);
      f.unknown_reason.clear();
      keep_shown(f, SparseFile::from_write(*shown, call.result_truncated_in_trace));
    } else if (shown_diff(call.result)) {
      // Claude Code 2.0's /export shows a Write over a file that existed as "Updated p with N
      // additions and M removals" and the numbered diff against what was there, as for an Edit.
      apply_shown_diff(f, call, false);
    } else {
      sparse_.erase(f.path);
      f.content.reset();
      f.unknown_reason = "written, but the trace does not show the contents";
    }
  } else if ((kind == ToolKind::edit && !input_field(in, {"old_string", "old_str", "old_text"})) ||
             (kind == ToolKind::multi_edit && !input_field(in, {"edits"}))) {
    apply_shown_diff(f, call);
  } else if (kind == ToolKind::edit) {
    start_from_original(f, call);
    sparse_.erase(f.path);  // an edit by its old text needs the whole file
    apply_edit(f, input_string(in, {"old_string", "old_str", "old_text"}),
               input_string(in, {"new_string", "new_str", "new_text"}), replace_all(in));
  } else if (kind == ToolKind::multi_edit) {
    start_from_original(f, call);
    sparse_.erase(f.path);
    if (const Json* edits = input_field(in, {"edits"}); edits && edits->is_array())
      for (const auto& e : *edits)
        apply_edit(f, input_string(e, {"old_string", "old_str"}),
                   input_string(e, {"new_string", "new_str"}), replace_all(e));
  }
  return touched;
}

// An edit a text trace shows only as its numbered diff (Claude /export "Update(…)"): replayed on
// what is known of the file, line by line.
void FileReplay::apply_shown_diff(FileTouch& f, const ToolCall& call, bool is_edit) {
  if (is_edit) ++f.edits;
  auto diff = shown_diff(call.result);
  if (!diff) {
    sparse_.erase(f.path);
    f.content.reset();
    unknown(f, "edited, but the trace does not show the change");
    return;
  }
  auto it = sparse_.find(f.path);
  SparseFile file = f.content             ? SparseFile::whole(*f.content)
                    : it != sparse_.end() ? std::move(it->second)
                                          : SparseFile();
  file.apply(*diff, call.result_truncated_in_trace);
  keep_shown(f, std::move(file));
}

// A file known line by line: its contents once every line is known, else the lines kept apart.
void FileReplay::keep_shown(FileTouch& f, SparseFile file) {
  if (file.complete()) {
    f.content = file.content();
    f.unknown_reason.clear();
    sparse_.erase(f.path);
    return;
  }
  f.content.reset();
  sparse_.insert_or_assign(f.path, std::move(file));
}

std::vector<FileTouch> FileReplay::take() {
  for (FileTouch& f : files_) {
    auto it = sparse_.find(f.path);
    if (it == sparse_.end() || f.content || f.deleted) continue;
    f.shown = it->second.render(f.missing);
    f.unknown_reason = fmt::format("partly shown in the trace ({} lines known; missing {})",
                                   it->second.known_lines(), f.missing);
  }
  sparse_.clear();
  return std::move(files_);
}

void FileReplay::add_fenced_files(const std::vector<Turn>& turns) {
  for (std::size_t t = 0; t < turns.size(); ++t) {
    if (turns[t].role != Role::assistant) continue;
    for (auto& [path, content] : fenced_files(turns[t].text)) {
      FileTouch& f = touch(path, t);
      f.content = std::move(content);
      f.unknown_reason.clear();
      ++f.writes;
    }
  }
}

}  // namespace upskill::trace::detail
