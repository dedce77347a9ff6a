#pragma once
// Internal to the trace module: JSON lines decoded with simdjson (json_lines.cpp;
// docs/PERFORMANCE.md, "Parsing large traces"): into Json, one at a time or read ahead on another
// thread, or in place for a reader that walks them (LineDecoder).
#include <memory>
#include <string_view>

#include "line_source.hpp"
#include "upskill/core/json.hpp"
#include "values.hpp"

namespace upskill::trace::detail {

// The decoding alone: true when `line` is one JSON object (as nlohmann_json would judge it, after
// lone surrogate escapes are read as U+FFFD: repair_lone_surrogates; `repaired` counts them).
bool decode_record(std::string_view line, Json& record, std::size_t* repaired = nullptr);

// Lines decoded for a reader that walks each one where it lies (values.hpp) instead of converting
// it: parsed in place by simdjson, which validates all of it; a line simdjson rejects or cannot
// take (longer than its limit) is judged again by nlohmann_json, so that the lines that count as
// records are exactly those decode_record accepts. One line at a time: decoding the next one ends
// the last one's values.
class LineDecoder {
 public:
  LineDecoder();
  ~LineDecoder();
  LineDecoder(const LineDecoder&) = delete;
  LineDecoder& operator=(const LineDecoder&) = delete;
  // True when `line` is one JSON object. LineSource::kReadablePast bytes past its end must be
  // readable (a view LineSource::next gave is).
  bool decode(std::string_view line);
  // Lone surrogate escapes the last decode() read as U+FFFD.
  std::size_t repaired() const { return repaired_; }
  // After decode() returned true: f(DomValue) or f(JsonValue) on the object.
  template <class F>
  void visit(F&& f) const;

 private:
  struct Parser;
  std::unique_ptr<Parser> parser_;
  simdjson::dom::element root_;
  Json json_;
  bool in_json_ = false;
  std::size_t repaired_ = 0;
};

template <class F>
void LineDecoder::visit(F&& f) const {
  if (in_json_)
    f(JsonValue(json_));
  else
    f(DomValue(root_));
}

// One non-blank JSONL line, decoded.
struct DecodedLine {
  int line = 0;              // its number
  bool is_record = false;    // a JSON object, in `record`
  bool cut_off = false;      // not one, and the last line of the input, without a newline
  std::size_t repaired = 0;  // lone surrogate escapes read as U+FFFD
  Json record;
};

// The non-blank lines of `lines`, decoded. Past the first few MB they are read and decoded ahead
// on another thread while the caller handles the ones before; `lines` then belongs to this stream
// until it is destroyed (only its name() may still be read).
class RecordStream {
 public:
  explicit RecordStream(LineSource& lines);
  ~RecordStream();
  RecordStream(const RecordStream&) = delete;
  RecordStream& operator=(const RecordStream&) = delete;
  // The next line, valid until the next call; nullptr at the end of the input.
  const DecodedLine* next();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace upskill::trace::detail
