// What every finished evaluation prints — a local one, a merge of shards, a remote run: the files
// that could not be written, the terminal report, where the run logs are, the recommendation (or
// why there is none), the gates and the kernel checks that could not run here.
#include <fmt/format.h>

#include "cli.hpp"
#include "upskill/report/eval_report.hpp"

namespace upskill::cli {

void print_recommendations(const Context& ctx, const eval::EvalSummary& summary) {
  // No verdict from partial results: one line that says why instead.
  if (!summary.completeness.complete()) {
    fmt::print("{}\n",
               ctx.out.yellow("No recommendation: " + eval::incomplete_note(summary.completeness)));
    return;
  }
  // upskill's verdict line, from its is_beneficial rule.
  for (const auto& ms : summary.models) {
    if (!ms.lift) continue;
    const std::string who = summary.models.size() > 1 ? " for " + ms.name : "";
    if (!ms.lift->computed()) {
      fmt::print("{}\n", ctx.out.yellow(fmt::format("No recommendation{}: the lift was not "
                                                    "computed ({})",
                                                    who, ms.lift->not_computed)));
      continue;
    }
    fmt::print("{}\n", ms.lift->is_beneficial
                           ? ctx.out.green(fmt::format("Recommendation{}: keep skill", who))
                           : ctx.out.yellow(fmt::format(
                                 "Recommendation{}: skill may not be beneficial", who)));
  }
}

void print_gate(const eval::GateResult& g) {
  const std::string partial = g.partial ? " (on partial results)" : "";
  const std::string flag = g.kind == eval::GateResult::Kind::fail_under
                               ? fmt::format("--fail-under {:.0f}%", g.threshold * 100)
                               : fmt::format("--min-lift {:+.0f}%", g.threshold * 100);
  if (g.not_computed) {
    fmt::print("gate {}: FAILED, not decided — {}: {}{}\n", flag, g.model, g.why, partial);
  } else if (g.kind == eval::GateResult::Kind::fail_under) {
    fmt::print("gate {}: {} — {} with the skill passes {:.1f}%{}\n", flag,
               g.passed ? "passed" : "FAILED", g.model, g.value * 100, partial);
  } else if (g.no_baseline) {
    fmt::print(
        "gate --min-lift: {} has no baseline to compare with (the run had none: drop "
        "--no-baseline)\n",
        g.model);
  } else {
    fmt::print(
        "gate {}: {} — {} lift interval's lower bound is {:+.1f}% (point estimate {:+.1f}%){}\n",
        flag, g.passed ? "passed" : "FAILED", g.model, g.value * 100, g.estimate * 100, partial);
  }
}

int report_gpu_not_run(const Context& ctx, int count, bool require_gpu, std::string_view indent) {
  if (count <= 0) return 0;
  fmt::print(
      "{}{} kernel check{} could not run the CUDA stages (correct, bench): this machine has no "
      "CUDA device; they count as not run, never as passed\n",
      indent, count, count == 1 ? "" : "s");
  if (!require_gpu) return 0;
  fmt::print(stderr, "{} --require-gpu: no CUDA device to run the kernels\n",
             ctx.err.red("error:"));
  return static_cast<int>(ExitCode::infrastructure);
}

void print_evaluation(const Context& ctx, const EvaluationView& v, bool verbose) {
  for (const auto& e : v.write_errors)
    fmt::print(stderr, "{} {}\n", ctx.err.red("error:"), e.message);
  fmt::print("{}", report::render_terminal(v.summary, v.evaluation, {verbose, ctx.out.color}));
  if (v.run_logs) fmt::print("run logs: {}\n", v.run_logs->string());
  print_recommendations(ctx, v.summary);
  for (const auto& g : v.gates) print_gate(g);
  (void)report_gpu_not_run(ctx, v.needing_gpu, v.gpu_required_missing, "");
}

int print_merged(const Context& ctx, const eval::MergeOutcome& merged, bool verbose) {
  for (const auto& s : merged.shards) fmt::print(stderr, "merged shard {}\n", s);
  print_evaluation(
      ctx,
      {merged.summary, merged.evaluation, merged.write_errors, merged.gates, merged.needing_gpu,
       merged.gpu_required_missing, merged.logged ? std::optional(merged.batch_dir) : std::nullopt},
      verbose);
  if (merged.missing)
    fmt::print(stderr,
               "{} {} trial(s) are in no shard's logs (a shard was interrupted): finish it with "
               "`upskill eval … --shard K/N --resume BATCH`, then merge again\n",
               ctx.err.red("error:"), merged.missing);
  return static_cast<int>(merged.exit);
}

}  // namespace upskill::cli
