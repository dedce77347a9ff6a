// Screening generated test cases against the trace's solution and an empty answer (see
// screening.hpp).
#include "upskill/gen/screening.hpp"

#include <fmt/format.h>

#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"

namespace upskill::gen {

namespace fs = std::filesystem;

Result<Solution> solution_from_trace(const trace::Trace& trace, const fs::path& workspace) {
  Solution s;
  for (auto it = trace.turns.rbegin(); it != trace.turns.rend(); ++it) {
    if (it->role == trace::Role::assistant && !it->sidechain && !text::trim(it->text).empty()) {
      s.answer.text = it->text;
      break;
    }
  }
  std::error_code ec;
  fs::create_directories(workspace, ec);
  for (const trace::FileTouch& f : trace.files) {
    if (f.deleted || !f.content) continue;
    auto target = files::resolve_inside(workspace, f.path);
    if (!target) continue;  // absolute or escaping paths are not part of a workspace
    UPSKILL_RETURN_IF_ERROR(files::write_atomic(*target, *f.content));
    s.answer.text += fmt::format("\n\n```{}\n{}{}```\n", f.path, *f.content,
                                 f.content->ends_with('\n') ? "" : "\n");
    ++s.files;
  }
  if (s.files > 0) s.answer.workspace = workspace;
  if (s.files == 0 && text::trim(s.answer.text).empty())
    return fail(Error::usage(
        fmt::format("{}: the trace holds no final answer or files to check generated tests against",
                    trace.source.string())));
  return s;
}

namespace {

std::string first_failure(const checks::CaseResult& r) {
  for (const auto& c : r.checks) {
    if (c.status == checks::Status::failed || c.status == checks::Status::error)
      return fmt::format("{}{}: {}",
                         c.label.empty() ? std::string(cases::to_string(c.kind)) : c.label,
                         c.expected.empty() ? "" : " '" + text::excerpt(c.expected, 60) + "'",
                         c.reason.empty() ? "failed" : text::excerpt(c.reason, 200));
  }
  return r.ran == 0 ? "no check ran" : "failed";
}

}  // namespace

std::vector<Screening> screen_tests(std::vector<cases::TestCase>& tests, const Solution* solution,
                                    const checks::CheckEnvironment& env) {
  std::vector<Screening> out;
  std::vector<cases::TestCase> kept;
  for (auto& tc : tests) {
    Screening s;
    s.case_id = tc.id;
    const checks::CaseResult empty = checks::score_case(tc, checks::Answer{}, env);
    if (empty.passed) {
      s.kept = false;
      s.reason = "an empty answer passes it";
    } else if (solution) {
      const checks::CaseResult r = checks::score_case(tc, solution->answer, env);
      bool failed_check = false;
      for (const auto& c : r.checks)
        failed_check = failed_check || c.status == checks::Status::failed;
      if (r.passed) {
        s.reason = "the trace's solution passes it";
      } else if (!failed_check && checks::checks_needing_gpu(r) > 0) {
        s.reason = "kept unverified: the CUDA stages need a GPU";
      } else if (!failed_check && r.has_errors) {
        s.reason = "kept unverified: " + first_failure(r);
      } else if (r.status == checks::Status::not_run) {
        // Not run is not failed: the checks that ran passed, the others could not run here.
        s.reason = fmt::format("kept unverified: {} check{} could not run here", r.not_run,
                               r.not_run == 1 ? "" : "s");
      } else {
        s.kept = false;
        s.reason = "the trace's own solution fails it — " + first_failure(r);
      }
    }
    if (s.kept) kept.push_back(std::move(tc));
    out.push_back(std::move(s));
  }
  tests = std::move(kept);
  return out;
}

}  // namespace upskill::gen
