#pragma once
// Internal to the trace module: what a Claude Code /export shows of the files the agent wrote
// (export_files.cpp) — the numbered or plain lines of a Write, the numbered diff of an Update —
// kept as a sparse map of known lines until the whole file is known (docs/traces.md, "Claude Code
// /export").
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace upskill::trace::detail {

// Decimal digits as a line number or count; nullopt when they are not all digits or exceed 2^40
// (a hash, an id) — never an exception.
std::optional<std::size_t> parse_count(std::string_view digits);

// One line of an Update diff: ' ' context and '+' added lines carry their number in the new file,
// '-' removed lines their number in the old one.
struct DiffLine {
  char op = ' ';
  std::size_t number = 0;
  std::string text;
};
using DiffHunk = std::vector<DiffLine>;

// What a Write result shows: "Wrote N lines to p" and the file's lines — numbered (1, 2, 3, …), or
// plain as Claude Code 2.0 showed them: its blank lines left out, and N counting the piece after
// the last newline (a 6-line file ending in a newline is "Wrote 7 lines").
struct ShownWrite {
  std::optional<std::size_t> total;  // N, when the header says it
  std::vector<std::pair<std::size_t, std::string>>
      lines;  // (number, text); plain: 1, 2, … as shown
  bool plain = false;
};
// Parses a Write's result text; nullopt when it is not a "Wrote … lines to …" preview.
std::optional<ShownWrite> shown_write(std::string_view result);

// What an Update result shows: "Updated p with A additions and R removals" and the diff, in hunks
// (separated by "..." lines). `additions`/`removals` are the header's counts (when given).
struct ShownDiff {
  std::vector<DiffHunk> hunks;
  std::optional<long> additions, removals;
  bool no_final_newline = false;  // "\ No newline at end of file"
  bool cut = false;               // the result was bounded in the trace: lines are missing
};
// Parses an Update's result text; nullopt when it is not a numbered diff.
std::optional<ShownDiff> shown_diff(std::string_view result);

// A file known line by line: some lines (numbered from 1), and maybe its length.
class SparseFile {
 public:
  static SparseFile whole(std::string_view content);
  // `elided`: the export hid the rest of the preview ("… +N lines").
  static SparseFile from_write(const ShownWrite& w, bool elided);

  // Applies an Update's diff. `elided`: the export hid part of it ("… +N lines"); what follows the
  // last shown line is then unknown, though the header's counts still give the new length.
  void apply(const ShownDiff& diff, bool elided);

  // Every line 1..length known.
  bool complete() const;
  // The contents when complete.
  std::string content() const;
  // The known lines with each gap marked, and what is missing ("lines 9–27 of 27").
  std::string render(std::string& missing) const;
  std::size_t known_lines() const { return lines_.size(); }

 private:
  // Replaces the `old_count` lines from `start` with `with` (numbered from `start`).
  void splice(std::size_t start, std::size_t old_count, const std::vector<std::string>& with);
  void forget_from(std::size_t line);

  // A plain preview's file: its lines in order, numbered as shown, with `blanks_missing_` blank
  // lines (unknown when the preview was elided) whose places are not known, and maybe a tail not
  // shown. An Update's diff is then placed by its text, not its numbers; the blank lines it shows
  // are placed with it, and once none is missing (and no tail) the file is known line by line.
  void apply_by_text(const ShownDiff& diff, bool elided);
  void settle_blanks();

  std::optional<std::size_t> length_;
  std::map<std::size_t, std::string> lines_;
  bool final_newline_ = true;
  bool blanks_unplaced_ = false;
  std::optional<std::size_t> blanks_missing_;
  bool tail_unknown_ = false;
};

}  // namespace upskill::trace::detail
