#pragma once
// File helpers: whole-file reads with clear errors, atomic writes (temp + rename) and tree copies.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "upskill/core/error.hpp"

namespace upskill::files {

namespace fs = std::filesystem;

// Reads a whole file; the error names the path and the OS reason.
Result<std::string> read_text(const fs::path& path);

// Writes `content` to a temporary file beside `path`, flushes it and renames it over `path`, so a
// reader (or a crash) never sees a half-written file. Creates missing parent directories.
Status write_atomic(const fs::path& path, std::string_view content);

// Removes the temporary files write_atomic left under `dir` (recursively) when a writer was killed
// mid-write; call it only while no one else writes there. Returns how many it removed.
std::size_t remove_temporaries(const fs::path& dir);

// The one way upskill appends to a file (a log, a history, $GITHUB_STEP_SUMMARY): `text` (whole
// lines, ending with a newline) in one write, creating the file and its parent directories when
// missing. A killed process leaves whole lines; a write a full disk stops part-way is taken back;
// a power loss may leave the last line cut, which readers of such logs skip — and which the next
// append ends with a newline first, so that the new line stays whole. With `sync` the file is
// flushed to disk before this returns (a history that must survive a power loss).
Status append_line(const fs::path& path, std::string_view text, bool sync = false);

// A log that gains whole lines, kept open between appends (append_line's guarantees, without an
// open and a close per line): opening creates the file and its parent directories when missing
// and ends a last line a power loss cut off; each append is one write of whole lines.
class LineAppender {
 public:
  static Result<LineAppender> open(const fs::path& path);
  LineAppender(LineAppender&& other) noexcept;
  LineAppender& operator=(LineAppender&& other) noexcept;
  LineAppender(const LineAppender&) = delete;
  LineAppender& operator=(const LineAppender&) = delete;
  ~LineAppender();

  // Appends `line` (which ends with a newline). A write that fails part-way (a full disk, a file
  // size limit) is taken back: the file is cut to where it ended, so every line stays whole; should
  // that fail too, the next append first ends whatever part of the line was written.
  Status append(std::string_view line);
  // Flushes what was appended to the disk (fsync).
  Status sync();

 private:
  LineAppender(fs::path path, int fd, bool cut) : path_(std::move(path)), fd_(fd), cut_(cut) {}
  fs::path path_;
  int fd_ = -1;
  bool cut_ = false;  // the file may end in a partial line
};

// Options for copy_tree: which entries to skip (by file name) and what to do with symlinks.
struct CopyOptions {
  std::function<bool(const fs::path&)> skip;  // relative path -> true to leave it out
};

struct CopyReport {
  std::size_t files = 0;
  std::vector<fs::path> skipped_symlinks;  // relative paths; never followed out of the tree
};

// Copies the regular files and directories under `from` into `to` (which must not exist).
Result<CopyReport> copy_tree(const fs::path& from, const fs::path& to, const CopyOptions& options);

// Regular files under `dir`, relative to it, sorted; empty if `dir` is missing.
std::vector<fs::path> list_files(const fs::path& dir);

// A path that must stay inside a root folder: not empty, not absolute, no ".." component.
std::optional<std::string> relative_path_problem(std::string_view path);

// `relative` resolved under `root`, refusing anything that leads outside it — by "..", an absolute
// path or a symbolic link. The error message says which.
Result<fs::path> resolve_inside(const fs::path& root, std::string_view relative);

// A user's home directory ($HOME), or an error when it is not set.
Result<fs::path> home_directory();

}  // namespace upskill::files
