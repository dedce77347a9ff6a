// One evaluation run remotely, start to end (see remote.hpp).
#include "upskill/scale/remote.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>

#include "upskill/core/text.hpp"
#include "upskill/eval/batch.hpp"

namespace upskill::scale {

namespace fs = std::filesystem;

namespace {

fs::path absolute_path(const fs::path& p) {
  std::error_code ec;
  const fs::path a = fs::absolute(p, ec);
  return (ec ? p : a).lexically_normal();
}

// The tests' poll interval from `variable` (milliseconds, at least 100), else `otherwise`.
std::chrono::milliseconds poll_interval(const char* variable, std::chrono::milliseconds otherwise) {
  const char* poll = std::getenv(variable);
  if (!poll || !*poll) return otherwise;
  return std::chrono::milliseconds(std::max(100, std::atoi(poll)));
}

}  // namespace

config::Executor executor_of(const ExecutorSettings& settings, const config::Config& config) {
  return settings.executor.value_or(config.executor);
}

SlurmOptions slurm_options(const ExecutorSettings& s, const config::Config& cfg) {
  SlurmOptions o;
  o.partition = s.slurm_partition ? s.slurm_partition : cfg.slurm.partition;
  o.time = s.slurm_time.value_or(cfg.slurm.time.value_or(o.time));
  o.mem = s.slurm_mem.value_or(cfg.slurm.mem.value_or(o.mem));
  o.cpus_per_task = s.slurm_cpus.value_or(cfg.slurm.cpus_per_task.value_or(o.cpus_per_task));
  // Keys named by the configured models stay out of Slurm's saved environment too.
  for (const auto& m : cfg.models)
    if (m.api_key_env) o.secret_names.push_back(*m.api_key_env);
  o.account = s.slurm_account ? s.slurm_account : cfg.slurm.account;
  o.extra = cfg.slurm.options;
  o.extra.insert(o.extra.end(), s.slurm_options.begin(), s.slurm_options.end());
  o.gpu_partition = s.slurm_gpu_partition ? s.slurm_gpu_partition : cfg.slurm.gpu_partition;
  o.gpu_gres = s.slurm_gpu_gres.value_or(cfg.slurm.gpu_gres.value_or(o.gpu_gres));
  if (cfg.slurm.upskill) o.upskill = *cfg.slurm.upskill;
  o.poll = poll_interval("UPSKILL_SLURM_POLL_MS", o.poll);
  return o;
}

JobsOptions jobs_options(const ExecutorSettings& s, const config::Config& cfg) {
  JobsOptions o;
  o.artifact_repo = s.artifact_repo ? s.artifact_repo : cfg.artifact_repo;
  o.timeout = s.jobs_timeout.value_or(cfg.jobs_timeout.value_or(o.timeout));
  o.flavor = s.jobs_flavor.value_or(cfg.jobs_flavor.value_or(o.flavor));
  o.secrets = cfg.jobs_secrets;
  if (!s.jobs_secrets.empty()) {
    o.secrets.clear();
    for (const auto& given : s.jobs_secrets)
      for (auto& part : text::split_list(given)) o.secrets.push_back(std::move(part));
  }
  o.namespace_ = s.jobs_namespace ? s.jobs_namespace : cfg.jobs_namespace;
  o.image = s.jobs_image.value_or(cfg.jobs_image.value_or(o.image));
  o.poll = poll_interval("UPSKILL_JOBS_POLL_MS", o.poll);
  return o;
}

Result<TaskCommand> task_command(const eval::SessionRequest& r, const TaskGlobals& globals) {
  if (r.resume)
    return fail(Error::usage(
        "--resume with --executor: each shard keeps its own batch; resume a shard with `upskill "
        "eval … --shard K/N --resume BATCH`"));
  if (!r.log_runs)
    return fail(Error::usage(
        "--no-log-runs with --executor: the shards' batches are what the merge reads"));
  if (r.skill_dir.empty())
    return fail(Error::usage("a remote run needs the skill as a folder the tasks can read"));
  if (r.cases && !r.tests)
    return fail(Error::usage("a remote run needs its test cases in a file the tasks can read"));
  if (r.shard)
    return fail(Error::usage(fmt::format(
        "the request is shard {}/{}, which runs here; an executor runs every shard of a whole "
        "request",
        r.shard->index, r.shard->count)));
  TaskCommand t;
  t.request = r;
  // What only the merge does, or each task is given on its command line, is not the task's.
  eval::SessionRequest& task = t.request;
  task.skill_dir = absolute_path(r.skill_dir);
  if (r.tests) task.tests = absolute_path(*r.tests);
  if (r.spec_dir) task.spec_dir = absolute_path(*r.spec_dir);
  task.skill.reset();
  task.cases.reset();
  task.shard.reset();
  task.runs_dir.reset();
  task.gates = {};
  task.require_gpu = false;
  task.result_files.clear();
  task.generate_tests.reset();
  if (globals.config_file) t.config = absolute_path(*globals.config_file);
  if (globals.base_url)
    t.global_options.insert(t.global_options.end(), {"--base-url", *globals.base_url});
  if (globals.api_key_env)
    t.global_options.insert(t.global_options.end(), {"--api-key-env", *globals.api_key_env});
  if (globals.replay)
    t.global_options.insert(t.global_options.end(),
                            {"--replay", absolute_path(*globals.replay).string()});
  return t;
}

namespace {

// A submission made, and how to wait for it.
struct Submitted {
  Submission submission;
  std::function<Result<std::vector<TaskOutcome>>(const Submission&)> wait;
  std::string later;  // what --no-wait tells the user to do with the folder
  std::string rerun;  // how to rerun one shard
};

Result<Submitted> submit(const RemoteRequest& req, config::Executor executor, TaskCommand& task,
                         const std::vector<cases::TestCase>& cases, ShardPlan& plan,
                         const fs::path& runs_dir, RemoteObserver& observer) {
  const config::Config& cfg = *req.config;
  auto progress = [&observer](int ended, int total) { observer.progress(ended, total); };
  Submitted out;
  if (executor == config::Executor::slurm) {
    const SlurmOptions o = slurm_options(req.settings, cfg);
    if (!req.settings.gpu_shards && o.gpu_partition)
      plan.gpu_shards = default_gpu_shards(cases, plan.shards);
    UPSKILL_ASSIGN_OR_RETURN(out.submission, submit_slurm(task, plan, o, runs_dir));
    out.wait = [o, cancel = req.cancel, progress](const Submission& s) {
      return wait_slurm(s, o, cancel, progress);
    };
    out.later = "merge it when it has ended";
    out.rerun = fmt::format("`sbatch --array=K {}/job.sh` (job-gpu.sh for the GPU shards)",
                            out.submission.dir.string());
    return out;
  }
  UPSKILL_RETURN_IF_ERROR(check_remote_settings(req));
  const JobsOptions o = jobs_options(req.settings, cfg);
  UPSKILL_ASSIGN_OR_RETURN(out.submission, submit_jobs(task, plan, o, runs_dir));
  out.wait = [o, cancel = req.cancel, progress](const Submission& s) {
    return wait_jobs(s, o, cancel, progress);
  };
  out.later = "fetch and merge it when the jobs have ended";
  out.rerun = fmt::format("`upskill eval … --shard K/{} --runs-dir {}/shards/K` anywhere",
                          plan.shards, out.submission.dir.string());
  return out;
}

}  // namespace

std::string RemoteOutcome::no_batch_message(bool name_failed) const {
  std::vector<std::string> named;
  if (name_failed)
    for (const auto& t : failed) named.push_back(t.describe());
  return fmt::format(
      "{} of {} shard task(s) left no batch{}; rerun shard K with {}, then `upskill runs "
      "merge {}`",
      shards_without_batch, submission.plan.shards,
      named.empty() ? " (their logs say why)" : ": " + text::join(named, "; "), rerun,
      submission.dir.string());
}

Status check_remote_settings(const RemoteRequest& req) {
  if (req.config == nullptr) return fail(Error::usage("a remote run needs a configuration"));
  const config::Executor executor = executor_of(req.settings, *req.config);
  if (executor == config::Executor::local)
    return fail(Error::usage("executor 'local': a remote run is slurm or jobs"));
  if (executor == config::Executor::slurm) return {};
  // A job sees no local file: the config found here travels in the bundle; a cassette or
  // endpoints from a fast-agent file would not.
  if (req.globals.replay)
    return fail(
        Error::usage("--replay with --executor jobs: a job cannot read the cassette "
                     "here; replay a local run"));
  if (!req.config->providers.empty())
    return fail(
        Error::usage("--executor jobs: endpoints from fastagent.config.yaml do not travel "
                     "with a job; name them under models: in the upskill config "
                     "(docs/configuration.md)"));
  return check_jobs_options(jobs_options(req.settings, *req.config));
}

Status check_attempt_settings(const RemoteRequest& req) {
  UPSKILL_RETURN_IF_ERROR(check_remote_settings(req));
  const std::string_view executor = to_string(executor_of(req.settings, *req.config));
  if (!req.settings.wait)
    return fail(Error::usage(fmt::format(
        "generate --no-wait: generate refines the skill between its evaluations, so it waits for "
        "each; to submit an evaluation and leave, run `upskill eval SKILL --executor {} "
        "--no-wait` on the skill it writes",
        executor)));
  if (!req.session.log_runs)
    return fail(Error::usage(fmt::format(
        "--no-log-runs with --executor {}: the shards' batches are what each attempt's merge reads",
        executor)));
  return {};
}

Result<RemoteOutcome> run_remote(const RemoteRequest& req, RemoteObserver& observer) {
  if (req.config == nullptr) return fail(Error::usage("a remote run needs a configuration"));
  const config::Executor executor = executor_of(req.settings, *req.config);
  if (executor == config::Executor::local)
    return fail(Error::usage("executor 'local': a remote run is slurm or jobs"));
  // The tasks read the configuration this run resolved, wherever it was found.
  TaskGlobals globals = req.globals;
  if (!globals.config_file && req.config->source) globals.config_file = *req.config->source;
  UPSKILL_ASSIGN_OR_RETURN(TaskCommand task, task_command(req.session, globals));
  // The cases first: a missing or empty suite is found here, not in every task.
  UPSKILL_ASSIGN_OR_RETURN(std::vector<cases::TestCase> cases, load_task_cases(task));
  ShardPlan plan;
  plan.shards = req.settings.shards.value_or(req.config->shards.value_or(plan.shards));
  plan.gpu_shards = req.settings.gpu_shards.value_or(0);
  UPSKILL_RETURN_IF_ERROR(check_plan(plan));
  const fs::path runs_dir = absolute_path(req.session.runs_dir.value_or(req.config->runs_dir));
  UPSKILL_ASSIGN_OR_RETURN(Submitted submitted,
                           submit(req, executor, task, cases, plan, runs_dir, observer));
  observer.submitted(submitted.submission);
  RemoteOutcome out;
  out.submission = submitted.submission;
  out.later = submitted.later;
  out.rerun = submitted.rerun;
  if (!req.settings.wait) return out;
  out.waited = true;
  UPSKILL_ASSIGN_OR_RETURN(out.tasks, submitted.wait(submitted.submission));
  eval::MergeRequest merge;
  for (const auto& t : out.tasks) {
    if (t.failed()) out.failed.push_back(t);
    if (t.batch) merge.shards.push_back(*t.batch);
  }
  out.shards_without_batch = plan.shards - static_cast<int>(merge.shards.size());
  if (out.shards_without_batch > 0) {  // trials that got no answer: nothing to merge yet
    out.exit = eval::exit_status({.unanswered = true});
    return out;
  }
  merge.runs_dir = runs_dir;
  merge.log_runs = true;
  merge.result_files = req.session.result_files;
  merge.gates = req.session.gates;
  merge.require_gpu = req.session.require_gpu;
  UPSKILL_ASSIGN_OR_RETURN(out.merged, eval::merge_shards(merge));
  out.exit = out.merged->exit;
  return out;
}

Result<RemoteEvaluation> evaluate_remotely(RemoteRequest request, const skill::SkillBundle& skill,
                                           const std::vector<cases::TestCase>& tests,
                                           const fs::path& folder, RemoteObserver& observer) {
  UPSKILL_RETURN_IF_ERROR(check_attempt_settings(request));
  skill::SkillBundle saved = skill;
  skill::SkillMeta meta = saved.meta.value_or(skill::SkillMeta{});
  meta.tests = tests;
  saved.meta = std::move(meta);
  UPSKILL_RETURN_IF_ERROR(saved.save(folder));
  request.session.skill_dir = folder;
  request.session.tests.reset();
  request.session.cases.reset();
  request.session.baseline = true;
  UPSKILL_ASSIGN_OR_RETURN(RemoteOutcome out, run_remote(request, observer));
  if (!out.merged) return fail(Error::infrastructure(out.no_batch_message(true)));
  return RemoteEvaluation{std::move(out.merged->evaluation), out.merged->batch_id};
}

Result<gen::EvaluateElsewhere> remote_evaluator(const RemoteRequest& given,
                                                std::shared_ptr<RemoteObserver> observer,
                                                std::function<CancelToken*()> cancel) {
  RemoteRequest base = given;
  if (base.config == nullptr) return fail(Error::usage("a remote run needs a configuration"));
  if (!base.globals.config_file && base.config->source)
    base.globals.config_file = *base.config->source;
  if (!base.session.runs_dir) base.session.runs_dir = base.config->runs_dir;
  UPSKILL_RETURN_IF_ERROR(check_attempt_settings(base));
  if (!observer) observer = std::make_shared<RemoteObserver>();
  const std::string stamp = eval::make_batch_id(std::chrono::system_clock::now());
  return gen::EvaluateElsewhere([base, stamp, observer, cancel](
                                    const gen::AttemptInput& in) -> Result<gen::AttemptEvaluation> {
    RemoteRequest request = base;
    request.session.models = in.students;
    request.session.runs = in.runs;
    request.session.jobs = in.jobs;
    request.session.seed = in.seed;
    request.cancel = cancel ? cancel() : base.cancel;
    const fs::path folder =
        *base.session.runs_dir / fmt::format("{}_attempt{}_skill", stamp, in.attempt);
    observer->attempt_saved(in.attempt, folder, executor_of(base.settings, *base.config));
    UPSKILL_ASSIGN_OR_RETURN(RemoteEvaluation done,
                             evaluate_remotely(request, in.skill, in.tests, folder, *observer));
    return gen::AttemptEvaluation{std::move(done.evaluation), std::move(done.batch_id)};
  });
}

}  // namespace upskill::scale
