#pragma once
// Internal to the trace module: the builder every reader turns records into turns and tool calls
// with (builder.cpp); tool results find their calls by id.
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "retention.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

// A map from strings looked up by any string's view, without a copy.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class T>
using ByString = std::unordered_map<std::string, T, StringHash, std::equal_to<>>;

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
  // Call `id` ran to no outcome — the user stopped it (Claude Code's "Interrupted"), or it was
  // still running when its result was written (Codex's "Process running with session ID N"): what
  // it printed stays, but it is neither a success nor a failure (opencode's interrupted tool is
  // the same).
  static void no_outcome(ToolCall& call);
  // Attaches a result; a result for an unknown id is counted as a note. Returns the call it was
  // attached to (nullptr: an unknown id, or a call that already had its result).
  ToolCall* attach_result(std::string_view id, std::string_view result, bool is_error,
                          std::optional<int> exit_code = std::nullopt);
  void add_model(std::string_view model);
  void add_model(const std::string& model) { add_model(std::string_view(model)); }
  void add_model(const char* model) { add_model(std::string_view(model)); }
  void add_model(const Json& model) {  // only a string names one
    if (model.is_string()) add_model(std::string_view(model.get_ref<const std::string&>()));
  }

 private:
  using CallAt = std::pair<std::size_t, std::size_t>;  // (turn, call)
  void track_file_call(CallAt at);
  void release_superseded(CallAt write);

  Trace& trace_;
  ByString<CallAt> calls_;  // id -> (turn, call)
  std::set<std::string, std::less<>> models_;
  Retention retention_;
  bool release_writes_ = false;
  bool saw_patch_ = false;  // a patch may move files: paths no longer name one file
  std::map<std::string, std::vector<CallAt>> file_calls_;  // path -> writes and edits since
                                                           // its last successful write
};

}  // namespace upskill::trace::detail
