// The pieces every trace parser shares: bounded text, parse notes, numbered lines, the turn
// builder and content decoding.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "analysis.hpp"
#include "parsers.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace {

namespace {

// Start of the UTF-8 character at or before `i`.
std::size_t char_start(std::string_view s, std::size_t i) {
  while (i > 0 && i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}

}  // namespace

std::string bound_text(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  // Errors and results tend to sit at the end of output: keep more of the tail.
  const std::size_t head = char_start(text, max_bytes / 3);
  const std::size_t tail_from = char_start(text, text.size() - (max_bytes - head));
  return fmt::format("{}\n[… {} bytes omitted …]\n{}", text.substr(0, head), tail_from - head,
                     text.substr(tail_from));
}

void ParseStats::note(std::string message) {
  if (notes.size() < 20) notes.push_back(std::move(message));
}

}  // namespace upskill::trace

namespace upskill::trace::detail {

bool LineSource::next(std::string& line) {
  // Read in pieces: a line is held whole up to kLongLine; a longer JSON line is cut as it is read.
  line.clear();
  std::optional<LongLineCutter> cutter;
  char buf[1 << 16];
  bool any = false, newline = false;
  while (true) {
    in_.get(buf, sizeof buf, '\n');
    const auto n = static_cast<std::size_t>(in_.gcount());
    if (n > 0) {
      any = true;
      if (cutter)
        cutter->feed(std::string_view(buf, n));
      else
        line.append(buf, n);
    }
    if (in_.eof()) break;
    if (in_.fail()) in_.clear();  // get() stops without extracting at a newline or a full buffer
    if (in_.peek() == '\n') {
      in_.ignore();
      newline = true;
      break;
    }
    if (!cutter && line.size() > kLongLine) {
      const std::size_t first = line.find_first_not_of(" \t");
      cutter.emplace(first != std::string::npos && line[first] == '{');
      cutter->feed(line);
      std::string().swap(line);  // give the memory back
    }
  }
  if (!any && !newline) return false;
  if (cutter) line = cutter->finish();
  ++line_;
  complete_ = newline;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

Turn& Builder::add_turn(Role role) {
  trace_.turns.emplace_back();
  trace_.turns.back().role = role;
  retention_.turn_added(trace_);
  return trace_.turns.back();
}

void Builder::append(std::string& to, std::string_view text, std::size_t max) {
  if (text.empty()) return;
  if (!to.empty()) to += "\n\n";
  to += text;
  if (to.size() > max) to = bound_text(to, max);
}

ToolCall* Builder::add_call(std::string id, std::string name, Json input) {
  if (trace_.turns.empty()) add_turn(Role::assistant);
  return add_call_to(trace_.turns.size() - 1, std::move(id), std::move(name), std::move(input));
}

ToolCall* Builder::add_call_to(std::size_t turn_index, std::string id, std::string name,
                               Json input) {
  if (!id.empty() && calls_.contains(id)) {
    ++trace_.stats.duplicates;
    return nullptr;
  }
  Turn& turn = trace_.turns.at(turn_index);
  ToolCall call;
  call.id = std::move(id);
  call.name = std::move(name);
  call.input = bound_input(std::move(input));
  turn.tool_calls.push_back(std::move(call));
  const CallAt at{turn_index, turn.tool_calls.size() - 1};
  if (!turn.tool_calls.back().id.empty()) calls_[turn.tool_calls.back().id] = at;
  if (release_writes_) track_file_call(at);
  return &turn.tool_calls.back();
}

ToolCall* Builder::find_call(const std::string& id) {
  auto it = calls_.find(id);
  if (it == calls_.end()) return nullptr;
  return &trace_.turns[it->second.first].tool_calls[it->second.second];
}

void Builder::attach_result(const std::string& id, std::string_view result, bool is_error,
                            std::optional<int> exit_code) {
  const auto at = calls_.find(id);
  if (at == calls_.end()) {
    trace_.stats.note(fmt::format("a tool result for '{}', a call the trace does not contain", id));
    return;
  }
  ToolCall* call = &trace_.turns[at->second.first].tool_calls[at->second.second];
  if (call->has_result) {
    ++trace_.stats.duplicates;
    return;
  }
  call->has_result = true;
  call->result_bytes = result.size();
  call->result = bound_text(result, kMaxResult);
  call->is_error = is_error;
  if (exit_code) call->exit_code = exit_code;
  if (release_writes_ && !is_error) release_superseded(at->second);
}

namespace {

constexpr std::initializer_list<const char*> kPathFields = {"file_path", "path", "filename",
                                                            "target_file"};

// A superseded call's input without its long texts (file contents, old and new strings); the path
// and the fields that classify the call stay.
void shorten_input(Json& input) {
  if (input.is_string()) {
    if (input.get_ref<const std::string&>().size() > 1024)
      input = bound_text(input.get<std::string>(), 512);
    return;
  }
  if (!input.is_object() && !input.is_array()) return;
  for (auto it = input.begin(); it != input.end(); ++it) {
    if (input.is_object() &&
        (it.key() == "command" ||
         std::find_if(kPathFields.begin(), kPathFields.end(),
                      [&](const char* f) { return it.key() == f; }) != kPathFields.end()))
      continue;
    shorten_input(*it);
  }
}

}  // namespace

// Writes, edits and multi-edits, by the path they name, until a patch is seen.
void Builder::track_file_call(CallAt at) {
  if (saw_patch_) return;
  const ToolCall& call = trace_.turns[at.first].tool_calls[at.second];
  const ToolKind kind = classify_tool(call);
  if (kind == ToolKind::patch) {
    saw_patch_ = true;
    file_calls_.clear();
    return;
  }
  if (kind != ToolKind::write && kind != ToolKind::edit && kind != ToolKind::multi_edit) return;
  const std::string path = input_string(call.input, kPathFields);
  if (!path.empty()) file_calls_[path].push_back(at);
}

// A write of a whole file (its contents a string) succeeded: the file replay ends with these
// contents whatever the writes and edits of the same path before it held, so theirs are shortened.
// (A write that failed, or one without contents, leaves them: the replay still needs them.)
void Builder::release_superseded(CallAt write) {
  if (saw_patch_) return;
  const ToolCall& call = trace_.turns[write.first].tool_calls[write.second];
  if (classify_tool(call) != ToolKind::write) return;
  const Json* content = input_field(call.input, {"content", "file_text", "contents", "text"});
  if (!content || !content->is_string()) return;
  const auto it = file_calls_.find(input_string(call.input, kPathFields));
  if (it == file_calls_.end()) return;
  std::vector<CallAt> later;
  for (const CallAt& at : it->second) {
    if (at < write)
      shorten_input(trace_.turns[at.first].tool_calls[at.second].input);
    else
      later.push_back(at);
  }
  it->second = std::move(later);
}

void Builder::add_model(const std::string& model) {
  if (model.empty() || model == "<synthetic>" || models_.contains(model)) return;
  models_.insert(model);
  trace_.models.push_back(model);
}

std::string str_field(const Json& object, const char* key) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool flag_field(const Json& object, const char* key) {
  if (!object.is_object()) return false;
  const auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

void record_failed(Trace& trace, const std::string& where, const char* what) {
  ++trace.stats.malformed;
  // nlohmann's messages start with "[json.exception.type_error.302] "; the rest says what it is.
  std::string reason = what;
  if (reason.starts_with("[json.exception.")) {
    const auto end = reason.find("] ");
    if (end != std::string::npos) reason = reason.substr(end + 2);
  }
  trace.stats.note(fmt::format("{}: a field of an unexpected type or shape ({}); record skipped",
                               where, reason));
}

bool count_record(const std::string& name, const DecodedLine& line, Trace& trace) {
  ++trace.stats.lines;
  if (line.is_record) return true;
  if (line.cut_off) {
    trace.stats.truncated_last_line = true;
    trace.stats.note(fmt::format("{}:{}: the last line is cut off (ignored)", name, line.line));
  } else {
    ++trace.stats.malformed;
    trace.stats.note(fmt::format("{}:{}: not a JSON object (skipped)", name, line.line));
  }
  return false;
}

bool read_record(const LineSource& lines, const std::string& line, Trace& trace, Json& record,
                 RecordFields fields) {
  if (line.find_first_not_of(" \t\r\n") == std::string::npos) return false;
  DecodedLine d;
  d.line = lines.line_number();
  d.is_record = decode_record(line, fields, d.record);
  d.cut_off = !d.is_record && lines.at_end() && !lines.last_line_complete();
  const bool ok = count_record(lines.name(), d, trace);
  record = std::move(d.record);
  return ok;
}

bool is_message(const Json& m, std::size_t index, Trace& trace) {
  if (m.is_object() && m.contains("role")) return true;
  ++trace.stats.malformed;
  trace.stats.note(fmt::format("messages[{}]: not a message object (skipped)", index));
  return false;
}

Json decode_arguments(const Json& arguments) {
  if (!arguments.is_string()) return arguments;
  const std::string& s = arguments.get_ref<const std::string&>();
  Json parsed = Json::parse(s, nullptr, false);
  if (parsed.is_discarded()) return arguments;
  return parsed;
}

std::string content_text(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return {};
  std::string out;
  for (const auto& block : content) {
    if (block.is_string()) {
      Builder::append(out, block.get<std::string>(), ~std::size_t{0});
      continue;
    }
    if (!block.is_object()) continue;
    const std::string type = block.value("type", "");
    if (auto it = block.find("text"); it != block.end() && it->is_string()) {
      Builder::append(out, it->get<std::string>(), ~std::size_t{0});
    } else if (type == "image" || type == "input_image" || type == "image_url") {
      Builder::append(out, "[image]", ~std::size_t{0});
    } else if (auto c = block.find("content"); c != block.end()) {
      Builder::append(out, content_text(*c), ~std::size_t{0});
    }
  }
  return out;
}

Json bound_input(Json input) {
  if (input.is_string()) {
    if (input.get_ref<const std::string&>().size() > kMaxFileInput)
      input = bound_text(input.get<std::string>(), kMaxFileInput);
    return input;
  }
  if (input.is_object() || input.is_array())
    for (auto& v : input) v = bound_input(std::move(v));
  return input;
}

bool is_injected_user_text(std::string_view text) {
  const std::string t = text::trim(text);
  for (const char* prefix :
       {"<environment_context>", "<user_instructions>", "# AGENTS.md instructions",
        "<permissions instructions>", "<turn_aborted>", "<user_shell_command>",
        "<local-command-stdout>", "<local-command-stderr>", "<command-name>", "<command-message>",
        "<system-reminder>", "Caveat: The messages below were generated",
        "[Request interrupted by user"})
    if (t.starts_with(prefix)) return true;
  return false;
}

}  // namespace upskill::trace::detail
