// Claude Code: session JSONL (one content block per line, merged by message.id; tool results in
// user records; sidechains), `claude -p --output-format stream-json`, and /export transcripts.
#include "claude.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../reading/builder.hpp"
#include "../reading/json_lines.hpp"
#include "../reading/records.hpp"
#include "../reading/values.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace::detail {

namespace {

struct UsageMax {
  long long input = 0, output = 0, cache_read = 0, cache_write = 0;
};

// Records that hold no conversation: bookkeeping of earlier versions, and Claude Code 2.1.328's
// request log and session state (seen in a session it wrote: tests/data/traces).
bool known_skipped_type(std::string_view type) {
  static const std::set<std::string, std::less<>> types = {
      "summary",          "file-history-snapshot",
      "queue-operation",  "ai-title",
      "progress",         "attachment",
      "turn_end",         "custom-title",
      "stream_event",     "tag",
      "x-error",          "api-request",
      "api-request-blob", "api-request-shape",
      "atis-latch",       "file-history-delta",
      "last-prompt",      "mode",
      "permission-mode",  "tools-used"};
  return types.contains(type);
}

// The uuids of the records read: a canonical lower-case uuid is kept as its 16 bytes, anything
// else as the string (a session holds one per line, hundreds of thousands in a large one).
class UuidSet {
 public:
  bool contains(std::string_view uuid) const {
    const auto key = parse(uuid);
    return key ? packed_.contains(*key) : others_.contains(std::string(uuid));
  }
  void insert(std::string_view uuid) {
    if (const auto key = parse(uuid))
      packed_.insert(*key);
    else
      others_.emplace(uuid);
  }

 private:
  using Key = std::pair<std::uint64_t, std::uint64_t>;
  struct KeyHash {
    std::size_t operator()(const Key& k) const {  // splitmix64's finaliser of both halves
      std::uint64_t z = k.first ^ (k.second * 0x9E3779B97F4A7C15ULL);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      return static_cast<std::size_t>(z ^ (z >> 31));
    }
  };

  // 8-4-4-4-12 lower-case hex digits.
  static std::optional<Key> parse(std::string_view s) {
    if (s.size() != 36) return std::nullopt;
    std::uint64_t half[2] = {0, 0};
    int digits = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (i == 8 || i == 13 || i == 18 || i == 23) {
        if (c != '-') return std::nullopt;
        continue;
      }
      int v;
      if (c >= '0' && c <= '9')
        v = c - '0';
      else if (c >= 'a' && c <= 'f')
        v = c - 'a' + 10;
      else
        return std::nullopt;
      std::uint64_t& h = half[digits++ / 16];
      h = (h << 4) | static_cast<std::uint64_t>(v);
    }
    return Key{half[0], half[1]};
  }

  // Keys in one array, found by linear probing from their hash, the array at most half full (a
  // node per key cost a third of the reader's time in allocations); the all-zero key, which marks
  // an empty slot, is held apart.
  class KeyTable {
   public:
    bool contains(const Key& k) const {
      if (k == Key{}) return has_zero_;
      if (slots_.empty()) return false;
      for (std::size_t i = slot_of(k, slots_.size());; i = (i + 1) & (slots_.size() - 1)) {
        if (slots_[i] == k) return true;
        if (slots_[i] == Key{}) return false;
      }
    }
    void insert(const Key& k) {
      if (k == Key{}) {
        has_zero_ = true;
        return;
      }
      if (2 * (size_ + 1) > slots_.size()) {
        std::vector<Key> old(std::max<std::size_t>(64, 2 * slots_.size()));
        old.swap(slots_);
        size_ = 0;
        for (const Key& o : old)
          if (o != Key{}) place(o);
      }
      place(k);
    }

   private:
    static std::size_t slot_of(const Key& k, std::size_t n) {
      return static_cast<std::size_t>(KeyHash{}(k)) & (n - 1);
    }
    void place(const Key& k) {
      std::size_t i = slot_of(k, slots_.size());
      while (slots_[i] != Key{} && slots_[i] != k) i = (i + 1) & (slots_.size() - 1);
      if (slots_[i] == Key{}) ++size_;
      slots_[i] = k;
    }
    std::vector<Key> slots_;  // a power of two of them
    std::size_t size_ = 0;
    bool has_zero_ = false;
  };

  KeyTable packed_;
  std::unordered_set<std::string> others_;
};

// Reads session JSONL and stream-json records into turns, one method per record kind. Assistant
// messages arrive one content block per line and are merged by message.id; usage is counted once
// per message (the largest value seen for each field). A record is walked where it was decoded
// (values.hpp: simdjson's DOM of the line, or a Json for a line only nlohmann_json takes): only
// what a turn keeps is copied.
class JsonlReader {
 public:
  JsonlReader(const std::string& name, Trace& trace, bool sidechain)
      : name_(name), trace_(trace), b_(trace), sidechain_(sidechain) {
    b_.release_superseded_writes();
  }

  // A record read from line `line`.
  template <class V>
  void record(const V& rec, int line) {
    line_ = line;
    const V uuid = rec["uuid"];
    if (uuid.is_string() && seen_uuids_.contains(uuid.str())) {
      ++trace_.stats.duplicates;  // sessions repeat records when resumed or mirrored
      return;
    }
    // Remembered only once read and used: a malformed record must not hide a valid one with its
    // uuid (a line cut by a crash, then written again whole).
    if (!dispatch(rec)) return;
    if (uuid.is_string()) seen_uuids_.insert(uuid.str());
  }
  // Adds the usage of every message to the trace.
  void finish();

 private:
  // False when the record could not be used (a user or assistant record without a readable
  // message): its uuid is then not remembered.
  template <class V>
  bool dispatch(const V& rec);
  template <class V>
  void note_session(const V& rec, std::string_view type);
  template <class V>
  void assistant_record(const V& rec, const V& message, bool side);
  Turn& assistant_turn(std::string_view id, bool side, std::string_view timestamp);
  template <class V>
  void add_usage(std::string_view id, const V& u);
  template <class V>
  void user_record(const V& rec, const V& message, bool side);
  template <class V>
  void tool_result(const V& rec, const V& block);
  template <class V>
  void follow_background(const V& rec, std::string_view id, ToolCall& call);
  void other_record(std::string_view type);

  template <class V>
  static UsageMax usage_of(const V& u) {
    const long long cr = u["cache_read_input_tokens"].number();
    const long long cw = u["cache_creation_input_tokens"].number();
    return {u["input_tokens"].number() + cr + cw, u["output_tokens"].number(), cr, cw};
  }

  const std::string& name_;
  int line_ = 0;  // of the record being read
  Trace& trace_;
  Builder b_;
  bool sidechain_;
  UuidSet seen_uuids_;
  ByString<std::size_t> message_turn_;  // message.id -> turn index
  ByString<UsageMax> usage_;            // message.id -> usage (max per field)
  // The user turn of the last slash command typed with arguments, until a turn of the model's:
  // a command Claude Code ran itself answers with <local-command-stdout>, and is no prompt.
  std::optional<std::size_t> command_turn_;
  // The files whose whole contents before an edit (toolUseResult.originalFile) were kept: once a
  // file each, for the replay to start from (docs/traces.md, "What the analysis derives").
  std::set<std::string, std::less<>> originals_;
  // Background tasks still running: task id → the call that started them.
  std::map<std::string, std::string> background_;

  template <class V>
  void keep_original_file(std::string_view id, const V& original) {
    if (!original.is_string()) return;
    ToolCall* call = b_.find_call(std::string(id));
    if (!call || (call->name != "Edit" && call->name != "MultiEdit") || !call->input.is_object())
      return;
    const auto path = call->input.find("file_path");
    if (path == call->input.end() || !path->is_string()) return;
    if (!originals_.insert(path->get<std::string>()).second) return;
    call->input["original_file"] = std::string(original.str());
  }
};

// The tag's text in a user record ("<command-args>…</command-args>"), or "".
std::string tagged(const std::string& text, std::string_view tag) {
  const std::string open = fmt::format("<{}>", tag), close = fmt::format("</{}>", tag);
  const std::size_t from = text.find(open);
  if (from == std::string::npos) return "";
  const std::size_t to = text.find(close, from + open.size());
  if (to == std::string::npos) return "";
  return text::trim(std::string_view(text).substr(from + open.size(), to - from - open.size()));
}

template <class V>
bool JsonlReader::dispatch(const V& rec) {
  const std::string_view type = rec["type"].str();
  note_session(rec, type);
  if (type == "system") {
    // stream-json init carries the model; session logs carry compaction markers.
    b_.add_model(rec["model"].str());
    ++trace_.stats.skipped["system"];
    ++trace_.stats.records;
    return true;
  }
  if (type == "result") {
    // The headless summary: usage for the whole run, used when messages carried none.
    if (const V u = rec["usage"]; u.is_object() && usage_.empty()) usage_["result"] = usage_of(u);
    ++trace_.stats.skipped["result"];
    ++trace_.stats.records;
    return true;
  }
  if (type != "user" && type != "assistant") {
    other_record(type);
    return known_skipped_type(type);  // a record of no known type is not one to be repeated
  }
  const V message = rec["message"];
  if (!message.is_object()) {
    ++trace_.stats.malformed;
    trace_.stats.note(fmt::format("{}:{}: a {} record without a message", name_, line_, type));
    return false;
  }
  ++trace_.stats.records;
  const bool side = sidechain_ || rec["isSidechain"].flag();
  if (type == "assistant")
    assistant_record(rec, message, side);
  else
    user_record(rec, message, side);
  return true;
}

void JsonlReader::finish() {
  for (const auto& [id, u] : usage_) {
    trace_.usage.input += u.input;
    trace_.usage.output += u.output;
    trace_.usage.cache_read += u.cache_read;
    trace_.usage.cache_write += u.cache_write;
    trace_.usage.reported = true;
  }
}

// The working directory and Claude Code version, from the first record that carries them.
template <class V>
void JsonlReader::note_session(const V& rec, std::string_view type) {
  if (trace_.cwd.empty() && rec["cwd"].is_string()) trace_.cwd = rec["cwd"].str();
  if (!trace_.format_version.empty()) return;
  if (const V version = rec["version"]; version.is_string())
    trace_.format_version = fmt::format("Claude Code {}", version.str());
  else if (const V v = rec["claude_code_version"]; type == "system" && v.is_string())
    trace_.format_version = fmt::format("Claude Code {}", v.str());
}

void JsonlReader::other_record(std::string_view type) {
  if (known_skipped_type(type))
    ++trace_.stats.skipped[std::string(type)];
  else
    ++trace_.stats.unknown_types[type.empty() ? "(no type)" : std::string(type)];
}

template <class V>
void JsonlReader::assistant_record(const V& rec, const V& message, bool side) {
  const std::string_view id = message["id"].str();
  Turn& turn = assistant_turn(id, side, rec["timestamp"].str());
  const std::string_view model = message["model"].str();
  if (!model.empty() && model != "<synthetic>") {
    turn.model = model;
    b_.add_model(model);
  }
  if (const V u = message["usage"]; u.is_object()) add_usage(id, u);
  const std::size_t turn_index = static_cast<std::size_t>(&turn - trace_.turns.data());
  const V content = message["content"];
  if (content.is_string()) Builder::append(turn.text, content.str(), kMaxText);
  content.each([&](const V& block) {
    if (!block.is_object()) return;
    const std::string_view bt = block["type"].str();
    if (bt == "text") {
      Builder::append(trace_.turns[turn_index].text, block["text"].str(), kMaxText);
    } else if (bt == "thinking" || bt == "redacted_thinking") {
      Builder::append(trace_.turns[turn_index].thinking, block["thinking"].str(), kMaxThinking);
    } else if (bt == "tool_use" || bt == "server_tool_use") {
      // The call belongs to this message's turn, even when other records came between.
      b_.add_call_to(turn_index, std::string(block["id"].str()), std::string(block["name"].str()),
                     block["input"].json());
    }
  });
}

// The turn of message `id`: the one its earlier blocks started, or a new one.
Turn& JsonlReader::assistant_turn(std::string_view id, bool side, std::string_view timestamp) {
  command_turn_.reset();
  if (auto it = message_turn_.find(id); !id.empty() && it != message_turn_.end())
    return trace_.turns[it->second];
  Turn& turn = b_.add_turn(Role::assistant);
  turn.sidechain = side;
  turn.timestamp = timestamp;
  if (!id.empty()) message_turn_.emplace(std::string(id), trace_.turns.size() - 1);
  return turn;
}

template <class V>
void JsonlReader::add_usage(std::string_view id, const V& u) {
  // The lines of one message share its id: found without a key of its own made for each.
  auto it = id.empty() ? usage_.end() : usage_.find(id);
  if (it == usage_.end())
    it = usage_.try_emplace(id.empty() ? fmt::format("line{}", line_) : std::string(id)).first;
  UsageMax& m = it->second;
  const UsageMax now = usage_of(u);
  m.input = std::max(m.input, now.input);
  m.output = std::max(m.output, now.output);
  m.cache_read = std::max(m.cache_read, now.cache_read);
  m.cache_write = std::max(m.cache_write, now.cache_write);
}

// user: typed text, injected text (isMeta, command tags), or tool results.
template <class V>
void JsonlReader::user_record(const V& rec, const V& message, bool side) {
  const V content = message["content"];
  std::string text, injected;
  bool had_results = false;
  if (content.is_string()) text = content.str();
  content.each([&](const V& block) {
    if (!block.is_object()) return;
    const std::string_view bt = block["type"].str();
    if (bt == "tool_result") {
      had_results = true;
      tool_result(rec, block);
    } else if (bt == "text") {
      // Text Claude Code adds to what was typed (the IDE's selection, a notification) is not the
      // user's words: kept apart, and the turn's only when nothing was typed.
      const std::string_view t = block["text"].str();
      Builder::append(is_injected_user_text(t) ? injected : text, t, kMaxText);
    } else if (bt == "image") {
      Builder::append(text, "[image]", kMaxText);
    }
  });
  if (text::trim(text).empty()) text = std::move(injected);
  if (text::trim(text).empty()) {
    if (!had_results) ++trace_.stats.skipped["empty user record"];
    return;
  }
  const bool local_output = text::trim(text).starts_with("<local-command-std");
  if (local_output && command_turn_) trace_.turns[*command_turn_].meta = true;
  // A slash command typed with arguments ("/orchestrator create a TODO app") is the user's
  // request, as typed; its name alone (/clear, /usage) asks the model nothing.
  const std::string command = tagged(text, "command-name"), args = tagged(text, "command-args");
  const bool prompt_command = !command.empty() && !args.empty() && !rec["isMeta"].flag();
  Turn& turn = b_.add_turn(Role::user);
  turn.text = bound_text(prompt_command ? command + " " + args : text, kMaxText);
  // A compaction's summary of the session so far is Claude Code's text, not a request.
  turn.meta = !prompt_command && (rec["isMeta"].flag() || rec["isCompactSummary"].flag() ||
                                  is_injected_user_text(text));
  turn.compaction_summary = rec["isCompactSummary"].flag();
  if (prompt_command)
    command_turn_ = trace_.turns.size() - 1;
  else if (!local_output && !turn.meta)
    command_turn_.reset();
  turn.sidechain = side;
  turn.timestamp = rec["timestamp"].str();
}

// A tool_result block; the record's toolUseResult adds the exit code and interruption.
template <class V>
void JsonlReader::tool_result(const V& rec, const V& block) {
  bool is_error = block["is_error"].flag();
  bool stopped = false;  // the user interrupted the call
  std::optional<int> exit_code;
  if (const V r = rec["toolUseResult"]; r.is_object()) {
    if (const V code = r["returnCode"]; code.is_integer())
      exit_code = static_cast<int>(code.number());
    // Not lenient: a record that says something else here is not one Claude Code wrote, and a
    // valid record with its uuid may follow (it must not be taken for a repeat of this one).
    const V interrupted = r["interrupted"];
    if (interrupted.present() && !interrupted.is_bool())
      throw std::invalid_argument("toolUseResult.interrupted is neither true nor false");
    stopped = interrupted.flag();
    keep_original_file(block["tool_use_id"].str(), r["originalFile"].is_string()
                                                       ? r["originalFile"]
                                                       : r["originalFileContents"]);
  }
  // A string result is bounded where it lies, not copied whole first.
  const V content = block["content"];
  const std::string_view id = block["tool_use_id"].str();
  ToolCall* call = content.is_string()
                       ? b_.attach_result(id, content.str(), is_error, exit_code)
                       : b_.attach_result(id, content_text_of(content), is_error, exit_code);
  if (!call) return;
  if (stopped) Builder::no_outcome(*call);
  follow_background(rec, id, *call);
}

// A command run in the background (Bash with run_in_background: "Command running in background
// with ID: b7k2x9", toolUseResult.backgroundTaskId) has no outcome when its call returns; a later
// TaskOutput (BashOutput in earlier releases) that reports the task's <status> and <exit_code>
// gives it one, what it printed (<output>) after what it printed before.
template <class V>
void JsonlReader::follow_background(const V& rec, std::string_view id, ToolCall& call) {
  if (const V task = rec["toolUseResult"]["backgroundTaskId"]; task.is_string()) {
    background_[std::string(task.str())] = std::string(id);
    Builder::no_outcome(call);
    return;
  }
  if (call.name != "TaskOutput" && call.name != "BashOutput") return;
  std::string task = tagged(call.result, "task_id");
  if (task.empty() && call.input.is_object())
    for (const char* key : {"task_id", "bash_id", "shell_id"})
      if (auto k = call.input.find(key); k != call.input.end() && k->is_string()) task = *k;
  const auto started = background_.find(task);
  const std::string code = tagged(call.result, "exit_code");
  if (started == background_.end() || code.empty()) return;  // still running, or unknown
  ToolCall* command = b_.find_call(started->second);
  int exit = 0;
  const auto [end, ec] = std::from_chars(code.data(), code.data() + code.size(), exit);
  if (!command || ec != std::errc() || end != code.data() + code.size()) return;
  background_.erase(started);
  command->has_result = true;
  command->exit_code = exit;
  command->is_error = exit != 0 || tagged(call.result, "status") == "failed";
  command->result = bound_text(command->result + "\n" + tagged(call.result, "output"), kMaxResult);
}

}  // namespace

void parse_claude_jsonl(LineSource& lines, Trace& trace, bool sidechain) {
  const std::string name = lines.name();
  JsonlReader reader(name, trace, sidechain);
  LineDecoder decoder;
  std::string_view line;
  while (lines.next(line)) {
    if (line.find_first_not_of(" \t\r\n") == std::string_view::npos) continue;
    DecodedLine d;
    d.line = lines.line_number();
    d.is_record = decoder.decode(line);
    d.repaired = decoder.repaired();
    d.cut_off = !d.is_record && lines.at_end() && !lines.last_line_complete();
    if (!count_record(name, d, trace)) continue;
    contain_record(trace, name, d.line,
                   [&] { decoder.visit([&](const auto& rec) { reader.record(rec, d.line); }); });
  }
  reader.finish();
}

}  // namespace upskill::trace::detail
