#pragma once
// Internal to the trace module: the file replay (file_replay.cpp) — the files an agent changed and
// their final contents, found by replaying its writes, edits, multi-edits and apply_patch calls.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../formats/export_files.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

// Files the agent changed, in order of first touch, with their contents as far as the trace shows
// them: writes, edits, multi-edits and apply_patch are replayed; renames and deletes followed.
class FileReplay {
 public:
  // Paths under `cwd` are kept relative to it.
  explicit FileReplay(std::string cwd);
  // Replays a write, edit, multi-edit or patch call; returns the (relative) paths it touched.
  std::vector<std::string> apply(const ToolCall& call, ToolKind kind, std::size_t turn,
                                 ParseStats& stats);
  // A shell command that ran: the files the trace wrote that it removes with `rm` (at a path or
  // under a folder) are deleted, those it moves with `mv` follow the move. Returns the (relative)
  // paths it changed.
  std::vector<std::string> apply_shell_removals(const std::string& command, std::size_t turn);
  // Text traces show files as fenced code blocks in assistant turns; the last block for a path is
  // its final version.
  void add_fenced_files(const std::vector<Turn>& turns);
  // The files; a partly known one carries what the trace shows of it (FileTouch::shown).
  std::vector<FileTouch> take();

 private:
  FileTouch& touch(const std::string& raw_path, std::size_t turn);
  void rename(const std::string& from, const std::string& to, std::size_t turn);
  std::string relative(const std::string& p) const;
  // codex exec --json file_change: {changes: [{path, kind: add|update|delete}]}.
  std::vector<std::string> apply_file_changes(const ToolCall& call, std::size_t turn);
  std::vector<std::string> apply_patch_call(const ToolCall& call, std::size_t turn,
                                            ParseStats& stats);
  std::vector<std::string> apply_write_or_edit(const ToolCall& call, ToolKind kind,
                                               std::size_t turn);
  // `is_edit`: counted as an edit (a Write shown as a diff counts as the write it is).
  // The files the trace wrote (and did not delete) under the folder `path`.
  std::vector<std::string> known_under(const std::string& path) const;
  // The file the trace wrote that a command's word names, if any.
  std::optional<std::string> known_file(const std::string& word) const;
  void apply_shown_diff(FileTouch& f, const ToolCall& call, bool is_edit = true);
  void keep_shown(FileTouch& f, SparseFile file);

  std::string cwd_;
  bool windows_ = false;                      // cwd_ is a Windows path (kept with '/', lower case)
  std::map<std::string, std::size_t> index_;  // path -> index into files_
  std::vector<FileTouch> files_;
  std::map<std::string, SparseFile> sparse_;  // path -> known lines of a partly known file
};

}  // namespace upskill::trace::detail
