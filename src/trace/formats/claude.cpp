// Claude Code: session JSONL (one content block per line, merged by message.id; tool results in
// user records; sidechains), `claude -p --output-format stream-json`, and /export transcripts.
#include "claude.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "../reading/builder.hpp"
#include "../reading/json_lines.hpp"
#include "../reading/records.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace::detail {

namespace {

struct UsageMax {
  long long input = 0, output = 0, cache_read = 0, cache_write = 0;
};

long long num(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number() ? it->get<long long>() : 0;
}

// Records that hold no conversation: bookkeeping of earlier versions, and Claude Code 2.1.328's
// request log and session state (seen in a session it wrote: tests/data/traces).
bool known_skipped_type(const std::string& type) {
  static const std::set<std::string> types = {"summary",          "file-history-snapshot",
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
  bool contains(const std::string& uuid) const {
    const auto key = parse(uuid);
    return key ? packed_.contains(*key) : others_.contains(uuid);
  }
  void insert(const std::string& uuid) {
    if (const auto key = parse(uuid))
      packed_.insert(*key);
    else
      others_.insert(uuid);
  }

 private:
  using Key = std::pair<std::uint64_t, std::uint64_t>;
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return k.first ^ (k.second * 0x9E3779B97F4A7C15ULL);
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

  std::unordered_set<Key, KeyHash> packed_;
  std::unordered_set<std::string> others_;
};

// A tool_result block's content: a string or text blocks.
std::string result_text(const Json& block) {
  auto it = block.find("content");
  if (it == block.end()) return {};
  return content_text(*it);
}

// Reads session JSONL and stream-json records into turns, one method per record kind. Assistant
// messages arrive one content block per line and are merged by message.id; usage is counted once
// per message (the largest value seen for each field).
class JsonlReader {
 public:
  JsonlReader(const std::string& name, Trace& trace, bool sidechain)
      : name_(name), trace_(trace), b_(trace), sidechain_(sidechain) {
    b_.release_superseded_writes();
  }

  // A record read from line `line`.
  void record(const Json& rec, int line);
  // False when the record could not be used (a user or assistant record without a readable
  // message): its uuid is then not remembered.
  bool dispatch(const Json& rec);
  // Adds the usage of every message to the trace.
  void finish();

 private:
  bool is_duplicate(const Json& rec);
  void note_session(const Json& rec, const std::string& type);
  void system_record(const Json& rec);
  void result_record(const Json& rec);
  void other_record(const std::string& type);
  const Json* message_of(const Json& rec, const std::string& type);
  void assistant_record(const Json& rec, const Json& message, bool side);
  Turn& assistant_turn(const std::string& id, bool side, const std::string& timestamp);
  void add_usage(const std::string& id, const Json& u);
  void user_record(const Json& rec, const Json& message, bool side);
  void tool_result(const Json& rec, const Json& block);

  static const Json& content_of(const Json& message) {
    static const Json kNoContent;
    const auto it = message.find("content");
    return it != message.end() ? *it : kNoContent;
  }

  const std::string& name_;
  int line_ = 0;  // of the record being read
  Trace& trace_;
  Builder b_;
  bool sidechain_;
  UuidSet seen_uuids_;
  std::unordered_map<std::string, std::size_t> message_turn_;  // message.id -> turn index
  std::unordered_map<std::string, UsageMax> usage_;  // message.id -> usage (max per field)
};

void JsonlReader::record(const Json& rec, int line) {
  line_ = line;
  if (is_duplicate(rec)) return;
  // Remembered only once read and used: a malformed record must not hide a valid one with its
  // uuid (a line cut by a crash, then written again whole).
  if (!dispatch(rec)) return;
  if (auto u = rec.find("uuid"); u != rec.end() && u->is_string())
    seen_uuids_.insert(u->get<std::string>());
}

bool JsonlReader::dispatch(const Json& rec) {
  const std::string type = str_field(rec, "type");
  note_session(rec, type);
  if (type == "system") {
    system_record(rec);
    return true;
  }
  if (type == "result") {
    result_record(rec);
    return true;
  }
  if (type != "user" && type != "assistant") {
    other_record(type);
    return known_skipped_type(type);  // a record of no known type is not one to be repeated
  }
  const Json* message = message_of(rec, type);
  if (!message) return false;
  ++trace_.stats.records;
  const bool side = sidechain_ || flag_field(rec, "isSidechain");
  if (type == "assistant")
    assistant_record(rec, *message, side);
  else
    user_record(rec, *message, side);
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

// A record whose uuid was seen before (sessions repeat records when resumed or mirrored).
bool JsonlReader::is_duplicate(const Json& rec) {
  auto u = rec.find("uuid");
  if (u == rec.end() || !u->is_string()) return false;
  if (!seen_uuids_.contains(u->get<std::string>())) return false;
  ++trace_.stats.duplicates;
  return true;
}

// The working directory and Claude Code version, from the first record that carries them.
void JsonlReader::note_session(const Json& rec, const std::string& type) {
  if (trace_.cwd.empty() && rec.contains("cwd") && rec["cwd"].is_string())
    trace_.cwd = rec["cwd"].get<std::string>();
  if (!trace_.format_version.empty()) return;
  if (rec.contains("version") && rec["version"].is_string())
    trace_.format_version = "Claude Code " + rec["version"].get<std::string>();
  else if (type == "system" && rec.contains("claude_code_version") &&
           rec["claude_code_version"].is_string())
    trace_.format_version = "Claude Code " + rec["claude_code_version"].get<std::string>();
}

// stream-json init carries the model; session logs carry compaction markers.
void JsonlReader::system_record(const Json& rec) {
  if (rec.contains("model") && rec["model"].is_string()) b_.add_model(rec["model"]);
  ++trace_.stats.skipped["system"];
  ++trace_.stats.records;
}

// The headless summary: usage for the whole run, used when messages carried none.
void JsonlReader::result_record(const Json& rec) {
  if (rec.contains("usage") && rec["usage"].is_object() && usage_.empty()) {
    const Json& u = rec["usage"];
    usage_["result"] = {num(u, "input_tokens") + num(u, "cache_read_input_tokens") +
                            num(u, "cache_creation_input_tokens"),
                        num(u, "output_tokens"), num(u, "cache_read_input_tokens"),
                        num(u, "cache_creation_input_tokens")};
  }
  ++trace_.stats.skipped["result"];
  ++trace_.stats.records;
}

void JsonlReader::other_record(const std::string& type) {
  if (known_skipped_type(type))
    ++trace_.stats.skipped[type];
  else
    ++trace_.stats.unknown_types[type.empty() ? "(no type)" : type];
}

// A user or assistant record's message; nullptr (counted as malformed) when it has none.
const Json* JsonlReader::message_of(const Json& rec, const std::string& type) {
  const Json* message = rec.contains("message") ? &rec["message"] : nullptr;
  if (message && message->is_object()) return message;
  ++trace_.stats.malformed;
  trace_.stats.note(fmt::format("{}:{}: a {} record without a message", name_, line_, type));
  return nullptr;
}

void JsonlReader::assistant_record(const Json& rec, const Json& message, bool side) {
  const std::string id = str_field(message, "id");
  Turn& turn = assistant_turn(id, side, str_field(rec, "timestamp"));
  const std::string model = str_field(message, "model");
  if (!model.empty() && model != "<synthetic>") {
    turn.model = model;
    b_.add_model(model);
  }
  if (auto u = message.find("usage"); u != message.end() && u->is_object()) add_usage(id, *u);
  const std::size_t turn_index = static_cast<std::size_t>(&turn - trace_.turns.data());
  const Json& content = content_of(message);
  if (content.is_string()) Builder::append(turn.text, content.get<std::string>(), kMaxText);
  if (!content.is_array()) return;
  for (const auto& block : content) {
    if (!block.is_object()) continue;
    const std::string bt = str_field(block, "type");
    if (bt == "text") {
      Builder::append(trace_.turns[turn_index].text, str_field(block, "text"), kMaxText);
    } else if (bt == "thinking" || bt == "redacted_thinking") {
      Builder::append(trace_.turns[turn_index].thinking, str_field(block, "thinking"),
                      kMaxThinking);
    } else if (bt == "tool_use" || bt == "server_tool_use") {
      // The call belongs to this message's turn, even when other records came between.
      b_.add_call_to(turn_index, str_field(block, "id"), str_field(block, "name"),
                     block.contains("input") ? block["input"] : Json());
    }
  }
}

// The turn of message `id`: the one its earlier blocks started, or a new one.
Turn& JsonlReader::assistant_turn(const std::string& id, bool side, const std::string& timestamp) {
  if (auto it = message_turn_.find(id); !id.empty() && it != message_turn_.end())
    return trace_.turns[it->second];
  Turn& turn = b_.add_turn(Role::assistant);
  turn.sidechain = side;
  turn.timestamp = timestamp;
  if (!id.empty()) message_turn_[id] = trace_.turns.size() - 1;
  return turn;
}

void JsonlReader::add_usage(const std::string& id, const Json& u) {
  UsageMax& m = usage_[id.empty() ? fmt::format("line{}", line_) : id];
  const long long cr = num(u, "cache_read_input_tokens");
  const long long cw = num(u, "cache_creation_input_tokens");
  m.input = std::max(m.input, num(u, "input_tokens") + cr + cw);
  m.output = std::max(m.output, num(u, "output_tokens"));
  m.cache_read = std::max(m.cache_read, cr);
  m.cache_write = std::max(m.cache_write, cw);
}

// user: typed text, injected text (isMeta, command tags), or tool results.
void JsonlReader::user_record(const Json& rec, const Json& message, bool side) {
  const Json& content = content_of(message);
  std::string text;
  bool had_results = false;
  if (content.is_string()) {
    text = content.get<std::string>();
  } else if (content.is_array()) {
    for (const auto& block : content) {
      if (!block.is_object()) continue;
      const std::string bt = str_field(block, "type");
      if (bt == "tool_result") {
        had_results = true;
        tool_result(rec, block);
      } else if (bt == "text") {
        Builder::append(text, str_field(block, "text"), kMaxText);
      } else if (bt == "image") {
        Builder::append(text, "[image]", kMaxText);
      }
    }
  }
  if (text::trim(text).empty()) {
    if (!had_results) ++trace_.stats.skipped["empty user record"];
    return;
  }
  Turn& turn = b_.add_turn(Role::user);
  turn.text = bound_text(text, kMaxText);
  turn.meta = flag_field(rec, "isMeta") || is_injected_user_text(text);
  turn.sidechain = side;
  turn.timestamp = str_field(rec, "timestamp");
}

// A tool_result block; the record's toolUseResult adds the exit code and interruption.
void JsonlReader::tool_result(const Json& rec, const Json& block) {
  const std::string id = str_field(block, "tool_use_id");
  bool is_error = flag_field(block, "is_error");
  std::optional<int> exit_code;
  if (auto r = rec.find("toolUseResult"); r != rec.end() && r->is_object()) {
    if (r->contains("returnCode") && (*r)["returnCode"].is_number_integer())
      exit_code = (*r)["returnCode"].get<int>();
    if (r->value("interrupted", false)) is_error = true;
  }
  // A string result is bounded where it lies, not copied whole first.
  if (auto c = block.find("content"); c != block.end() && c->is_string())
    b_.attach_result(id, c->get_ref<const std::string&>(), is_error, exit_code);
  else
    b_.attach_result(id, result_text(block), is_error, exit_code);
}

}  // namespace

void parse_claude_jsonl(LineSource& lines, Trace& trace, bool sidechain) {
  const std::string name = lines.name();
  JsonlReader reader(name, trace, sidechain);
  RecordStream records(lines, RecordFields::claude_session);
  while (const DecodedLine* d = records.next()) {
    if (!count_record(name, *d, trace)) continue;
    contain_record(trace, fmt::format("{}:{}", name, d->line),
                   [&] { reader.record(d->record, d->line); });
  }
  reader.finish();
}

}  // namespace upskill::trace::detail
