#pragma once
// Internal to the trace module: the line source every text parser reads from, the builder that
// turns records into turns and tool calls, and the parsers themselves.
#include <istream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

// Bounds on what one trace keeps in memory (head and tail are kept, the middle is marked).
inline constexpr std::size_t kMaxText = 64 * 1024;      // one message's text
inline constexpr std::size_t kMaxThinking = 16 * 1024;  // one message's reasoning
inline constexpr std::size_t kMaxResult = 16 * 1024;    // one tool result
inline constexpr std::size_t kMaxFileInput = 2 << 20;   // a written file's contents

// Lines of a stream, numbered; remembers whether the last line ended with a newline.
// A line longer than kLongLine (a 50 MB tool result on one line) is not held whole: while it is
// read, every string of a JSON line — or the whole of any other line — keeps its first kKeepHead
// and last kKeepTail bytes around a "[… N bytes omitted …]" mark (cut at character boundaries,
// never inside an escape or a UTF-8 sequence), so reading it needs a few MB whatever its size. No
// reader keeps more of one text: a written file's contents are kept up to kMaxFileInput, texts
// far less.
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
  int pending_ = 0;            // bytes left of a \uXXXX escape
  std::size_t length_ = 0;     // bytes of the current string so far
  std::size_t omitted_ = 0;    // bytes of it sent to the tail
  std::string tail_;           // the last bytes of a string being cut
  std::vector<char> tail_starts_;  // whether each byte of tail_ starts a character
};

class LineSource {
 public:
  LineSource(std::istream& in, std::string name) : in_(in), name_(std::move(name)) {}
  // The next line (without its newline or a trailing CR); a line longer than kLongLine arrives
  // cut by LongLineCutter (as JSON when it starts with '{').
  bool next(std::string& line);
  int line_number() const { return line_; }
  bool at_end() const { return in_.peek() == std::char_traits<char>::eof(); }
  bool last_line_complete() const { return complete_; }
  const std::string& name() const { return name_; }

 private:
  std::istream& in_;
  std::string name_;
  int line_ = 0;
  bool complete_ = true;
};

// The memory budget of a trace's texts (retention.cpp; docs/PERFORMANCE.md): once the turns'
// text, thinking and tool results pass `budget` bytes, the excerpts of older turns are shortened,
// oldest first and in steps, down to three quarters of it (counted in stats.shortened, noted once).
// The last kKeepRecent turns, which a reader may still be completing, are left alone.
inline constexpr std::size_t kRetainedText = 48 << 20;
class Retention {
 public:
  static constexpr std::size_t kCheckEvery = 256;  // turns between two measurements
  static constexpr std::size_t kKeepRecent = 64;
  explicit Retention(std::size_t budget = kRetainedText) : budget_(budget) {}
  // Called after each turn added: measures every kCheckEvery turns, shortens when over budget.
  void turn_added(Trace& trace);

 private:
  std::size_t budget_;
  std::size_t next_check_ = kCheckEvery;
  std::size_t step_ = 0;    // how short older excerpts are made (0: not yet)
  std::size_t cursor_ = 0;  // turns before this one are shortened to the current step
  bool noted_ = false;
};
// The bytes of text, thinking and tool results the turns hold.
std::size_t retained_text(const Trace& trace);

// Turns and tool calls under construction; tool results find their calls by id.
class Builder {
 public:
  explicit Builder(Trace& trace) : trace_(trace) {}
  Trace& trace() { return trace_; }
  // For readers whose tool calls are final once their result is attached (Claude session logs):
  // once a write of a whole file succeeds, the contents that earlier writes and edits of the same
  // path carried are shortened — the file replay ends with the later write either way.
  void release_superseded_writes() { release_writes_ = true; }

  Turn& add_turn(Role role);
  Turn* last_turn() { return trace_.turns.empty() ? nullptr : &trace_.turns.back(); }
  // Appends text (a blank line between parts), bounded.
  static void append(std::string& to, std::string_view text, std::size_t max);

  // Adds a call to `turn` (the last turn); duplicates of an id already seen are dropped.
  ToolCall* add_call(std::string id, std::string name, Json input);
  // Adds a call to an earlier turn (a Claude message whose blocks arrive on separate lines).
  ToolCall* add_call_to(std::size_t turn, std::string id, std::string name, Json input);
  ToolCall* find_call(const std::string& id);
  // Attaches a result; a result for an unknown id is counted as a note.
  void attach_result(const std::string& id, std::string_view result, bool is_error,
                     std::optional<int> exit_code = std::nullopt);
  void add_model(const std::string& model);

 private:
  using CallAt = std::pair<std::size_t, std::size_t>;  // (turn, call)
  void track_file_call(CallAt at);
  void release_superseded(CallAt write);

  Trace& trace_;
  std::unordered_map<std::string, CallAt> calls_;  // id -> (turn, call)
  std::set<std::string> models_;
  Retention retention_;
  bool release_writes_ = false;
  bool saw_patch_ = false;  // a patch may move files: paths no longer name one file
  std::map<std::string, std::vector<CallAt>> file_calls_;  // path -> writes and edits since
                                                           // its last successful write
};

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

// What a JSONL record keeps: every field, or only those the Claude session reader reads (the rest
// of a session line — tool results' structured copies, snapshots — is never converted).
enum class RecordFields { all, claude_session };
// One JSONL line as an object, decoded with simdjson (json_lines.cpp); false (counted: blank,
// malformed, or a cut-off last line) otherwise.
bool read_record(const LineSource& lines, const std::string& line, Trace& trace, Json& record,
                 RecordFields fields = RecordFields::all);
// The decoding alone: true when `line` is one JSON object (as nlohmann_json would judge it).
bool decode_record(std::string_view line, RecordFields fields, Json& record);

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

// One non-blank JSONL line, decoded.
struct DecodedLine {
  int line = 0;            // its number
  bool is_record = false;  // a JSON object, in `record`
  bool cut_off = false;    // not one, and the last line of the input, without a newline
  Json record;
};
// Counts a decoded line as read_record does: true for a record; a malformed line or a cut-off
// last line is counted and noted with `name`:line.
bool count_record(const std::string& name, const DecodedLine& line, Trace& trace);

// The non-blank lines of `lines`, decoded (json_lines.cpp). Past the first few MB they are read
// and decoded ahead on another thread while the caller handles the ones before; `lines` then
// belongs to this stream until it is destroyed (only its name() may still be read).
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
// A message-array entry with a role; false (counted as malformed, with a note) otherwise.
bool is_message(const Json& m, std::size_t index, Trace& trace);

// Decodes a JSON-string tool argument; keeps the string when it is not JSON.
Json decode_arguments(const Json& arguments);
// Text of a content value: a string, or an array of blocks with text.
std::string content_text(const Json& content);
// Bounds a tool input: long string fields (file contents, patches) are kept up to kMaxFileInput.
Json bound_input(Json input);

// JSONL formats, read line by line.
void parse_claude_jsonl(LineSource& lines, Trace& trace, bool sidechain);
void parse_codex_rollout(LineSource& lines, Trace& trace);
void parse_codex_exec(LineSource& lines, Trace& trace);
void parse_opencode_run(LineSource& lines, Trace& trace);
void parse_copilot_events(LineSource& lines, Trace& trace);
// Whole-document JSON formats.
void parse_openai_chat(const Json& doc, Trace& trace);
void parse_responses(const Json& doc, Trace& trace);
void parse_anthropic(const Json& doc, Trace& trace);
void parse_fast_agent_json(const Json& doc, Trace& trace);
void parse_gemini(const Json& doc, Trace& trace);
void parse_opencode_export(const Json& doc, Trace& trace);
// Text formats.
void parse_claude_export(LineSource& lines, Trace& trace);
void parse_fast_agent_text(LineSource& lines, Trace& trace);
void parse_markdown(LineSource& lines, Trace& trace);
void parse_plain_text(LineSource& lines, Trace& trace);

// Responses API items (also Codex's response_item payloads).
class ResponsesReader {
 public:
  explicit ResponsesReader(Builder& b) : b_(b) {}
  // Returns false for an item type it does not know.
  bool item(const Json& item);

 private:
  Builder& b_;
  bool results_since_assistant_ = true;
  Turn& assistant_turn();
};

// "## User", "**Assistant:**", "Human: …": a markdown role marker.
bool has_role_marker(const std::string& line);

// Codex and other harnesses inject context as user messages; they are not the user's words.
bool is_injected_user_text(std::string_view text);

}  // namespace upskill::trace::detail
