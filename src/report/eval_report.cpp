// How an evaluation is shown: the terminal bars, JUnit XML and the GitHub markdown summary (see
// eval_report.hpp).
#include "upskill/report/eval_report.hpp"

#include <fmt/format.h>

#include <cmath>

#include "upskill/core/text.hpp"

namespace upskill::report {

using eval::Arm;

namespace {

std::string pct(double x) {
  return fmt::format("{:.0f}%", x * 100);
}
std::string signed_pct(double x) {
  return fmt::format("{:+.0f}%", x * 100);
}
std::string interval(const eval::stats::Interval& i) {
  return fmt::format("[{}, {}]", pct(i.low), pct(i.high));
}
std::string signed_interval(const eval::stats::Interval& i) {
  return fmt::format("[{}, {}]", signed_pct(i.low), signed_pct(i.high));
}
std::string color(bool on, const char* code, const std::string& s) {
  return on ? fmt::format("\033[{}m{}\033[0m", code, s) : s;
}
std::string arm_not_run_note(const eval::ArmSummary& a) {
  return not_run_note(a.not_run, a.excluded);
}
// Why an arm has no scored trial: its errors, trials not run, trials never run.
std::string arm_gaps(const eval::ArmSummary& a) {
  std::vector<std::string> parts;
  if (a.errors) parts.push_back(fmt::format("{} error{}", a.errors, a.errors == 1 ? "" : "s"));
  if (a.not_run) parts.push_back(fmt::format("{} not run", a.not_run));
  if (a.excluded > a.not_run)
    parts.push_back(fmt::format("{} left out with their pairs", a.excluded - a.not_run));
  return parts.empty() ? std::string() : " (" + text::join(parts, ", ") + ")";
}
// The first check that did not run, for a trial whose verdict is "not run".
std::string not_run_message(const checks::CaseResult& verdict) {
  for (const auto& check : verdict.checks)
    if (check.status == checks::Status::not_run && check.weight > 0)
      return fmt::format("not run: {}{}", check.expected,
                         check.reason.empty() ? "" : " — " + check.reason);
  return "not run";
}

}  // namespace

std::string not_run_note(long long not_run, long long excluded) {
  if (not_run == 0 && excluded == 0) return "";
  if (excluded == not_run) return fmt::format(" · {} not run", not_run);
  return fmt::format(" · {} not run ({} left out with their pairs)", not_run, excluded);
}

std::string bar(double fraction, int width) {
  const int filled = static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * width));
  std::string out;
  for (int i = 0; i < width; ++i) out += i < filled ? "█" : "░";
  return out;
}

namespace {

// What the judges did in one arm (docs/judge.md): mean score, agreement, and their own tokens and
// cost, never added to the student's.
std::string judge_line(const char* arm, const eval::ArmSummary& a) {
  const auto& j = a.judge;
  if (j.checks == 0)  // no mean to show: say what happened instead
    return fmt::format("judge ({}): no answer was judged · {} call{} ({} cached)", arm, j.calls,
                       j.calls == 1 ? "" : "s", j.cached);
  std::string line = fmt::format("judge ({}): mean {:.0f}% of the scale over {} check{}", arm,
                                 j.mean_score * 100, j.checks, j.checks == 1 ? "" : "s");
  if (j.multi_judge_checks)
    line += fmt::format(" · judges agreed on {}/{}", j.unanimous_checks, j.multi_judge_checks);
  if (j.repeated_cases)
    line += fmt::format(" · same verdict every run on {}/{} cases", j.consistent_cases,
                        j.repeated_cases);
  line += fmt::format(" · {} call{} ({} cached), {} tokens", j.calls, j.calls == 1 ? "" : "s",
                      j.cached, j.usage.total());
  if (j.cost_usd > 0) line += fmt::format(", ${:.4f}", j.cost_usd);
  return line;
}

}  // namespace

namespace {

// One arm's line: its bar, rate and interval (labelled partial), tokens; or "—" and why nothing
// was scored.
std::string arm_line(const char* label, const eval::ArmSummary& a, const std::string& extra,
                     bool partial) {
  const std::string tokens = a.usage.total() > 0 || a.trials > 0
                                 ? fmt::format("tokens {:.0f}/trial{}{}", a.tokens_per_trial,
                                               a.usage.estimated ? " (estimated)" : "", extra)
                                 : std::string("tokens —");
  if (!a.scored())
    return fmt::format("  {:<11} {} {:>4}  {:<12} {} · not computed: no scored trial{}\n", label,
                       bar(0), "—", "", tokens, arm_gaps(a));
  return fmt::format("  {:<11} {} {:>4}  {:<12}{} {}{}\n", label, bar(a.pass_rate),
                     pct(a.pass_rate), interval(a.interval), partial ? " (partial)" : "", tokens,
                     arm_not_run_note(a));
}

std::string pairs_left_out(long long n) {
  return n ? fmt::format(" · {} not run pair{} left out", n, n == 1 ? "" : "s") : "";
}

// The lift line: the lift, its interval, the paired table, McNemar and the verdict (partial on
// incomplete results, beneficial only on complete ones); or why it was not computed.
std::string lift_line(const eval::LiftSummary& l, const eval::Completeness& c, bool color_on) {
  if (!l.computed())
    return fmt::format("  lift not computed: {}{}\n", l.not_computed,
                       pairs_left_out(l.not_run_pairs));
  const bool partial = !c.complete();
  const char* verdict_color = l.verdict == "improved"    ? "32"
                              : l.verdict == "regressed" ? "31"
                                                         : "33";
  return fmt::format(
      "  lift {} {}{} · paired: {} gained, {} lost · McNemar p = {:.3g} · {}{}{}\n",
      signed_pct(l.lift), signed_interval(l.interval),
      partial ? fmt::format(" (partial: {} of {} trials unanswered)", c.unanswered(), c.planned)
              : "",
      l.table.with_only, l.table.without_only, l.mcnemar_p,
      color(color_on, verdict_color, l.verdict),
      l.is_beneficial && !partial ? " · beneficial (upskill's rule)" : "",
      pairs_left_out(l.not_run_pairs));
}

// -v: one line per case, each arm's verdict and the first failing check's reason.
std::string case_lines(const eval::ModelSummary& ms, const eval::Evaluation& e, bool color_on) {
  std::string out;
  for (const auto& c : ms.cases) {
    std::string cells;
    for (Arm arm : e.arms()) {
      const auto& ca = c.arms.at(arm);
      const bool all = ca.runs > 0 && ca.passes == ca.runs;
      std::string cell = e.runs > 1    ? fmt::format("{}/{}", ca.passes, ca.runs)
                         : all         ? "✓"
                         : ca.runs     ? "✗"
                         : ca.not_run  ? "not run"
                         : ca.excluded ? "left out"
                                       : "!";
      if (e.runs > 1 && ca.not_run) cell += fmt::format(" ({} not run)", ca.not_run);
      cells += fmt::format("  {}: {}", arm == Arm::baseline ? "baseline" : "with skill", cell);
      if (all) continue;
      if (auto it = c.failure_reason.find(arm); it != c.failure_reason.end())
        cells += color(color_on, "2", " (" + text::excerpt(it->second, 90) + ")");
      else if (auto nr = c.not_run_reason.find(arm); nr != c.not_run_reason.end())
        cells += color(color_on, "2", " (" + text::excerpt(nr->second, 90) + ")");
      else if (ca.excluded)
        cells += color(color_on, "2", " (the other arm was not run)");
      else if (ca.errors)
        cells += color(color_on, "2",
                       fmt::format(" ({} error{})", ca.errors, ca.errors == 1 ? "" : "s"));
    }
    out += fmt::format("    {:<24}{}\n", c.id, cells);
  }
  return out;
}

}  // namespace

std::string render_model_figures(const eval::EvalSummary& s, const eval::ModelSummary& ms,
                                 bool color_on) {
  const bool partial = !s.completeness.complete();
  std::string out;
  if (ms.baseline) out += arm_line("baseline", *ms.baseline, "", partial);
  std::string extra;
  if (ms.lift && ms.lift->computed() && ms.baseline->scored() && ms.with_skill.scored())
    extra = fmt::format(" ({} tokens)", signed_pct(-ms.lift->token_savings));
  out += arm_line("with skill", ms.with_skill, extra, partial);
  if (ms.lift) out += lift_line(*ms.lift, s.completeness, color_on);
  if (ms.with_skill.cost_usd > 0 || (ms.baseline && ms.baseline->cost_usd > 0))
    out += fmt::format("  cost ${:.4f}\n",
                       ms.with_skill.cost_usd + (ms.baseline ? ms.baseline->cost_usd : 0));
  return out;
}

namespace {

// One model's block: header, arms, lift, cost, the agent's skill loading, judges, warnings.
std::string model_block(const eval::EvalSummary& s, const eval::ModelSummary& ms,
                        const eval::Evaluation& e, const TerminalOptions& o) {
  std::string out =
      fmt::format("{} ({}) · {} case{} × {} run{}\n", color(o.color, "1", ms.name), ms.model_id,
                  e.cases.size(), e.cases.size() == 1 ? "" : "s", e.runs, e.runs == 1 ? "" : "s");
  out += render_model_figures(s, ms, o.color);
  for (const auto* a : {ms.baseline ? &*ms.baseline : nullptr, &ms.with_skill})
    if (a && a->skill_known)
      out += fmt::format("  agent ({}): loaded the skill in {}/{} trial{}, {} reference read{}\n",
                         a->arm == Arm::baseline ? "baseline" : "with skill", a->skill_loaded,
                         a->skill_known, a->skill_known == 1 ? "" : "s", a->reference_reads,
                         a->reference_reads == 1 ? "" : "s");
  if (ms.baseline && ms.baseline->judge.calls)
    out += "  " + judge_line("baseline", *ms.baseline) + "\n";
  if (ms.with_skill.judge.calls) out += "  " + judge_line("with skill", ms.with_skill) + "\n";
  for (const auto& w : ms.warnings)
    out += fmt::format("  {} {}\n", color(o.color, "33", "warning:"), w);
  if (o.verbose) out += case_lines(ms, e, o.color);
  return out;
}

}  // namespace

std::string render_terminal(const eval::EvalSummary& s, const eval::Evaluation& e,
                            const TerminalOptions& o) {
  std::string out;
  if (!s.completeness.complete())
    out += color(o.color, "1;33", eval::incomplete_note(s.completeness)) +
           "\n  every figure below is partial; no recommendation is made\n";
  for (const auto& ms : s.models) out += model_block(s, ms, e, o);
  if (s.interrupted) out += "interrupted: results so far are saved; finish with --resume\n";
  return out;
}

std::string xml_escape(std::string_view in) {
  std::string out;
  for (char c : in) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 forbids most control characters.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r')
          out += "?";
        else
          out += c;
    }
  }
  return out;
}

std::string render_junit(const eval::EvalSummary& s, const eval::Evaluation& e) {
  std::string suites;
  long long total = 0, failures = 0, errors = 0, skipped = 0;
  for (std::size_t m = 0; m < e.models.size(); ++m) {
    for (Arm arm : e.arms()) {
      std::string cases;
      long long t = 0, f = 0, er = 0, sk = 0;
      double seconds = 0;
      for (int run = 0; run < e.runs; ++run)
        for (std::size_t c = 0; c < e.cases.size(); ++c) {
          const auto& trial = e.at({m, arm, run, c});
          ++t;
          const std::string name =
              e.runs > 1 ? fmt::format("{}#{}", e.cases[c].id, run + 1) : e.cases[c].id;
          const double time = trial.latency_ms / 1000;
          seconds += time;
          std::string body;
          if (!trial.completed) {
            ++sk;
            body = "<skipped message=\"not run (interrupted)\"/>";
          } else if (trial.failure) {
            ++er;
            body = fmt::format("<error type=\"{}\" message=\"{}\"/>",
                               llm::to_string(trial.failure->kind),
                               xml_escape(trial.failure->message));
          } else if (const auto* judge = trial.judge_failure()) {
            ++er;  // no verdict: the judge could not judge
            body = fmt::format("<error type=\"judge failed\" message=\"{}\"/>",
                               xml_escape(judge->reason));
          } else if (trial.not_run()) {
            // Its checks passed as far as they could run: neither a pass nor a failure.
            ++sk;
            body = fmt::format("<skipped message=\"{}\"/>",
                               xml_escape(not_run_message(trial.verdict)));
          } else if (!trial.verdict.passed) {
            ++f;
            std::string detail;
            for (const auto& check : trial.verdict.checks)
              if (check.status != checks::Status::passed)
                detail += fmt::format("{} {}: {}{}\n", checks::to_string(check.status),
                                      check.expected, check.reason,
                                      check.found.empty() ? "" : " (found: " + check.found + ")");
            const std::string first = detail.substr(0, detail.find('\n'));
            body = fmt::format("<failure type=\"assertion\" message=\"{}\">{}</failure>",
                               xml_escape(first), xml_escape(detail));
          }
          cases += fmt::format(
              "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"{}\n",
              xml_escape(fmt::format("{}.{}.{}", e.skill_name, e.models[m].name, to_string(arm))),
              xml_escape(name), time, body.empty() ? "/>" : ">" + body + "</testcase>");
        }
      if (t == 0) {  // never an empty suite: some consumers reject it
        ++t;
        ++sk;
        cases +=
            "    <testcase classname=\"upskill\" name=\"no-cases\"><skipped message=\"no test "
            "cases\"/></testcase>\n";
      }
      suites += fmt::format(
          "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
          "time=\"{:.3f}\">\n{}"
          "  </testsuite>\n",
          xml_escape(fmt::format("{} / {} / {}", e.skill_name, e.models[m].name, to_string(arm))),
          t, f, er, sk, seconds, cases);
      total += t;
      failures += f;
      errors += er;
      skipped += sk;
    }
  }
  if (suites.empty()) {
    suites =
        "  <testsuite name=\"upskill\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"1\" "
        "time=\"0\">\n"
        "    <testcase classname=\"upskill\" name=\"no-models\"><skipped message=\"nothing was "
        "evaluated\"/></testcase>\n"
        "  </testsuite>\n";
    total = skipped = 1;
  }
  (void)s;
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"upskill eval {}\" "
      "tests=\"{}\" failures=\"{}\" "
      "errors=\"{}\" skipped=\"{}\">\n{}</testsuites>\n",
      xml_escape(e.skill_name), total, failures, errors, skipped, suites);
}

namespace {
// Text for one markdown table cell or quote line: pipes escaped, line breaks as spaces.
std::string md_cell(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|')
      out += "\\|";
    else
      out += ch == '\n' || ch == '\r' ? ' ' : ch;
  }
  return out;
}
}  // namespace

std::string render_markdown(const eval::EvalSummary& s, const eval::Evaluation& e,
                            std::size_t max_bytes) {
  const bool partial = !s.completeness.complete();
  std::string head =
      fmt::format("## upskill eval: `{}`\n\n{} case{} × {} run{}{}\n\n", s.skill, e.cases.size(),
                  e.cases.size() == 1 ? "" : "s", s.runs, s.runs == 1 ? "" : "s",
                  s.interrupted ? " — **interrupted**, partial results" : "");
  if (partial)
    head += fmt::format("> **{}**. Every figure below is partial; no recommendation is made.\n\n",
                        md_cell(eval::incomplete_note(s.completeness)));
  head +=
      "| model | arm | pass rate | 95% interval | tokens / trial | errors | not run "
      "|\n|---|---|---|---|---|---|---|\n";
  auto not_run_cell = [](const eval::ArmSummary& a) {
    return a.excluded == a.not_run ? std::to_string(a.not_run)
                                   : fmt::format("{} ({} left out)", a.not_run, a.excluded);
  };
  // A rate that was not computed is "—"; one computed from part of the trials says so.
  auto rate_cells = [&](const eval::ArmSummary& a) {
    if (!a.scored()) return std::string("— | not computed");
    return fmt::format("{}{} | {}", pct(a.pass_rate), partial ? " (partial)" : "",
                       interval(a.interval));
  };
  for (const auto& ms : s.models) {
    if (ms.baseline)
      head += fmt::format("| {} | baseline | {} | {:.0f} | {} | {} |\n", ms.name,
                          rate_cells(*ms.baseline), ms.baseline->tokens_per_trial,
                          ms.baseline->errors, not_run_cell(*ms.baseline));
    head += fmt::format("| {} | with skill | {} | {:.0f} | {} | {} |\n", ms.name,
                        rate_cells(ms.with_skill), ms.with_skill.tokens_per_trial,
                        ms.with_skill.errors, not_run_cell(ms.with_skill));
  }
  head += "\n";
  for (const auto& ms : s.models) {
    if (ms.lift && !ms.lift->computed())
      head += fmt::format("**{}**: lift not computed: {}\n\n", ms.name, ms.lift->not_computed);
    if (ms.lift && ms.lift->computed())
      head += fmt::format(
          "**{}**: lift **{}** {} (paired bootstrap over cases{}), {} gained / {} lost, exact "
          "McNemar p = {:.3g} — "
          "**{}**{}{}\n\n",
          ms.name, signed_pct(ms.lift->lift), signed_interval(ms.lift->interval),
          partial ? "; partial" : "", ms.lift->table.with_only, ms.lift->table.without_only,
          ms.lift->mcnemar_p, ms.lift->verdict,
          ms.lift->is_beneficial && !partial ? " (beneficial by upskill's rule)" : "",
          ms.lift->not_run_pairs
              ? fmt::format("; {} not run pair{} left out of both arms", ms.lift->not_run_pairs,
                            ms.lift->not_run_pairs == 1 ? "" : "s")
              : "");
    if (ms.baseline && ms.baseline->judge.calls)
      head += fmt::format("**{}** {}\n\n", ms.name, judge_line("baseline", *ms.baseline));
    if (ms.with_skill.judge.calls)
      head += fmt::format("**{}** {}\n\n", ms.name, judge_line("with skill", ms.with_skill));
    for (const auto& w : ms.warnings) head += fmt::format("> ⚠️ {}: {}\n\n", ms.name, w);
  }
  std::string table = "<details><summary>Per case</summary>\n\n| model | case |";
  for (Arm arm : e.arms()) table += arm == Arm::baseline ? " baseline |" : " with skill |";
  table += " why it failed |\n|---|---|";
  for (std::size_t i = 0; i < e.arms().size(); ++i) table += "---|";
  table += "---|\n";
  std::string rows;
  bool cut = false;
  for (const auto& ms : s.models)
    for (const auto& c : ms.cases) {
      std::string row = fmt::format("| {} | `{}` |", ms.name, c.id);
      std::string why;
      for (Arm arm : e.arms()) {
        const auto& ca = c.arms.at(arm);
        row += ca.not_run ? fmt::format(" {}/{} ({} not run) |", ca.passes, ca.runs, ca.not_run)
                          : fmt::format(" {}/{} |", ca.passes, ca.runs);
        if (auto it = c.failure_reason.find(arm); it != c.failure_reason.end())
          why += fmt::format("{}{}: {}", why.empty() ? "" : "; ",
                             arm == Arm::baseline ? "baseline" : "with skill",
                             text::excerpt(it->second, 120));
        if (auto it = c.not_run_reason.find(arm); it != c.not_run_reason.end())
          why += fmt::format("{}{}: not run: {}", why.empty() ? "" : "; ",
                             arm == Arm::baseline ? "baseline" : "with skill",
                             text::excerpt(it->second, 120));
      }
      row += " " + md_cell(why) + " |\n";
      if (head.size() + table.size() + rows.size() + row.size() + 200 > max_bytes) {
        cut = true;
        break;
      }
      rows += row;
    }
  std::string out = head + table + rows;
  if (cut)
    out +=
        "\n_…more cases left out to stay under GitHub's summary size limit; see the JSON "
        "report._\n";
  out += "\n</details>\n";
  return out;
}

}  // namespace upskill::report
