// A session request resolved from what a front end was given and the configuration, and shown as
// JSON (see session.hpp).
#include "upskill/eval/batch.hpp"
#include "upskill/eval/session.hpp"

namespace upskill::eval {

int resolved_jobs(const RequestSettings& given, const config::Config& cfg) {
  return std::max(1, given.jobs.value_or(cfg.max_parallel.value_or(4)));
}

int resolved_runs(const RequestSettings& given, const config::Config& cfg) {
  return std::max(1, given.runs.value_or(cfg.num_runs.value_or(given.benchmark ? 3 : 1)));
}

std::filesystem::path resume_dir(const std::string& resume, const std::filesystem::path& runs_dir) {
  std::error_code ec;
  return std::filesystem::exists(resume, ec) ? std::filesystem::path(resume) : runs_dir / resume;
}

void resolve_request(SessionRequest& request, const RequestSettings& given,
                     const config::Config& cfg) {
  request.jobs = resolved_jobs(given, cfg);
  request.runs = resolved_runs(given, cfg);
  if (request.models.empty()) request.models.push_back(cfg.model_for(config::ModelRole::student));
  if (request.judge_models.empty())
    request.judge_models.push_back(cfg.model_for(config::ModelRole::judge));
  if (!request.runs_dir) request.runs_dir = cfg.runs_dir;
  const bool upstream_rule = !given.benchmark && request.models.size() <= 1 && request.runs <= 1;
  if (given.baseline) {
    request.baseline = *given.baseline;
  } else if (request.resume) {  // the batch's own arms, whatever the rule says today
    auto plan = read_plan(resume_dir(*request.resume, *request.runs_dir));
    request.baseline = plan ? plan->shape.baseline : upstream_rule;
  } else {
    request.baseline = request.gates.min_lift.has_value() || upstream_rule;
  }
}

Json to_json(const SessionRequest& r) {
  auto optional_path = [](const std::optional<std::filesystem::path>& p) {
    return p ? Json(p->string()) : Json(nullptr);
  };
  Json j = {{"skill_dir", r.skill_dir.string()},
            {"tests", optional_path(r.tests)},
            {"models", r.models},
            {"runs", r.runs},
            {"jobs", r.jobs},
            {"seed", r.seed},
            {"baseline", r.baseline},
            {"mode", r.mode ? Json(to_string(*r.mode)) : Json(nullptr)},
            {"skill_delivery", to_string(r.skill_delivery)},
            {"inline_references", r.inline_references},
            {"max_turns", r.max_turns},
            {"allow_run", r.allow_run},
            {"judge_models", r.judge_models},
            {"judge_criteria", r.judge_criteria},
            {"judge_threshold", r.judge_threshold ? Json(*r.judge_threshold) : Json(nullptr)},
            {"log_runs", r.log_runs},
            {"runs_dir", optional_path(r.runs_dir)},
            {"resume", r.resume ? Json(*r.resume) : Json(nullptr)},
            {"require_gpu", r.require_gpu},
            {"min_lift", r.gates.min_lift ? Json(*r.gates.min_lift) : Json(nullptr)},
            {"fail_under", r.gates.fail_under ? Json(*r.gates.fail_under) : Json(nullptr)}};
  j["shard"] =
      r.shard ? Json{{"index", r.shard->index}, {"count", r.shard->count}, {"gpu", r.shard->gpu}}
              : Json(nullptr);
  return j;
}

}  // namespace upskill::eval
