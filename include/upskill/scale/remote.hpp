#pragma once
// One evaluation run remotely, start to end (docs/scale-out.md): the request checked, every
// shard's task submitted to Slurm or Hugging Face Jobs, the tasks waited for, and their batches
// merged and reported as a local session reports — or, without waiting, the submission left to
// `runs merge`. What a front end gives is an eval::SessionRequest (the same one a local run takes)
// and the executor's settings as given; their defaults come from the configuration, here.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "upskill/config/config.hpp"
#include "upskill/core/cancel.hpp"
#include "upskill/eval/merge.hpp"
#include "upskill/eval/session.hpp"
#include "upskill/gen/refine.hpp"
#include "upskill/scale/executor.hpp"
#include "upskill/scale/hf_jobs.hpp"
#include "upskill/scale/slurm.hpp"
#include "upskill/skill/skill_bundle.hpp"

namespace upskill::scale {

// The executor's settings as a front end got them: each unset one takes the configuration's value,
// else upskill's default (docs/configuration.md).
struct ExecutorSettings {
  std::optional<config::Executor> executor;
  std::optional<int> shards;
  std::optional<int> gpu_shards;
  bool wait = true;
  std::optional<std::string> slurm_partition, slurm_time, slurm_account, slurm_gpu_partition,
      slurm_gpu_gres, slurm_mem, slurm_cpus;
  std::vector<std::string> slurm_options;  // further #SBATCH lines, after the config's
  std::optional<std::string> artifact_repo, jobs_timeout, jobs_flavor, jobs_namespace, jobs_image;
  std::vector<std::string> jobs_secrets;  // each comma-separated or one name; replaces the config's
};

// The executor a request runs on: the settings', else the configuration's (local by default).
config::Executor executor_of(const ExecutorSettings& settings, const config::Config& config);
// Slurm's and Jobs' options from the settings and the configuration.
SlurmOptions slurm_options(const ExecutorSettings& settings, const config::Config& config);
JobsOptions jobs_options(const ExecutorSettings& settings, const config::Config& config);

// What reaches a task besides the evaluation: the configuration file and the model overrides the
// front end was given.
struct TaskGlobals {
  std::optional<std::filesystem::path> config_file;
  std::optional<std::string> base_url;     // --base-url
  std::optional<std::string> api_key_env;  // --api-key-env
  std::optional<std::filesystem::path> replay;
};

// The `upskill eval` each shard's task runs for `request`, every value explicit (a task resolves
// nothing from its own machine's defaults): the skill, the tests, the models, runs, jobs, seed,
// arms, mode, agent settings and judges. Errors: what cannot run as shards (--resume,
// --no-log-runs: each shard keeps its own batch).
Result<TaskCommand> task_command(const eval::SessionRequest& request, const TaskGlobals& globals);

struct RemoteRequest {
  const config::Config* config = nullptr;
  eval::SessionRequest session;  // the evaluation, its runs_dir, result files, gates, require_gpu
  ExecutorSettings settings;     // its executor (slurm or jobs) and shards
  TaskGlobals globals;
  CancelToken* cancel = nullptr;  // Ctrl-C stops the wait (the tasks are cancelled)
};

// What a remote run tells its front end while it runs (every method may be left as is).
class RemoteObserver {
 public:
  virtual ~RemoteObserver() = default;
  virtual void submitted(const Submission& /*submission*/) {}
  virtual void progress(int /*ended*/, int /*total*/) {}
  // generate's remote evaluations: attempt N's skill saved to `folder`, about to be submitted to
  // `executor`.
  virtual void attempt_saved(int /*attempt*/, const std::filesystem::path& /*folder*/,
                             config::Executor /*executor*/) {}
};

struct RemoteOutcome {
  Submission submission;
  bool waited = false;                       // false: --no-wait, the submission is to merge later
  std::string later;                         // what to do with the folder when not waited for
  std::vector<TaskOutcome> tasks;            // when waited
  std::vector<TaskOutcome> failed;           // those that failed, for their logs
  int shards_without_batch = 0;              // tasks that left no batch: nothing to merge yet
  std::string rerun;                         // how to rerun such a shard
  std::optional<eval::MergeOutcome> merged;  // when every shard left a batch
  ExitCode exit = ExitCode::ok;  // the merge's (eval::exit_status), or 3 with shards missing
  // "N of M shard task(s) left no batch …; rerun shard K with …, then `upskill runs merge
  // DIR`", naming the failed tasks in it or sending the reader to their logs.
  std::string no_batch_message(bool name_failed) const;
};

// What can be refused before anything runs: the executor (slurm or jobs), a cassette or
// fast-agent endpoints with jobs (a job cannot read them) and the Jobs options (--artifact-repo …).
Status check_remote_settings(const RemoteRequest& request);

// generate's evaluations (evaluate_remotely): what check_remote_settings refuses, and what
// refinement cannot do without — waiting (each result is needed) and run logs (each attempt's merge
// reads the shards' batches). Usage errors (2).
Status check_attempt_settings(const RemoteRequest& request);

// Runs the evaluation as shards. Errors (before anything is submitted, or from the engine): a bad
// request or setting (2), the engine refusing or missing (3), Ctrl-C while waiting (130).
Result<RemoteOutcome> run_remote(const RemoteRequest& request, RemoteObserver& observer);

// One evaluation of `upskill generate --executor slurm|jobs` (its refinement stays local): the
// skill with `tests` in its skill_meta.json saved to `folder` (which the tasks read, so on a shared
// file system for Slurm), evaluated remotely with both arms as `request` says (its session's skill
// and tests are these), waited for and merged into a batch under the session's runs_dir. Errors: as
// check_attempt_settings and run_remote; shard tasks that left no batch (3, each named, with how to
// rerun it).
struct RemoteEvaluation {
  eval::Evaluation evaluation;
  std::string batch_id;
};
Result<RemoteEvaluation> evaluate_remotely(RemoteRequest request, const skill::SkillBundle& skill,
                                           const std::vector<cases::TestCase>& tests,
                                           const std::filesystem::path& folder,
                                           RemoteObserver& observer);

// `generate --executor slurm|jobs` (and the Python module's generate(executor=…)): the evaluator
// gen::run_generate calls for each attempt, which saves the attempt's skill to
// `<runs_dir>/<stamp>_attempt<N>_skill/` and evaluates it remotely (evaluate_remotely) with the
// attempt's students, runs, jobs and seed. `base` gives the configuration (which must outlive the
// evaluator), the executor's settings, the task globals, the runs folder and log_runs; `cancel`,
// when set, is asked at each attempt for the token Ctrl-C sets (the front end's session may open
// later). Errors, before the teacher is called: what check_attempt_settings refuses.
Result<gen::EvaluateElsewhere> remote_evaluator(const RemoteRequest& base,
                                                std::shared_ptr<RemoteObserver> observer,
                                                std::function<CancelToken*()> cancel = {});

}  // namespace upskill::scale
