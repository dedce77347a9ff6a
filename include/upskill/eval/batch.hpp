#pragma once
// A batch of run logs as a whole (docs/eval.md, "Run logs"): its id, its folder created
// exclusively, the lock held by the one process that writes it, and its plan (plan.json: the skill,
// models, runs, arms, cases and seed it runs), which --resume and `runs merge` check against.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "upskill/core/file_lock.hpp"
#include "upskill/eval/evaluation.hpp"

namespace upskill::eval {

// "2026_12_02_10_35_07_k3x9qa": the local time to the second, so that ids sort by time as
// upskill's do, then six random characters, so that batches started in the same second — by other
// processes, on other machines, by the shards of one evaluation — never share an id.
std::string make_batch_id(std::chrono::system_clock::time_point when);

// The file a batch's writer holds locked (docs/eval.md).
inline constexpr const char* kBatchLockFile = "batch.lock";

// A batch this process writes: its id, its folder and the lock held while it writes.
struct BatchFolder {
  std::string id;
  std::filesystem::path dir;
  files::FileLock lock;
};

// A new batch under `runs_dir` (created when missing): the folder made exclusively — an id another
// process took meanwhile is drawn again — and locked.
Result<BatchFolder> create_batch(const std::filesystem::path& runs_dir);
// A new batch with exactly this id (generate's "<id>_attempt2"); an error when the folder exists.
Result<BatchFolder> create_named_batch(const std::filesystem::path& runs_dir,
                                       const std::string& id);
// An existing batch, locked for --resume; refused (exit 2) when another process holds it.
Result<BatchFolder> open_batch(const std::filesystem::path& dir);

// plan.json of a batch: what runs, so that shards can be checked and merged without the inputs and
// a resumed batch can be checked against the request that resumes it.
Status write_plan(const std::filesystem::path& batch_dir, const Evaluation& plan,
                  std::uint64_t seed);

struct Plan {
  Evaluation shape;  // skill, models (names and ids), runs, baseline, cases, shard
  std::uint64_t seed = 0;
  std::string hash;  // of everything but the shard: equal for shards of one evaluation
};
// Errors (exit 2): no plan.json (named), not a plan upskill wrote, a shard that is not one.
Result<Plan> read_plan(const std::filesystem::path& batch_dir);
// Whether the batch has a plan.json at all (batches written before plans existed do not).
bool has_plan(const std::filesystem::path& batch_dir);

// What a batch's recorded plan and a request differ in, one phrase each ("runs: 3 in the batch, 1
// requested"): the skill, the tests (by case id, and by content), the models, runs, seed, arms and
// shard. Empty: the request is the batch's own evaluation.
std::vector<std::string> plan_differences(const Plan& recorded, const Evaluation& requested,
                                          std::uint64_t seed);

}  // namespace upskill::eval
