// `eval`/`benchmark --executor slurm|jobs`: the flags of the executors, the task's command line
// rebuilt from what was parsed, then scale/ submits, waits and the shards are merged.
#include <fmt/format.h>

#include <functional>
#include <set>

#include "cli.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/scale/hf_jobs.hpp"
#include "upskill/scale/slurm.hpp"

namespace upskill::cli {

namespace fs = std::filesystem;

void add_remote_options(CLI::App& cmd, RemoteArgs& a) {
  cmd.add_option("--executor", a.executor,
                 "Where trials run: local; slurm, a job array of --shards tasks; jobs, Hugging "
                 "Face Jobs, one job a shard (default: executor from the config, else local; see "
                 "docs/scale-out.md)")
      ->check(CLI::IsMember({"local", "slurm", "jobs"}));
  cmd.add_option("--shards", a.shards,
                 "slurm and jobs: how many shards, each a task (default: shards from the "
                 "config, else 4)")
      ->check(CLI::Range(1, 10000));
  cmd.add_flag("--wait,!--no-wait", a.wait,
               "slurm and jobs: wait for the tasks and merge them (the default); --no-wait "
               "submits, prints the folder and exits — merge it later with `upskill runs merge`");
  const std::string slurm = "Slurm (--executor slurm)";
  cmd.add_option("--slurm-partition", a.slurm_partition, "#SBATCH --partition")->group(slurm);
  cmd.add_option("--slurm-time", a.slurm_time, "#SBATCH --time, e.g. 2:00:00")->group(slurm);
  cmd.add_option("--slurm-account", a.slurm_account, "#SBATCH --account")->group(slurm);
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

// Options that are the executor's or the merge's, not the task's.
const std::set<std::string>& not_forwarded() {
  static const std::set<std::string> names{
      "executor",        "shards",        "gpu-shards",    "wait",         "shard",
      "runs-dir",        "json",          "junit",         "summary-md",   "min-lift",
      "fail-under",      "require-gpu",   "log-runs",      "tests",        "judge",
      "slurm-partition", "slurm-time",    "slurm-account", "slurm-option", "slurm-gpu-partition",
      "slurm-gpu-gres",  "artifact-repo", "jobs-timeout",  "jobs-flavor",  "jobs-secrets",
      "jobs-namespace",  "jobs-image"};
  return names;
}

// The task's command line from what CLI11 parsed: every option given, as --name value.
fs::path absolute_path(const fs::path& p) {
  std::error_code ec;
  const fs::path a = fs::absolute(p, ec);
  return (ec ? p : a).lexically_normal();
}

Result<scale::TaskCommand> task_command(const Context& ctx, const RemoteArgs& a,
                                        const eval::SessionRequest& r) {
  scale::TaskCommand t;
  t.command = a.command->get_name();
  t.skill_dir = absolute_path(r.skill_dir);
  if (r.tests) t.tests = absolute_path(*r.tests);
  if (ctx.globals.config_file) t.config = absolute_path(*ctx.globals.config_file);
  if (ctx.globals.record)
    return fail(
        Error::usage("--record with --executor: every task would write the one cassette; "
                     "record a local run"));
  if (ctx.globals.base_url)
    t.global_options.insert(t.global_options.end(), {"--base-url", *ctx.globals.base_url});
  if (ctx.globals.api_key_env)
    t.global_options.insert(t.global_options.end(), {"--api-key-env", *ctx.globals.api_key_env});
  if (ctx.globals.replay)
    t.global_options.insert(t.global_options.end(),
                            {"--replay", absolute_path(*ctx.globals.replay).string()});
  for (const CLI::Option* opt : a.command->get_options()) {
    if (opt->count() == 0 || opt->get_lnames().empty()) continue;  // not given, or SKILL_DIR
    const std::string name = opt->get_lnames().front();
    if (not_forwarded().contains(name)) continue;
    if (name == "resume" || name == "no-log-runs")
      return fail(Error::usage(fmt::format(
          "--{} with --executor: each shard keeps its own batch; resume a shard with `upskill "
          "eval … --shard K/N --resume BATCH`",
          name)));
    if (opt->get_expected_max() == 0) {  // a flag
      for (std::size_t i = 0; i < opt->count(); ++i) t.options.push_back("--" + name);
      continue;
    }
    // --name=value: a value that starts with "-" stays a value.
    for (const auto& value : opt->results()) t.options.push_back("--" + name + "=" + value);
  }
  // The criteria travel in a file the executor writes (a task may not see --judge's @FILE).
  t.judge_criteria = r.judge_criteria;
  return t;
}

void print_failed(const Context& ctx, const std::vector<scale::TaskOutcome>& tasks) {
  for (const auto& t : tasks)
    if (t.failed()) fmt::print(stderr, "{} {}\n", ctx.err.red("failed:"), t.describe());
}

// The tests' poll interval from `variable` (milliseconds, at least 100), else `otherwise`.
std::chrono::milliseconds poll_interval(const char* variable, std::chrono::milliseconds otherwise) {
  const char* poll = std::getenv(variable);
  if (!poll || !*poll) return otherwise;
  return std::chrono::milliseconds(std::max(100, std::atoi(poll)));
}

scale::SlurmOptions slurm_options(const config::Config& cfg, const RemoteArgs& a) {
  scale::SlurmOptions o;
  o.partition = a.slurm_partition ? a.slurm_partition : cfg.slurm.partition;
  o.time = a.slurm_time ? a.slurm_time : cfg.slurm.time;
  o.account = a.slurm_account ? a.slurm_account : cfg.slurm.account;
  o.extra = cfg.slurm.options;
  o.extra.insert(o.extra.end(), a.slurm_options.begin(), a.slurm_options.end());
  o.gpu_partition = a.slurm_gpu_partition ? a.slurm_gpu_partition : cfg.slurm.gpu_partition;
  o.gpu_gres = a.slurm_gpu_gres.value_or(cfg.slurm.gpu_gres.value_or(o.gpu_gres));
  if (cfg.slurm.upskill) o.upskill = *cfg.slurm.upskill;
  o.poll = poll_interval("UPSKILL_SLURM_POLL_MS", o.poll);
  return o;
}

scale::JobsOptions jobs_options(const config::Config& cfg, const RemoteArgs& a) {
  scale::JobsOptions o;
  o.artifact_repo = a.artifact_repo ? a.artifact_repo : cfg.artifact_repo;
  o.timeout = a.jobs_timeout.value_or(cfg.jobs_timeout.value_or(o.timeout));
  o.flavor = a.jobs_flavor.value_or(cfg.jobs_flavor.value_or(o.flavor));
  o.secrets = cfg.jobs_secrets;
  if (!a.jobs_secrets.empty()) {
    o.secrets.clear();
    for (const auto& s : a.jobs_secrets)
      for (auto& part : text::split_list(s)) o.secrets.push_back(std::move(part));
  }
  o.namespace_ = a.jobs_namespace ? a.jobs_namespace : cfg.jobs_namespace;
  o.image = a.jobs_image.value_or(cfg.jobs_image.value_or(o.image));
  o.poll = poll_interval("UPSKILL_JOBS_POLL_MS", o.poll);
  return o;
}

// What the wait reports: how many shard tasks have ended.
using Progress = std::function<void(int ended, int total)>;

// A submission made, with how to wait for it and what to do later instead.
struct Submitted {
  scale::Submission submission;
  std::function<Result<std::vector<scale::TaskOutcome>>(const scale::Submission&)> wait;
  std::string later;  // what --no-wait tells the user to do with the folder
};

// Submits every shard's task to `executor` (slurm or jobs); names what was submitted on stderr.
Result<Submitted> submit(const Context& ctx, const config::Config& cfg, const RemoteArgs& a,
                         const std::string& executor, scale::TaskCommand& task,
                         const std::vector<cases::TestCase>& cases, scale::ShardPlan& plan,
                         bool gpu_shards_given, const fs::path& runs_dir, const Progress& progress,
                         CancelToken& cancel) {
  Submitted out;
  if (executor == "slurm") {
    const scale::SlurmOptions o = slurm_options(cfg, a);
    if (!gpu_shards_given && o.gpu_partition)
      plan.gpu_shards = scale::default_gpu_shards(cases, plan.shards);
    UPSKILL_ASSIGN_OR_RETURN(out.submission, scale::submit_slurm(task, plan, o, runs_dir));
    fmt::print(stderr, "submitted Slurm job {} ({} shard task(s)); folder: {}\n",
               text::join(out.submission.job_ids, ", "), plan.shards, out.submission.dir.string());
    out.wait = [o, &cancel, progress](const scale::Submission& s) {
      return scale::wait_slurm(s, o, &cancel, progress);
    };
    out.later = "merge it when it has ended";
    return out;
  }
  // A job sees no local file: the config found here travels in the bundle; a cassette or
  // endpoints from a fast-agent file would not.
  if (ctx.globals.replay)
    return fail(
        Error::usage("--replay with --executor jobs: a job cannot read the cassette "
                     "here; replay a local run"));
  if (!cfg.providers.empty())
    return fail(
        Error::usage("--executor jobs: endpoints from fastagent.config.yaml do not travel "
                     "with a job; name them under models: in the upskill config "
                     "(docs/configuration.md)"));
  if (!task.config && cfg.source) task.config = absolute_path(*cfg.source);
  const scale::JobsOptions o = jobs_options(cfg, a);
  UPSKILL_ASSIGN_OR_RETURN(out.submission, scale::submit_jobs(task, plan, o, runs_dir));
  fmt::print(stderr, "submitted {} Hugging Face job(s): {}; folder: {}\n",
             out.submission.job_ids.size(), text::join(out.submission.job_ids, " "),
             out.submission.dir.string());
  out.wait = [o, &cancel, progress](const scale::Submission& s) {
    return scale::wait_jobs(s, o, &cancel, progress);
  };
  out.later = "fetch and merge it when the jobs have ended";
  return out;
}

}  // namespace

int run_remote(const Context& ctx, const config::Config& cfg, const std::string& executor,
               const RemoteArgs& a, const RemoteRun& run) {
  auto task = task_command(ctx, a, run.request);
  if (!task) return exit_with(ctx, task.error());
  // The cases first: a missing or empty suite is found here, not in every task.
  auto cases = scale::load_task_cases(*task);
  if (!cases) return exit_with(ctx, cases.error());
  scale::ShardPlan plan;
  plan.shards = a.shards.value_or(cfg.shards.value_or(plan.shards));
  plan.gpu_shards = run.gpu_shards.value_or(0);
  if (auto planned = scale::check_plan(plan); !planned) return exit_with(ctx, planned.error());
  const fs::path runs_dir = absolute_path(run.request.runs_dir.value_or(cfg.runs_dir));
  CancelToken cancel;
  install_interrupt_handler(cancel);
  const Progress progress = [&ctx](int ended, int total) {
    if (!ctx.globals.quiet) fmt::print(stderr, "{}/{} shard task(s) ended\n", ended, total);
  };
  auto submitted = submit(ctx, cfg, a, executor, *task, *cases, plan, run.gpu_shards.has_value(),
                          runs_dir, progress, cancel);
  if (!submitted) return exit_with(ctx, submitted.error());
  const std::string dir = submitted->submission.dir.string();
  if (!a.wait) {
    fmt::print("{}\n{}: upskill runs merge {}\n", dir, submitted->later, dir);
    return 0;
  }
  const auto ended = submitted->wait(submitted->submission);
  if (!ended) return exit_with(ctx, ended.error());
  print_failed(ctx, *ended);
  MergeReport report = run.report;
  for (const auto& t : *ended)
    if (t.batch) report.shards.push_back(*t.batch);
  if (report.shards.size() < static_cast<std::size_t>(plan.shards)) {
    const std::string rerun =
        executor == "slurm"
            ? fmt::format("`sbatch --array=K {}/job.sh` (job-gpu.sh for the GPU shards)", dir)
            : fmt::format("`upskill eval … --shard K/{} --runs-dir {}/shards/K` anywhere",
                          plan.shards, dir);
    fmt::print(stderr,
               "{} {} of {} shard task(s) left no batch (their logs say why); rerun shard K with "
               "{}, then `upskill runs merge {}`\n",
               ctx.err.red("error:"), plan.shards - report.shards.size(), plan.shards, rerun, dir);
    return static_cast<int>(ExitCode::infrastructure);
  }
  report.runs_dir = runs_dir;
  report.gates = run.request.gates;
  report.require_gpu = run.request.require_gpu;
  return merge_and_report(ctx, report);
}

}  // namespace upskill::cli
