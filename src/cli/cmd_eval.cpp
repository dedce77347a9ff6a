#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli.hpp"
#include "upskill/checks/kernel_runner.hpp"
#include "upskill/checks/sandbox_runner.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/eval/run_log.hpp"
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

Status append_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  if (!out) return fail(Error::usage(fmt::format("{}: cannot append", path.string())));
  out << text;
  return {};
}

int run_eval(const Context& ctx, const EvalArgs& args) {
  auto cfg = ctx.load_config();
  if (!cfg) return exit_with(ctx, cfg.error());
  auto bundle = skill::SkillBundle::load(args.skill_dir);
  if (!bundle) return exit_with(ctx, bundle.error());

  std::vector<cases::TestCase> test_cases;
  if (args.tests) {
    auto suite = cases::load_test_suite(*args.tests);
    if (!suite) return exit_with(ctx, suite.error());
    for (const auto& w : suite->warnings) spdlog::warn("{}", w);
    test_cases = suite->cases;
  } else {
    test_cases = bundle->tests();
  }
  if (test_cases.empty())
    return exit_with(ctx, Error::usage(fmt::format(
                              "{}: no test cases (add tests to skill_meta.json or pass -t FILE)",
                              args.skill_dir)));

  std::vector<std::string> specs = args.models;
  if (specs.empty()) specs.push_back(cfg->eval_model.value_or(cfg->skill_generation_model));
  const llm::ModelOverrides overrides{ctx.globals.base_url, ctx.globals.api_key_env};
  std::vector<llm::ResolvedModel> models;
  for (const auto& spec : specs) {
    auto m = llm::resolve_model(spec, *cfg, llm::process_environment(), overrides);
    if (!m) return exit_with(ctx, m.error());
    models.push_back(std::move(*m));
  }

  auto session = ctx.open_model_session();
  if (!session) return exit_with(ctx, session.error());
  llm::ChatClient& client = *(*session)->client;
  CancelToken& cancel = (*session)->cancel;

  eval::EvalOptions options;
  options.models = models;
  options.runs = std::max(1, args.runs);
  options.baseline = !args.no_baseline;
  options.jobs = std::max(1, args.jobs);
  options.prompt.inline_references = args.inline_references;
  options.mode = args.mode;
  options.agent.max_turns = args.max_turns;
  options.agent.allow_run = args.allow_run;
  options.cancel = &cancel;

  // Where the run logs go, and what an earlier run of this batch already has.
  const fs::path runs_dir = args.runs_dir ? fs::path(*args.runs_dir) : cfg->runs_dir;
  std::string batch_id = eval::make_batch_id(std::chrono::system_clock::now());
  fs::path batch_dir = runs_dir / batch_id;
  std::map<std::size_t, eval::TrialResult> previous;
  if (args.resume) {
    batch_dir = fs::exists(*args.resume) ? fs::path(*args.resume) : runs_dir / *args.resume;
    batch_id = batch_dir.filename().string();
    eval::Evaluation shape;
    shape.cases = test_cases;
    shape.models = models;
    shape.runs = options.runs;
    shape.baseline = options.baseline;
    auto loaded = eval::load_completed_trials(batch_dir, shape);
    if (!loaded) return exit_with(ctx, loaded.error());
    previous = std::move(*loaded);
    fmt::print(stderr, "resuming {}: {} trial(s) already done\n", batch_dir.string(),
               previous.size());
    eval::Evaluation index_of = shape;
    options.previous = [&previous,
                        index_of](const eval::TrialKey& key) -> std::optional<eval::TrialResult> {
      auto it = previous.find(index_of.index(key));
      if (it == previous.end()) return std::nullopt;
      return it->second;
    };
  }
  const bool log_runs = !args.no_log_runs;
  const eval::RunLogWriter writer{batch_dir, batch_id, bundle->name()};
  const bool tty = ::isatty(STDERR_FILENO) && !ctx.globals.quiet;
  options.on_trial = [&](const eval::TrialResult& t, std::size_t done, std::size_t total) {
    if (tty)
      fmt::print(stderr, "\r  {} {}/{} trials", report::bar(static_cast<double>(done) / total, 30),
                 done, total);
    else
      spdlog::debug("trial {}/{}: {} {} run {}: {}", done, total, models[t.key.model].name,
                    eval::to_string(t.key.arm), t.key.run,
                    t.failure ? std::string_view("error") : checks::to_string(t.verdict.status));
  };
  checks::SandboxCommandRunner commands;
  checks::KernelPipelineOptions kernel_options;
  kernel_options.python = cfg->python;
  kernel_options.spec_base = args.tests ? std::filesystem::path(*args.tests).parent_path()
                                        : std::filesystem::path(args.skill_dir);
  checks::KernelPipelineChecker kernels(kernel_options);
  checks::CheckEnvironment env;
  env.commands = &commands;
  env.kernels = &kernels;
  const eval::Checkpoint checkpoint = [&](const eval::Evaluation& partial) {
    if (!log_runs) return;
    if (auto written = writer.write(partial, eval::summarize(partial, args.seed, 1000)); !written)
      spdlog::warn("{}", written.error().message);
  };

  fmt::print(stderr, "Evaluating {} on {} case{} × {} run{} with {} model{}{}\n", bundle->name(),
             test_cases.size(), test_cases.size() == 1 ? "" : "s", options.runs,
             options.runs == 1 ? "" : "s", models.size(), models.size() == 1 ? "" : "s",
             options.baseline ? ", with and without the skill" : ", skill only");
  const eval::Evaluation evaluation =
      eval::evaluate(*bundle, test_cases, options, client, env, checkpoint);
  if (tty) fmt::print(stderr, "\n");
  const eval::EvalSummary summary = eval::summarize(evaluation, args.seed);

  // Everything computed is written before any verdict.
  int code = 0;
  auto write_or_report = [&](const Status& s) {
    if (!s) {
      fmt::print(stderr, "{} {}\n", ctx.err.red("error:"), s.error().message);
      code = static_cast<int>(ExitCode::usage);
    }
  };
  if (log_runs) write_or_report(writer.write(evaluation, summary));
  if (args.json)
    write_or_report(
        files::write_atomic(*args.json, eval::to_json(summary, evaluation).dump(2) + "\n"));
  if (args.junit)
    write_or_report(files::write_atomic(*args.junit, report::render_junit(summary, evaluation)));
  const std::string markdown = report::render_markdown(summary, evaluation);
  if (args.summary_md) {
    write_or_report(files::write_atomic(*args.summary_md, markdown));
  } else if (const char* step = std::getenv("GITHUB_STEP_SUMMARY"); step && *step) {
    write_or_report(append_file(step, markdown));
  }
  fmt::print("{}", report::render_terminal(summary, evaluation, {args.verbose, ctx.out.color}));
  if (log_runs) fmt::print("run logs: {}\n", batch_dir.string());

  // Gates, then the exit code: interrupted (130) > infrastructure (3) > gate (1).
  bool gate_failed = false;
  for (const auto& ms : summary.models) {
    if (args.min_lift) {
      if (!ms.lift) {
        fmt::print("gate --min-lift: {} has no baseline to compare with (drop --no-baseline)\n",
                   ms.name);
        gate_failed = true;
      } else {
        const bool ok = ms.lift->interval.low >= *args.min_lift;
        fmt::print(
            "gate --min-lift {:+.0f}%: {} — {} lift interval's lower bound is {:+.1f}% (point "
            "estimate "
            "{:+.1f}%)\n",
            *args.min_lift * 100, ok ? "passed" : "FAILED", ms.name, ms.lift->interval.low * 100,
            ms.lift->lift * 100);
        gate_failed = gate_failed || !ok;
      }
    }
    if (args.fail_under) {
      const bool ok = ms.with_skill.pass_rate >= *args.fail_under;
      fmt::print("gate --fail-under {:.0f}%: {} — {} with the skill passes {:.1f}%\n",
                 *args.fail_under * 100, ok ? "passed" : "FAILED", ms.name,
                 ms.with_skill.pass_rate * 100);
      gate_failed = gate_failed || !ok;
    }
  }
  int needing_gpu = 0;
  for (const auto& t : evaluation.trials)
    if (t.completed && !t.failure) needing_gpu += checks::checks_needing_gpu(t.verdict);
  if (evaluation.interrupted) {
    (void)report_gpu_not_run(ctx, needing_gpu, false, "");
    return static_cast<int>(ExitCode::interrupted);
  }
  if (const int gpu = report_gpu_not_run(ctx, needing_gpu, args.require_gpu, "")) return gpu;
  if (summary.errors > 0) {
    fmt::print(stderr,
               "{} {} trial(s) got no answer from the model; they are saved as errors — rerun with "
               "--resume {}\n",
               ctx.err.red("error:"), summary.errors, batch_id);
    return static_cast<int>(ExitCode::infrastructure);
  }
  if (code) return code;
  return gate_failed ? static_cast<int>(ExitCode::gate_failed) : 0;
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
