#pragma once
// Agent traces in one normalised model. Parsers for Claude Code session JSONL (with subagent
// files), `claude -p` stream-json, Claude Code /export transcripts, Codex CLI rollouts, OpenAI chat
// message arrays, Responses API items, Anthropic message arrays, fast-agent histories (JSON and
// delimited text) and markdown / plain text; the format is detected from the content
// (docs/traces.md). JSONL traces are read line by line (simdjson) and every stored text is
// bounded; past 48 MB of text in all, the excerpts of older turns are shortened (stats.shortened),
// so a trace of hundreds of MB is parsed in bounded memory (docs/PERFORMANCE.md). Malformed lines,
// a truncated last line and unknown record types are counted, never fatal unless nothing could be
// read.
#include <compare>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "upskill/core/error.hpp"
#include "upskill/core/json.hpp"

namespace upskill::trace {

namespace fs = std::filesystem;

// A trace format: a handle on its entry in the format registry (src/trace/formats/registry.cpp),
// which holds its name (the `--format` value), how it is detected and the reader that reads it.
class Format {
 public:
  static const Format claude_jsonl;     // ~/.claude/projects/<cwd>/<session>.jsonl
  static const Format claude_stream;    // claude -p --output-format stream-json
  static const Format claude_export;    // /export transcript (text)
  static const Format codex_rollout;    // ~/.codex/sessions/.../rollout-*.jsonl
  static const Format codex_exec;       // codex exec --json event stream
  static const Format openai_chat;      // [{role, content, tool_calls}] or {"messages": [...]}
  static const Format responses;        // Responses API items
  static const Format anthropic;        // Anthropic Messages API message array
  static const Format fast_agent_json;  // fast-agent history .json
  static const Format gemini;           // Gemini CLI session (.json, or session-*.jsonl)
  static const Format opencode;         // opencode export document
  static const Format opencode_run;     // opencode run --format json event stream
  static const Format copilot_events;   // Copilot CLI session events.jsonl / --output-format json
  static const Format fast_agent_text;  // fast-agent ---USER / ---ASSISTANT text
  static const Format markdown;         // role headings
  static const Format text;             // anything else: one user document
  static constexpr std::size_t kCount = 16;

  constexpr Format() : index_(kCount - 1) {}  // text
  // Its place in the registry.
  constexpr std::size_t index() const { return index_; }
  constexpr auto operator<=>(const Format&) const = default;

 private:
  constexpr explicit Format(unsigned char index) : index_(index) {}
  unsigned char index_;
};
inline constexpr Format Format::claude_jsonl{0};
inline constexpr Format Format::claude_stream{1};
inline constexpr Format Format::claude_export{2};
inline constexpr Format Format::codex_rollout{3};
inline constexpr Format Format::codex_exec{4};
inline constexpr Format Format::openai_chat{5};
inline constexpr Format Format::responses{6};
inline constexpr Format Format::anthropic{7};
inline constexpr Format Format::fast_agent_json{8};
inline constexpr Format Format::gemini{9};
inline constexpr Format Format::opencode{10};
inline constexpr Format Format::opencode_run{11};
inline constexpr Format Format::copilot_events{12};
inline constexpr Format Format::fast_agent_text{13};
inline constexpr Format Format::markdown{14};
inline constexpr Format Format::text{15};

// The registry's name of a format, and the format of a name.
std::string_view to_string(Format format);
std::optional<Format> format_from_string(std::string_view name);
// Every name, in the registry's order.
const std::vector<std::string>& format_names();

enum class Role { user, assistant, system };
std::string_view to_string(Role role);

// What a tool call did, whatever the agent called the tool.
enum class ToolKind { shell, write, edit, multi_edit, patch, read, other };
std::string_view to_string(ToolKind kind);

struct ToolCall {
  std::string id;
  std::string name;  // as the agent named it (Bash, shell, apply_patch, mcp__x__y, ...)
  Json input;        // decoded arguments (a string when they were not JSON)
  bool has_result = false;
  std::string result;                      // bounded: head and tail kept, the middle marked
  std::size_t result_bytes = 0;            // size before bounding
  bool result_truncated_in_trace = false;  // the trace itself elided output (/export "… +N lines")
  bool is_error = false;
  std::optional<int> exit_code;
};

struct Turn {
  Role role = Role::user;
  std::string text;      // bounded
  std::string thinking;  // bounded
  std::vector<ToolCall> tool_calls;
  std::string model;
  std::string timestamp;
  bool sidechain = false;  // subagent work
  bool meta = false;       // injected by the harness, not typed by the user
  // Claude Code's summary of the session before it, written when it compacted the conversation
  // (a meta user turn): what the task was, when the prompts themselves are gone.
  bool compaction_summary = false;
};

struct TokenUsage {
  long long input = 0;  // prompt tokens, cache reads and writes included
  long long output = 0;
  long long cache_read = 0;
  long long cache_write = 0;
  long long reasoning = 0;
  bool reported = false;  // the trace carried usage at all
};

// Counted problems; the first few are described in `notes`.
struct ParseStats {
  std::size_t lines = 0;    // JSONL lines (non-empty) or text lines
  std::size_t records = 0;  // records understood
  std::size_t malformed = 0;
  bool truncated_last_line = false;
  std::map<std::string, std::size_t> unknown_types;
  std::map<std::string, std::size_t> skipped;  // known but not part of the conversation
  std::size_t duplicates = 0;                  // mirrored or repeated records dropped
  std::size_t shortened = 0;                   // older turns' texts shortened for the budget
  std::size_t repaired_surrogates = 0;         // lone surrogate escapes read as U+FFFD
  std::vector<std::string> notes;              // "file:line: what" (at most 20)
  void note(std::string message);
};

// A file the agent wrote, edited or patched, with its final contents when the trace allows.
struct FileTouch {
  std::string path;                    // relative to the session's working directory where possible
  std::optional<std::string> content;  // final contents, when reconstructable
  std::string unknown_reason;          // why not, when content is empty
  // When the contents are only partly known (a Claude /export shows some of the lines): the known
  // lines with each gap marked, and what is missing ("lines 9–27 of 27").
  std::string shown;
  std::string missing;
  // The edits the trace shows of a file it could not reconstruct (old text → new text, in order,
  // at most 20): what the agent changed, when the file itself is unknown.
  std::vector<std::pair<std::string, std::string>> hunks;
  bool deleted = false;
  int writes = 0;
  int edits = 0;
  std::size_t last_turn = 0;  // index into turns
  std::size_t size() const { return content ? content->size() : 0; }
};

struct CommandRun {
  std::string command;
  std::size_t turn = 0;  // index into turns
  std::size_t call = 0;  // index into that turn's tool calls
  std::optional<int> exit_code;
  bool failed = false;
  bool answered = true;  // a result was recorded (false: the trace ends, or goes on, without one)
  bool sidechain = false;
};

// A failing command, then what the agent changed before the same program next succeeded.
struct ErrorFix {
  std::size_t failed = 0;                  // index into commands
  std::optional<std::size_t> fixed_by;     // index into commands; empty: never fixed
  std::vector<std::string> files_changed;  // between the two
  std::string explanation;                 // the agent's first words after the failure
};

struct Trace {
  Format format = Format::text;
  std::string detected_by;     // why this format (or "--format")
  std::string format_version;  // e.g. Claude Code 2.0.14, codex_cli 0.46.0
  fs::path source;
  std::string sha256;
  std::uintmax_t bytes = 0;
  std::string cwd;
  std::vector<Turn> turns;
  std::vector<std::string> models;  // in order of first use
  TokenUsage usage;
  ParseStats stats;
  std::vector<fs::path> subagent_files;
  // What broke the agent's own run (a turn that failed, an error the agent reported as ending it),
  // in order, each once; a warning it went on after is a parse note, not one of these.
  std::vector<std::string> run_errors;
  void run_error(std::string message);

  // Derived by analyse() after parsing.
  std::vector<FileTouch> files;  // in order of first touch
  std::vector<CommandRun> commands;
  std::vector<ErrorFix> fixes;
  std::map<std::string, int> tool_counts;  // by tool name
};

struct ParseOptions {
  std::optional<Format> format;  // override detection
  bool subagents = true;         // Claude sessions: also read the session's subagent files
};

// What detection decided from the first 64 KB, and why.
struct Detection {
  Format format = Format::text;
  std::string reason;
  bool json_lines = false;  // told by JSON lines (a record a line), not one document
};
// `whole_file`: `head` is the entire file (a JSON document can then be judged by its contents).
Detection detect_format(std::string_view head, bool whole_file);
// The kind of a JSON document (message arrays, Responses items, ...).
Detection detect_json_document(const Json& doc);

// Reads, detects, parses and analyses a trace file. Errors: unreadable file, or nothing readable.
Result<Trace> parse_trace_file(const fs::path& path, const ParseOptions& options = {});
// The same for text in memory (`name` labels messages).
Result<Trace> parse_trace_text(std::string_view text, const std::string& name,
                               const ParseOptions& options = {});

// Fills files, commands, fixes and tool counts from the turns.
void analyse(Trace& trace);

// Counts a reader of `upskill trace` wants.
struct TraceCounts {
  std::size_t turns = 0;
  std::size_t user_prompts = 0;  // typed by the user (not tool results, not injected)
  std::size_t assistant_messages = 0;
  std::size_t tool_calls = 0;
  std::size_t tool_errors = 0;
  std::size_t refused_calls = 0;  // tool calls other than commands that failed (an edit refused)
  std::size_t commands = 0;
  std::size_t failed_commands = 0;
  std::size_t files = 0;
  std::size_t sidechain_turns = 0;
};
TraceCounts count(const Trace& trace);

// What `upskill trace --json` prints: format, counts, tools, commands, files, fixes, tokens and
// parse problems (no file contents).
Json summary_json(const Trace& trace);

// The normalised shell command of a shell tool call ("" if it is not one).
std::string shell_command_of(const ToolCall& call);
ToolKind classify_tool(const ToolCall& call);

// Applies a Codex/OpenAI apply_patch text to files (path -> content), returning the problems.
struct PatchFile {
  enum class Op { add, update, remove } op = Op::update;
  std::string path;
  std::optional<std::string> move_to;
  std::vector<std::string> lines;  // hunk lines as written (' ', '-', '+', "@@")
};
Result<std::vector<PatchFile>> parse_patch(std::string_view patch);
// Applies an update to `content`; error when a hunk's context is not found.
Result<std::string> apply_patch_update(const std::string& content, const PatchFile& file);

// Keeps at most `max_bytes` of `text`: its head and tail with the middle marked.
std::string bound_text(std::string_view text, std::size_t max_bytes);

}  // namespace upskill::trace
