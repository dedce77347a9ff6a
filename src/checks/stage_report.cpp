// A kernel check's stage reports as JSON: the only writer and reader of them (see
// stage_report.hpp).
#include "upskill/checks/stage_report.hpp"

#include <fmt/format.h>

namespace upskill::checks {

namespace {

// The keys a stage object holds besides its details.
bool own_key(const std::string& key) {
  return key == "stage" || key == "status" || key == "reason" || key == "seconds";
}

Error malformed(const std::string& what) {
  return Error::usage("kernel stage report: " + what);
}

}  // namespace

Json to_json(const StageReport& report) {
  Json j = {{"stage", std::string(cases::to_string(report.stage))}};
  for (const auto& [key, value] : report.details.items()) j[key] = value;
  j["status"] = std::string(to_string(report.status));
  if (!report.reason.empty()) j["reason"] = report.reason;
  if (report.seconds) j["seconds"] = *report.seconds;
  return j;
}

Result<StageReport> stage_report_from_json(const Json& j) {
  if (!j.is_object()) return fail(malformed("not an object"));
  StageReport r;
  const auto stage = j.contains("stage") && j["stage"].is_string()
                         ? cases::kernel_stage_from_string(j["stage"].get<std::string>())
                         : std::nullopt;
  if (!stage) return fail(malformed(fmt::format("unknown stage in {}", j.dump())));
  r.stage = *stage;
  const auto status = j.contains("status") && j["status"].is_string()
                          ? status_from_string(j["status"].get<std::string>())
                          : std::nullopt;
  if (!status) return fail(malformed(fmt::format("unknown status in {}", j.dump())));
  r.status = *status;
  if (j.contains("reason")) {
    if (!j["reason"].is_string()) return fail(malformed("reason is not a string"));
    r.reason = j["reason"].get<std::string>();
  }
  if (j.contains("seconds")) {
    if (!j["seconds"].is_number()) return fail(malformed("seconds is not a number"));
    r.seconds = j["seconds"].get<double>();
  }
  for (const auto& [key, value] : j.items())
    if (!own_key(key)) r.details[key] = value;
  return r;
}

Json to_json(const KernelCheckDetails& details) {
  Json stages = Json::array();
  for (const auto& s : details.stages) stages.push_back(to_json(s));
  Json j = {{"stages", stages}};
  if (details.work_dir) j["work_dir"] = *details.work_dir;
  if (details.needs_gpu) j["needs_gpu"] = true;
  return j;
}

Result<KernelCheckDetails> kernel_check_details_from_json(const Json& j) {
  KernelCheckDetails d;
  if (!j.is_object()) return d;
  if (j.contains("stages")) {
    if (!j["stages"].is_array()) return fail(malformed("stages is not a list"));
    for (const auto& s : j["stages"]) {
      UPSKILL_ASSIGN_OR_RETURN(auto report, stage_report_from_json(s));
      d.stages.push_back(std::move(report));
    }
  }
  if (j.contains("work_dir") && j["work_dir"].is_string())
    d.work_dir = j["work_dir"].get<std::string>();
  d.needs_gpu =
      j.contains("needs_gpu") && j["needs_gpu"].is_boolean() && j["needs_gpu"].get<bool>();
  return d;
}

std::vector<StageReport> stage_reports(const CheckResult& check) {
  auto details = kernel_check_details_from_json(check.details);
  return details ? std::move(details->stages) : std::vector<StageReport>{};
}

bool needs_gpu(const CheckResult& check) {
  if (check.status != Status::not_run) return false;
  const auto details = kernel_check_details_from_json(check.details);
  return details && details->needs_gpu;
}

}  // namespace upskill::checks
