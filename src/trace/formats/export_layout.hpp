#pragma once
// Internal to the trace module: the terminal layout of a Claude Code /export (export_layout.cpp) —
// display widths, the export's width, and the lines the terminal wrapped at that width joined again
// (docs/traces.md, "Claude Code /export").
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace upskill::trace::detail {

// Longest line a pattern is matched against: std::regex recurses per character, and a line of a
// minified file could exhaust the stack. Longer lines are read as plain text (never a message
// marker, preview or diff line) and soft wraps are not joined past it.
inline constexpr std::size_t kMaxPatternLine = 4096;

// Terminal columns of a UTF-8 line: East Asian wide characters and emoji take two.
std::size_t display_width(std::string_view s);

// The export's width, when its lines show one: the widest line, reached or nearly reached by
// several lines (a terminal that wrapped). nullopt when nothing was wrapped.
std::optional<std::size_t> export_width(const std::vector<std::string>& lines);

// Joins the lines the terminal wrapped at `width` back into the lines the agent wrote: a line is a
// continuation of the one before when it sits at that line's text column and its first word would
// not have fitted on it. A word longer than the line (a URL, a path) is joined without a space.
// An assistant's paragraphs that Claude Code 2.1 wrapped narrower than the terminal (80 columns)
// are joined at that width, when they show it. Returns the number of joins.
std::size_t join_soft_wraps(std::vector<std::string>& lines, std::size_t width);

// Turns each table Claude Code drew with box characters (┌ │ ├ └), its cells wrapped over several
// rows, back into the markdown table the agent wrote: a row per table row, its cells whole.
// Returns the number of tables.
std::size_t rebuild_box_tables(std::vector<std::string>& lines);

}  // namespace upskill::trace::detail
