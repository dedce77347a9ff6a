#include "upskill/checks/kernel_runner.hpp"

#include <fmt/format.h>

#include "upskill/core/text.hpp"
#include "upskill/kernel/extract.hpp"
#include "upskill/kernel/layout.hpp"

namespace upskill::checks {

CheckResult KernelPipelineChecker::check(const cases::KernelParams& params, const Answer& answer) {
  CheckResult r;
  r.kind = cases::CheckKind::kernel;
  std::vector<std::string> names;
  for (auto s : params.stages) names.emplace_back(cases::to_string(s));
  r.expected = fmt::format("kernel stages {} pass", text::join(names, ", "));
  Json stages = Json::array();
  kernel::Extraction extraction;
  std::vector<std::string> pending;
  for (const auto stage : params.stages) {
    Json s = {{"stage", std::string(cases::to_string(stage))}};
    if (stage == cases::KernelStage::extract) {
      if (answer.workspace) {
        auto from_workspace = kernel::extract_workspace(*answer.workspace);
        if (!from_workspace) {
          s["status"] = "failed";
          s["diagnostics"] = Json::array({from_workspace.error().message});
          stages.push_back(s);
          r.status = Status::failed;
          r.reason = "extract: " + from_workspace.error().message;
          break;
        }
        extraction = std::move(*from_workspace);
      } else {
        extraction = kernel::extract_files(answer.text);
      }
      Json diagnostics = Json::array();
      for (const auto& p : extraction.problems) diagnostics.push_back(p.message);
      Json files = Json::array();
      for (const auto& f : extraction.files) files.push_back(f.path);
      s["files"] = files;
      s["diagnostics"] = diagnostics;
      s["status"] = extraction.files.empty() ? "failed" : "passed";
      stages.push_back(s);
      if (extraction.files.empty()) {
        r.status = Status::failed;
        r.reason = "extract: the answer names no files (give each file its path)";
        break;
      }
    } else if (stage == cases::KernelStage::layout) {
      const kernel::LayoutReport layout = kernel::check_layout(extraction);
      Json findings = Json::array();
      for (const auto& f : layout.findings)
        findings.push_back(fmt::format(
            "{}{}{}", f.error ? "error: " : "warning: ",
            f.line ? fmt::format("build.toml:{}: ", f.line) : std::string(), f.message));
      s["status"] = layout.passed() ? "passed" : "failed";
      s["edition"] = layout.edition;
      s["diagnostics"] = findings;
      stages.push_back(s);
      if (!layout.passed()) {
        r.status = Status::failed;
        for (const auto& f : layout.findings)
          if (f.error) {
            r.reason = "layout: " + f.message;
            break;
          }
        break;
      }
      if (params.project && layout.name != *params.project) {
        r.status = Status::failed;
        r.reason = fmt::format("layout: the project is named '{}', expected '{}'", layout.name,
                               *params.project);
        break;
      }
    } else {
      s["status"] = "not run";
      s["reason"] = "not implemented yet";
      stages.push_back(s);
      pending.emplace_back(cases::to_string(stage));
    }
  }
  r.details = {{"stages", stages}};
  if (r.status == Status::failed) {
    r.found = text::excerpt(r.reason, 80);
    return r;
  }
  if (!pending.empty()) {
    r.status = Status::not_run;
    r.reason = fmt::format("stages {} are not implemented yet; the earlier ones passed",
                           text::join(pending, ", "));
    return r;
  }
  r.status = Status::passed;
  r.found = fmt::format("{} files", extraction.files.size());
  return r;
}

}  // namespace upskill::checks
