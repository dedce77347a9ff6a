#pragma once
// Internal to the trace module: what every reader does with one record (records.cpp) — fields
// read leniently, a malformed record counted and noted without aborting the parse, tool arguments
// and content decoded, and the bounds on what one trace keeps of each text.
#include <cstddef>
#include <string>
#include <string_view>

#include "json_lines.hpp"
#include "line_source.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

// Bounds on what one trace keeps in memory (head and tail are kept, the middle is marked).
inline constexpr std::size_t kMaxText = 64 * 1024;      // one message's text
inline constexpr std::size_t kMaxThinking = 16 * 1024;  // one message's reasoning
inline constexpr std::size_t kMaxResult = 16 * 1024;    // one tool result
inline constexpr std::size_t kMaxQuietResult = 2048;    // a successful read's or search's
inline constexpr std::size_t kMaxFileInput = 2 << 20;   // a written file's contents

// Optional fields read leniently: a wrong type reads as absent (a record's `"isMeta": null` is not
// true, an `"id": 7` is no id). `str_field` is the string or ""; `flag_field` is true only for
// true.
std::string str_field(const Json& object, const char* key);
bool flag_field(const Json& object, const char* key);

// Reads one record (a JSONL line, a message of a document) with `handle`. A field of another type
// than the format allows, or anything else the record makes the reader throw, makes the record
// malformed: counted, noted with `where` (file:line or messages[i]) and the rest of it skipped.
// Nothing a record holds can abort the parse.
void record_failed(Trace& trace, const std::string& where, const char* what);
template <class F>
void contain_record(Trace& trace, const std::string& where, F&& handle) {
  try {
    handle();
  } catch (const std::exception& e) {
    record_failed(trace, where, e.what());
  }
}

// The same for the record on line `line` of `name`, whose "name:line" is only made when it fails.
template <class F>
void contain_record(Trace& trace, const std::string& name, int line, F&& handle) {
  try {
    handle();
  } catch (const std::exception& e) {
    record_failed(trace, name + ":" + std::to_string(line), e.what());
  }
}

// One JSONL line as an object (decode_record); false (counted: blank, malformed, or a cut-off last
// line) otherwise.
bool read_record(const LineSource& lines, const std::string& line, Trace& trace, Json& record);

// Each JSONL record of `lines`, read as read_record reads it, handed to handle(record, where)
// inside contain_record ("file:line").
template <class F>
void each_record(LineSource& lines, Trace& trace, F&& handle) {
  std::string line;
  while (lines.next(line)) {
    Json rec;
    if (!read_record(lines, line, trace, rec)) continue;
    const std::string where = lines.name() + ":" + std::to_string(lines.line_number());
    contain_record(trace, where, [&] { handle(rec, where); });
  }
}

// Every JSONL record of `lines`, read as read_record reads it, with each string longer than
// kMaxFileInput bounded (no reader keeps more of one): a document format written as JSON lines
// (Gemini CLI's session-*.jsonl) gathered in the memory its readers keep, a line of any length
// included (LineSource cuts it as it is read).
Json gather_records(LineSource& lines, Trace& trace);

// Counts a decoded line as read_record does: true for a record; a malformed line or a cut-off
// last line is counted and noted with `name`:line.
bool count_record(const std::string& name, const DecodedLine& line, Trace& trace);

// A message-array entry with a role; false (counted as malformed, with a note) otherwise.
bool is_message(const Json& m, std::size_t index, Trace& trace);

// Decodes a JSON-string tool argument; keeps the string when it is not JSON.
Json decode_arguments(const Json& arguments);
// Text of a content value: a string, or an array of blocks with text.
std::string content_text(const Json& content);
// Bounds a tool input: long string fields (file contents, patches) are kept up to kMaxFileInput.
Json bound_input(Json input);

// Codex and other harnesses inject context as user messages; they are not the user's words.
bool is_injected_user_text(std::string_view text);

}  // namespace upskill::trace::detail
