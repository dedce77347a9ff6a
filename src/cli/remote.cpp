// `eval`/`benchmark --executor slurm|jobs`: the executors' flags, turned into a
// scale::RemoteRequest; scale::run_remote submits, waits and merges; this file prints.
#include "upskill/scale/remote.hpp"

#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <set>

#include "cli.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/eval/batch.hpp"

namespace upskill::cli {

namespace fs = std::filesystem;

void add_remote_options(CLI::App& cmd, scale::ExecutorSettings& a) {
  cmd.add_option_function<std::string>(
         "--executor",
         [&a](const std::string& name) { a.executor = config::executor_from_string(name); },
         "Where trials run: local; slurm, a job array of --shards tasks; jobs, Hugging Face Jobs, "
         "one job a shard (default: executor from the config, else local; see "
         "docs/scale-out.md)")
      ->check(CLI::IsMember(config::executor_names()));
  cmd.add_option("--shards", a.shards,
                 "slurm and jobs: how many shards, each a task (default: shards from the "
                 "config, else 4)")
      ->check(CLI::Range(1, 10000));
  cmd.add_flag("--wait,!--no-wait", a.wait,
               "slurm and jobs: wait for the tasks and merge them (the default); --no-wait "
               "submits, prints the folder and exits — merge it later with `upskill runs merge`");
  const std::string slurm = "Slurm (--executor slurm)";
  cmd.add_option("--slurm-partition", a.slurm_partition, "#SBATCH --partition")->group(slurm);
  cmd.add_option("--slurm-time", a.slurm_time, "#SBATCH --time (default 2:00:00)")->group(slurm);
  cmd.add_option("--slurm-account", a.slurm_account, "#SBATCH --account")->group(slurm);
  cmd.add_option("--slurm-mem", a.slurm_mem, "#SBATCH --mem, each task's memory (default 4G)")
      ->group(slurm);
  cmd.add_option("--slurm-cpus", a.slurm_cpus, "#SBATCH --cpus-per-task (default 2)")->group(slurm);
  cmd.add_option("--slurm-option", a.slurm_options,
                 "A further #SBATCH line, e.g. --slurm-option=--qos=high (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(slurm);
  cmd.add_option("--slurm-gpu-partition", a.slurm_gpu_partition,
                 "Send the cases with a kernel check to this partition (shards 1..G)")
      ->group(slurm);
  cmd.add_option("--slurm-gpu-gres", a.slurm_gpu_gres,
                 "What a kernel shard asks for there (default gpu:1; '' for nothing)")
      ->group(slurm);
  const std::string jobs = "Hugging Face Jobs (--executor jobs)";
  cmd.add_option("--artifact-repo", a.artifact_repo,
                 "Dataset repository for the jobs' inputs and outputs, e.g. <user>/upskill-runs "
                 "(required; default: artifact_repo from the config)")
      ->group(jobs);
  cmd.add_option("--jobs-timeout", a.jobs_timeout,
                 "Each job's time limit (default: jobs_timeout, else 2h)")
      ->group(jobs);
  cmd.add_option("--jobs-flavor", a.jobs_flavor,
                 "Hardware flavor (default: jobs_flavor, else cpu-basic)")
      ->group(jobs);
  cmd.add_option("--jobs-secrets", a.jobs_secrets,
                 "Environment variables passed as secrets (default: jobs_secrets, else HF_TOKEN; "
                 "comma-separated or repeated)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(jobs);
  cmd.add_option("--jobs-namespace", a.jobs_namespace, "User or organisation the jobs run under")
      ->group(jobs);
  cmd.add_option("--jobs-image", a.jobs_image,
                 "Container image (default: jobs_image, else the uv Python image)")
      ->group(jobs);
}

namespace {

class RemotePrinter : public scale::RemoteObserver {
 public:
  explicit RemotePrinter(const Context& ctx) : ctx_(ctx) {}
  void submitted(const scale::Submission& s) override {
    if (s.executor == config::Executor::slurm)
      fmt::print(stderr, "submitted Slurm job {} ({} shard task(s)); folder: {}\n",
                 text::join(s.job_ids, ", "), s.plan.shards, s.dir.string());
    else
      fmt::print(stderr, "submitted {} Hugging Face job(s): {}; folder: {}\n", s.job_ids.size(),
                 text::join(s.job_ids, " "), s.dir.string());
  }
  void progress(int ended, int total) override {
    if (!ctx_.globals.quiet) fmt::print(stderr, "{}/{} shard task(s) ended\n", ended, total);
  }
  void attempt_saved(int attempt, const fs::path& folder, config::Executor executor) override {
    if (!ctx_.globals.quiet)
      fmt::print(stderr, "attempt {}: the skill saved to {} for the {} executor\n", attempt,
                 folder.string(), to_string(executor));
  }

 private:
  const Context& ctx_;
};

}  // namespace

namespace {

// What reaches a task besides the evaluation: the config file and the model overrides given here.
// --record cannot: every task would write the one cassette.
Result<scale::TaskGlobals> task_globals(const Context& ctx) {
  if (ctx.globals.record)
    return fail(
        Error::usage("--record with --executor: every task would write the one cassette; "
                     "record a local run"));
  scale::TaskGlobals globals;
  if (ctx.globals.config_file) globals.config_file = *ctx.globals.config_file;
  globals.base_url = ctx.globals.base_url;
  globals.api_key_env = ctx.globals.api_key_env;
  if (ctx.globals.replay) globals.replay = *ctx.globals.replay;
  return globals;
}

}  // namespace

Result<Json> task_plan(const Context& ctx, const config::Config& cfg,
                       const scale::ExecutorSettings& settings,
                       const eval::SessionRequest& request) {
  UPSKILL_ASSIGN_OR_RETURN(scale::TaskGlobals globals, task_globals(ctx));
  if (!globals.config_file && cfg.source) globals.config_file = *cfg.source;
  UPSKILL_ASSIGN_OR_RETURN(scale::TaskCommand task, scale::task_command(request, globals));
  task.request_file = "SUBMISSION/task.json";
  scale::ShardPlan plan;
  plan.shards = settings.shards.value_or(cfg.shards.value_or(plan.shards));
  plan.gpu_shards = settings.gpu_shards.value_or(0);
  return Json{
      {"command", "upskill" + scale::task_shell_arguments(task, plan, "K/N", "RUNS_DIR/shards/K")},
      {"request", eval::to_json(task.request)}};
}

Result<gen::EvaluateElsewhere> remote_evaluator(const Context& ctx, const config::Config& cfg,
                                                const scale::ExecutorSettings& settings,
                                                const fs::path& runs_dir, bool log_runs,
                                                std::unique_ptr<ModelSession>& session) {
  UPSKILL_ASSIGN_OR_RETURN(scale::TaskGlobals globals, task_globals(ctx));
  scale::RemoteRequest base;
  base.config = &cfg;
  base.settings = settings;
  base.globals = globals;
  base.session.runs_dir = runs_dir;
  base.session.log_runs = log_runs;
  return scale::remote_evaluator(
      base, std::make_shared<RemotePrinter>(ctx),
      [&session]() -> CancelToken* { return session ? &session->cancel : nullptr; });
}

int run_on_executor(const Context& ctx, const config::Config& cfg,
                    const scale::ExecutorSettings& settings, const eval::SessionRequest& request,
                    bool verbose) {
  auto globals = task_globals(ctx);
  if (!globals) return exit_with(ctx, globals.error());
  scale::RemoteRequest remote;
  remote.config = &cfg;
  remote.session = request;
  remote.settings = settings;
  remote.globals = *globals;
  CancelToken cancel;
  install_interrupt_handler(cancel);
  remote.cancel = &cancel;
  RemotePrinter printer(ctx);
  auto out = scale::run_remote(remote, printer);
  if (!out) return exit_with(ctx, out.error());
  const std::string dir = out->submission.dir.string();
  if (!out->waited) {
    fmt::print("{}\n{}: upskill runs merge {}\n", dir, out->later, dir);
    return 0;
  }
  for (const auto& t : out->failed)
    fmt::print(stderr, "{} {}\n", ctx.err.red("failed:"), t.describe());
  if (out->shards_without_batch > 0) {
    // The failed tasks were named just above, with their logs.
    fmt::print(stderr, "{} {}\n", ctx.err.red("error:"), out->no_batch_message(false));
    return static_cast<int>(out->exit);
  }
  return print_merged(ctx, *out->merged, verbose);
}

}  // namespace upskill::cli
