// Shards merged into one batch (see merge.hpp).
#include "upskill/eval/merge.hpp"

#include <fmt/format.h>

#include <map>

#include "upskill/core/files.hpp"
#include "upskill/eval/run_log.hpp"

namespace upskill::eval {

namespace fs = std::filesystem;

namespace {

// The merged batch: its own folder, plan, trials and run files; what cannot be written is kept as a
// write error, so that the merge is still reported.
void write_merged_batch(const MergeRequest& request, std::uint64_t seed, MergeOutcome& out) {
  auto keep = [&](const Status& s) {
    if (!s) out.write_errors.push_back(s.error());
    return s.has_value();
  };
  auto batch = create_batch(request.runs_dir);
  if (!keep(batch ? Status{} : Status(std::unexpected(batch.error())))) return;
  out.batch_id = batch->id;
  out.batch_dir = batch->dir;
  out.logged = true;
  const RunLogWriter writer{out.batch_dir, out.batch_id, out.evaluation.skill_name};
  if (!keep(write_plan(out.batch_dir, out.evaluation, seed))) return;
  for (const auto& t : out.evaluation.trials)
    if (t.completed && !keep(writer.write_trial(out.evaluation, t))) return;
  keep(writer.write(out.evaluation, out.summary));
}

}  // namespace

Result<MergeOutcome> merge_shards(const MergeRequest& request) {
  if (request.shards.empty()) return fail(Error::usage("name the shard batches to merge"));
  std::map<int, std::pair<fs::path, Plan>> by_index;
  std::optional<Plan> first;
  fs::path first_dir;
  for (const auto& dir : request.shards) {
    if (auto holder = files::FileLock::holder(dir / kBatchLockFile))
      return fail(Error::usage(fmt::format(
          "{} is still being written by an upskill process{}; merge it when it has ended",
          dir.string(), holder->empty() ? "" : " (" + *holder + ")")));
    UPSKILL_ASSIGN_OR_RETURN(Plan plan, read_plan(dir));
    const Shard shard = plan.shape.shard.value_or(Shard{1, 1});
    if (!first) {
      first = plan;
      first_dir = dir;
    } else if (plan.hash != first->hash) {
      return fail(Error::usage(fmt::format(
          "{} and {} are shards of different evaluations (skill, models, runs, cases or seed "
          "differ)",
          first_dir.string(), dir.string())));
    }
    const int count = first->shape.shard.value_or(Shard{1, 1}).count;
    if (shard.count != count)
      return fail(Error::usage(fmt::format("{} is shard {}/{}, but {} is one of {}", dir.string(),
                                           shard.index, shard.count, first_dir.string(), count)));
    if (const int gpu = first->shape.shard.value_or(Shard{}).gpu; shard.gpu != gpu)
      return fail(Error::usage(fmt::format("{} deals kernel cases to {} GPU shard(s), {} to {}",
                                           dir.string(), shard.gpu, first_dir.string(), gpu)));
    if (auto [it, inserted] = by_index.emplace(shard.index, std::make_pair(dir, plan)); !inserted)
      return fail(Error::usage(fmt::format("shard {}/{} is given twice: {} and {}", shard.index,
                                           count, it->second.first.string(), dir.string())));
  }
  const int count = first->shape.shard.value_or(Shard{1, 1}).count;
  std::vector<std::string> missing;
  for (int k = 1; k <= count; ++k)
    if (!by_index.contains(k)) missing.push_back(fmt::format("{}/{}", k, count));
  if (!missing.empty())
    return fail(
        Error::usage(fmt::format("missing shard{} {}: every shard of the evaluation is "
                                 "needed to merge it",
                                 missing.size() == 1 ? "" : "s", fmt::join(missing, ", "))));

  MergeOutcome out;
  out.evaluation = first->shape;
  out.evaluation.shard.reset();
  for (const auto& [k, entry] : by_index) {
    const auto& [dir, plan] = entry;
    out.shards.push_back(fmt::format("{}/{} {}", k, count, dir.string()));
    UPSKILL_ASSIGN_OR_RETURN(auto trials, load_completed_trials(dir, plan.shape, true));
    const ShardDeal deal(plan.shape);
    for (auto& [index, trial] : trials)
      if (deal.holds(trial.key)) out.evaluation.trials[index] = std::move(trial);
  }
  // Trials in no shard's logs are missing (the summary's completeness says so), not interrupted:
  // nothing here was stopped.
  out.evaluation.interrupted = false;
  out.summary = summarize(out.evaluation, first->seed);
  // Trials in no shard's logs: the first shard that lacks some is the cause (unless a model call
  // failed first).
  if (Completeness& c = out.summary.completeness; c.missing > 0 && c.errors == 0)
    for (const auto& [k, entry] : by_index) {
      const ShardDeal deal(entry.second.shape);
      long long lacking = 0, held = 0;
      for (const auto& t : out.evaluation.trials) {
        if (!deal.holds(t.key)) continue;
        ++held;
        lacking += !t.completed;
      }
      if (lacking == 0) continue;
      c.first_cause = fmt::format(
          "shard {}/{} ({}) logged {} of its {} trials (it was cancelled or interrupted; finish it "
          "with `upskill eval … --shard {}/{} --resume {}`)",
          k, count, entry.first.string(), held - lacking, held, k, count,
          entry.first.filename().string());
      break;
    }
  if (request.log_runs) write_merged_batch(request, first->seed, out);
  for (const auto& t : out.evaluation.trials) out.missing += !t.completed;
  finish_evaluation(out, request.result_files, request.gates, request.require_gpu, false);
  return out;
}

}  // namespace upskill::eval
