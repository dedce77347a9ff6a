// `upskill trace`: what a trace contains, as the teacher will read it (counts, files, digest).
#include <fmt/format.h>

#include <algorithm>

#include "cli.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/trace/digest.hpp"

namespace upskill::cli {

namespace {
struct TraceArgs {
  std::string file;
  std::optional<std::string> format;
  bool json = false;
  std::size_t digest_tokens = trace::kDefaultDigestTokens;
  std::optional<std::string> digest_out;
  bool no_subagents = false;
  int show = 10;
};

std::string human_bytes(std::uintmax_t n) {
  if (n >= 1 << 20) return fmt::format("{:.1f} MB", static_cast<double>(n) / (1 << 20));
  if (n >= 1 << 10) return fmt::format("{:.1f} KB", static_cast<double>(n) / (1 << 10));
  return fmt::format("{} B", n);
}

void print_summary(const Context& ctx, const trace::Trace& t, const trace::TraceDigest& digest,
                   int show) {
  const Style& s = ctx.out;
  const trace::TraceCounts c = trace::count(t);
  fmt::print("{} {}\n", s.bold("trace"), t.source.string());
  fmt::print("  format     {}{} — {}\n", trace::to_string(t.format),
             t.format_version.empty() ? "" : " (" + t.format_version + ")", t.detected_by);
  fmt::print("  size       {}, sha256 {}\n", human_bytes(t.bytes), t.sha256.substr(0, 16));
  if (!t.models.empty()) fmt::print("  models     {}\n", text::join(t.models, ", "));
  fmt::print("  turns      {} — {} user prompt(s), {} assistant message(s){}\n", c.turns,
             c.user_prompts, c.assistant_messages,
             c.sidechain_turns ? fmt::format(", {} in subagents", c.sidechain_turns) : "");
  std::vector<std::pair<std::string, int>> tools(t.tool_counts.begin(), t.tool_counts.end());
  std::stable_sort(tools.begin(), tools.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [name, n] : tools) parts.push_back(fmt::format("{} {}", name, n));
  fmt::print("  tool calls {}{}{}\n", c.tool_calls, parts.empty() ? "" : " — ",
             text::join(parts, ", "));
  fmt::print("  commands   {} run, {} failed\n", c.commands,
             c.failed_commands ? s.red(std::to_string(c.failed_commands)) : "0");
  int shown = 0;
  for (const auto& cmd : t.commands) {
    if (!cmd.failed || shown++ >= show) continue;
    fmt::print("    {} `{}` (turn {}{})\n", s.red("✗"), text::excerpt(cmd.command, 100),
               cmd.turn + 1, cmd.exit_code ? fmt::format(", exit {}", *cmd.exit_code) : "");
  }
  if (shown > show) fmt::print("    … {} more\n", shown - show);
  fmt::print("  files      {} written or edited\n", c.files);
  shown = 0;
  for (const auto& f : t.files) {
    if (shown++ >= show) continue;
    if (f.deleted)
      fmt::print("    {}  deleted\n", f.path);
    else if (f.content)
      fmt::print("    {}  {} (final)\n", f.path, human_bytes(f.content->size()));
    else if (!f.shown.empty())
      fmt::print("    {}  {}\n", f.path, s.dim("partly shown in the trace: missing " + f.missing));
    else
      fmt::print("    {}  {}\n", f.path, s.dim("contents unknown: " + f.unknown_reason));
  }
  if (shown > show) fmt::print("    … {} more\n", shown - show);
  const auto fixed = std::count_if(t.fixes.begin(), t.fixes.end(),
                                   [](const trace::ErrorFix& f) { return f.fixed_by.has_value(); });
  for (const auto& e : t.run_errors)  // what broke the agent's run itself
    fmt::print("  run failed {}\n", text::excerpt(e, 200));
  // The failures the digest teaches from: failed commands (with their fixes) and refused calls.
  fmt::print("  errors     {} failure(s), {} followed by a fix{}\n",
             t.fixes.size() + c.refused_calls, fixed,
             c.refused_calls ? fmt::format(" ({} refused tool call(s))", c.refused_calls) : "");
  shown = 0;
  for (auto it = t.fixes.rbegin(); it != t.fixes.rend(); ++it) {
    if (shown++ >= show) break;
    const auto& failed = t.commands[it->failed];
    std::string line =
        fmt::format("    turn {}: `{}`", failed.turn + 1, text::excerpt(failed.command, 60));
    if (it->fixed_by)
      line += fmt::format(" → fixed at turn {}{}", t.commands[*it->fixed_by].turn + 1,
                          it->files_changed.empty()
                              ? ""
                              : " after changing " + text::join(it->files_changed, ", "));
    else
      line += " → never fixed";
    fmt::print("{}\n", line);
  }
  if (t.usage.reported)
    fmt::print("  tokens     input {} (cache read {}, cache write {}), output {}{}\n",
               t.usage.input, t.usage.cache_read, t.usage.cache_write, t.usage.output,
               t.usage.reasoning ? fmt::format(" (reasoning {})", t.usage.reasoning) : "");
  else
    fmt::print("  tokens     not recorded in this trace\n");
  std::string problems = fmt::format("{} line(s), {} record(s)", t.stats.lines, t.stats.records);
  if (t.stats.malformed) problems += fmt::format(", {} malformed", t.stats.malformed);
  if (t.stats.truncated_last_line) problems += ", last line cut off";
  if (t.stats.duplicates) problems += fmt::format(", {} duplicate(s) dropped", t.stats.duplicates);
  for (const auto& [type, n] : t.stats.unknown_types)
    problems += fmt::format(", unknown '{}' ×{}", type, n);
  fmt::print("  parsed     {}\n", problems);
  for (const auto& note : t.stats.notes) fmt::print("    {}\n", s.dim(note));
  if (!t.subagent_files.empty())
    fmt::print("  subagents  {} file(s) read\n", t.subagent_files.size());
  std::vector<std::string> sections;
  for (const auto& sec : digest.sections)
    if (sec.items || sec.omitted)
      sections.push_back(
          fmt::format("{} {}{}", sec.name, sec.items,
                      sec.omitted ? fmt::format(" (+{} left out)", sec.omitted) : ""));
  fmt::print("  digest     {} of {} tokens{} — {}\n", digest.tokens, digest.budget,
             digest.redactions ? fmt::format(", {} secret(s) redacted", digest.redactions) : "",
             text::join(sections, "; "));
}

int run_trace(const Context& ctx, const TraceArgs& args) {
  trace::ParseOptions options;
  options.subagents = !args.no_subagents;
  if (args.format) options.format = trace::format_from_string(*args.format);
  auto parsed = trace::parse_trace_file(args.file, options);
  if (!parsed) return exit_with(ctx, parsed.error());
  trace::DigestOptions digest_options;
  digest_options.token_budget = args.digest_tokens;
  const trace::TraceDigest digest = trace::make_digest(*parsed, digest_options);
  if (args.digest_out) {
    if (auto w = files::write_atomic(*args.digest_out, digest.text); !w)
      return exit_with(ctx, w.error());
  }
  if (args.json) {
    Json j = trace::summary_json(*parsed);
    j["digest"] = {{"tokens", digest.tokens},
                   {"budget", digest.budget},
                   {"redactions", digest.redactions},
                   {"sections", Json::array()}};
    for (const auto& sec : digest.sections)
      j["digest"]["sections"].push_back({{"name", sec.name},
                                         {"tokens", sec.tokens},
                                         {"items", sec.items},
                                         {"shortened", sec.shortened},
                                         {"omitted", sec.omitted}});
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  print_summary(ctx, *parsed, digest, args.show);
  return 0;
}
}  // namespace

void add_trace_command(CLI::App& app, Runner& selected) {
  auto args = std::make_shared<TraceArgs>();
  auto* cmd = app.add_subcommand("trace", "Parse an agent trace and show what was understood");
  cmd->add_option(
         "FILE", args->file,
         "The trace (format detected from its content); a pipe too: /dev/stdin, <(zcat t.jsonl.gz)")
      ->required();
  cmd->add_option("--format", args->format, "Read it as this format instead")
      ->check(CLI::IsMember(trace::format_names()));
  cmd->add_flag("--json", args->json, "Print the summary as JSON (schema upskill.trace/1)");
  cmd->add_option("--digest-tokens", args->digest_tokens,
                  "Token budget of the digest a teacher would get")
      ->capture_default_str();
  cmd->add_option("--digest", args->digest_out, "Write that digest (markdown) to this file");
  cmd->add_flag("--no-subagents", args->no_subagents,
                "Claude Code sessions: do not read the session's subagent files");
  cmd->add_option("--show", args->show, "How many commands, files and fixes to list")
      ->capture_default_str();
  cmd->footer(
      "Formats: claude-jsonl (~/.claude/projects/*/<session>.jsonl, with its subagent files), "
      "claude-stream-json,\n"
      "claude-export (/export text: lines the terminal wrapped are joined back, Write previews and "
      "Update diffs\n"
      "replayed into files, a file only partly shown listed with what is missing), codex-rollout\n"
      "(~/.codex/sessions/**/rollout-*.jsonl), codex-exec-json, gemini-cli (session-*.jsonl, "
      "or .json), copilot-events\n"
      "(~/.copilot/session-state/<id>/events.jsonl), opencode (opencode export), opencode-run, "
      "openai-chat, responses,\n"
      "anthropic-messages, fast-agent-json, fast-agent-text, markdown, text (docs/traces.md).\n"
      "A malformed record, a cut-off last line and unknown records are counted and noted with "
      "file:line, not fatal.\n"
      "Exit 0, or 2 when the file is unreadable, binary (a NUL byte), or nothing in it is.");
  cmd->callback([&selected, args] {
    selected = [args](const Context& ctx) { return run_trace(ctx, *args); };
  });
}

}  // namespace upskill::cli
