// The analysis every format shares, run after parsing: the commands the agent ran and their exit
// codes, the files it changed (see file_replay.cpp), error → fix pairs, and the counts.
#include "analysis.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>

#include "../formats/registry.hpp"
#include "file_replay.hpp"
#include "tool_kinds.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace {

namespace {

// A file changed after `commands_before` commands had run: by a tool call after them, or by the
// next command itself (a patch or an `rm` run through the shell).
struct FileChange {
  std::size_t commands_before = 0;
  std::string path;
};

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view skip_space(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

// A line (after blank space) that says a command's exit code: "Exit code: N", "exit code N",
// "Process exited with code N", "exit status N", after an optional "Error:". The code as
// written ("-1", digits beyond an int's range included), or "".
std::string_view exit_code_said(std::string_view line) {
  line = skip_space(line);
  if (line.starts_with("Error:")) line = skip_space(line.substr(6));
  struct Phrase {
    std::string_view words;
    bool colon;  // may be followed by a colon
  };
  static constexpr Phrase kPhrases[] = {{"Exit code", true},
                                        {"exit code", true},
                                        {"Process exited with code", false},
                                        {"exit status", false}};
  const auto said = std::find_if(std::begin(kPhrases), std::end(kPhrases),
                                 [&](const Phrase& p) { return line.starts_with(p.words); });
  if (said == std::end(kPhrases)) return {};
  line.remove_prefix(said->words.size());
  if (said->colon && line.starts_with(':')) line.remove_prefix(1);
  line = skip_space(line);
  std::size_t n = line.starts_with('-') ? 1 : 0;
  const std::size_t first_digit = n;
  while (n < line.size() && line[n] >= '0' && line[n] <= '9') ++n;
  return n > first_digit ? line.substr(0, n) : std::string_view();
}

// The exit code a result's first 400 bytes say, on a line of its own.
std::optional<int> exit_code_in_text(std::string_view result) {
  const std::string_view head = result.substr(0, 400);
  std::string_view digits;
  for (std::size_t start = 0; digits.empty();) {
    digits = exit_code_said(head.substr(start));
    start = head.find('\n', start);
    if (start == std::string_view::npos) break;
    ++start;
  }
  if (digits.empty()) return std::nullopt;
  // A code too large for an int is still a failure: it reads as the nearest int.
  long long code = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), code);
  if (ec == std::errc::result_out_of_range)
    return digits.starts_with('-') ? std::numeric_limits<int>::min()
                                   : std::numeric_limits<int>::max();
  return static_cast<int>(std::clamp<long long>(code, std::numeric_limits<int>::min(),
                                                std::numeric_limits<int>::max()));
}

// "cd build && CUDA_HOME=/x make -j8" -> "make": the program a command is about.
std::string program_of(const std::string& command) {
  std::string c = command;
  for (;;) {
    const auto amp = c.find("&&");
    const std::string first = text::trim(c.substr(0, amp));
    if (amp != std::string::npos && (first.starts_with("cd ") || first.starts_with("source ") ||
                                     first.starts_with("export ") || first.starts_with(". "))) {
      c = c.substr(amp + 2);
      continue;
    }
    break;
  }
  std::vector<std::string> words;
  std::string w;
  for (char ch : text::trim(c)) {
    if (ch == ' ' || ch == '\t' || ch == '\n') {
      if (!w.empty()) words.push_back(w);
      w.clear();
      if (words.size() > 8) break;
    } else {
      w += ch;
    }
  }
  if (!w.empty()) words.push_back(w);
  std::size_t i = 0;
  while (i < words.size() && (words[i].find('=') != std::string::npos || words[i] == "sudo" ||
                              words[i] == "time" || words[i] == "env"))
    ++i;
  if (i >= words.size()) return text::trim(c);
  std::string program = words[i];
  // "python -m pytest", "uv run x", "npx y": the tool after the runner.
  if ((program == "python" || program == "python3" || program == "uv" || program == "npx" ||
       program == "cargo" || program == "make" || program == "cmake" || program == "git" ||
       program == "kernel-builder" || program == "nix") &&
      i + 1 < words.size())
    program += " " + words[i + 1];
  return program;
}

bool changes_files(ToolKind kind) {
  return kind == ToolKind::write || kind == ToolKind::edit || kind == ToolKind::multi_edit ||
         kind == ToolKind::patch;
}

// The last simple command of a shell command line — what its exit status is the status of: the
// text after the last `|`, `||`, `&&`, `;` or newline outside quotes (without `set -o pipefail`, a
// pipeline's status is its last command's).
std::string last_stage(const std::string& command) {
  std::size_t start = 0;
  char quote = 0;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote) {
      if (c == '\\' && quote == '"')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '\\') {
      ++i;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '|' || c == ';' || c == '\n' ||
               (c == '&' && i + 1 < command.size() && command[i + 1] == '&')) {
      if (i + 1 < command.size() && command[i + 1] == c) ++i;  // || and &&
      if (!text::trim(command.substr(i + 1)).empty()) start = i + 1;
    }
  }
  return text::trim(command.substr(start));
}

// A shell call as a command run; an exit code found only in the result text is kept on the call.
CommandRun command_run(ToolCall& call, std::size_t turn, std::size_t index, bool sidechain) {
  CommandRun run;
  run.command = shell_command_of(call);
  run.turn = turn;
  run.call = index;
  run.sidechain = sidechain;
  run.exit_code = call.exit_code;
  run.answered = call.has_result || call.exit_code.has_value();
  if (!run.exit_code && call.has_result) run.exit_code = exit_code_in_text(call.result);
  if (run.exit_code) call.exit_code = run.exit_code;
  run.failed = call.is_error || (run.exit_code && *run.exit_code != 0);
  // A search that found nothing, a comparison that found a difference, a test that was false:
  // exit status 1 is their answer, not an error (2 and above are errors).
  static const std::set<std::string> answers_with_1 = {
      "grep", "egrep", "fgrep", "rg", "ag", "ack", "git grep", "diff", "cmp", "test", "["};
  if (run.failed && run.exit_code == 1 &&
      answers_with_1.contains(program_of(last_stage(run.command)))) {
    run.failed = false;
    call.is_error = false;
  }
  return run;
}

// Codex refuses a patch whose context is not in the file with "apply_patch verification failed:
// …" and no exit code, whether the patch came as its tool or through the shell.
bool patch_refused(const ToolCall& call) {
  return call.has_result &&
         std::string_view(call.result).substr(0, 400).find("apply_patch verification failed") !=
             std::string_view::npos;
}

// `apply_patch <<'EOF' … EOF` (or the patch as its argument) run through the shell: the patch.
std::optional<std::string> shell_patch(const std::string& command) {
  const std::string c = text::trim(command);
  if (!c.starts_with("apply_patch") && !c.starts_with("applypatch")) return std::nullopt;
  const std::size_t begin = c.find("*** Begin Patch");
  const std::size_t end = c.find("*** End Patch", begin == std::string::npos ? 0 : begin);
  if (begin == std::string::npos || end == std::string::npos) return std::nullopt;
  return c.substr(begin, end + std::string_view("*** End Patch").size() - begin);
}

// Walks every tool call in order: counts tools, records commands, replays file changes.
std::vector<FileChange> replay_tool_calls(Trace& trace, detail::FileReplay& files) {
  std::vector<FileChange> changes;
  for (std::size_t t = 0; t < trace.turns.size(); ++t) {
    Turn& turn = trace.turns[t];
    for (std::size_t c = 0; c < turn.tool_calls.size(); ++c) {
      ToolCall& call = turn.tool_calls[c];
      ++trace.tool_counts[call.name];
      if (!call.is_error && patch_refused(call)) call.is_error = true;
      const ToolKind kind = classify_tool(call);
      if (kind == ToolKind::shell) {
        trace.commands.push_back(command_run(call, t, c, turn.sidechain));
        // A patch applied through the shell changes files as the patch tool does.
        if (trace.commands.back().failed) continue;
        const std::size_t before = trace.commands.size() - 1;
        for (std::string& path : files.apply_shell_removals(trace.commands.back().command, t))
          changes.push_back({before, std::move(path)});
        if (auto patch = shell_patch(trace.commands.back().command)) {
          ToolCall as_patch = call;
          as_patch.name = "apply_patch";
          as_patch.input = *patch;
          for (std::string& path : files.apply(as_patch, ToolKind::patch, t, trace.stats))
            changes.push_back({before, std::move(path)});
        }
      } else if (changes_files(kind)) {
        if (call.is_error) continue;  // a failed write or edit changed nothing
        for (std::string& path : files.apply(call, kind, t, trace.stats))
          changes.push_back({trace.commands.size(), std::move(path)});
      }
    }
  }
  return changes;
}

// What a command runs its program on: the command line after its first word (`x.py` of
// `python x.py`), empty when there is nothing after it.
std::string arguments_of(const std::string& command) {
  const std::string c = text::trim(command);
  const auto space = c.find_first_of(" \t");
  return space == std::string::npos ? std::string() : text::trim(c.substr(space));
}

// For each failed command, the next successful run of the same program — or, for a program that
// was not found (exit 127: `python x.py` where only python3 exists), the next successful run of
// another program on the same arguments, whichever comes first: one pass from the end.
std::vector<std::optional<std::size_t>> next_success(const std::vector<CommandRun>& commands) {
  std::vector<std::optional<std::size_t>> out(commands.size());
  std::unordered_map<std::string, std::size_t> first_ok_after;    // program -> command index
  std::unordered_map<std::string, std::size_t> first_args_after;  // arguments -> command index
  for (std::size_t i = commands.size(); i-- > 0;) {
    const std::string program = program_of(commands[i].command);
    const std::string args = arguments_of(commands[i].command);
    if (!commands[i].failed) {
      if (commands[i].answered) {
        first_ok_after[program] = i;
        if (!args.empty()) first_args_after[args] = i;
      }
      continue;
    }
    if (const auto it = first_ok_after.find(program); it != first_ok_after.end())
      out[i] = it->second;
    if (commands[i].exit_code == 127 && !args.empty())
      if (const auto it = first_args_after.find(args); it != first_args_after.end())
        out[i] = out[i] ? std::min(*out[i], it->second) : it->second;
  }
  return out;
}

// Error → fix: the next successful run of the same program, and the files changed in between,
// those the fixing command changed itself (a patch through the shell) included.
ErrorFix error_fix(const Trace& trace, std::size_t failed_index,
                   std::optional<std::size_t> fixed_by, const std::vector<FileChange>& changes) {
  const CommandRun& failed = trace.commands[failed_index];
  ErrorFix fix;
  fix.failed = failed_index;
  fix.fixed_by = fixed_by;
  const std::size_t end = fix.fixed_by ? *fix.fixed_by : trace.commands.size();
  // Changes are in the order of the commands before them: those after the failure, up to the fix.
  auto change = std::upper_bound(
      changes.begin(), changes.end(), failed_index,
      [](std::size_t index, const FileChange& c) { return index < c.commands_before; });
  for (; change != changes.end() && change->commands_before <= end; ++change) {
    if (std::find(fix.files_changed.begin(), fix.files_changed.end(), change->path) ==
        fix.files_changed.end())
      fix.files_changed.push_back(change->path);
  }
  fix.explanation = detail::first_words_after(
      trace, failed.turn,
      fix.fixed_by ? std::optional<std::size_t>(trace.commands[*fix.fixed_by].turn) : std::nullopt);
  return fix;
}

}  // namespace

void analyse(Trace& trace) {
  trace.files.clear();
  trace.commands.clear();
  trace.fixes.clear();
  trace.tool_counts.clear();
  detail::FileReplay files(trace.cwd);
  const std::vector<FileChange> changes = replay_tool_calls(trace, files);
  // Text traces show files as fenced blocks rather than as tool calls (the registry says which).
  if (detail::entry_of(trace.format).files_as_text) files.add_fenced_files(trace.turns);
  trace.files = files.take();
  const std::vector<std::optional<std::size_t>> fixed_by = next_success(trace.commands);
  for (std::size_t i = 0; i < trace.commands.size(); ++i)
    if (trace.commands[i].failed) trace.fixes.push_back(error_fix(trace, i, fixed_by[i], changes));
}

TraceCounts count(const Trace& trace) {
  TraceCounts c;
  c.turns = trace.turns.size();
  for (const Turn& t : trace.turns) {
    if (t.sidechain) ++c.sidechain_turns;
    if (t.role == Role::user && !t.meta && !t.sidechain) ++c.user_prompts;
    if (t.role == Role::assistant) ++c.assistant_messages;
    c.tool_calls += t.tool_calls.size();
    for (const auto& call : t.tool_calls) {
      c.tool_errors += call.is_error ? 1 : 0;
      c.refused_calls += call.is_error && classify_tool(call) != ToolKind::shell ? 1 : 0;
    }
  }
  c.commands = trace.commands.size();
  for (const auto& cmd : trace.commands) c.failed_commands += cmd.failed ? 1 : 0;
  c.files = trace.files.size();
  return c;
}

namespace detail {

std::string first_words_after(const Trace& trace, std::size_t failed_turn,
                              std::optional<std::size_t> until_turn) {
  // Words that belong to the failure: said before its fix (or retry), before the user speaks
  // again, and within a few of the agent's turns — not whatever it said much later.
  constexpr int kAssistantTurns = 3;
  int seen = 0;
  for (std::size_t t = failed_turn + 1; t < trace.turns.size(); ++t) {
    if (until_turn && t > *until_turn) break;
    const Turn& turn = trace.turns[t];
    if (turn.role == Role::user && !turn.meta && !text::trim(turn.text).empty()) break;
    if (turn.role != Role::assistant) continue;
    if (++seen > kAssistantTurns) break;
    const std::string said = text::trim(turn.text.empty() ? turn.thinking : turn.text);
    if (said.empty()) continue;
    return text::excerpt(said, 400);
  }
  return {};
}

}  // namespace detail

}  // namespace upskill::trace
