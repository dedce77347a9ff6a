#pragma once
// Internal to the trace module: JSON lines decoded with simdjson (json_lines.cpp;
// docs/PERFORMANCE.md, "Parsing large traces"), one at a time or read ahead on another thread.
#include <memory>
#include <string_view>

#include "line_source.hpp"
#include "upskill/core/json.hpp"

namespace upskill::trace::detail {

// What a JSONL record keeps: every field, or only those the Claude session reader reads (the rest
// of a session line — tool results' structured copies, snapshots — is never converted).
enum class RecordFields { all, claude_session };

// The decoding alone: true when `line` is one JSON object (as nlohmann_json would judge it).
bool decode_record(std::string_view line, RecordFields fields, Json& record);

// One non-blank JSONL line, decoded.
struct DecodedLine {
  int line = 0;            // its number
  bool is_record = false;  // a JSON object, in `record`
  bool cut_off = false;    // not one, and the last line of the input, without a newline
  Json record;
};

// The non-blank lines of `lines`, decoded. Past the first few MB they are read and decoded ahead
// on another thread while the caller handles the ones before; `lines` then belongs to this stream
// until it is destroyed (only its name() may still be read).
class RecordStream {
 public:
  RecordStream(LineSource& lines, RecordFields fields);
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
