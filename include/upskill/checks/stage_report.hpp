#pragma once
// What the kernel check reports about each pipeline stage, typed. The check's details hold
// {"stages": [<one object per stage>], "work_dir": ..., "needs_gpu": true}; this header's to_json /
// from_json pairs are the only code that writes or reads that JSON (docs/kernel-checks.md), and
// the readers at the end are how everything else (the CLI, --require-gpu) looks at a kernel check.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "upskill/cases/check_spec.hpp"
#include "upskill/checks/checks.hpp"
#include "upskill/core/error.hpp"
#include "upskill/core/json.hpp"

namespace upskill::checks {

struct StageReport {
  cases::KernelStage stage = cases::KernelStage::extract;
  // passed; failed (the answer's fault: the pipeline stops here); error (could not be evaluated:
  // toolchain, harness, a weak spec; the pipeline stops here); not run (no CUDA device here, or an
  // earlier stage was not run).
  Status status = Status::not_run;
  std::string reason;  // why the stage was not run (a failure's reason is the check's reason)
  std::optional<double> seconds;  // absent for a stage skipped after one that was not run
  Json details = Json::object();  // the stage's own fields (files, steps, cases, ...), in order
};

// {"stage", <details...>, "status", "reason" (when set), "seconds" (when set)}.
Json to_json(const StageReport& report);
// Rejects an unknown stage or status, a missing one, or a non-object.
Result<StageReport> stage_report_from_json(const Json& j);

// A kernel check's details.
struct KernelCheckDetails {
  std::vector<StageReport> stages;
  std::optional<std::string> work_dir;  // the kept build folder (--keep-build)
  bool needs_gpu = false;               // its CUDA stages were not run for want of a device
};

// {"stages": [...], "work_dir" (when kept), "needs_gpu": true (when so)}.
Json to_json(const KernelCheckDetails& details);
// Rejects a malformed stage entry; every field is optional (a check without stages has none).
Result<KernelCheckDetails> kernel_check_details_from_json(const Json& j);

// Readers over a CheckResult of any kind: what is not a kernel check, or does not parse, has no
// stages and needs no GPU.
std::vector<StageReport> stage_reports(const CheckResult& check);
// A kernel check not run because its CUDA stages need a device this machine lacks.
bool needs_gpu(const CheckResult& check);

}  // namespace upskill::checks
