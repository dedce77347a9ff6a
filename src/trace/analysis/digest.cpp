// The trace digest (see digest.hpp): each section gets a share of the budget in order of
// importance, unused tokens flow to the next, and items are chosen by importance (latest errors and
// fixes first, build configuration before sources) but printed in the order they happened.
#include "upskill/trace/digest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>

#include "analysis.hpp"
#include "tool_kinds.hpp"
#include "upskill/core/text.hpp"
#include "upskill/core/unicode.hpp"

namespace upskill::trace {

namespace {

std::size_t tokens_of(std::string_view s) {
  return text::estimate_tokens(s);
}

// A message's text as a block of the digest: every code fence it opens closed at its end (a text
// cut inside a fenced block, or one that never closed its fence, would otherwise swallow the rest
// of the digest into its block), and its headings outside the fences escaped ("\\## Summary"), so
// that none reads as a section of the digest. Fences are CommonMark's: three or more backticks or
// tildes at the start of a line (up to three spaces in), closed by a line of at least as many of
// the same; a heading is one to six '#' there, then a space or the line's end.
std::string with_fences_closed(std::string text) {
  std::string open;  // the fence that is open, "" when none
  std::string out;
  out.reserve(text.size() + 8);
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line(text.data() + at, end - at);
    std::size_t indent = 0;
    while (indent < line.size() && indent < 4 && line[indent] == ' ') ++indent;
    bool heading = false;
    if (indent < 4 && indent < line.size() && (line[indent] == '`' || line[indent] == '~')) {
      const char mark = line[indent];
      std::size_t n = 0;
      while (indent + n < line.size() && line[indent + n] == mark) ++n;
      const std::string_view rest = line.substr(indent + n);
      if (n >= 3) {
        if (open.empty()) {
          if (mark == '~' || rest.find('`') == std::string_view::npos) open.assign(n, mark);
        } else if (mark == open[0] && n >= open.size() &&
                   rest.find_first_not_of(" \t") == std::string_view::npos) {
          open.clear();
        }
      }
    } else if (open.empty() && indent < 4 && indent < line.size() && line[indent] == '#') {
      std::size_t n = 0;
      while (indent + n < line.size() && line[indent + n] == '#') ++n;
      heading = n <= 6 &&
                (indent + n == line.size() || line[indent + n] == ' ' || line[indent + n] == '\t');
    }
    if (heading) {
      out.append(line.substr(0, indent));
      out += '\\';
      out.append(line.substr(indent));
    } else {
      out.append(line);
    }
    if (end < text.size()) out += '\n';
    at = end + 1;
  }
  if (!open.empty()) out += (out.empty() || out.back() == '\n' ? "" : "\n") + open;
  return out;
}

// Where a cut inside a line falls: at the word boundary (a space) at or before `at` when there is
// one within 40 bytes of it, else on a character — not inside a run of letters and digits (a
// Latin word amid text written without spaces, "這個bot").
std::size_t word_start(std::string_view text, std::size_t at) {
  at = std::min(at, text.size());
  for (std::size_t i = at, stop = at > 40 ? at - 40 : 0; i > stop; --i)
    if (text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n') return i;
  while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  const std::size_t from = at;
  while (at > 0 && at < text.size() && from - at < 40 && word_char(text[at - 1]) &&
         word_char(text[at]))
    --at;
  return at > 0 && at < text.size() && word_char(text[at - 1]) && word_char(text[at]) ? from : at;
}

// `text` cut to about `bytes`: whole lines from the head (a third) and the tail (the rest: errors
// and results sit at the end), the lines between marked with what they held. Only a text in
// which not one whole line fits (a prompt on one line, a minified file) is cut inside its lines,
// then between words.
std::string cut_lines(std::string_view text, const std::vector<std::string>& lines,
                      std::size_t bytes) {
  std::size_t head = 0, head_bytes = 0;
  while (head < lines.size() && head_bytes + lines[head].size() + 1 <= bytes / 3)
    head_bytes += lines[head++].size() + 1;
  std::size_t tail = lines.size(), tail_bytes = 0;
  while (tail > head && head_bytes + tail_bytes + lines[tail - 1].size() + 1 <= bytes - 60)
    tail_bytes += lines[--tail].size() + 1;
  const std::size_t omitted_bytes = text.size() - std::min(text.size(), head_bytes + tail_bytes);
  if (head + (lines.size() - tail) == 0) {
    const std::size_t keep_head = word_start(text, bytes / 3);
    std::size_t tail_from =
        word_start(text, text.size() - std::min(text.size(), bytes * 2 / 3 - 60));
    tail_from = std::max(tail_from, keep_head);
    return std::string(text.substr(0, keep_head)) +
           fmt::format("[… {} bytes omitted …]", tail_from - keep_head) +
           (tail_from < text.size() ? " " + std::string(text.substr(tail_from)) : "");
  }
  std::string out;
  for (std::size_t i = 0; i < head; ++i) out += lines[i] + "\n";
  out += fmt::format("[… {} line(s), {} bytes omitted …]\n", tail - head, omitted_bytes);
  for (std::size_t i = tail; i < lines.size(); ++i) out += lines[i] + "\n";
  if (!text.ends_with('\n') && !out.empty()) out.pop_back();
  return out;
}

// `text` within `tokens`, and whether it had to be shortened. Token estimates vary with the text,
// so the cut is sized again until it uses nearly all of `tokens` without passing it.
std::string fit(std::string_view text, std::size_t tokens, bool* shortened = nullptr) {
  if (tokens_of(text) <= tokens) return std::string(text);
  if (shortened) *shortened = true;
  const std::vector<std::string> lines = text::split_lines(text);
  std::size_t bytes = std::max<std::size_t>(120, tokens * 3);
  std::string best;
  for (int round = 0; round < 5; ++round) {
    std::string out = cut_lines(text, lines, bytes);
    const std::size_t used = std::max<std::size_t>(1, tokens_of(out));
    if (used <= tokens && out.size() > best.size()) best = out;
    if (used <= tokens && used * 100 >= tokens * 96) break;
    const std::size_t next = std::max<std::size_t>(120, bytes * tokens / used * 99 / 100);
    if (next == bytes) break;
    bytes = next;
  }
  return best.empty() ? bound_text(text, std::max<std::size_t>(120, tokens * 3)) : best;
}

struct SectionText {
  std::string text;
  DigestSection info;
};

std::string turn_label(const Trace& trace, std::size_t turn) {
  return fmt::format("turn {}/{}", turn + 1, trace.turns.size());
}

std::string summary_block(const Trace& trace, std::size_t turn, const std::string& summary) {
  return fmt::format(
      "**Summary of the conversation before it was compacted ({}), written by the "
      "agent's harness:**\n{}\n\n",
      turn_label(trace, turn), with_fences_closed(text::trim(summary)));
}

SectionText goals(const Trace& trace, std::size_t budget) {
  SectionText out;
  out.info.name = "goals";
  std::vector<std::size_t> prompts;
  for (std::size_t i = 0; i < trace.turns.size(); ++i) {
    const Turn& t = trace.turns[i];
    if (t.role == Role::user && !t.meta && !t.sidechain && !text::trim(t.text).empty())
      prompts.push_back(i);
  }
  // Claude Code's summary of the conversation before a compaction (the newest): where the prompts
  // before it are gone, the only record of the task. A share of its own, shown where it happened
  // relative to the task.
  std::string summary;
  std::size_t summary_turn = 0;
  for (std::size_t i = 0; i < trace.turns.size(); ++i)
    if (trace.turns[i].compaction_summary && !text::trim(trace.turns[i].text).empty())
      summary_turn = i;
  if (summary_turn || (!trace.turns.empty() && trace.turns[0].compaction_summary)) {
    bool c = false;
    summary = fit(trace.turns[summary_turn].text, std::max<std::size_t>(budget / 4, 150), &c);
    out.info.shortened += c ? 1 : 0;
  }
  if (prompts.empty() && summary.empty()) return out;
  const std::size_t summary_tokens = tokens_of(summary);
  budget -= std::min(budget, summary_tokens);
  if (prompts.empty()) {
    out.text =
        "## The user's goals and corrections\n\n" + summary_block(trace, summary_turn, summary);
    return out;
  }
  // The first prompt states the task; later ones are corrections and new requests.
  std::vector<std::string> parts(prompts.size());
  std::size_t left = budget;
  bool cut = false;
  parts[0] = fit(trace.turns[prompts[0]].text, std::max<std::size_t>(budget * 2 / 5, 200), &cut);
  out.info.shortened += cut ? 1 : 0;
  left -= std::min(left, tokens_of(parts[0]));
  // Later prompts, newest first, each with an even share of what is left.
  std::size_t included = 1;
  for (std::size_t k = prompts.size(); k-- > 1;) {
    const std::size_t share = std::max<std::size_t>(left / k, 60);
    if (left < 60) break;
    bool c = false;
    parts[k] = fit(trace.turns[prompts[k]].text, std::min(share, left), &c);
    out.info.shortened += c ? 1 : 0;
    left -= std::min(left, tokens_of(parts[k]));
    ++included;
  }
  out.info.items = included;
  out.info.omitted = prompts.size() - included;
  out.text = "## The user's goals and corrections\n\n";
  std::size_t skipped = 0;
  for (std::size_t k = 0; k < prompts.size(); ++k) {
    if (parts[k].empty()) {
      ++skipped;
      continue;
    }
    if (skipped) out.text += fmt::format("[… {} earlier message(s) omitted …]\n\n", skipped);
    skipped = 0;
    // In the order they happened: the summary before the task when the task came after it.
    if (k == 0 && !summary.empty() && summary_turn < prompts[0])
      out.text += summary_block(trace, summary_turn, summary);
    out.text +=
        fmt::format("**{} ({}):**\n{}\n\n", k == 0 ? "Task" : "User", turn_label(trace, prompts[k]),
                    with_fences_closed(text::trim(parts[k])));
    if (k == 0 && !summary.empty() && summary_turn > prompts[0])
      out.text += summary_block(trace, summary_turn, summary);
  }
  return out;
}

// One line of an error output as it was — its indentation and spacing are its shape (a
// traceback's nesting, a compiler's caret under the column) — cut at `width` bytes (on a
// character) with "…"; only trailing whitespace goes.
std::string output_line(std::string_view line, std::size_t width) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
    line.remove_suffix(1);
  if (line.size() <= width) return std::string(line);
  const std::size_t cut = word_start(line, width);
  return std::string(line.substr(0, cut)) + "…";
}

// A fence for `body`: backticks, more of them than any run of backticks that starts a line of it,
// so that the body's own fences stay inside.
std::string fence_for(std::string_view body) {
  std::size_t longest = 0;
  for (std::size_t at = 0; at < body.size();) {
    std::size_t i = at;
    while (i < body.size() && i < at + 3 && body[i] == ' ') ++i;
    std::size_t n = 0;
    while (i + n < body.size() && body[i + n] == '`') ++n;
    longest = std::max(longest, n);
    const std::size_t end = body.find('\n', at);
    at = end == std::string_view::npos ? body.size() : end + 1;
  }
  return std::string(std::max<std::size_t>(3, longest + 1), '`');
}

// The lines of an error output worth reading within `tokens`: those naming an error, and the
// tail; more of both, and longer lines, when the budget has room (a share of the errors section's
// budget, at least 660 tokens).
std::string error_excerpt(const std::string& output, std::size_t tokens) {
  const std::size_t each = std::max<std::size_t>(12, tokens / 55);  // lines of each kind
  const std::size_t width = tokens >= 2000 ? 1000 : 300;            // bytes of a line
  static constexpr std::string_view kWords[] = {"error",     "Error",    "ERROR",     "FAILED",
                                                "failed",    "fatal",    "undefined", "Traceback",
                                                "Exception", "mismatch", "not found"};
  auto interesting = [](std::string_view line) {
    line = line.substr(0, 2000);
    for (auto w : kWords)
      if (line.find(w) != std::string_view::npos) return true;
    return false;
  };
  const std::vector<std::string> lines = text::split_lines(output);
  std::vector<std::size_t> keep;
  for (std::size_t i = 0; i < lines.size() && keep.size() < each; ++i)
    if (interesting(lines[i])) keep.push_back(i);
  for (std::size_t i = lines.size() > each ? lines.size() - each : 0; i < lines.size(); ++i)
    keep.push_back(i);
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  std::string out;
  std::size_t prev = 0;
  for (std::size_t k = 0; k < keep.size(); ++k) {
    if (k > 0 && keep[k] != prev + 1) out += "…\n";
    out += output_line(lines[keep[k]], width) + "\n";
    prev = keep[k];
  }
  return fit(out, tokens);
}

// One failure for the digest: a failing command with its fix, or a tool call the tool refused (a
// write, an edit whose old text was not found, a read of a missing file) with what came next.
struct Failure {
  std::size_t turn = 0, call = 0;
  std::string head;    // "### ✗ …"
  std::string output;  // the error, excerpted (by errors_and_fixes, once it knows their number)
  std::string after;   // the agent's words and the fix
};

// A call's main argument: the path, pattern, URL or text it worked on.
std::string target_of(const ToolCall& call) {
  return detail::input_string(call.input, {"file_path", "path", "filename", "target_file",
                                           "notebook_path", "pattern", "url", "query", "argument"});
}

Failure command_failure(const Trace& trace, const ErrorFix& fix) {
  const CommandRun& failed = trace.commands[fix.failed];
  Failure f{failed.turn, failed.call, {}, {}, {}};
  f.head = fmt::format("### ✗ `{}` ({}{})\n", text::excerpt(failed.command, 300),
                       turn_label(trace, failed.turn),
                       failed.exit_code ? fmt::format(", exit {}", *failed.exit_code) : "");
  if (!fix.explanation.empty()) f.after += "Agent: " + fix.explanation + "\n";
  if (!fix.files_changed.empty())
    f.after += "Changed up to the next success: " + text::join(fix.files_changed, ", ") + "\n";
  if (fix.fixed_by) {
    const CommandRun& ok = trace.commands[*fix.fixed_by];
    f.after += fmt::format("Fixed: `{}` succeeded at {}\n", text::excerpt(ok.command, 300),
                           turn_label(trace, ok.turn));
  } else {
    f.after += "Not fixed: this command never succeeded later in the trace.\n";
  }
  return f;
}

// Refused tool calls (not commands: those have their fixes), each with the agent's next words and
// the next call of the same tool on the same target that succeeded.
std::vector<Failure> tool_failures(const Trace& trace) {
  using Position = std::pair<std::size_t, std::size_t>;  // (turn, call)
  std::vector<Position> failed;
  for (std::size_t t = 0; t < trace.turns.size(); ++t)
    for (std::size_t c = 0; c < trace.turns[t].tool_calls.size(); ++c) {
      const ToolCall& call = trace.turns[t].tool_calls[c];
      if (call.is_error && classify_tool(call) != ToolKind::shell) failed.emplace_back(t, c);
    }
  if (failed.empty()) return {};
  // Where each (tool, target) succeeded, in order: one pass, then a search per failure.
  std::map<std::pair<std::string, std::string>, std::vector<Position>> succeeded;
  for (std::size_t t = 0; t < trace.turns.size(); ++t)
    for (std::size_t c = 0; c < trace.turns[t].tool_calls.size(); ++c) {
      const ToolCall& call = trace.turns[t].tool_calls[c];
      if (!call.is_error) succeeded[{call.name, target_of(call)}].emplace_back(t, c);
    }
  std::vector<Failure> out;
  for (const auto& [t, c] : failed) {
    const ToolCall& call = trace.turns[t].tool_calls[c];
    const std::string target = target_of(call);
    Failure f{t, c, {}, {}, {}};
    f.head = fmt::format("### ✗ {}({}) failed ({})\n", call.name, text::excerpt(target, 200),
                         turn_label(trace, t));
    std::string retry = "Not retried: no later " + call.name + " of the same target succeeded.\n";
    // A call a /export shows only collapsed ("Listed 1 directory · 1 failed") has no target: what
    // it ran, and whether it was run again, are not shown.
    const bool collapsed =
        detail::input_string(call.input, {"command"}).starts_with("(collapsed in the export");
    if (collapsed)
      retry = "The export shows this call collapsed: what it ran and any retry are not shown.\n";
    std::optional<std::size_t> retried_at;
    if (auto it = succeeded.find({call.name, target}); !collapsed && it != succeeded.end()) {
      const auto next = std::upper_bound(it->second.begin(), it->second.end(), Position{t, c});
      if (next != it->second.end()) {
        retried_at = next->first;
        retry = fmt::format("Then: {}({}) succeeded at {}\n", call.name, text::excerpt(target, 200),
                            turn_label(trace, next->first));
      }
    }
    if (const std::string said = detail::first_words_after(trace, t, retried_at); !said.empty())
      f.after = "Agent: " + said + "\n";
    f.after += retry;
    out.push_back(std::move(f));
  }
  return out;
}

// An entry within `left` tokens: the error output is what gets shortened (on line boundaries),
// never the heading, the fences or the fix.
std::string failure_entry(const Failure& f, std::size_t left, bool& cut) {
  auto render = [&](const std::string& output) {
    const std::string fence = fence_for(output);
    return f.head + (text::trim(output).empty() ? "" : fence + "\n" + output + fence + "\n") +
           f.after;
  };
  std::string e = render(f.output);
  if (tokens_of(e) <= left) return e;
  const std::size_t frame = tokens_of(render(""));
  cut = true;
  if (left > frame + 40) {
    std::string output = fit(f.output, left - frame - 20);
    if (!output.ends_with('\n')) output += '\n';
    return render(output);
  }
  return fit(render(""), left);
}

SectionText errors_and_fixes(const Trace& trace, std::size_t budget) {
  SectionText out;
  out.info.name = "errors and fixes";
  std::vector<Failure> failures = tool_failures(trace);
  for (const ErrorFix& fix : trace.fixes) failures.push_back(command_failure(trace, fix));
  if (failures.empty()) return out;
  std::stable_sort(failures.begin(), failures.end(), [](const Failure& a, const Failure& b) {
    return std::pair(a.turn, a.call) < std::pair(b.turn, b.call);
  });
  // Each error's output gets an even share of the section, at least 660 tokens: a long build log
  // keeps more of its lines when there are few failures (the budget is used before it is cut).
  const std::size_t excerpt_tokens =
      std::clamp<std::size_t>(budget / failures.size() * 4 / 5, 660, 6000);
  for (Failure& f : failures)
    f.output = error_excerpt(trace.turns[f.turn].tool_calls[f.call].result, excerpt_tokens);
  std::vector<std::string> entries(failures.size());
  std::size_t left = budget;
  // Newest first: the last error and its fix are what the final state depends on.
  for (std::size_t k = failures.size(); k-- > 0;) {
    if (left < 150) {
      ++out.info.omitted;
      continue;
    }
    bool cut = false;
    entries[k] = failure_entry(failures[k], left, cut);
    out.info.shortened += cut ? 1 : 0;
    left -= std::min(left, tokens_of(entries[k]));
    ++out.info.items;
  }
  out.text = fmt::format("## Errors and their fixes ({} failure(s))\n\n", failures.size());
  if (out.info.omitted)
    out.text +=
        fmt::format("[… {} earlier failure(s) omitted for the budget …]\n\n", out.info.omitted);
  for (const auto& e : entries)
    if (!e.empty()) out.text += e + "\n";
  return out;
}

// Build configuration first, then sources, then the rest.
int file_rank(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  const std::string ext = fs::path(path).extension().string();
  for (const char* n : {"build.toml", "CMakeLists.txt", "setup.py", "pyproject.toml", "flake.nix",
                        "Makefile", "Cargo.toml", "package.json"})
    if (name == n) return 0;
  for (const char* e : {".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp", ".py", ".rs", ".go",
                        ".ts", ".js", ".metal", ".java", ".sh"})
    if (ext == e) return 1;
  return 2;
}

std::string fence_language(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".cu" || ext == ".cuh") return "cuda";
  if (ext == ".cpp" || ext == ".cc" || ext == ".h" || ext == ".hpp") return "cpp";
  if (ext == ".py") return "python";
  if (ext == ".toml") return "toml";
  if (ext == ".sh") return "bash";
  if (ext == ".json") return "json";
  if (ext == ".md") return "markdown";
  return "";
}

// A fence longer than any backtick run in the content.
std::string fence_for(const std::string& content) {
  std::size_t longest = 0, run = 0;
  for (char c : content) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::string(std::max<std::size_t>(3, longest + 1), '`');
}

// The files' share of `budget`, in the order given (most important first): every file that fits
// gets its floor first — its overhead (head and fences) and 100 tokens of contents, or all it needs
// if less; the least important are left out when not every floor fits — then what is left is shared
// evenly over what they need beyond it, a file that needs less than its share leaving the
// difference to the others. The grants never add up to more than `budget`. 0: the file is left out.
std::vector<std::size_t> share_budget(const std::vector<std::size_t>& overheads,
                                      const std::vector<std::size_t>& needs, std::size_t budget) {
  std::vector<std::size_t> grants(needs.size(), 0);
  std::vector<std::size_t> in;  // the files that get in
  std::size_t left = budget;
  for (std::size_t i = 0; i < needs.size(); ++i) {
    const std::size_t floor = std::min(needs[i], overheads[i] + 100);
    if (floor > left) continue;
    grants[i] = floor;
    left -= floor;
    in.push_back(i);
  }
  std::stable_sort(in.begin(), in.end(), [&](std::size_t a, std::size_t b) {
    return needs[a] - grants[a] < needs[b] - grants[b];
  });
  for (std::size_t k = 0; k < in.size(); ++k) {
    const std::size_t more = std::min(needs[in[k]] - grants[in[k]], left / (in.size() - k));
    grants[in[k]] += more;
    left -= more;
  }
  return grants;
}

SectionText artifacts(const Trace& trace, std::size_t budget) {
  SectionText out;
  out.info.name = "final files";
  std::vector<const FileTouch*> known, unknown;
  for (const FileTouch& f : trace.files) {
    if (f.deleted) continue;
    (f.content || !f.shown.empty() ? known : unknown).push_back(&f);
  }
  if (known.empty() && unknown.empty()) return out;
  std::stable_sort(known.begin(), known.end(), [](const FileTouch* a, const FileTouch* b) {
    const int ra = file_rank(a->path), rb = file_rank(b->path);
    if (ra != rb) return ra < rb;
    return a->last_turn > b->last_turn;
  });
  // A partly known file (a Claude /export shows some of its lines) is given as far as it is known,
  // its gaps marked.
  std::vector<std::string> heads;
  std::vector<std::size_t> overheads, needs;  // tokens: head and fences, and the whole block
  for (const FileTouch* f : known) {
    heads.push_back(f->content ? fmt::format("### {} ({} bytes, {} write(s), {} edit(s))\n",
                                             f->path, f->size(), f->writes, f->edits)
                               : fmt::format("### {} (partly shown in the trace — missing {}; {} "
                                             "write(s), {} edit(s))\n",
                                             f->path, f->missing, f->writes, f->edits));
    overheads.push_back(tokens_of(heads.back()) + 10);
    needs.push_back(overheads.back() + tokens_of(f->content ? *f->content : f->shown));
  }
  // A file the trace never showed whole is named with the reason, and what the agent changed in it
  // — its edits' old lines, then new ones — shares the budget like a file's contents.
  std::vector<std::string> diffs;
  for (const FileTouch* f : unknown) {
    std::string diff;
    for (const auto& [old_text, new_text] : f->hunks) {
      if (!diff.empty()) diff += "...\n";
      for (const auto& line : text::split_lines(old_text)) diff += "- " + line + "\n";
      for (const auto& line : text::split_lines(new_text)) diff += "+ " + line + "\n";
    }
    diffs.push_back(std::move(diff));
    overheads.push_back(tokens_of(f->path) + tokens_of(f->unknown_reason) + 12);
    needs.push_back(overheads.back() + tokens_of(diffs.back()));
  }
  const std::vector<std::size_t> grants = share_budget(overheads, needs, budget);
  std::string body;
  for (std::size_t i = 0; i < known.size(); ++i) {
    const FileTouch* f = known[i];
    const std::string& head = heads[i];
    if (grants[i] == 0) {
      ++out.info.omitted;
      continue;
    }
    bool cut = false;
    const std::string content =
        fit(f->content ? *f->content : f->shown, grants[i] - overheads[i], &cut);
    const std::string fence = fence_for(content);
    std::string block = head + fence + fence_language(f->path) + "\n" + content +
                        (content.ends_with('\n') ? "" : "\n") + fence + "\n\n";
    out.info.shortened += cut ? 1 : 0;
    body += block;
    ++out.info.items;
  }
  std::string touched;
  for (std::size_t u = 0; u < unknown.size(); ++u) {
    const std::size_t grant = grants[known.size() + u];
    if (grant == 0) {
      ++out.info.omitted;
      continue;
    }
    touched += fmt::format("- {}: {}\n", unknown[u]->path, unknown[u]->unknown_reason);
    ++out.info.items;
    if (diffs[u].empty() || grant <= overheads[known.size() + u]) continue;
    bool cut = false;
    const std::string diff = fit(diffs[u], grant - overheads[known.size() + u], &cut);
    out.info.shortened += cut ? 1 : 0;
    const std::string fence = fence_for(diff);
    touched += "\n" + fence + "diff\n" + diff + (diff.ends_with('\n') ? "" : "\n") + fence + "\n";
  }
  out.text = "## Final versions of the files the agent wrote\n\n";
  if (out.info.omitted)
    out.text += fmt::format("[… {} file(s) omitted for the budget …]\n\n", out.info.omitted);
  out.text += body;
  if (!touched.empty())
    out.text += "Also touched (contents not recoverable from the trace):\n" + touched + "\n";
  return out;
}

// Words a teacher learns the reasons from: what the agent said, and what the agents it delegated
// to reported back — a Task or Agent call's result (Claude Code), opencode's task and
// Codex's wait on its other agents — in the order they came.
struct Said {
  std::size_t turn = 0;
  std::string_view text;
  std::string who;  // "Agent" or "Subagent report: <what it was asked>"
};

std::vector<Said> said_in(const Trace& trace) {
  static constexpr std::string_view kDelegations[] = {"Task", "Agent", "task", "wait"};
  std::vector<Said> said;
  for (std::size_t i = 0; i < trace.turns.size(); ++i) {
    const Turn& t = trace.turns[i];
    if (t.role != Role::assistant || t.sidechain) continue;
    if (!text::trim(t.text).empty()) said.push_back({i, t.text, "Agent"});
    for (const ToolCall& call : t.tool_calls) {
      if (!call.has_result || call.is_error || text::trim(call.result).empty() ||
          std::find(std::begin(kDelegations), std::end(kDelegations), call.name) ==
              std::end(kDelegations))
        continue;
      const std::string asked = detail::input_string(call.input, {"description", "prompt"});
      said.push_back({i, call.result,
                      "Subagent report" + (asked.empty() ? "" : ": " + text::excerpt(asked, 80))});
    }
  }
  return said;
}

SectionText decisions(const Trace& trace, std::size_t budget) {
  SectionText out;
  out.info.name = "decisions";
  const std::vector<Said> said = said_in(trace);
  if (said.empty()) return out;
  // The agent's last message is usually its summary of what it did: most of it.
  std::size_t last = said.size() - 1;
  for (std::size_t k = said.size(); k-- > 0;)
    if (said[k].who == "Agent") {
      last = k;
      break;
    }
  std::vector<std::string> parts(said.size());
  std::size_t left = budget;
  bool cut = false;
  parts[last] = fit(said[last].text, std::max<std::size_t>(budget * 2 / 5, 150), &cut);
  out.info.shortened += cut ? 1 : 0;
  left -= std::min(left, tokens_of(parts[last]));
  out.info.items = 1;
  // The others whole when they all fit in what is left; else each gets an equal share of it (150
  // tokens at least, the newest first), cut on line boundaries.
  std::size_t all_others = 0;
  for (std::size_t k = 0; k < said.size(); ++k)
    if (k != last) all_others += tokens_of(text::trim(said[k].text));
  const std::size_t share =
      all_others <= left
          ? left
          : std::max<std::size_t>(150, left / std::max<std::size_t>(1, said.size() - 1));
  for (std::size_t k = said.size(); k-- > 0;) {
    if (k == last) continue;
    if (left < 40) {
      out.info.omitted = k + (k < last ? 1 : 0);
      break;
    }
    bool shortened = false;
    std::string e = fit(text::trim(said[k].text), std::min(share, left), &shortened);
    out.info.shortened += shortened ? 1 : 0;
    left -= std::min(left, tokens_of(e));
    parts[k] = std::move(e);
    ++out.info.items;
  }
  out.text = "## What the agent said and decided\n\n";
  if (out.info.omitted)
    out.text += fmt::format("[… {} earlier message(s) omitted …]\n\n", out.info.omitted);
  for (std::size_t k = 0; k < said.size(); ++k) {
    if (parts[k].empty()) continue;
    const std::string said_text = with_fences_closed(text::trim(parts[k]));
    // A message that starts with a block starts on a line of its own: a fence on the label's
    // line opens nothing, and its closing fence would open a block instead.
    const bool block = said_text.starts_with("```") || said_text.starts_with("~~~");
    out.text += fmt::format("**{} ({}{}):**{}{}\n\n", said[k].who, turn_label(trace, said[k].turn),
                            k == last ? ", last" : "", block ? "\n" : " ", said_text);
  }
  return out;
}

SectionText timeline(const Trace& trace, std::size_t budget) {
  SectionText out;
  out.info.name = "commands";
  if (trace.commands.empty()) return out;
  std::vector<std::string> lines;
  for (const CommandRun& c : trace.commands)
    lines.push_back(fmt::format("- {} `{}`{}{}",
                                c.failed     ? "✗"
                                : c.answered ? "✓"
                                             : "?",
                                text::excerpt(c.command, 160),
                                c.exit_code  ? fmt::format(" (exit {})", *c.exit_code)
                                : c.answered ? ""
                                             : " (no result recorded)",
                                c.sidechain ? " [subagent]" : ""));
  std::string all = text::join(lines, "\n");
  out.text = fmt::format("## Commands run ({}, {} failed)\n\n", trace.commands.size(),
                         std::count_if(trace.commands.begin(), trace.commands.end(),
                                       [](const CommandRun& c) { return c.failed; }));
  if (tokens_of(all) <= budget) {
    out.info.items = lines.size();
    out.text += all + "\n\n";
    return out;
  }
  // The first few and as many of the last as fit.
  std::size_t left = budget;
  std::vector<std::string> head, tail;
  for (std::size_t i = 0; i < std::min<std::size_t>(5, lines.size()); ++i) {
    if (tokens_of(lines[i]) > left) break;
    left -= tokens_of(lines[i]);
    head.push_back(lines[i]);
  }
  for (std::size_t i = lines.size(); i-- > head.size();) {
    if (tokens_of(lines[i]) + 1 > left) break;
    left -= tokens_of(lines[i]) + 1;
    tail.insert(tail.begin(), lines[i]);
  }
  out.info.items = head.size() + tail.size();
  out.info.omitted = lines.size() - out.info.items;
  out.text += text::join(head, "\n") +
              fmt::format("\n- [… {} command(s) omitted …]\n", out.info.omitted) +
              text::join(tail, "\n") + "\n\n";
  return out;
}

std::string header(const Trace& trace) {
  const TraceCounts c = count(trace);
  std::string h = fmt::format(
      "# Digest of an agent trace\n\nSource: {} — {}{}; {} turn(s): {} user prompt(s), {} "
      "assistant message(s), {} tool call(s), {} command(s) ({} failed), {} file(s) written or "
      "edited.\n",
      trace.source.filename().string(), to_string(trace.format),
      trace.format_version.empty() ? "" : " (" + trace.format_version + ")", c.turns,
      c.user_prompts, c.assistant_messages, c.tool_calls, c.commands, c.failed_commands, c.files);
  if (!trace.models.empty()) h += "Models: " + text::join(trace.models, ", ") + "\n";
  if (!trace.cwd.empty()) h += "Working directory: " + trace.cwd + "\n";
  // What broke the run itself: the first lines a teacher must see, whatever else was cut.
  for (std::size_t i = 0; i < std::min<std::size_t>(trace.run_errors.size(), 5); ++i)
    h += "The run failed: " + bound_text(trace.run_errors[i], 600) + "\n";
  if (trace.run_errors.size() > 5)
    h += fmt::format("[… {} more run error(s) …]\n", trace.run_errors.size() - 5);
  return h + "\n";
}

// Shares in order of importance; what a section leaves unused flows to the next.
struct Plan {
  SectionText (*build)(const Trace&, std::size_t);
  std::size_t percent;
};
constexpr Plan kPlans[] = {
    {goals, 15}, {errors_and_fixes, 25}, {artifacts, 40}, {decisions, 15}, {timeline, 5}};

// The budget is used before anything is cut: what the sections left unused goes to those that had
// to shorten or leave out items, most important first.
void spend_the_rest(const Trace& trace, std::size_t usable, std::vector<SectionText>& built) {
  for (std::size_t i = 0; i < built.size(); ++i) {
    std::size_t used = 0;
    for (const auto& b : built) used += b.info.tokens;
    if (used >= usable) return;
    if (built[i].info.shortened + built[i].info.omitted == 0) continue;
    const std::size_t more = built[i].info.tokens + (usable - used);
    SectionText s = kPlans[i].build(trace, more);
    s.info.tokens = tokens_of(s.text);
    if (s.info.tokens <= more) built[i] = std::move(s);
  }
}

}  // namespace

namespace {

// "ghp_", "gho_", "ghu_", "ghs_" or "ghr_" somewhere in `text`.
bool has_github_token_prefix(std::string_view text) {
  for (std::size_t at = text.find("gh"); at != std::string_view::npos; at = text.find("gh", at + 1))
    if (at + 3 < text.size() &&
        std::string_view("pousr").find(text[at + 2]) != std::string_view::npos &&
        text[at + 3] == '_')
      return true;
  return false;
}

// A value given to a name that says it holds a secret: a URL without credentials, a path or a
// number is what such names are also given (TOKEN_URL=https://…, TOKEN_FILE=/run/…,
// MAX_TOKENS=100000), and is kept.
bool names_no_secret(std::string_view value) {
  const auto scheme = value.find("://");
  if (scheme != std::string_view::npos && scheme > 0 &&
      value.substr(0, scheme).find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") ==
          std::string_view::npos) {
    const std::string_view rest = value.substr(scheme + 3);
    return rest.substr(0, rest.find('/')).find('@') == std::string_view::npos;
  }
  if (value.front() == '/' || value.substr(0, 2) == "./" || value.substr(0, 2) == "~/") return true;
  return value.find_first_not_of("0123456789._") == std::string_view::npos;
}

}  // namespace

std::string redact_secrets(std::string_view text, std::size_t* count) {
  // Each rule's regex runs only when the text holds a literal every match of it contains: a
  // std::regex scan of a digest costs tenths of a second, a find a millisecond. A rule may keep a
  // match its regex cannot tell from a secret (`keep`).
  struct Rule {
    std::regex re;
    std::string with;
    std::vector<std::string_view> needs;  // empty: has_github_token_prefix
    bool (*keep)(const std::smatch& match) = nullptr;
  };
  static const std::vector<Rule> rules = [] {
    std::vector<Rule> r;
    auto add = [&](const char* re, const char* with, std::vector<std::string_view> needs,
                   bool (*keep)(const std::smatch&) = nullptr) {
      r.push_back({std::regex(re), with, std::move(needs), keep});
    };
    add(R"(sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,})", "[REDACTED]", {"sk-"});
    add(R"(\bhf_[A-Za-z0-9]{20,})", "[REDACTED]", {"hf_"});
    add(R"(\bgh[pousr]_[A-Za-z0-9]{30,})", "[REDACTED]", {});
    add(R"(\bgithub_pat_[A-Za-z0-9_]{30,})", "[REDACTED]", {"github_pat_"});
    add(R"(\bAKIA[0-9A-Z]{16}\b)", "[REDACTED]", {"AKIA"});
    add(R"(\bxox[baprs]-[A-Za-z0-9\-]{10,})", "[REDACTED]", {"xox"});
    add(R"((Bearer|bearer)\s+[A-Za-z0-9._~+/\-]{16,}=*)", "$1 [REDACTED]", {"earer"});
    // NAME=value and NAME: value where NAME says it is a key, token, secret or password.
    add(R"(\b([A-Z][A-Z0-9_]*(?:API_KEY|TOKEN|SECRET|PASSWORD|PASSWD)[A-Z0-9_]*)(\s*[=:]\s*)(['"]?)([^\s'"$]{6,}))",
        "$1$2$3[REDACTED]", {"API_KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"},
        [](const std::smatch& m) {
          return names_no_secret(
              std::string_view(&*m[4].first, static_cast<std::size_t>(m[4].length())));
        });
    return r;
  }();
  std::string out(text);
  std::size_t n = 0;
  for (const Rule& rule : rules) {
    bool may_match = rule.needs.empty() && has_github_token_prefix(out);
    for (std::string_view literal : rule.needs)
      may_match = may_match || out.find(literal) != std::string::npos;
    if (!may_match) continue;
    std::string replaced;
    auto kept = out.cbegin();
    for (std::sregex_iterator m(out.begin(), out.end(), rule.re), end; m != end; ++m) {
      if (rule.keep && rule.keep(*m)) continue;
      replaced.append(kept, (*m)[0].first);
      replaced += m->format(rule.with);
      kept = (*m)[0].second;
      ++n;
    }
    replaced.append(kept, out.cend());
    out = std::move(replaced);
  }
  if (count) *count = n;
  return out;
}

namespace {

// Text a terminal would have drawn, as text: ANSI escape sequences (colours, cursor moves) and
// control characters other than newline and tab go — a NUL between the characters of UTF-16
// output included — and a carriage return ends a line.
std::string without_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0x1B && i + 1 < text.size() && (text[i + 1] == '[' || text[i + 1] == ']')) {
      // CSI: parameters up to a final byte in @–~; OSC: up to BEL or ESC backslash.
      const bool osc = text[i + 1] == ']';
      std::size_t j = i + 2;
      while (j < text.size() &&
             (osc ? text[j] != '\a' && text[j] != 0x1B : !(text[j] >= '@' && text[j] <= '~')))
        ++j;
      if (osc && j < text.size() && text[j] == 0x1B) ++j;  // ESC \ ends it too
      i = std::min(j, text.size() - 1);
      continue;
    }
    if (c == '\r') {
      if (i + 1 < text.size() && text[i + 1] == '\n') continue;
      out += '\n';
      continue;
    }
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) continue;
    out += static_cast<char>(c);
  }
  return out;
}

}  // namespace

TraceDigest make_digest(const Trace& trace, const DigestOptions& options) {
  TraceDigest d;
  d.budget = options.token_budget;
  const std::string head = header(trace);
  // Headings and markers need a little room of their own.
  const std::size_t usable = options.token_budget > tokens_of(head)
                                 ? (options.token_budget - tokens_of(head)) * 97 / 100
                                 : 0;
  // Token estimates of shortened pieces are approximate: if the whole comes out over budget, plan
  // again with less.
  std::vector<SectionText> built;
  for (std::size_t usable_now = usable, round = 0; round < 6; ++round) {
    built.clear();
    std::size_t carry = 0;
    for (const Plan& p : kPlans) {
      const std::size_t share = usable_now * p.percent / 100 + carry;
      SectionText s = p.build(trace, share);
      s.info.tokens = tokens_of(s.text);
      carry = share > s.info.tokens ? share - s.info.tokens : 0;
      built.push_back(std::move(s));
    }
    spend_the_rest(trace, usable_now, built);
    // Reading order: what was asked, what was said, what broke and how it was fixed, what ran,
    // and the files as they ended up.
    std::string text = head;
    for (std::size_t i : {0u, 3u, 1u, 4u, 2u}) text += built[i].text;
    // Whatever bytes the trace held, the teacher gets valid UTF-8.
    d.text = unicode::valid_utf8(redact_secrets(without_controls(text), &d.redactions));
    d.tokens = tokens_of(d.text);
    if (d.tokens <= options.token_budget || usable_now == 0) break;
    const std::size_t over = d.tokens - options.token_budget;
    usable_now = usable_now > over + usable_now / 20 ? usable_now - over - usable_now / 20 : 0;
  }
  for (const auto& s : built) d.sections.push_back(s.info);
  return d;
}

}  // namespace upskill::trace
