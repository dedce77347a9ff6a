// `upskill eval` and `upskill benchmark`: flags → eval::SessionRequest → eval::run_session → print.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <set>

#include "cli.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/report/eval_report.hpp"

namespace upskill::cli {

namespace {
struct EvalArgs {
  eval::SessionRequest request;  // most flags bind straight to it
  bool baseline = false;         // --baseline: run it even in benchmark mode
  bool no_baseline = false;      // --no-baseline
  bool no_log_runs = false;
  bool verbose = false;
  std::optional<std::string> json, junit, summary_md;
  std::optional<std::string> test_gen_model;
  int test_count = 5;
  std::optional<std::string> judge;  // criteria: text, or @FILE with one per line
  bool log_runs = true;              // upskill's --log-runs, the default
  eval::RequestSettings given;       // --jobs, --runs: default from the config (resolve_request)
  std::optional<std::string> shard;  // K/N
  scale::ExecutorSettings remote;    // --executor slurm | jobs, --gpu-shards and their settings
  bool dry_run = false;
  std::optional<std::filesystem::path> request_file;  // --request: the request as JSON
  const CLI::App* command = nullptr;                  // to tell which flags were given
};

// --judge TEXT | @FILE: the criteria of the per-run judge, one per line of the file.
Result<std::vector<std::string>> judge_criteria(const std::string& arg) {
  std::string text = arg;
  if (arg.starts_with("@")) {
    auto read = files::read_text(arg.substr(1));
    if (!read) return fail(Error::usage(fmt::format("--judge: {}", read.error().message)));
    text = *read;
  }
  std::vector<std::string> criteria;
  for (auto& line : text::split_lines(text)) {
    std::string t = text::trim(line);
    if (t.starts_with("- ")) t = text::trim(t.substr(2));
    if (!t.empty()) criteria.push_back(t);
  }
  if (criteria.empty()) return fail(Error::usage("--judge: no criteria given"));
  return criteria;
}

// The flags a run decides for itself beside --request FILE: where its logs and result files go,
// which shard it is, where it runs and what it prints. Every other flag sets a field of the
// request, which then comes from the file alone.
bool beside_request_file(const CLI::Option& option) {
  static const std::set<std::string> kBeside{
      "--request", "--runs-dir",   "--shard",          "--gpu-shards",  "--json",
      "--junit",   "--summary-md", "--verbose",        "--dry-run",     "--executor",
      "--shards",  "--wait",       "--test-gen-model", "--tests-count", "--help"};
  return kBeside.contains(option.get_name()) || option.get_group().starts_with("Slurm") ||
         option.get_group().starts_with("Hugging Face Jobs");
}

// The request from --request FILE, with the flags allowed beside it.
Result<eval::SessionRequest> request_from_file(const EvalArgs& args, const config::Config& cfg) {
  for (const CLI::Option* option : args.command->get_options())
    if (option->count() > 0 && !beside_request_file(*option))
      return fail(Error::usage(fmt::format(
          "{} with --request: the request comes whole from {}; set it there (`--dry-run` "
          "prints a request's JSON form)",
          option->get_name(), args.request_file->string())));
  UPSKILL_ASSIGN_OR_RETURN(eval::SessionRequest request,
                           eval::read_request_file(*args.request_file));
  if (args.request.runs_dir) request.runs_dir = args.request.runs_dir;
  eval::complete_request(request, cfg);
  return request;
}

// The request a local or remote evaluation runs: flags and the configuration resolved, or a
// request file.
Result<eval::SessionRequest> request_of(const EvalArgs& args, const config::Config& cfg) {
  eval::SessionRequest request = args.request;
  if (args.request_file) {
    UPSKILL_ASSIGN_OR_RETURN(request, request_from_file(args, cfg));
  } else {
    if (args.request.skill_dir.empty())
      return fail(Error::usage("give the skill to evaluate (SKILL_DIR) or --request FILE"));
    if (args.given.benchmark && request.models.empty())
      return fail(Error::usage("benchmark compares models: name them with -m (or --request FILE)"));
    if (args.judge) {
      UPSKILL_ASSIGN_OR_RETURN(request.judge_criteria, judge_criteria(*args.judge));
    }
    request.log_runs = !args.no_log_runs;
    eval::RequestSettings given = args.given;
    if (args.baseline || args.no_baseline) given.baseline = args.baseline;
    eval::resolve_request(request, given, cfg);
  }
  request.result_files = result_files(args.json, args.junit, args.summary_md);
  if (args.shard) {
    UPSKILL_ASSIGN_OR_RETURN(request.shard, eval::parse_shard(*args.shard));
    request.shard->gpu = args.remote.gpu_shards.value_or(0);
    if (request.shard->gpu > request.shard->count)
      return fail(Error::usage("--gpu-shards: at most the number of shards"));
  }
  return request;
}

// What a local session prints after the common report: each failure's cause once, and how to
// finish the batch.
void print_session_notes(const Context& ctx, const eval::SessionOutcome& out) {
  if (!out.write_errors.empty() && out.logged)
    fmt::print(stderr,
               "the trials logged so far are kept; once there is room, `--resume {}` writes the "
               "rest\n",
               out.batch_id);
  if (out.summary.errors == 0) return;
  // Each distinct cause once, with how many trials it cost.
  for (const auto& c : eval::failure_causes(out.evaluation))
    fmt::print(stderr, "{} {} trial(s){}: {}\n", ctx.err.red("error:"), c.failed + c.not_sent,
               c.not_sent ? fmt::format(" ({} not sent after it)", c.not_sent) : "", c.message);
  if (out.logged)
    fmt::print(stderr,
               "{} trial(s) got no answer; they are saved as errors — rerun them with --resume "
               "{}\n",
               out.summary.errors, out.batch_id);
}

int run_eval(const Context& ctx, const EvalArgs& args) {
  auto cfg = ctx.load_config();
  if (!cfg) return exit_with(ctx, cfg.error());
  // --shard runs one shard here, whatever executor the config names.
  const config::Executor executor = args.shard
                                        ? args.remote.executor.value_or(config::Executor::local)
                                        : scale::executor_of(args.remote, *cfg);
  if (args.shard && executor != config::Executor::local)
    return exit_with(
        ctx, Error::usage(fmt::format("--shard runs one shard here; --executor {} runs them all",
                                      to_string(executor))));
  if (!args.shard && executor == config::Executor::local && args.remote.gpu_shards)
    return exit_with(ctx,
                     Error::usage("--gpu-shards goes with --shard K/N or --executor slurm|jobs"));
  auto request = request_of(args, *cfg);
  if (!request) return exit_with(ctx, request.error());
  if (!request->baseline && !args.no_baseline && !request->resume && !args.request_file &&
      !ctx.globals.quiet)
    fmt::print(stderr,
               "note: benchmark mode ({}): the skill arm only, as upskill does; --baseline runs "
               "the baseline too and reports the lift\n",
               args.given.benchmark ? "upskill benchmark" : "several models or --runs > 1");
  if (args.dry_run) {
    Json plan = {{"request", eval::to_json(eval::with_absolute_paths(*request))},
                 {"retry", llm::to_json(llm::retry_policy(*cfg))},
                 {"executor", to_string(executor)}};
    if (executor !=
        config::Executor::local) {  // what each shard's task would run, or why it would be refused
      auto task = task_plan(ctx, *cfg, args.remote, *request);
      if (!task) return exit_with(ctx, task.error());
      plan["task"] = *task;
    }
    fmt::print("{}\n", plan.dump(2, ' ', false, Json::error_handler_t::replace));
    return 0;
  }
  if (executor != config::Executor::local)
    return run_on_executor(ctx, *cfg, args.remote, *request, args.verbose);
  std::unique_ptr<ModelSession> session;  // opened once the inputs are checked
  const auto progress = eval_progress(::isatty(STDERR_FILENO) && !ctx.globals.quiet);
  const llm::ModelAccess access = model_access(ctx, *cfg, session);
  const auto gen_progress = generate_progress(ctx.err);
  request->generate_tests = gen::tests_on_demand(access, args.test_gen_model, request->skill_dir,
                                                 args.test_count, *gen_progress);
  auto outcome = eval::run_session(*request, access, *progress);
  if (!outcome) return exit_with(ctx, outcome.error());
  const eval::SessionOutcome& out = *outcome;
  print_evaluation(
      ctx,
      {out.summary, out.evaluation, out.write_errors, out.gates, out.needing_gpu,
       out.gpu_required_missing, out.logged ? std::optional(out.batch_dir) : std::nullopt},
      args.verbose);
  print_session_notes(ctx, out);
  return static_cast<int>(out.exit);
}

CLI::App* add_eval_like(CLI::App& app, Runner& selected, const std::string& name,
                        const std::string& description, bool benchmark) {
  auto args = std::make_shared<EvalArgs>();
  eval::SessionRequest& r = args->request;
  args->given.benchmark = benchmark;
  auto* cmd = app.add_subcommand(name, description);
  args->command = cmd;
  cmd->add_option("SKILL_DIR", r.skill_dir, "The skill to evaluate (or --request)");
  cmd->add_option("--request", args->request_file,
                  "Run the request in this JSON file, as --dry-run prints its \"request\" (what "
                  "each shard task runs); beside it only where logs and results go, --shard and "
                  "the executor's flags (docs/eval.md)");
  cmd->add_option("-t,--tests", r.tests, "Test-case file (default: the skill's skill_meta.json)");
  cmd->add_option("-m,--model", r.models,
                  "Student model(s): a model, or a coding agent cli.claude-code, cli.codex, "
                  "cli.gemini, cli.opencode, cli.copilot, cli.kiro, optionally on a configured "
                  "model: cli.claude-code@glm-local (default: eval_model, else "
                  "skill_generation_model)");
  cmd->add_option("--runs", args->given.runs,
                  benchmark ? "Runs per case (default: num_runs, else 3)"
                            : "Runs per case, independent requests (default: num_runs, else 1)")
      ->check(positive_count());
  auto* no_baseline =
      cmd->add_flag("--no-baseline", args->no_baseline, "Only run with the skill (no lift)");
  cmd->add_flag("--baseline", args->baseline,
                benchmark ? "Run the baseline too and report the lift (benchmark runs the skill "
                            "arm only by default, as upskill does)"
                          : "Run the baseline even with several -m or --runs > 1 (upskill's "
                            "benchmark mode, where it is off by default)")
      ->excludes(no_baseline);
  cmd->add_flag("-v,--verbose", args->verbose,
                "One line per case, with the failing check's reason");
  cmd->add_option(
         "-j,--jobs,--max-parallel", args->given.jobs,
         "Requests in flight; per-model limits still apply (default: max_parallel, else 4)")
      ->check(positive_count());
  cmd->add_flag("--dry-run", args->dry_run,
                "Print the evaluation as resolved from the flags and the config (students, runs, "
                "jobs, seed, judges, the client's retries, the executor) as JSON, and run nothing");
  cmd->add_option("--json", args->json, "Write the versioned JSON result (schema upskill.eval/1)");
  cmd->add_option("--junit", args->junit, "Write JUnit XML (failures vs errors kept apart)");
  cmd->add_option("--summary-md", args->summary_md,
                  "Write a markdown summary (default: append to $GITHUB_STEP_SUMMARY)");
  cmd->add_option("--min-lift", r.gates.min_lift,
                  "Gate: the lift interval's lower bound must reach X (e.g. 0.1)");
  cmd->add_option("--fail-under", r.gates.fail_under,
                  "Gate: the with-skill pass rate must reach X (e.g. 0.8)");
  cmd->add_option("--resume", r.resume,
                  "Finish a batch: rerun only its missing or errored trials (refused while "
                  "another process writes it, or when the request differs from the batch's plan)");
  cmd->add_option(benchmark ? "--runs-dir,-o,--output" : "--runs-dir", r.runs_dir,
                  "Where run logs go (default: runs_dir from the config)");
  cmd->add_flag("--no-log-runs", args->no_log_runs, "Do not write run logs");
  cmd->add_flag("--log-runs", args->log_runs, "Write run logs (the default; upskill's flag)");
  cmd->add_flag("--inline-references", r.inline_references,
                "Put references/ files in the prompt, not just names");
  cmd->add_option("--seed", r.seed, "Seed of the bootstrap interval")->capture_default_str();
  cmd->add_option_function<std::string>(
         "--mode", [&r](const std::string& name) { r.mode = cases::mode_from_string(name); },
         "chat or agent for every case (default: each case's own mode, else chat)")
      ->check(CLI::IsMember(cases::mode_names()));
  cmd->add_option("--max-turns", r.max_turns, "Agent mode: most model turns per case")
      ->check(positive_count())
      ->capture_default_str();
  cmd->add_flag("--allow-run", r.allow_run,
                "Agent mode: offer the sandboxed `run` tool (shell commands)");
  cmd->add_flag("--require-gpu", r.require_gpu,
                "Exit 3 when kernel checks could not run their CUDA stages for want of a GPU");
  cmd->add_option("--shard", args->shard,
                  "Run only shard K of N (K/N): a deterministic, balanced share of the trials, "
                  "both arms of a case together; merge the shards with `upskill runs merge`");
  cmd->add_option("--gpu-shards", args->remote.gpu_shards,
                  "Shards 1..G take the cases with a kernel check, the others the rest (with "
                  "--shard or --executor slurm|jobs; slurm's default: their share when "
                  "--slurm-gpu-partition is set)")
      ->check(non_negative_count());
  add_remote_options(*cmd, args->remote);
  cmd->add_option_function<std::string>(
         "--skill-delivery",
         [&r](const std::string& name) {
           r.skill_delivery = *eval::skill_delivery_from_string(name);
         },
         "Coding-agent students (cli.*): install the skill where the agent looks for skills, or "
         "inline it into the prompt as upskill does (default: install)")
      ->check(CLI::IsMember(eval::skill_delivery_names()));
  cmd->add_option("--test-gen-model", args->test_gen_model,
                  "A skill without tests gets them from this model (default: test_gen_model, "
                  "else skill_generation_model), saved to its skill_meta.json");
  cmd->add_option("--tests-count", args->test_count, "How many tests to generate")
      ->check(positive_count())
      ->capture_default_str();
  cmd->add_option("--judge", args->judge,
                  "Judge every answer against these criteria (TEXT, or @FILE with one a line); "
                  "see docs/judge.md");
  cmd->add_option("--judge-model", r.judge_models,
                  "Judge model(s) for judge checks that name none (default: judge_model, else "
                  "skill_generation_model); several: their mean score, agreement reported");
  cmd->add_option("--judge-threshold", r.judge_threshold,
                  "Share of the scale --judge's check needs to pass (default 0.7)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->footer(
      R"(Both arms get the same system prompt; the skill arm adds SKILL.md and the list of its files. The lift is
a paired comparison on the same cases: a paired bootstrap interval over cases and an exact McNemar p.
A trial whose checks passed as far as they could run, with some not run (no CUDA device, workspace or
sandbox), is "not run": it and the other arm's trial of the same case and run are left out of both
arms' pass rates, intervals, McNemar test and lift, and counted beside the rates. A failed check still
makes a failure.
Exit 0 ok (not-run trials alone do not change it), 1 a gate failed, 2 bad input, 3 a model call failed
after retries (results are saved; finish with --resume BATCH) or --require-gpu found kernel checks
that could not run their CUDA stages, 130 interrupted (results so far are saved). With --executor
slurm|jobs the merged run exits the same way, and 3 also when a shard task left no batch (each such
task is named with its log); --no-wait exits 0 once the tasks are submitted.)");
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
