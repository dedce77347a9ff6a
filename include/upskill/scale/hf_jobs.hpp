#pragma once
// Shards as Hugging Face Jobs (`--executor jobs`, docs/scale-out.md), through the `hf` command-line
// client, with upstream upskill's flags: --artifact-repo, --wait/--no-wait, --jobs-timeout,
// --jobs-flavor, --jobs-secrets, --jobs-namespace. A job runs in a container and sees none of the
// local files, so the submission uploads one bundle to the artifact dataset (inputs/<run>/): this
// upskill binary with the shared libraries it needs beyond glibc, the skill, the tests and the
// config. Job K downloads it, runs shard K and uploads its batch and exit status to
// outputs/<run>/shard-K/; the waiting side polls `hf jobs inspect`, then downloads the outputs and
// the job's log into the submission folder, where `upskill runs merge` finds them as it finds a
// Slurm array's. Secrets go by name (`hf jobs run --secrets NAME` takes the value from the
// environment): no key is ever in a file, an argument or the bundle.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "upskill/scale/executor.hpp"

namespace upskill::scale {

struct JobsOptions {
  std::optional<std::string> artifact_repo;  // a dataset repository, "<user>/<name>"; required
  std::string timeout = "2h";                // each job's limit, hf's form (90s, 30m, 2h, 1d)
  std::string flavor = "cpu-basic";
  std::vector<std::string> secrets{"HF_TOKEN"};  // names of environment variables
  std::optional<std::string> namespace_;
  std::string image = "ghcr.io/astral-sh/uv:python3.13-bookworm";
  std::filesystem::path upskill;  // the binary the jobs run (default: this one)
  std::chrono::milliseconds poll{std::chrono::seconds(15)};
};

// "90s", "30m", "2h", "1d" or plain seconds; nullopt when not a duration.
std::optional<std::chrono::seconds> parse_jobs_duration(const std::string& text);

// The options' own checks: --artifact-repo given and of the form <user>/<name>, the flavor, image,
// namespace and secret names single words, the timeout a duration (usage errors, 2).
Status check_jobs_options(const JobsOptions& options);

// The command a job runs (bash -lc): fetch the bundle, run shard K, upload what it left.
std::string job_script();

// Checks access to the artifact repository, uploads the bundle, starts one job per shard.
// Errors: no --artifact-repo or a bad option (2); `hf` missing, no access, an upload or a job
// start refused (3, hf's message kept; the jobs already started are recorded).
Result<Submission> submit_jobs(const TaskCommand& task, const ShardPlan& plan,
                               const JobsOptions& options, const std::filesystem::path& runs_dir);

// Polls `hf jobs inspect --format json` until every job has ended (COMPLETED, ERROR, CANCELED,
// DELETED), then fetches the outputs (fetch_jobs_outputs). Gives up (3) when the job timeout plus a
// margin (a quarter of it, 10 s to 10 min) has passed — the hub stops a job at its timeout — or
// when one job's polls fail 5 times in a row.
Result<std::vector<TaskOutcome>> wait_jobs(
    const Submission& submission, const JobsOptions& options, const CancelToken* cancel,
    const std::function<void(int ended, int total)>& progress);

// Downloads what each job uploaded (its batch and exit status) and its log into the submission
// folder; a shard fetched before is left as it is, with no call to hf.
Status fetch_jobs_outputs(const Submission& submission);

}  // namespace upskill::scale
