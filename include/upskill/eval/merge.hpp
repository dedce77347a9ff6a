#pragma once
// Shards of one evaluation merged into one batch (`upskill runs merge`, docs/scale-out.md). Every
// batch records its plan (plan.json: the skill, models, runs, arms, cases, seed and its shard);
// merging checks that the shards share a plan and that each of 1..N is there exactly once, reads
// every trial they logged, and writes one batch whose summary — rates, intervals, McNemar, lift —
// and every output are what an unsharded run with the same seed gives.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "upskill/eval/batch.hpp"
#include "upskill/eval/session.hpp"
#include "upskill/eval/summary.hpp"

namespace upskill::eval {

struct MergeRequest {
  std::vector<std::filesystem::path> shards;  // shard batch folders
  std::filesystem::path runs_dir;             // where the merged batch goes
  bool log_runs = true;
  std::vector<ResultFile> result_files;  // written from the merged evaluation, as a session's
  Gates gates;
  bool require_gpu = false;
};

// A merge ends as a session does (never "interrupted": trials in no shard's logs are missing, and
// make it exit 3).
struct MergeOutcome : EvaluationEnd {
  std::vector<std::string> shards;  // "K/N <folder>" in shard order
  std::size_t missing = 0;          // trials in no shard's logs
};

// Errors (exit 2): a folder without plan.json, shards of different evaluations, a shard given
// twice, a missing shard (each named). Files that cannot be written are write_errors: what was
// merged is still reported.
Result<MergeOutcome> merge_shards(const MergeRequest& request);

}  // namespace upskill::eval
