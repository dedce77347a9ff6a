// What a Claude Code /export shows of the files the agent wrote: the numbered preview of a Write,
// the numbered diff of an Update, and the sparse line map they are replayed into
// (docs/traces.md, "Claude Code /export").
#include "export_files.hpp"

#include <fmt/format.h>

#include <charconv>
#include <regex>

#include "export_layout.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace::detail {

namespace {

std::string_view first_line(std::string_view text) {
  return text.substr(0, text.find('\n'));
}

bool is_omission(const std::string& line) {
  return line.starts_with("[… ") && line.find("bytes omitted") != std::string::npos;
}

std::optional<long> count_before(const std::string& header, const char* word) {
  const std::regex re(std::string(R"((\d+) )") + word, std::regex::icase);
  std::smatch m;
  if (!std::regex_search(header, m, re)) return std::nullopt;
  const auto n = parse_count(m[1].str());
  return n ? std::optional<long>(static_cast<long>(*n)) : std::nullopt;
}

// "Added 3 lines, removed 1 line" (newer versions) or "with 3 additions and 1 removal".
void header_counts(const std::string& header, ShownDiff& diff) {
  static const std::regex added(R"(\badded (\d+) lines?)", std::regex::icase);
  static const std::regex removed(R"(\bremoved (\d+) lines?)", std::regex::icase);
  diff.additions = count_before(header, "addition");
  diff.removals = count_before(header, "removal");
  std::smatch m;
  if (!diff.additions && std::regex_search(header, m, added))
    if (auto n = parse_count(m[1].str())) diff.additions = static_cast<long>(*n);
  if (!diff.removals && std::regex_search(header, m, removed))
    if (auto n = parse_count(m[1].str())) diff.removals = static_cast<long>(*n);
  if (diff.additions && !diff.removals) diff.removals = 0;
  if (diff.removals && !diff.additions) diff.additions = 0;
}

// "1-3, 9–27 of 27": ranges of missing line numbers, at most four named.
std::string ranges_text(const std::vector<std::pair<std::size_t, std::size_t>>& gaps) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < gaps.size() && i < 4; ++i)
    parts.push_back(gaps[i].first == gaps[i].second
                        ? std::to_string(gaps[i].first)
                        : fmt::format("{}–{}", gaps[i].first, gaps[i].second));
  if (gaps.size() > 4) parts.push_back(fmt::format("{} more ranges", gaps.size() - 4));
  return text::join(parts, ", ");
}

}  // namespace

std::optional<std::size_t> parse_count(std::string_view digits) {
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() || n > (std::size_t{1} << 40))
    return std::nullopt;
  return n;
}

std::optional<ShownWrite> shown_write(std::string_view result) {
  static const std::regex header_re(R"(^Wrote (\d+) lines? to .+$)");
  static const std::regex line_re(R"(^ *(\d+)(?: (.*))?$)");
  const std::string header = text::trim(first_line(result));
  std::smatch m;
  if (header.size() > kMaxPatternLine || !std::regex_match(header, m, header_re))
    return std::nullopt;
  ShownWrite w;
  w.total = parse_count(m[1].str());
  const std::vector<std::string> lines = text::split_lines(result);
  std::smatch first;
  w.plain = lines.size() > 1 && (lines[1].size() > kMaxPatternLine ||
                                 !std::regex_match(lines[1], first, line_re) || first[1] != "1");
  if (w.plain) {
    for (std::size_t i = 1; i < lines.size(); ++i)
      if (!text::trim(lines[i]).empty()) w.lines.emplace_back(w.lines.size() + 1, lines[i]);
    return w;
  }
  for (std::size_t i = 1; i < lines.size(); ++i) {
    std::smatch lm;
    if (lines[i].size() > kMaxPatternLine || !std::regex_match(lines[i], lm, line_re)) break;
    const auto n = parse_count(lm[1].str());
    if (n != w.lines.size() + 1) break;  // numbered 1, 2, 3, …: anything else is not the file
    w.lines.emplace_back(*n, lm[2].str());
  }
  return w;
}

std::optional<ShownDiff> shown_diff(std::string_view result) {
  static const std::regex header_re(R"(^(?:Updated|Edited|Added|Removed|Changed)\b.*)");
  // "Updated p with 1 addition and 1 removal": "   3 -  old", two spaces after the mark.
  static const std::regex line_re(R"(^ *(\d+)(?: ([ +-])(?:  ?(.*))?)? *$)");
  // Claude Code 2.1's "Added 1 line, removed 1 line": "   3 -old", the text right after the mark,
  // each line padded with spaces to the terminal's width.
  static const std::regex compact_line_re(R"(^ *(\d+)(?: ([ +-])(.*?))? *$)");
  const std::string header = text::trim(first_line(result));
  if (header.size() > kMaxPatternLine || !std::regex_match(header, header_re)) return std::nullopt;
  const bool compact = header.starts_with("Added") || header.starts_with("Removed");
  ShownDiff diff;
  header_counts(header, diff);
  const std::vector<std::string> lines = text::split_lines(result);
  // The numbers the next ' ' or '+' line and the next '-' line must have in this hunk (0: any).
  std::size_t next_new = 0, next_old = 0;
  auto new_hunk = [&] {
    if (diff.hunks.empty() || !diff.hunks.back().empty()) diff.hunks.emplace_back();
    next_new = next_old = 0;
  };
  new_hunk();
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string t = text::trim(lines[i]);
    if (t.find("No newline at end of file") != std::string::npos) {
      diff.no_final_newline = true;
      continue;
    }
    if (t == "..." || t == "…") {
      new_hunk();
      continue;
    }
    if (is_omission(t)) {
      diff.cut = true;
      new_hunk();
      continue;
    }
    std::smatch m;
    if (lines[i].size() > kMaxPatternLine ||
        !std::regex_match(lines[i], m, compact ? compact_line_re : line_re))
      continue;
    const auto n = parse_count(m[1].str());
    if (!n) continue;
    DiffLine d{m[2].matched ? m[2].str()[0] : ' ', *n, m[3].str()};
    // A jump in either numbering starts a hunk, even where the export shows no "...".
    std::size_t& next = d.op == '-' ? next_old : next_new;
    if (next != 0 && d.number != next) new_hunk();
    next = d.number + 1;
    diff.hunks.back().push_back(std::move(d));
  }
  if (diff.hunks.back().empty()) diff.hunks.pop_back();
  if (diff.hunks.empty()) return std::nullopt;
  return diff;
}

SparseFile SparseFile::whole(std::string_view content) {
  SparseFile f;
  const std::vector<std::string> lines = text::split_lines(content);
  for (std::size_t i = 0; i < lines.size(); ++i) f.lines_[i + 1] = lines[i];
  f.length_ = lines.size();
  f.final_newline_ = content.empty() || content.ends_with('\n');
  return f;
}

SparseFile SparseFile::from_write(const ShownWrite& w, bool elided) {
  SparseFile f;
  for (const auto& [n, text] : w.lines) f.lines_[n] = text;
  if (!w.plain) {
    f.length_ = w.total;
    return f;
  }
  // N counts the pieces between newlines: the file's lines and the empty piece after its last
  // newline. Those not shown are its blank lines (and, elided, its tail).
  f.blanks_unplaced_ = true;
  f.tail_unknown_ = elided;
  if (!elided && w.total && *w.total >= w.lines.size() + 1)
    f.blanks_missing_ = *w.total - w.lines.size() - 1;
  f.settle_blanks();
  return f;
}

void SparseFile::settle_blanks() {
  if (!blanks_unplaced_ || tail_unknown_ || blanks_missing_ != std::size_t{0}) return;
  std::map<std::size_t, std::string> numbered;
  for (auto& [n, text] : lines_) numbered.emplace(numbered.size() + 1, std::move(text));
  lines_ = std::move(numbered);
  length_ = lines_.size();
  blanks_unplaced_ = false;
}

// Each hunk's old lines (context and removed) are found in order among the known lines, a blank
// old line matching a blank known line or standing for one not shown; the hunk's new lines
// replace what matched. A hunk not found leaves the file unknown from there.
void SparseFile::apply_by_text(const ShownDiff& diff, bool elided) {
  std::vector<std::string> seq;
  for (auto& [n, text] : lines_) seq.push_back(std::move(text));
  const auto same = [](const std::string& a, const std::string& b) {
    return text::trim(a) == text::trim(b);
  };
  bool lost = false;
  for (const DiffHunk& hunk : diff.hunks) {
    std::vector<std::string> old_side, new_side;
    for (const DiffLine& d : hunk) {
      if (d.op != '+') old_side.push_back(d.text);
      if (d.op != '-') new_side.push_back(d.text);
    }
    std::optional<std::pair<std::size_t, std::size_t>> found;  // [start, end) in seq
    std::size_t placed = 0;
    for (std::size_t start = 0; start < seq.size() && !found; ++start) {
      std::size_t j = start, blanks = 0;
      bool ok = true;
      for (const std::string& o : old_side) {
        if (j < seq.size() && same(seq[j], o)) {
          ++j;
        } else if (text::trim(o).empty()) {
          ++blanks;  // a blank line the preview left out
        } else {
          ok = false;
          break;
        }
      }
      if (ok && j > start) {
        found = {start, j};
        placed = blanks;
      }
    }
    if (!found) {
      lost = true;
      break;
    }
    seq.erase(seq.begin() + static_cast<long>(found->first),
              seq.begin() + static_cast<long>(found->second));
    seq.insert(seq.begin() + static_cast<long>(found->first), new_side.begin(), new_side.end());
    if (blanks_missing_) blanks_missing_ = *blanks_missing_ - std::min(*blanks_missing_, placed);
  }
  lines_.clear();
  for (std::string& text : seq) lines_.emplace(lines_.size() + 1, std::move(text));
  if (lost || elided || diff.cut) tail_unknown_ = true;
  if (diff.no_final_newline) final_newline_ = false;
  settle_blanks();
}

void SparseFile::splice(std::size_t start, std::size_t old_count,
                        const std::vector<std::string>& with) {
  std::map<std::size_t, std::string> next;
  for (auto& [k, v] : lines_) {
    if (k < start)
      next.emplace(k, std::move(v));
    else if (k >= start + old_count)
      next.emplace(k + with.size() - old_count, std::move(v));
  }
  for (std::size_t i = 0; i < with.size(); ++i) next[start + i] = with[i];
  lines_ = std::move(next);
}

void SparseFile::forget_from(std::size_t line) {
  lines_.erase(lines_.lower_bound(line), lines_.end());
}

void SparseFile::apply(const ShownDiff& diff, bool elided) {
  if (blanks_unplaced_) return apply_by_text(diff, elided);
  long delta = 0;
  std::size_t last_shown = 0;
  for (const DiffHunk& hunk : diff.hunks) {
    const DiffLine& first = hunk.front();
    // Removed lines carry old numbers; earlier hunks have moved them by `delta`.
    const long start_signed =
        first.op == '-' ? static_cast<long>(first.number) + delta : static_cast<long>(first.number);
    const std::size_t start = static_cast<std::size_t>(std::max(1L, start_signed));
    std::size_t old_count = 0;
    std::vector<std::string> now;
    for (const DiffLine& d : hunk) {
      if (d.op != '+') ++old_count;
      if (d.op != '-') now.push_back(d.text);
    }
    splice(start, old_count, now);
    delta += static_cast<long>(now.size()) - static_cast<long>(old_count);
    last_shown = start + now.size() - 1;
  }
  const bool partial = elided || diff.cut;
  if (partial) forget_from(last_shown + 1);
  if (length_) {
    if (diff.additions && diff.removals)  // each at most 2^40 (parse_count): no overflow
      length_ = static_cast<std::size_t>(
          std::max(0L, static_cast<long>(*length_) + *diff.additions - *diff.removals));
    else if (!partial)
      length_ = static_cast<std::size_t>(std::max(0L, static_cast<long>(*length_) + delta));
    else
      length_.reset();
  }
  if (diff.no_final_newline) final_newline_ = false;
}

bool SparseFile::complete() const {
  if (blanks_unplaced_ || !length_ || lines_.size() != *length_) return false;
  return lines_.empty() || (lines_.begin()->first == 1 && lines_.rbegin()->first == *length_);
}

std::string SparseFile::content() const {
  std::string out;
  for (const auto& [n, text] : lines_) out += text + "\n";
  if (!final_newline_ && !out.empty()) out.pop_back();
  return out;
}

std::string SparseFile::render(std::string& missing) const {
  std::string out;
  if (blanks_unplaced_) {
    for (const auto& [n, text] : lines_) out += text + "\n";
    std::vector<std::string> parts;
    if (blanks_missing_ != std::size_t{0})
      parts.push_back(blanks_missing_ ? fmt::format("{} blank line{}", *blanks_missing_,
                                                    *blanks_missing_ == 1 ? "" : "s")
                                      : "its blank lines");
    if (tail_unknown_) parts.push_back(fmt::format("the lines after these {}", lines_.size()));
    missing = text::join(parts, ", and ") + " (the export does not show them)";
    out += fmt::format("[… {} …]\n", missing);
    return out;
  }
  std::vector<std::pair<std::size_t, std::size_t>> gaps;
  std::size_t expect = 1;
  std::size_t missing_lines = 0;
  auto gap = [&](std::size_t to) {
    out += expect == to ? fmt::format("[… line {} is not shown in the trace …]\n", expect)
                        : fmt::format("[… lines {}–{} are not shown in the trace …]\n", expect, to);
    gaps.emplace_back(expect, to);
    missing_lines += to - expect + 1;
  };
  for (const auto& [n, text] : lines_) {
    if (n > expect) gap(n - 1);
    out += text + "\n";
    expect = n + 1;
  }
  if (length_ && expect <= *length_) gap(*length_);
  if (length_) {
    missing = gaps.empty() ? ""
                           : fmt::format("{} {} of {}", missing_lines == 1 ? "line" : "lines",
                                         ranges_text(gaps), *length_);
  } else {
    out += fmt::format("[… the trace does not show the file from line {} on …]\n", expect);
    missing = gaps.empty()
                  ? fmt::format("the lines from {} on", expect)
                  : fmt::format("lines {}, and the lines from {} on", ranges_text(gaps), expect);
  }
  return out;
}

}  // namespace upskill::trace::detail
