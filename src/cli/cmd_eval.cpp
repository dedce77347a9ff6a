#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "cli.hpp"
#include "upskill/eval/session.hpp"
#include "upskill/report/eval_report.hpp"

namespace upskill::cli {

namespace fs = std::filesystem;

namespace {
struct EvalArgs {
  std::string skill_dir;
  std::optional<std::string> tests;
  std::vector<std::string> models;
  int runs = 1;
  bool no_baseline = false;
  bool verbose = false;
  int jobs = 4;
  std::optional<std::string> json, junit, summary_md;
  std::optional<double> min_lift, fail_under;
  std::optional<std::string> resume;
  std::optional<std::string> runs_dir;
  bool no_log_runs = false;
  bool inline_references = false;
  std::uint64_t seed = 20261202;
  std::optional<std::string> mode;
  int max_turns = 12;
  bool allow_run = false;
  bool require_gpu = false;
};

// The terminal side of a session: progress on a TTY, one debug line per trial otherwise.
class EvalPrinter : public eval::SessionObserver {
 public:
  explicit EvalPrinter(bool tty) : tty_(tty) {}
  void warning(const std::string& message) override { spdlog::warn("{}", message); }
  void resumed(const fs::path& batch_dir, std::size_t done) override {
    fmt::print(stderr, "resuming {}: {} trial(s) already done\n", batch_dir.string(), done);
  }
  void started(const eval::Evaluation& plan) override {
    const std::size_t cases = plan.cases.size(), models = plan.models.size();
    fmt::print(stderr, "Evaluating {} on {} case{} × {} run{} with {} model{}{}\n",
               plan.skill_name, cases, cases == 1 ? "" : "s", plan.runs,
               plan.runs == 1 ? "" : "s", models, models == 1 ? "" : "s",
               plan.baseline ? ", with and without the skill" : ", skill only");
  }
  void trial_done(const eval::Evaluation& plan, const eval::TrialResult& t, std::size_t done,
                  std::size_t total) override {
    if (tty_)
      fmt::print(stderr, "\r  {} {}/{} trials",
                 report::bar(static_cast<double>(done) / total, 30), done, total);
    else
      spdlog::debug("trial {}/{}: {} {} run {}: {}", done, total, plan.models[t.key.model].name,
                    eval::to_string(t.key.arm), t.key.run,
                    t.failure ? std::string_view("error") : checks::to_string(t.verdict.status));
  }
  void finished() override {
    if (tty_) fmt::print(stderr, "\n");
  }

 private:
  bool tty_;
};

eval::SessionRequest session_request(const EvalArgs& args) {
  eval::SessionRequest r;
  r.skill_dir = args.skill_dir;
  if (args.tests) r.tests = *args.tests;
  r.models = args.models;
  r.runs = args.runs;
  r.baseline = !args.no_baseline;
  r.jobs = args.jobs;
  r.inline_references = args.inline_references;
  r.mode = args.mode;
  r.max_turns = args.max_turns;
  r.allow_run = args.allow_run;
  r.seed = args.seed;
  r.resume = args.resume;
  r.log_runs = !args.no_log_runs;
  if (args.runs_dir) r.runs_dir = *args.runs_dir;
  r.gates = {args.min_lift, args.fail_under};
  r.require_gpu = args.require_gpu;
  if (args.json)
    r.result_files.push_back({*args.json, false, [](const auto& summary, const auto& evaluation) {
                                return eval::to_json(summary, evaluation).dump(2) + "\n";
                              }});
  if (args.junit) r.result_files.push_back({*args.junit, false, report::render_junit});
  const auto markdown = [](const auto& summary, const auto& evaluation) {
    return report::render_markdown(summary, evaluation);
  };
  if (args.summary_md) {
    r.result_files.push_back({*args.summary_md, false, markdown});
  } else if (const char* step = std::getenv("GITHUB_STEP_SUMMARY"); step && *step) {
    r.result_files.push_back({step, true, markdown});
  }
  return r;
}

void print_gate(const eval::GateResult& g) {
  if (g.kind == eval::GateResult::Kind::fail_under) {
    fmt::print("gate --fail-under {:.0f}%: {} — {} with the skill passes {:.1f}%\n",
               g.threshold * 100, g.passed ? "passed" : "FAILED", g.model, g.value * 100);
  } else if (g.no_baseline) {
    fmt::print("gate --min-lift: {} has no baseline to compare with (drop --no-baseline)\n",
               g.model);
  } else {
    fmt::print(
        "gate --min-lift {:+.0f}%: {} — {} lift interval's lower bound is {:+.1f}% (point "
        "estimate {:+.1f}%)\n",
        g.threshold * 100, g.passed ? "passed" : "FAILED", g.model, g.value * 100,
        g.estimate * 100);
  }
}

int run_eval(const Context& ctx, const EvalArgs& args) {
  auto cfg = ctx.load_config();
  if (!cfg) return exit_with(ctx, cfg.error());
  auto session = ctx.open_model_session();
  if (!session) return exit_with(ctx, session.error());
  const llm::ModelAccess models{&*cfg, (*session)->client.get(), &(*session)->cancel,
                                llm::process_environment(),
                                {ctx.globals.base_url, ctx.globals.api_key_env}};
  EvalPrinter printer(::isatty(STDERR_FILENO) && !ctx.globals.quiet);
  auto outcome = eval::run_session(session_request(args), models, printer);
  if (!outcome) return exit_with(ctx, outcome.error());
  const eval::SessionOutcome& out = *outcome;

  for (const auto& e : out.write_errors)
    fmt::print(stderr, "{} {}\n", ctx.err.red("error:"), e.message);
  fmt::print("{}", report::render_terminal(out.summary, out.evaluation,
                                           {args.verbose, ctx.out.color}));
  if (out.logged) fmt::print("run logs: {}\n", out.batch_dir.string());
  for (const auto& g : out.gates) print_gate(g);
  (void)report_gpu_not_run(ctx, out.needing_gpu, out.gpu_required_missing, "");
  if (out.exit == ExitCode::infrastructure && !out.gpu_required_missing)
    fmt::print(stderr,
               "{} {} trial(s) got no answer from the model; they are saved as errors — rerun with "
               "--resume {}\n",
               ctx.err.red("error:"), out.summary.errors, out.batch_id);
  return static_cast<int>(out.exit);
}
}  // namespace

namespace {
CLI::App* add_eval_like(CLI::App& app, Runner& selected, const std::string& name,
                        const std::string& description, bool benchmark) {
  auto args = std::make_shared<EvalArgs>();
  if (benchmark) args->runs = 3;
  auto* cmd = app.add_subcommand(name, description);
  cmd->add_option("SKILL_DIR", args->skill_dir, "The skill to evaluate")->required();
  cmd->add_option("-t,--tests", args->tests,
                  "Test-case file (default: the skill's skill_meta.json)");
  auto* models =
      cmd->add_option("-m,--model", args->models,
                      "Student model(s) (default: eval_model, else skill_generation_model)");
  if (benchmark) models->required();
  cmd->add_option("--runs", args->runs, "Runs per case (repeats are independent requests)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--no-baseline", args->no_baseline, "Only run with the skill (no lift)");
  cmd->add_flag("-v,--verbose", args->verbose,
                "One line per case, with the failing check's reason");
  cmd->add_option("-j,--jobs", args->jobs, "Requests in flight (per-model limits still apply)")
      ->capture_default_str();
  cmd->add_option("--json", args->json, "Write the versioned JSON result (schema upskill.eval/1)");
  cmd->add_option("--junit", args->junit, "Write JUnit XML (failures vs errors kept apart)");
  cmd->add_option("--summary-md", args->summary_md,
                  "Write a markdown summary (default: append to $GITHUB_STEP_SUMMARY)");
  cmd->add_option("--min-lift", args->min_lift,
                  "Gate: the lift interval's lower bound must reach X (e.g. 0.1)");
  cmd->add_option("--fail-under", args->fail_under,
                  "Gate: the with-skill pass rate must reach X (e.g. 0.8)");
  cmd->add_option("--resume", args->resume,
                  "Finish a batch: rerun only its missing or errored trials");
  cmd->add_option("--runs-dir", args->runs_dir,
                  "Where run logs go (default: runs_dir from the config)");
  cmd->add_flag("--no-log-runs", args->no_log_runs, "Do not write run logs");
  cmd->add_flag("--inline-references", args->inline_references,
                "Put references/ files in the prompt, not just names");
  cmd->add_option("--seed", args->seed, "Seed of the bootstrap interval")->capture_default_str();
  cmd->add_option("--mode", args->mode,
                  "chat or agent for every case (default: each case's own mode, else chat)")
      ->check(CLI::IsMember({"chat", "agent"}));
  cmd->add_option("--max-turns", args->max_turns, "Agent mode: most model turns per case")
      ->capture_default_str();
  cmd->add_flag("--allow-run", args->allow_run,
                "Agent mode: offer the sandboxed `run` tool (shell commands)");
  cmd->add_flag("--require-gpu", args->require_gpu,
                "Exit 3 when kernel checks could not run their CUDA stages for want of a GPU");
  cmd->footer(
      "Both arms get the same system prompt; the skill arm adds SKILL.md and the list of its "
      "files. The lift is\n"
      "a paired comparison on the same cases: a paired bootstrap interval over cases and an exact "
      "McNemar p.\n"
      "A trial whose checks passed as far as they could run, with some not run (no CUDA device, "
      "workspace or\n"
      "sandbox), is \"not run\": it and the other arm's trial of the same case and run are left "
      "out of both\n"
      "arms' pass rates, intervals, McNemar test and lift, and counted beside the rates. A failed "
      "check still\n"
      "makes a failure.\n"
      "Exit 0 ok (not-run trials alone do not change it), 1 a gate failed, 2 bad input, 3 a model "
      "call failed\n"
      "after retries (results are saved; finish with --resume BATCH) or --require-gpu found kernel "
      "checks\n"
      "that could not run their CUDA stages, 130 interrupted (results so far are saved).");
  cmd->callback([&selected, args] {
    selected = [args](const Context& ctx) { return run_eval(ctx, *args); };
  });
  return cmd;
}
}  // namespace

void add_eval_command(CLI::App& app, Runner& selected) {
  add_eval_like(app, selected, "eval",
                "Evaluate a skill: run its test cases with and without it and compare", false);
}

void add_benchmark_command(CLI::App& app, Runner& selected) {
  add_eval_like(
      app, selected, "benchmark",
      "Compare models on a skill: eval with -m required and --runs 3 by default (pass@k, pass^k)",
      true);
}

}  // namespace upskill::cli
