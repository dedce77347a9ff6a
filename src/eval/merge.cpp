// Shards merged into one batch (see merge.hpp).
#include <fmt/format.h>

#include <map>

#include "upskill/core/files.hpp"
#include "upskill/core/hash.hpp"
#include "upskill/eval/merge.hpp"
#include "upskill/eval/run_log.hpp"

namespace upskill::eval {

namespace fs = std::filesystem;

namespace {

Json plan_body(const Evaluation& plan) {
  Json models = Json::array();
  for (const auto& m : plan.models)
    models.push_back({{"name", m.name}, {"model", m.model}, {"provider", m.provider}});
  return {{"skill", plan.skill_name},
          {"models", models},
          {"runs", plan.runs},
          {"baseline", plan.baseline},
          {"cases", cases::cases_to_json(plan.cases)}};
}

}  // namespace

Status write_plan(const fs::path& batch_dir, const Evaluation& plan, std::uint64_t seed) {
  Json j = plan_body(plan);
  j["seed"] = seed;
  j["plan_hash"] = hash::sha256_hex(plan_body(plan).dump() + fmt::format("|{}", seed));
  j["shard"] = nullptr;
  if (plan.shard) {
    j["shard"] = {{"index", plan.shard->index}, {"count", plan.shard->count}};
    if (plan.shard->gpu > 0) j["shard"]["gpu"] = plan.shard->gpu;
  }
  j["schema"] = "upskill.plan/1";
  return files::write_atomic(batch_dir / "plan.json", j.dump(1) + "\n");
}

Result<Plan> read_plan(const fs::path& batch_dir) {
  const fs::path file = batch_dir / "plan.json";
  std::error_code ec;
  if (!fs::exists(file, ec))
    return fail(Error::usage(fmt::format(
        "{}: not a batch upskill can merge (no plan.json; batches record it since shards exist)",
        batch_dir.string())));
  UPSKILL_ASSIGN_OR_RETURN(std::string text, files::read_text(file));
  UPSKILL_ASSIGN_OR_RETURN(JsonDocument doc, parse_json_document(text, file.string()));
  const Json& j = doc.value;
  Plan p;
  try {
    p.shape.skill_name = j.at("skill").get<std::string>();
    for (const auto& m : j.at("models")) {
      llm::ResolvedModel model;
      model.name = m.at("name").get<std::string>();
      model.spec = model.name;
      model.model = m.value("model", model.name);
      model.provider = m.value("provider", "");
      p.shape.models.push_back(std::move(model));
    }
    p.shape.runs = j.at("runs").get<int>();
    p.shape.baseline = j.at("baseline").get<bool>();
    p.seed = j.at("seed").get<std::uint64_t>();
    p.hash = j.at("plan_hash").get<std::string>();
    if (j.contains("shard") && j["shard"].is_object())
      p.shape.shard = Shard{j["shard"].at("index").get<int>(), j["shard"].at("count").get<int>(),
                            j["shard"].value("gpu", 0)};
  } catch (const nlohmann::json::exception& e) {
    return fail(
        Error::usage(fmt::format("{}: not a plan upskill wrote: {}", file.string(), e.what())));
  }
  if (const auto& sh = p.shape.shard;
      sh && (sh->count < 1 || sh->index < 1 || sh->index > sh->count || sh->gpu < 0 ||
             sh->gpu > sh->count))
    return fail(Error::usage(fmt::format("{}: shard {}/{} (gpu {}) is not a shard", file.string(),
                                         sh->index, sh->count, sh->gpu)));
  if (p.shape.runs < 1 || p.shape.models.empty())
    return fail(Error::usage(fmt::format("{}: a plan without models or runs", file.string())));
  UPSKILL_ASSIGN_OR_RETURN(cases::CaseListResult cases, cases::parse_case_array(doc, "/cases"));
  p.shape.cases = std::move(cases.cases);
  p.shape.trials.resize(p.shape.models.size() * p.shape.arms().size() *
                        static_cast<std::size_t>(p.shape.runs) * p.shape.cases.size());
  for (std::size_t m = 0; m < p.shape.models.size(); ++m)
    for (Arm arm : p.shape.arms())
      for (int run = 0; run < p.shape.runs; ++run)
        for (std::size_t c = 0; c < p.shape.cases.size(); ++c) {
          const TrialKey key{m, arm, run, c};
          p.shape.trials[p.shape.index(key)].key = key;
        }
  return p;
}

Result<MergeOutcome> merge_shards(const MergeRequest& request) {
  if (request.shards.empty()) return fail(Error::usage("name the shard batches to merge"));
  std::map<int, std::pair<fs::path, Plan>> by_index;
  std::optional<Plan> first;
  fs::path first_dir;
  for (const auto& dir : request.shards) {
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
  for (const auto& t : out.evaluation.trials)
    out.evaluation.interrupted = out.evaluation.interrupted || !t.completed;
  out.summary = summarize(out.evaluation, first->seed);
  out.batch_id = make_batch_id(std::chrono::system_clock::now());
  out.batch_dir = request.runs_dir / out.batch_id;
  if (request.log_runs) {
    const RunLogWriter writer{out.batch_dir, out.batch_id, out.evaluation.skill_name};
    UPSKILL_RETURN_IF_ERROR(write_plan(out.batch_dir, out.evaluation, first->seed));
    for (const auto& t : out.evaluation.trials)
      if (t.completed) UPSKILL_RETURN_IF_ERROR(writer.write_trial(out.evaluation, t));
    UPSKILL_RETURN_IF_ERROR(writer.write(out.evaluation, out.summary));
  }
  return out;
}

}  // namespace upskill::eval
