// The terminal layout of a Claude Code /export: display widths, the export's width, and the lines
// the terminal wrapped at that width joined back (docs/traces.md, "Claude Code /export").
#include "export_layout.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

#include "export_files.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace::detail {

namespace {

// Decodes the UTF-8 character at `i` (advancing `i`); a stray byte reads as itself.
char32_t next_char(std::string_view s, std::size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const int extra = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : 0;
  char32_t c = extra == 0 ? b : b & (0x3F >> extra);
  ++i;
  for (int k = 0; k < extra && i < s.size(); ++k, ++i) {
    const auto cont = static_cast<unsigned char>(s[i]);
    if ((cont & 0xC0) != 0x80) break;
    c = (c << 6) | (cont & 0x3F);
  }
  return c;
}

bool is_zero_width(char32_t c) {
  return (c >= 0x0300 && c <= 0x036F) || (c >= 0x200B && c <= 0x200F) || c == 0xFE0F || c == 0xFE0E;
}

// East Asian wide and fullwidth ranges, and the symbols terminals draw as emoji.
bool is_wide(char32_t c) {
  static constexpr std::pair<char32_t, char32_t> kWide[] = {
      {0x1100, 0x115F},   {0x231A, 0x231B},   {0x23E9, 0x23EC},   {0x23F0, 0x23F0},
      {0x23F3, 0x23F3},   {0x25FD, 0x25FE},   {0x2614, 0x2615},   {0x2648, 0x2653},
      {0x267F, 0x267F},   {0x2693, 0x2693},   {0x26A1, 0x26A1},   {0x26AA, 0x26AB},
      {0x26BD, 0x26BE},   {0x26C4, 0x26C5},   {0x26CE, 0x26CE},   {0x26D4, 0x26D4},
      {0x26EA, 0x26EA},   {0x26F2, 0x26F3},   {0x26F5, 0x26F5},   {0x26FA, 0x26FA},
      {0x26FD, 0x26FD},   {0x2705, 0x2705},   {0x270A, 0x270B},   {0x2728, 0x2728},
      {0x274C, 0x274C},   {0x274E, 0x274E},   {0x2753, 0x2755},   {0x2757, 0x2757},
      {0x2795, 0x2797},   {0x27B0, 0x27B0},   {0x27BF, 0x27BF},   {0x2B1B, 0x2B1C},
      {0x2B50, 0x2B50},   {0x2B55, 0x2B55},   {0x2E80, 0x303E},   {0x3041, 0x33FF},
      {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},   {0xAC00, 0xD7A3},
      {0xF900, 0xFAFF},   {0xFE30, 0xFE4F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},
      {0x1F300, 0x1F64F}, {0x1F680, 0x1F6FF}, {0x1F900, 0x1F9FF}, {0x1FA70, 0x1FAFF},
      {0x20000, 0x3FFFD}};
  return std::ranges::any_of(kWide, [c](const auto& r) { return c >= r.first && c <= r.second; });
}

std::size_t indent_of(std::string_view s) {
  const std::size_t n = s.find_first_not_of(' ');
  return n == std::string_view::npos ? s.size() : n;
}

std::string_view rstrip(std::string_view s) {
  const std::size_t end = s.find_last_not_of(' ');
  return end == std::string_view::npos ? std::string_view() : s.substr(0, end + 1);
}

std::string_view first_word(std::string_view s) {
  s.remove_prefix(indent_of(s));
  return s.substr(0, s.find(' '));
}

std::string_view last_word(std::string_view s) {
  s = rstrip(s);
  const std::size_t space = s.rfind(' ');
  return space == std::string_view::npos ? s : s.substr(space + 1);
}

bool starts_with_glyph(std::string_view s) {
  s.remove_prefix(indent_of(s));
  for (std::string_view g :
       {"⏺", "●", "⎿", ">", "❯", "✻", "✽", "✢", "╭", "│", "╰", "※", "·", "…"})
    if (s.starts_with(g)) return true;
  return s == "..." || s.starts_with("... ");
}

bool is_decoration(std::string_view s) {
  return s.starts_with("╭") || s.starts_with("│") || s.starts_with("╰");
}

// Where a line's text starts, and so where the terminal put the rest of it when it wrapped: after
// "⏺ ", "> ", "  ⎿  ", after the number and marker of a numbered preview or diff line, or at
// the line's indentation. `numbered`: the line is one of a preview's or a diff's numbered lines.
struct TextColumn {
  std::size_t column = 0;
  std::size_t slack = 0;  // continuations seen one column to the left (a diff's marker box)
  bool numbered = false;
  bool user = false;
  bool result = false;  // the first line of a tool result ("  ⎿  …")
};

TextColumn text_column(const std::string& line) {
  if (line.size() > kMaxPatternLine) return {indent_of(line), 0, false, false, false};
  static const std::regex result_re(R"(^( *⎿ +))");
  static const std::regex numbered_re(R"(^( *\d+)(?: |$))");
  static const std::regex tool_re(R"(^(?:⏺|●) [A-Z][A-Za-z0-9_]*\()");
  std::smatch m;
  if (std::regex_search(line, m, tool_re))
    return {display_width(m[0].str()), display_width(m[0].str()) - 2, false, false, false};
  if (line.starts_with("⏺ ") || line.starts_with("● ")) return {2, 0, false, false, false};
  if (line.starts_with("> ") || line.starts_with("❯ ")) return {2, 2, false, true, false};
  if (std::regex_search(line, m, result_re))
    return {display_width(m[1].str()), 0, false, false, true};
  // "  12 text" (a Write preview) or "  12 +  text" (a diff): the text starts one to four
  // columns after the number.
  if (std::regex_search(line, m, numbered_re))
    return {static_cast<std::size_t>(m[1].length()) + 4, 3, true, false, false};
  return {indent_of(line), 0, false, false, false};
}

bool is_numbered(std::string_view s) {
  s.remove_prefix(indent_of(s));
  const std::size_t digits = s.find_first_not_of("0123456789");
  return digits > 0 && (digits == std::string_view::npos || s[digits] == ' ');
}

// A Write result's first row: "  ⎿  Wrote 16 lines to <path>".
bool names_written_file(std::string_view line) {
  const std::size_t at = line.find("⎿");
  if (at == std::string_view::npos) return false;
  line.remove_prefix(at + std::string_view("⎿").size());
  line.remove_prefix(std::min(line.size(), indent_of(line)));
  if (!line.starts_with("Wrote ")) return false;
  const std::size_t lines_to = line.find(" lines to ");
  return lines_to != std::string_view::npos &&
         line.substr(6, lines_to - 6).find_first_not_of("0123456789") == std::string_view::npos;
}

// The marker of a numbered diff row ("  54 +  code", "  11 +/// doc", "  49 -  code"): the
// character after the number and its space, when it is "+" or "-"; else '\0'.
char marker_of(std::string_view line) {
  line.remove_prefix(indent_of(line));
  const std::size_t digits = line.find_first_not_of("0123456789");
  if (digits == 0 || digits == std::string_view::npos || digits + 2 > line.size()) return '\0';
  const char c = line[digits + 1];
  return line[digits] == ' ' && (c == '+' || c == '-') ? c : '\0';
}

// An assistant paragraph: "⏺ text" or "● text" that is not a tool call.
bool starts_prose(const std::string& line) {
  const TextColumn col = text_column(line);
  return (line.starts_with("⏺ ") || line.starts_with("● ")) && col.column == 2 && col.slack == 0;
}

// A line under an assistant paragraph: at its text column, not a glyph's.
bool under_prose(std::string_view line) {
  return indent_of(line) == 2 && line.size() > 2 && !starts_with_glyph(line);
}

// A wrapped sentence, not a code line or a list item: the row before does not end a block (`{`,
// `}`), and this one is no list item and does not start with an expression — its first word holds
// no `(`, `=`, `{`, `;`, `[`, `->` or `::` (`pipe.unet.set_attn_processor(…)` is code;
// `kernel.cu,`, `sm_80`, `e.g.` and `src/main.cpp` are words of a sentence).
bool reads_as_prose(std::string_view before, std::string_view line) {
  before = rstrip(before);
  line.remove_prefix(indent_of(line));
  if (before.empty() || line.empty() || before.back() == '{' || before.back() == '}') return false;
  if (line.starts_with("- ") || line.starts_with("* ") || line.starts_with("• ")) return false;
  const std::size_t digits = line.find_first_not_of("0123456789");
  if (digits > 0 && digits != std::string_view::npos && line.substr(digits).starts_with(". "))
    return false;
  std::string_view word = line.substr(0, line.find(' '));
  // Brackets and quotes around a word of prose: "(see", "`torch.compile`".
  const std::size_t from = word.find_first_not_of("\"'`*[");
  if (from == std::string_view::npos) return true;
  word.remove_prefix(from);
  if (word.starts_with('(')) word.remove_prefix(1);
  return word.find_first_of("(={;[") == std::string_view::npos &&
         word.find("->") == std::string_view::npos && word.find("::") == std::string_view::npos;
}

// Claude Code 2.1 wraps an assistant's paragraphs narrower than the terminal (at 80 columns of a
// 100-column export). That width, when the paragraphs show one narrower than `width`: the widest
// row of the largest group of rows within ten columns of each other (two at least), counting rows
// followed by more of their sentence (a code line followed by another says nothing of it), more
// than ten columns narrower than the terminal (rows of a paragraph wrapped at the terminal's width
// fall short of it by a word). A row may fill the width: the widest row is taken as the width
// itself.
std::optional<std::size_t> prose_width(const std::vector<std::string>& lines, std::size_t width) {
  std::vector<std::size_t> rows;
  bool prose = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].size() > kMaxPatternLine) {
      prose = false;
      continue;
    }
    prose = starts_prose(lines[i]) || (prose && under_prose(lines[i]));
    if (prose && i + 1 < lines.size() && under_prose(lines[i + 1]) &&
        reads_as_prose(lines[i], lines[i + 1]))
      rows.push_back(display_width(rstrip(lines[i])));
  }
  if (rows.size() < 2) return std::nullopt;
  // The width most rows come within ten columns of (the wider on a tie): a few long code rows
  // whose next row happens to start with a word do not outvote the paragraphs.
  std::size_t widest = 0;
  long most = 0;
  for (std::size_t top : rows) {
    const long near = std::count_if(rows.begin(), rows.end(),
                                    [&](std::size_t w) { return w <= top && w + 10 >= top; });
    if (near > most || (near == most && top > widest)) {
      most = near;
      widest = top;
    }
  }
  if (most < 2 || widest < 40 || widest + 10 >= width) return std::nullopt;
  return widest;
}

// A table Claude Code drew with box characters (docs/traces.md, "Claude Code /export"): its top
// border ("┌───┬───┐"), rows of cells between "│", a border ("├───┼───┤") after each row and a
// bottom one ("└───┴───┘"), all at one indentation. A cell too long for its column is wrapped
// inside it over more rows of the same table row (a short cell sits in the middle of them).
struct BoxRow {
  std::vector<std::string> cells;  // trimmed
};

std::optional<BoxRow> box_row(std::string_view line, std::size_t indent, std::size_t columns) {
  if (indent_of(line) != indent) return std::nullopt;
  line = rstrip(line.substr(indent));
  static constexpr std::string_view kBar = "│";
  if (!line.starts_with(kBar) || !line.ends_with(kBar) || line.size() < 2 * kBar.size())
    return std::nullopt;
  BoxRow row;
  for (std::size_t at = kBar.size(); at < line.size();) {
    const std::size_t next = line.find(kBar, at);
    row.cells.push_back(text::trim(line.substr(at, next - at)));
    at = next + kBar.size();
  }
  if (row.cells.size() != columns) return std::nullopt;
  return row;
}

// The columns of a border row that starts with `left` ("┌", "├" or "└"), or 0.
std::size_t border_columns(std::string_view line, std::size_t indent, std::string_view left,
                           std::string_view joint) {
  if (indent_of(line) != indent) return 0;
  line = rstrip(line.substr(indent));
  if (!line.starts_with(left)) return 0;
  std::size_t columns = 1;
  for (std::size_t at = 0; (at = line.find(joint, at)) != std::string_view::npos;
       at += joint.size())
    ++columns;
  return columns;
}

std::string escape_cell(const std::string& cell) {
  std::string out;
  for (char c : cell) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string markdown_row(const std::vector<std::string>& cells, std::size_t indent) {
  std::string out(indent, ' ');
  out += "|";
  for (const std::string& cell : cells) out += " " + escape_cell(cell) + " |";
  return out;
}

// Claude Code 2.1 wraps a numbered preview's lines inside the result's box, narrower than the
// terminal, and by characters, not words ("const f" / "loat*"): the widest numbered row of a
// tool result, when two or more reach it, is that box's width, and a row that reaches it continues
// without a space. Only rows under a result count: a code line of a message that starts with a
// number ("7 => options.push(…)") is in no box.
std::optional<std::size_t> box_width(const std::vector<std::string>& lines) {
  std::map<std::size_t, std::size_t> numbered_widths;
  bool in_result = false;
  for (const std::string& l : lines) {
    if (l.size() > kMaxPatternLine) continue;
    if (text_column(l).result)
      in_result = true;
    else if (!l.empty() && l[0] != ' ')
      in_result = false;  // a message, a prompt, a call: the result has ended
    if (in_result && is_numbered(l)) ++numbered_widths[display_width(rstrip(l))];
  }
  if (!numbered_widths.empty() && numbered_widths.rbegin()->second >= 2 &&
      numbered_widths.rbegin()->first >= 40)
    return numbered_widths.rbegin()->first;
  return std::nullopt;
}

// The word being joined across rows, when a row ended inside it: where it started on its first
// row (columns into the text) and how wide it is so far.
struct LongWord {
  std::size_t from = 0, width = 0;
};

// What a row that goes on with the line above adds to it. In a diff Claude Code keeps each row's
// marker column on the rows it wrapped the line over (`wrapped`): the marker repeated ("+", "-")
// or a space (a context line), and the line's text goes on right after it, its own spaces kept;
// after a break between words (`word_wrapped`) the words go on after the one space the join
// keeps. `column` receives the column the piece starts at.
std::string_view continued_piece(std::string_view line, std::size_t indent, const TextColumn& col,
                                 char diff_marker, bool in_diff, bool wrapped, bool word_wrapped,
                                 std::size_t& column) {
  std::string_view piece = line.substr(indent);
  column = indent;
  const std::size_t marker = col.column >= 3 ? col.column - 3 : 0;
  if (col.numbered && in_diff && wrapped && indent >= marker && marker < line.size() &&
      (line[marker] == (diff_marker ? diff_marker : ' '))) {
    piece = line.substr(marker + 1);
    column = marker + 1;
  }
  if (word_wrapped)
    while (piece.starts_with(' ')) {
      piece.remove_prefix(1);
      ++column;
    }
  return piece;
}

// Whether the row above, `prev_width` columns wide, ended inside a word the piece goes on with: a
// word longer than a whole line is cut where the line ended, with no space there — unless it
// would then not have started where it did. The terminal's wrap (wrap-ansi's hard mode, as Ink
// uses it) starts a word longer than a line on the current row only when that does not cost it
// an extra break; so a long word that started mid-row and filled its last row exactly ended
// there, and the next row's word is a word of its own. `long_word` follows the word across rows.
bool broke_inside_word(std::string_view physical, std::size_t prev_width, std::string_view piece,
                       std::size_t wrap_width, std::size_t column,
                       std::optional<LongWord>& long_word) {
  const std::size_t area = wrap_width - std::min(wrap_width, column);
  if (!(prev_width + 1 >= wrap_width &&
        display_width(last_word(physical)) + display_width(first_word(piece)) > area))
    return false;
  if (area == 0) return true;
  const std::size_t so_far = long_word ? long_word->width : display_width(last_word(physical));
  const std::size_t from =
      long_word ? long_word->from
                : prev_width - std::min(prev_width, so_far + std::min(prev_width, column));
  const std::size_t length = so_far + display_width(first_word(piece));
  const std::size_t here = 1 + (length - std::min(length, area - std::min(area, from) + 1)) / area;
  const std::size_t next_row = (length - 1) / area;
  if (from > 0 && from < area && next_row < here) return false;
  long_word = LongWord{from, length};
  return true;
}

}  // namespace

std::size_t rebuild_box_tables(std::vector<std::string>& lines) {
  std::vector<std::string> out;
  out.reserve(lines.size());
  std::size_t tables = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& top = lines[i];
    const std::size_t indent = indent_of(top);
    const std::size_t columns =
        top.size() <= kMaxPatternLine ? border_columns(top, indent, "┌", "┬") : 0;
    // The table's rows, each the text of its cells joined over the rows it was wrapped into;
    // nothing is rebuilt unless the table closes with its bottom border.
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> row;
    std::size_t end = i + 1;
    bool closed = false;
    for (; columns > 0 && end < lines.size(); ++end) {
      const std::string& line = lines[end];
      const bool between = border_columns(line, indent, "├", "┼") == columns;
      const bool bottom = border_columns(line, indent, "└", "┴") == columns;
      if (between || bottom) {
        if (!row.empty()) rows.push_back(std::move(row));
        row.clear();
        if (bottom) {
          closed = true;
          break;
        }
        continue;
      }
      const std::optional<BoxRow> r = box_row(line, indent, columns);
      if (!r) break;
      if (row.empty()) row.assign(columns, "");
      for (std::size_t c = 0; c < columns; ++c)
        if (!r->cells[c].empty()) row[c] += (row[c].empty() ? "" : " ") + r->cells[c];
    }
    if (!closed || rows.empty()) {
      out.push_back(std::move(lines[i]));
      continue;
    }
    // As the agent wrote it: a markdown table, its first row the header.
    out.push_back(markdown_row(rows[0], indent));
    std::string rule(indent, ' ');
    rule += "|";
    for (std::size_t c = 0; c < columns; ++c) rule += "---|";
    out.push_back(std::move(rule));
    for (std::size_t r = 1; r < rows.size(); ++r) out.push_back(markdown_row(rows[r], indent));
    ++tables;
    i = end;
  }
  lines = std::move(out);
  return tables;
}

std::size_t display_width(std::string_view s) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < s.size();) {
    const char32_t c = next_char(s, i);
    if (is_zero_width(c)) continue;
    width += is_wide(c) ? 2 : 1;
  }
  return width;
}

std::optional<std::size_t> export_width(const std::vector<std::string>& lines) {
  // The widest width that three or more lines reach or come within ten columns of: a line the
  // terminal did not wrap (Claude Code 2.1's "※ recap:" line, a pasted log) may be wider than
  // all the rest, and says nothing of the width.
  std::vector<std::size_t> widths, trimmed;
  for (const auto& l : lines)
    if (!is_decoration(l)) {
      widths.push_back(display_width(l));
      trimmed.push_back(display_width(rstrip(l)));
    }
  std::vector<std::size_t> candidates = widths;
  std::ranges::sort(candidates, std::greater<>());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (const std::size_t widest : candidates) {
    if (widest < 40) break;
    std::size_t near = 0;
    for (std::size_t i = 0; i < widths.size(); ++i)
      if (widths[i] <= widest && trimmed[i] + 10 >= widest) ++near;
    if (near >= 3) return widest;
  }
  return std::nullopt;
}

std::size_t join_soft_wraps(std::vector<std::string>& lines, std::size_t width) {
  std::vector<std::string> out;
  out.reserve(lines.size());
  std::size_t joins = 0;
  TextColumn col;
  std::string_view physical;    // the last terminal line of out.back() (without its indentation)
  std::size_t physical_at = 0;  // the column it started at
  // Inside a tool result ("  ⎿  …" and the lines under it): the column its text starts at. A code
  // line of a plain preview keeps its own indentation, but the terminal puts the rest of a wrapped
  // one at this column; and the terminal's word wrap leaves the space it broke at at the end of
  // the row, so an unpadded row with no trailing space that is not full was not wrapped (two code
  // lines are not one statement).
  std::optional<std::size_t> result_column;
  // Claude Code 2.1 wraps a numbered preview's lines inside the result's box, narrower than the
  // terminal, and by characters, not words ("const f" / "loat*"): the widest numbered row, when
  // two or more reach it, is that box's width, and a row that reaches it continues without a space.
  const std::optional<std::size_t> numbered_width = box_width(lines);
  // Inside an assistant's paragraphs, when they are wrapped narrower than the terminal: that width.
  const std::optional<std::size_t> paragraph_width = prose_width(lines, width);
  bool prose = false;
  std::optional<LongWord> long_word;
  char diff_marker = '\0';  // the numbered row's "+" or "-", when it is a diff's row
  bool in_preview = false;  // the result being read is a Write's preview ("Wrote N lines to …")
  for (std::string& line : lines) {
    const std::size_t prev_width = physical_at + display_width(rstrip(physical));
    // A row of an assistant's paragraph continues a sentence or is a line of its own (a code
    // line after a statement's end, a list item).
    const bool paragraph_row = prose && under_prose(line);
    // A row wider than the paragraphs' width was not wrapped at it (a code line).
    const std::size_t wrap_width =
        paragraph_width && paragraph_row && prev_width <= *paragraph_width ? *paragraph_width
                                                                           : width;
    const bool sentence_goes_on = !paragraph_row || reads_as_prose(physical, line);
    const std::size_t indent = indent_of(line);
    const bool broke_at_space = !physical.empty() && physical.back() == ' ';
    const bool plain_result_row = result_column && !col.numbered && !physical.empty();
    const bool at_text_column = indent + col.slack >= col.column && indent <= col.column;
    const bool box_full = col.numbered && numbered_width && prev_width >= *numbered_width;
    // A Write result's first row names the file ("⎿  Wrote 16 lines to <path>"); a path too long
    // for the row goes on at the result's text column, broken after a separator ("…\\dto\\" then
    // "response\\VehicleResponse.java"): one path, no space.
    const bool path_goes_on = col.result && physical_at == 0 && indent == col.column &&
                              !is_numbered(line) && names_written_file(out.back()) &&
                              (rstrip(physical).ends_with('/') || rstrip(physical).ends_with('\\'));
    // A numbered row the terminal wrapped by words (Claude Code 2.0 wraps a diff's rows inside the
    // result so, narrower than the terminal) ends with the space it broke at; an unnumbered row
    // at its text column goes on with it.
    const bool numbered_goes_on = col.numbered && broke_at_space && at_text_column &&
                                  !is_numbered(line) && !starts_with_glyph(line) &&
                                  !text::trim(line).empty();
    const bool continues =
        path_goes_on || numbered_goes_on ||
        (!out.empty() && !physical.empty() && !text::trim(line).empty() && sentence_goes_on &&
         out.back().size() + line.size() <= kMaxPatternLine && !starts_with_glyph(line) &&
         !(col.numbered && is_numbered(line)) &&
         !(line.substr(indent).starts_with('|') && rstrip(physical).ends_with('|')) &&
         ((box_full && at_text_column) ||
          ((at_text_column || (col.user && indent == 0) ||
            (plain_result_row && indent == result_column.value_or(0) && broke_at_space)) &&
           !(plain_result_row && !broke_at_space && prev_width + 1 < wrap_width) &&
           prev_width * 2 >= wrap_width &&
           prev_width + 1 + display_width(first_word(line)) > wrap_width)));
    if (!continues) {
      long_word.reset();
      const bool glyph = starts_with_glyph(line);
      prose =
          line.size() <= kMaxPatternLine && (starts_prose(line) || (prose && under_prose(line)));
      out.push_back(std::move(line));
      col = text_column(out.back());
      // A Write's preview has no markers: a line of it may start with "+" or "-".
      diff_marker = col.numbered && !in_preview ? marker_of(out.back()) : '\0';
      if (col.result) in_preview = names_written_file(out.back());
      if (col.result)
        result_column = col.column;
      else if (glyph)
        result_column.reset();
      physical = out.back();
      physical_at = 0;
      continue;
    }
    ++joins;
    std::string& into = out.back();
    std::size_t piece_column = indent;
    const std::string_view piece =
        continued_piece(line, indent, col, diff_marker, !in_preview, box_full || numbered_goes_on,
                        numbered_goes_on && !box_full, piece_column);
    const bool cut_word =
        box_full || path_goes_on ||
        broke_inside_word(physical, prev_width, piece, wrap_width, col.column, long_word);
    if (!cut_word) long_word.reset();
    const std::size_t keep = into.size() - (physical.size() - rstrip(physical).size());
    into.resize(keep);
    if (!cut_word) into += ' ';
    const std::size_t piece_at = into.size();
    into += piece;
    physical = std::string_view(into).substr(piece_at);
    physical_at = piece_column;
  }
  lines = std::move(out);
  return joins;
}

}  // namespace upskill::trace::detail
