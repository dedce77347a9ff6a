// `upskill generate`: flags → gen::GenerateRequest → gen::run_generate → print.
#include <fmt/format.h>

#include "cli.hpp"

namespace upskill::cli {

namespace {
struct GenerateArgs {
  gen::GenerateRequest request;  // most flags bind straight to it
  std::optional<std::string> trace_format;
  bool no_eval = false;
  bool no_log_runs = false;
  bool log_runs = false;            // upskill's --log-runs (the default)
  std::optional<std::string> tool;  // accepted for compatibility, ignored like upskill does
  std::optional<int> jobs, runs;    // default: the config's max_parallel / num_runs
  scale::ExecutorSettings remote;   // --executor slurm|jobs: each attempt's evaluation runs there
};

int run_generate(const Context& ctx, const GenerateArgs& args) {
  auto cfg = ctx.load_config();
  if (!cfg) return exit_with(ctx, cfg.error());
  std::unique_ptr<ModelSession> session;  // opened once the inputs are checked
  gen::GenerateRequest request = args.request;
  // The executor (flag, else the config's) is never ignored: each evaluation runs there, or
  // generate says why nothing does.
  if (const config::Executor executor = scale::executor_of(args.remote, *cfg);
      executor != config::Executor::local) {
    if (args.no_eval) {
      if (!ctx.globals.quiet)
        fmt::print(stderr,
                   "note: --no-eval: nothing is evaluated, so nothing runs on the {} "
                   "executor\n",
                   to_string(executor));
    } else {
      auto remote =
          remote_evaluator(ctx, *cfg, args.remote, request.runs_dir.value_or(cfg->runs_dir),
                           !args.no_log_runs, session);
      if (!remote) return exit_with(ctx, remote.error());
      request.evaluate_elsewhere = std::move(*remote);
    }
  }
  if (args.trace_format) request.trace_format = trace::format_from_string(*args.trace_format);
  request.evaluate = !args.no_eval;
  request.log_runs = !args.no_log_runs;
  request.jobs = eval::resolved_jobs({args.jobs, args.runs, false}, *cfg);
  request.runs = eval::resolved_runs({args.jobs, args.runs, false}, *cfg);
  const auto progress = generate_progress(ctx.err);
  auto outcome = gen::run_generate(request, model_access(ctx, *cfg, session), *progress);
  if (!outcome) return exit_with(ctx, outcome.error());
  const gen::GenerateOutcome& out = *outcome;
  if (!out.draft_errors.empty()) {
    fmt::print(stderr,
               "{} the teacher's skill is invalid even after a repair round-trip (draft "
               "saved to {}):\n",
               ctx.err.red("error:"), out.skill_dir.string());
    for (const auto& e : out.draft_errors) fmt::print(stderr, "  - {}\n", e);
    return static_cast<int>(out.exit);
  }
  fmt::print("{} {} ({} test case(s){})\n",
             out.validation_errors.empty() ? "Saved" : "Saved (invalid)", out.skill_dir.string(),
             out.tests, out.has_digest ? ", digest in references/trace-digest.md" : "");
  fmt::print("teacher tokens: {} in, {} out over {} request(s)\n", out.teacher_usage.input,
             out.teacher_usage.output, out.teacher_requests);
  for (const auto& e : out.validation_errors) fmt::print(stderr, "  - {}\n", e);
  return static_cast<int>(out.exit);
}
}  // namespace

void add_generate_command(CLI::App& app, Runner& selected) {
  auto args = std::make_shared<GenerateArgs>();
  gen::GenerateRequest& r = args->request;
  auto* cmd = app.add_subcommand(
      "generate", "Have a teacher model write a skill (from a task, a trace or an existing skill)");
  cmd->add_option("TASK", r.task, "What the skill should teach")->required();
  cmd->add_option(
      "-f,--from", r.from,
      "A trace file to learn from (any supported format), or a skill folder to improve");
  cmd->add_option("-e,--example", r.examples, "An example request the skill must serve");
  cmd->add_option("-m,--model", r.teacher_model,
                  "Teacher model (default: skill_generation_model from the config)");
  cmd->add_option("--test-gen-model", r.test_model,
                  "Model that writes the tests (default: test_gen_model, else the teacher)");
  cmd->add_option("-o,--output", r.output_dir,
                  "The skill's folder, as upskill's -o (default: <skills_dir>/<name>)");
  cmd->add_flag("--no-eval", args->no_eval, "Do not evaluate or refine");
  cmd->add_option("--eval-model", r.student_models,
                  "Student model(s) for evaluation (default: eval_model, else the teacher)");
  cmd->add_option("--max-refine", r.max_attempts,
                  "Evaluations at most, refining in between (default: max_refine_attempts)");
  cmd->add_option("--runs-dir", r.runs_dir, "Where run logs go (default: runs_dir)");
  cmd->add_flag("--no-log-runs", args->no_log_runs, "Do not write run logs");
  cmd->add_flag("--log-runs", args->log_runs, "Write run logs (the default)");
  add_remote_options(*cmd, args->remote);
  cmd->add_option("--tool", args->tool, "Accepted for compatibility with upskill; ignored");
  cmd->add_option("--trace-format", args->trace_format, "Read --from as this trace format")
      ->check(CLI::IsMember(trace::format_names()));
  cmd->add_option("--digest-tokens", r.digest_tokens,
                  "Token budget of the trace digest sent to the teacher")
      ->capture_default_str();
  cmd->add_option("--tests", r.tests, "Test cases to ask the teacher for")->capture_default_str();
  cmd->add_option("-j,--jobs,--max-parallel", args->jobs,
                  "Evaluation requests in flight (default: max_parallel, else 4)")
      ->check(positive_count());
  cmd->add_option("--runs", args->runs,
                  "Runs per case in each evaluation (default: num_runs, else 1)")
      ->check(positive_count());
  cmd->footer(
      "--from TRACE: the whole trace is parsed and digested under --digest-tokens (goals, errors "
      "and their fixes,\n"
      "decisions, final files); the digest is saved as references/trace-digest.md. Generated "
      "tests are run\n"
      "against the trace's own final files and an empty answer first; a test the solution fails "
      "or an empty\n"
      "answer passes is dropped, with the reason. The best attempt by lift is kept, not the last.\n"
      "--executor slurm|jobs (or executor: in the config): each attempt's evaluation (both arms) "
      "runs there as\n"
      "shard tasks and is merged into a batch; the refinement between attempts runs here; "
      "--no-wait is refused\n"
      "(refinement needs each result). Example:\n"
      "  upskill generate \"parse invoices\" --executor jobs --artifact-repo <user>/upskill-tests\n"
      "Exit 0 ok, 1 the skill is invalid after a repair round-trip (draft saved), 2 bad input, 3 "
      "a model call or a remote evaluation\n"
      "failed, 130 interrupted.");
  cmd->callback([&selected, args] {
    selected = [args](const Context& ctx) { return run_generate(ctx, *args); };
  });
}

}  // namespace upskill::cli
