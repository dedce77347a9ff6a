#pragma once
// One evaluation run as shards on another engine (docs/scale-out.md): a Slurm job array
// (scale/slurm.hpp) or Hugging Face Jobs (scale/hf_jobs.hpp). Every engine runs the same thing —
// `upskill eval … --shard K/N` once per shard — and the shards' batches are merged by
// eval::merge_shards, so the result is the one a local run with the same seed gives. What is common
// to the engines lives here: the task's command line, the submission folder and its record
// (submission.json), and what each task left behind.
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "upskill/cases/test_case.hpp"
#include "upskill/config/config.hpp"
#include "upskill/core/cancel.hpp"
#include "upskill/core/error.hpp"
#include "upskill/eval/session.hpp"

namespace upskill::scale {

// The evaluation each task runs: the request, written to a file (task.json) that every task reads
// with `upskill eval --request FILE` — its shard and run-log folder given per task on the command
// line, its result files and gates left to the merge.
struct TaskCommand {
  eval::SessionRequest request;
  std::optional<std::filesystem::path> config;
  std::vector<std::string> global_options;  // before the command: --base-url URL, --replay FILE…
  std::filesystem::path request_file;       // set by write_task_request
};

// The cases the tasks will run (the tests file, else skill_meta.json). Errors: unreadable, or none
// (a skill without tests gets them from a local `eval --test-gen-model` first: shards writing
// tests each on their own would disagree).
Result<std::vector<cases::TestCase>> load_task_cases(const TaskCommand& task);

struct ShardPlan {
  int shards = 4;
  int gpu_shards = 0;  // shards 1..G take the kernel cases (eval::Shard::gpu)
};

// Plans an executor can run: 1 ≤ N, 0 ≤ G ≤ N.
Status check_plan(const ShardPlan& plan);

// The default number of GPU shards when kernel cases go to a GPU partition: the kernel cases'
// share of the shards, at least one when there are kernel cases and at most N-1 when there are
// others too; 0 without kernel cases.
int default_gpu_shards(const std::vector<cases::TestCase>& cases, int shards);

// The arguments after the program name for one shard, as a job script's shell words (each
// starting with a space): the global options, eval --request FILE, then --shard SHARD
// [--gpu-shards G] --runs-dir RUNS_DIR --executor local, every word quoted but SHARD and
// RUNS_DIR, the script's own shell expressions for them.
std::string task_shell_arguments(const TaskCommand& task, const ShardPlan& plan,
                                 const std::string& shard, const std::string& runs_dir);

// A word for a POSIX shell: single-quoted unless it is plainly safe.
std::string shell_quote(const std::string& word);

// A submission: the folder holding the job scripts, the tasks' logs, their run-log folders
// (shards/K) and exit statuses (status/shard-K.rc), recorded in submission.json.
struct Submission {
  config::Executor executor = config::Executor::slurm;  // slurm or jobs
  std::filesystem::path dir;
  std::vector<std::string> job_ids;  // Slurm: one per array; Jobs: one per shard
  ShardPlan plan;
  std::string created;                // ISO time
  std::optional<std::string> remote;  // Jobs: the artifact repository and run id, "REPO@RUN"
  std::optional<std::string> jobs_namespace;
};

// A new submission folder under runs_dir (slurm-<stamp> / jobs-<stamp>), with its sub-folders.
Result<Submission> new_submission(config::Executor executor, const std::filesystem::path& runs_dir,
                                  const ShardPlan& plan);
Status write_submission(const Submission& submission);
// The task's request into `file` (its JSON form: eval::to_json), which the tasks then read.
Status write_task_request(TaskCommand& task, const std::filesystem::path& file);
Result<Submission> read_submission(const std::filesystem::path& dir);

// What one task left: its exit status (written by the task itself), its batch, its log, and the
// engine's word for its end (Slurm: COMPLETED, FAILED, TIMEOUT, …; Jobs: COMPLETED, ERROR, …).
struct TaskOutcome {
  int shard = 0;
  std::optional<int> exit;  // the eval's exit status, when the task got to write it
  std::optional<std::filesystem::path> batch;
  std::filesystem::path log;
  std::string state;  // "" when the engine no longer knows
  // A task failed when it left no batch, or its eval ended other than 0 (done) or 3 (some trials
  // got no answer: they are saved as errors and merged as such).
  bool failed() const;
  std::string describe() const;  // "shard 2/4: TIMEOUT, exit status not written (log: …)"
  int of = 0;                    // N, for describe()
};
std::vector<TaskOutcome> task_outcomes(const Submission& submission,
                                       const std::map<int, std::string>& states);

// The batch folders `upskill runs merge DIR` takes for DIR: its shards' batches when DIR is a
// submission folder (a Jobs submission's outputs fetched first), DIR itself otherwise.
Result<std::vector<std::filesystem::path>> merge_inputs(const std::filesystem::path& dir);

// A tool of the engine (sbatch, squeue, hf), run with the user's own environment — less the
// variables named in `without` (sbatch: the secrets, which Slurm would save with the job) — and a
// time limit.
struct ToolResult {
  int exit_code = -1;
  bool timed_out = false;
  std::string output;
  bool ok() const { return exit_code == 0 && !timed_out; }
};
Result<ToolResult> run_tool(const std::vector<std::string>& argv,
                            const std::filesystem::path& workdir,
                            std::chrono::seconds timeout = std::chrono::seconds(120),
                            const std::vector<std::string>& without = {});

// A submission's secrets for its tasks (Slurm: written 0600 by submit_slurm, sourced by the job
// script, removed once every task has ended).
inline std::filesystem::path secrets_file(const std::filesystem::path& submission_dir) {
  return submission_dir / "secrets.env";
}

// The running upskill binary (/proc/self/exe): what the tasks run unless told otherwise.
std::filesystem::path this_binary();

}  // namespace upskill::scale
