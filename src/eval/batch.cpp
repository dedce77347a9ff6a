// A batch of run logs as a whole (see batch.hpp).
#include "upskill/eval/batch.hpp"

#include <fmt/format.h>

#include <map>
#include <random>
#include <set>

#include "upskill/core/files.hpp"
#include "upskill/core/hash.hpp"
#include "upskill/core/text.hpp"
#include "upskill/core/timefmt.hpp"
#include "upskill/eval/request_fields.hpp"

namespace upskill::eval {

namespace fs = std::filesystem;

std::string make_batch_id(std::chrono::system_clock::time_point when) {
  static constexpr std::string_view kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device device;  // the kernel's entropy: no two processes draw alike
  std::uniform_int_distribution<std::size_t> pick(0, kAlphabet.size() - 1);
  std::string suffix;
  for (int i = 0; i < 6; ++i) suffix += kAlphabet[pick(device)];
  return timefmt::format(when, timefmt::Zone::local, "%Y_%m_%d_%H_%M_%S") + "_" + suffix;
}

namespace {

Result<files::FileLock> lock_batch(const fs::path& dir) {
  return files::FileLock::try_acquire(dir / kBatchLockFile, fmt::format("batch {}", dir.string()));
}

Status make_runs_dir(const fs::path& runs_dir) {
  std::error_code ec;
  fs::create_directories(runs_dir, ec);
  if (ec)
    return fail(Error::usage(
        fmt::format("{}: cannot create the runs folder: {}", runs_dir.string(), ec.message())));
  return {};
}

}  // namespace

Result<BatchFolder> create_named_batch(const fs::path& runs_dir, const std::string& id) {
  UPSKILL_RETURN_IF_ERROR(make_runs_dir(runs_dir));
  std::error_code ec;
  const fs::path dir = runs_dir / id;
  // create_directory is mkdir(2): exactly one caller creates a folder, whoever else races for it.
  if (!fs::create_directory(dir, ec))
    return fail(Error::usage(fmt::format("{}: cannot create the batch folder: {}", dir.string(),
                                         ec ? ec.message() : "it exists already")));
  UPSKILL_ASSIGN_OR_RETURN(files::FileLock lock, lock_batch(dir));
  return BatchFolder{id, dir, std::move(lock)};
}

Result<BatchFolder> create_batch(const fs::path& runs_dir) {
  UPSKILL_RETURN_IF_ERROR(make_runs_dir(runs_dir));
  for (int attempt = 0;; ++attempt) {
    const std::string id = make_batch_id(std::chrono::system_clock::now());
    std::error_code ec;
    if (fs::create_directory(runs_dir / id, ec)) {
      UPSKILL_ASSIGN_OR_RETURN(files::FileLock lock, lock_batch(runs_dir / id));
      return BatchFolder{id, runs_dir / id, std::move(lock)};
    }
    if (ec || attempt >= 20)  // a real error, or a random source that keeps repeating itself
      return fail(
          Error::usage(fmt::format("{}: cannot create a batch folder: {}", runs_dir.string(),
                                   ec ? ec.message() : "every id drawn was taken")));
  }
}

Result<BatchFolder> open_batch(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return fail(Error::usage(fmt::format("{}: no such batch to resume", dir.string())));
  // A folder that holds no run logs is not a batch: nothing is written into it.
  const bool logs = has_plan(dir) || fs::exists(dir / "trials.jsonl", ec) ||
                    fs::exists(dir / "run_1" / "run_result.json", ec);
  if (!logs)
    return fail(Error::usage(fmt::format(
        "{}: not a batch of run logs (no plan.json, trials.jsonl or run_1/run_result.json)",
        dir.string())));
  UPSKILL_ASSIGN_OR_RETURN(files::FileLock lock, lock_batch(dir));
  // A writer killed in the middle of an atomic write leaves its temporary file; with the lock held
  // nobody else is writing, so whatever temporaries are left are such remains.
  files::remove_temporaries(dir);
  return BatchFolder{dir.filename().string(), dir, std::move(lock)};
}

namespace {

Json plan_body(const Evaluation& plan) {
  Json models = Json::array();
  for (const auto& m : plan.models)
    models.push_back({{"name", m.name}, {"model", m.model}, {"provider", m.provider}});
  return {{"skill", plan.skill_name},
          {"models", models},
          {"runs", plan.runs},
          {"baseline", plan.baseline},
          {"cases", cases::cases_to_json(plan.cases)},
          {"settings", plan.settings}};
}

}  // namespace

Status write_plan(const fs::path& batch_dir, const Evaluation& plan, std::uint64_t seed) {
  const Json body = plan_body(plan);
  Json j = body;
  j["seed"] = seed;
  j["plan_hash"] = hash::sha256_hex(body.dump() + fmt::format("|{}", seed));
  j["cases_hash"] = hash::sha256_hex(body["cases"].dump());
  j["shard"] = nullptr;
  if (plan.shard) {
    j["shard"] = {{"index", plan.shard->index}, {"count", plan.shard->count}};
    if (plan.shard->gpu > 0) j["shard"]["gpu"] = plan.shard->gpu;
  }
  j["schema"] = "upskill.plan/1";
  return files::write_atomic(batch_dir / "plan.json", j.dump(1) + "\n");
}

bool has_plan(const fs::path& batch_dir) {
  std::error_code ec;
  return fs::exists(batch_dir / "plan.json", ec);
}

Result<Plan> read_plan(const fs::path& batch_dir) {
  const fs::path file = batch_dir / "plan.json";
  if (!has_plan(batch_dir))
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
    if (j.contains("settings") && j["settings"].is_object()) p.shape.settings = j["settings"];
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
  UPSKILL_ASSIGN_OR_RETURN(cases::CaseListResult cases,
                           cases::parse_case_array(doc, "/cases", true));
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

namespace {

std::string model_list(const Evaluation& e) {
  std::vector<std::string> out;
  for (const auto& m : e.models)
    out.push_back(m.model.empty() || m.model == m.name ? m.name
                                                       : fmt::format("{} ({})", m.name, m.model));
  return out.empty() ? std::string("none") : text::join(out, ", ");
}

std::string arms_text(bool baseline) {
  return baseline ? "baseline and with skill" : "with skill only (--no-baseline)";
}

std::string shard_text(const std::optional<Shard>& s) {
  if (!s) return "none";
  return s->gpu > 0 ? fmt::format("{}/{} (--gpu-shards {})", s->index, s->count, s->gpu)
                    : fmt::format("{}/{}", s->index, s->count);
}

// The tests compared case by case: ids only one side has, then ids whose content differs.
std::vector<std::string> case_differences(const Evaluation& recorded, const Evaluation& requested) {
  std::map<std::string, std::string> before, now;
  for (const auto& c : recorded.cases) before[c.id] = cases::cases_to_json({c}).dump();
  for (const auto& c : requested.cases) now[c.id] = cases::cases_to_json({c}).dump();
  std::vector<std::string> gone, added, changed;
  for (const auto& [id, text] : before) {
    auto it = now.find(id);
    if (it == now.end())
      gone.push_back(id);
    else if (it->second != text)
      changed.push_back(id);
  }
  for (const auto& [id, _] : now)
    if (!before.contains(id)) added.push_back(id);
  auto few = [](const std::vector<std::string>& ids) {
    std::vector<std::string> shown(ids.begin(), ids.begin() + std::min<std::size_t>(ids.size(), 5));
    return text::join(shown, ", ") + (ids.size() > shown.size()
                                          ? fmt::format(" and {} more", ids.size() - shown.size())
                                          : std::string());
  };
  std::vector<std::string> out;
  if (!gone.empty()) out.push_back("tests: only the batch has case(s) " + few(gone));
  if (!added.empty()) out.push_back("tests: only this request has case(s) " + few(added));
  if (!changed.empty())
    out.push_back("tests: case(s) changed since the batch began: " + few(changed));
  std::vector<std::string> order_before, order_now;
  for (const auto& c : recorded.cases) order_before.push_back(c.id);
  for (const auto& c : requested.cases) order_now.push_back(c.id);
  if (out.empty() && order_before != order_now)
    out.push_back("tests: the cases are in another order");
  return out;
}

}  // namespace

std::vector<std::string> plan_differences(const Plan& recorded, const Evaluation& requested,
                                          std::uint64_t seed) {
  const Evaluation& r = recorded.shape;
  std::vector<std::string> out;
  if (r.skill_name != requested.skill_name)
    out.push_back(fmt::format("skill: '{}' in the batch, '{}' requested", r.skill_name,
                              requested.skill_name));
  for (auto& d : case_differences(r, requested)) out.push_back(std::move(d));
  if (model_list(r) != model_list(requested))
    out.push_back(
        fmt::format("models: {} in the batch, {} requested", model_list(r), model_list(requested)));
  if (r.runs != requested.runs)
    out.push_back(fmt::format("runs: {} in the batch, {} requested (--runs {})", r.runs,
                              requested.runs, r.runs));
  if (recorded.seed != seed)
    out.push_back(fmt::format("seed: {} in the batch, {} requested (--seed {})", recorded.seed,
                              seed, recorded.seed));
  if (r.baseline != requested.baseline)
    out.push_back(fmt::format("arms: {} in the batch, {} requested", arms_text(r.baseline),
                              arms_text(requested.baseline)));
  // What else the trials depend on: the request's fields that shape them (request_fields.hpp),
  // the skill's content and the judges. A plan written before settings were recorded has none to
  // compare.
  std::vector<std::pair<std::string, std::string>> settings{
      {"skill_hash", "the skill's SKILL.md or files changed since the batch began"}};
  SessionRequest fields;
  for_each_request_field(fields, [&settings](const RequestField& field, const auto&) {
    if (field.shapes_trials) settings.emplace_back(field.key, field.flag);
  });
  settings.emplace_back("judges", "the judge models");
  for (const auto& [key, what] : settings) {
    const Json* before = r.settings.contains(key) ? &r.settings[key] : nullptr;
    if (before == nullptr || !requested.settings.contains(key)) continue;
    const Json& now = requested.settings[key];
    if (*before == now) continue;
    if (key == "skill_hash")
      out.push_back("skill content: " + what);
    else
      out.push_back(
          fmt::format("{}: {} in the batch, {} requested", what, before->dump(), now.dump()));
  }
  const bool same_shard = r.shard.has_value() == requested.shard.has_value() &&
                          (!r.shard || (r.shard->index == requested.shard->index &&
                                        r.shard->count == requested.shard->count &&
                                        r.shard->gpu == requested.shard->gpu));
  if (!same_shard)
    out.push_back(fmt::format("shard: {} in the batch, {} requested", shard_text(r.shard),
                              shard_text(requested.shard)));
  return out;
}

}  // namespace upskill::eval
