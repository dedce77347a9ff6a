// The turn builder every reader uses (see builder.hpp), bounded text and parse notes.
#include "builder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "../analysis/tool_kinds.hpp"
#include "records.hpp"
#include "upskill/core/text.hpp"
#include "upskill/core/unicode.hpp"

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
  const std::string mark = fmt::format("\n[… {} bytes omitted …]\n", tail_from - head);
  std::string out;
  out.reserve(head + mark.size() + (text.size() - tail_from));
  out.append(text.substr(0, head)).append(mark).append(text.substr(tail_from));
  return out;
}

void Trace::run_error(std::string message) {
  message = unicode::printable(bound_text(text::trim(message), 2000));
  if (message.empty()) message = "(no message)";
  // An exec stream says a failure twice (an error event, then the turn that failed with it).
  if (!run_errors.empty() && run_errors.back() == message) return;
  if (run_errors.size() < 50) run_errors.push_back(std::move(message));
}

void ParseStats::note(std::string message) {
  // Notes quote what they found (a path, a line's bytes): shown, never raw invalid UTF-8.
  if (notes.size() < 20) notes.push_back(unicode::printable(message));
}

}  // namespace upskill::trace

namespace upskill::trace::detail {

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

void Builder::no_outcome(ToolCall& call) {
  call.has_result = false;
  call.is_error = false;
  call.exit_code.reset();
}

ToolCall* Builder::attach_result(std::string_view id, std::string_view result, bool is_error,
                                 std::optional<int> exit_code) {
  const auto at = calls_.find(id);
  if (at == calls_.end()) {
    trace_.stats.note(fmt::format("a tool result for '{}', a call the trace does not contain", id));
    return nullptr;
  }
  ToolCall* call = &trace_.turns[at->second.first].tool_calls[at->second.second];
  if (call->has_result) {
    ++trace_.stats.duplicates;
    return nullptr;
  }
  call->has_result = true;
  call->result_bytes = result.size();
  // A result is read for a command's exit code and error text, for a failure's, and for the
  // contents a write or an edit shows (file_replay.cpp); of a successful read or search nothing
  // is, so its head and tail are enough.
  const ToolKind kind = classify_tool(*call);
  const bool quiet = !is_error && (kind == ToolKind::read || kind == ToolKind::other);
  call->result = bound_text(result, quiet ? kMaxQuietResult : kMaxResult);
  call->is_error = is_error;
  if (exit_code) call->exit_code = exit_code;
  if (release_writes_ && !is_error) release_superseded(at->second);
  return call;
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

void Builder::add_model(std::string_view model) {
  if (model.empty() || model == "<synthetic>" || models_.contains(model)) return;
  models_.emplace(model);
  trace_.models.emplace_back(model);
}

}  // namespace upskill::trace::detail
