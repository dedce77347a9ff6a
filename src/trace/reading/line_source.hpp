#pragma once
// Internal to the trace module: the numbered lines every line-by-line reader reads from
// (line_source.cpp). A line longer than kLongLine (a 50 MB tool result on one line) is not held
// whole: while it is read, every string of a JSON line — or the whole of any other line — keeps its
// first kKeepHead and last kKeepTail bytes around a "[… N bytes omitted …]" mark (cut at character
// boundaries, never inside an escape or a UTF-8 sequence), so reading it needs a few MB whatever
// its size.
#include <cstddef>
#include <istream>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace upskill::trace::detail {

inline constexpr std::size_t kLongLine = 16 << 20;

class LongLineCutter {
 public:
  static constexpr std::size_t kKeepHead = (2 << 20) + (64 << 10);
  static constexpr std::size_t kKeepTail = 64 << 10;
  // json: cut the strings of a JSON line; otherwise the line is one text.
  explicit LongLineCutter(bool json) : json_(json), in_string_(!json) {}
  void feed(std::string_view bytes);
  std::string finish();  // the line as kept

 private:
  void byte(char c);
  void keep(char c, bool unit_start);
  void end_cut();
  std::string out_;
  bool json_;
  bool in_string_, after_backslash_ = false, cutting_ = false;
  int pending_ = 0;                // bytes left of a \uXXXX escape
  std::size_t length_ = 0;         // bytes of the current string so far
  std::size_t omitted_ = 0;        // bytes of it sent to the tail
  std::string tail_;               // the last bytes of a string being cut
  std::vector<char> tail_starts_;  // whether each byte of tail_ starts a character
};

// Lines of a stream, numbered; remembers whether the last line ended with a newline. It reads the
// stream in large blocks of its own (past the line it returned: the stream then belongs to it).
class LineSource {
 public:
  static constexpr std::size_t kBufferBytes = 256 << 10;
  // Bytes past the end of a line next(std::string_view&) gave that may be read (a parser's
  // padding; their values are unspecified).
  static constexpr std::size_t kReadablePast = 64;
  LineSource(std::istream& in, std::string name) : in_(in), name_(std::move(name)) {}
  // The next line (without its newline or a trailing CR); a line longer than kLongLine arrives
  // cut by LongLineCutter (as JSON when it starts with '{').
  bool next(std::string& line);
  // The same, as a view valid until the next call: into the block read when the line lies in it
  // (no copy), else into a line assembled here.
  bool next(std::string_view& line);
  int line_number() const { return line_; }
  bool at_end() const;
  bool last_line_complete() const { return complete_; }
  const std::string& name() const { return name_; }

 private:
  bool fill();  // the next block; false at the end of the input

  std::istream& in_;
  std::string name_;
  std::unique_ptr<char[]> buffer_;  // kBufferBytes + kReadablePast
  std::string spill_;               // a line that did not lie in one block
  std::size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  int line_ = 0;
  bool complete_ = true;
};

}  // namespace upskill::trace::detail
