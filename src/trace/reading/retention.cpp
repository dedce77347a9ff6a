// The memory budget of a trace's texts (docs/PERFORMANCE.md, "Parsing large traces"): past
// kRetainedText bytes of turn text, thinking and tool results, the excerpts of older turns are
// shortened — oldest first, in steps — so that a trace of any size is read in bounded memory.
#include "retention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "../analysis/tool_kinds.hpp"
#include "records.hpp"

namespace upskill::trace::detail {

namespace {

// What each step keeps of one text (head and tail; see bound_text). Every step keeps more than
// the first 400 bytes of a shell command's output, where the analysis looks for its exit code; all
// but the last keep them of the agent's words too (its first words after a failure explain the
// fix); the user's own words and failing output are kept longest.
struct Limits {
  std::size_t text, user_text, thinking, result, shell_result, failed_result;
};
constexpr Limits kSteps[] = {
    {16 << 10, 64 << 10, 8 << 10, 8 << 10, 8 << 10, 16 << 10},
    {4 << 10, 16 << 10, 2 << 10, 2 << 10, 2 << 10, 8 << 10},
    {1536, 8 << 10, 1 << 10, 512, 1536, 4 << 10},
    {1280, 4 << 10, 512, 256, 1280, 2 << 10},
    {512, 2 << 10, 256, 128, 1280, 1 << 10},
};
constexpr std::size_t kSteps_n = std::size(kSteps);
// Room for bound_text's "[… N bytes omitted …]" mark: a text already bounded to a limit is not
// shortened again to the same limit.
constexpr std::size_t kMarkRoom = 64;

std::size_t held(const Turn& t) {
  std::size_t n = t.text.size() + t.thinking.size();
  for (const ToolCall& c : t.tool_calls) n += c.result.size();
  return n;
}

// Shortens `s` to `max` bytes; returns the bytes saved.
std::size_t shorten(std::string& s, std::size_t max, std::size_t& count) {
  if (s.size() <= max + kMarkRoom) return 0;
  const std::size_t before = s.size();
  s = bound_text(s, max);
  ++count;
  return before - s.size();
}

// A write without its contents or an edit without its old text: the file replay reads the file
// from what the result shows (a Claude /export's numbered preview or diff), so it is kept whole.
bool replay_reads_result(const ToolCall& c) {
  const ToolKind kind = classify_tool(c);
  if (kind == ToolKind::write) {
    const Json* content = input_field(c.input, {"content", "file_text", "contents", "text"});
    return !content || !content->is_string();
  }
  return kind == ToolKind::edit && !input_field(c.input, {"old_string", "old_str", "old_text"});
}

std::size_t shorten_turn(Turn& t, const Limits& l, std::size_t& count) {
  std::size_t saved =
      shorten(t.text, t.role == Role::user && !t.meta ? l.user_text : l.text, count);
  // Without text, the analysis reads the agent's first words from its thinking.
  saved += shorten(t.thinking, t.text.empty() ? std::max(l.thinking, l.text) : l.thinking, count);
  for (ToolCall& c : t.tool_calls) {
    if (replay_reads_result(c)) continue;
    const bool failed = c.is_error || (c.exit_code && *c.exit_code != 0);
    const std::size_t max = failed                                ? l.failed_result
                            : classify_tool(c) == ToolKind::shell ? l.shell_result
                                                                  : l.result;
    saved += shorten(c.result, max, count);
  }
  return saved;
}

}  // namespace

std::size_t retained_text(const Trace& trace) {
  std::size_t n = 0;
  for (const Turn& t : trace.turns) n += held(t);
  return n;
}

void Retention::turn_added(Trace& trace) {
  if (trace.turns.size() < next_check_) return;
  next_check_ = trace.turns.size() + kCheckEvery;
  std::size_t total = retained_text(trace);
  if (total <= budget_) return;
  if (!noted_)
    trace.stats.note(fmt::format(
        "more than {} MB of text: excerpts of older turns are shortened to stay within it",
        budget_ >> 20));
  noted_ = true;
  // Down to three quarters of the budget, so that the next check has room to spare.
  const std::size_t target = budget_ / 4 * 3;
  const std::size_t end = trace.turns.size() - std::min(trace.turns.size(), kKeepRecent);
  while (total > target) {
    if (step_ > 0 && cursor_ < end) {
      total -= shorten_turn(trace.turns[cursor_++], kSteps[step_ - 1], trace.stats.shortened);
      continue;
    }
    if (step_ == kSteps_n) break;  // every older turn is as short as it gets
    ++step_;
    cursor_ = 0;
  }
}

}  // namespace upskill::trace::detail
