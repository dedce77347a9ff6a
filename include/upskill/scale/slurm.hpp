#pragma once
// Shards as a Slurm job array (`--executor slurm`, docs/scale-out.md). One array task per shard
// runs `upskill eval … --shard K/N` on a compute node; the node must see the same files as the
// submitting machine (the skill, the tests, the upskill binary and the runs folder), as on any
// Slurm cluster with a shared file system. With a GPU partition, the shards that take the kernel
// cases (1..G, eval::Shard::gpu) are a second array there, asking for a GPU with --gres.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "upskill/scale/executor.hpp"

namespace upskill::scale {

struct SlurmOptions {
  std::optional<std::string> partition;  // #SBATCH --partition
  // What a cluster's admins expect every job to say; overridable (config slurm:, --slurm-*).
  std::string time = "2:00:00";              // #SBATCH --time (Slurm's forms: 30, 1:00:00, 1-0)
  std::string mem = "4G";                    // #SBATCH --mem
  std::string cpus_per_task = "2";           // #SBATCH --cpus-per-task
  std::optional<std::string> account;        // #SBATCH --account
  std::vector<std::string> extra;            // further #SBATCH lines, e.g. "--qos=high"
  std::optional<std::string> gpu_partition;  // the kernel shards' partition
  std::string gpu_gres = "gpu:1";            // what each kernel shard asks for there
  std::string job_name = "upskill";
  // Environment variables that are secrets beyond those named like one (…_API_KEY, …_TOKEN, …):
  // kept out of sbatch's environment, passed to the tasks in the submission's secrets file.
  std::vector<std::string> secret_names;
  std::filesystem::path upskill;  // the binary the tasks run (default: this one)
  std::chrono::milliseconds poll{std::chrono::seconds(5)};
  // How long, once no task is live, an exit status missing on this machine is waited for (what a
  // node wrote can take a while to show on a shared file system).
  std::chrono::milliseconds settle{std::chrono::seconds(60)};
};

// The job script of one array: shards first..last of the submission.
std::string slurm_script(const TaskCommand& task, const SlurmOptions& options,
                         const Submission& submission, int first, int last, bool gpu);

// Writes the job scripts and submits them with sbatch. Errors: a value that would break a #SBATCH
// line, sbatch missing or refusing the job (its message is kept).
Result<Submission> submit_slurm(const TaskCommand& task, const ShardPlan& plan,
                                const SlurmOptions& options, const std::filesystem::path& runs_dir);

// Polls squeue until no task of the submission is pending or running, then says what each task
// left. `progress` hears how many tasks have ended. Cancelled: an error with exit 130, the jobs
// left running.
Result<std::vector<TaskOutcome>> wait_slurm(
    const Submission& submission, const SlurmOptions& options, const CancelToken* cancel,
    const std::function<void(int ended, int total)>& progress);

}  // namespace upskill::scale
