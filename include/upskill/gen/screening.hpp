#pragma once
// Screening generated test cases: before a case is kept it is run against the trace's own final
// artifacts (the expert's solution) and against an empty answer. A case the solution fails, or an
// empty answer passes, is dropped with the reason; one that cannot be verified here (the CUDA
// stages need a GPU) is kept and says so.
#include <filesystem>
#include <string>
#include <vector>

#include "upskill/cases/test_case.hpp"
#include "upskill/checks/checks.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::gen {

// The answer the trace's expert gave: its last assistant message plus its final files (as fenced
// blocks and as a workspace written under `workspace`).
struct Solution {
  checks::Answer answer;
  std::size_t files = 0;
};
Result<Solution> solution_from_trace(const trace::Trace& trace,
                                     const std::filesystem::path& workspace);

struct Screening {
  std::string case_id;
  bool kept = true;
  std::string reason;  // why dropped, or a note ("not verified: needs a GPU")
};

// Runs every case against the solution (when there is one) and an empty answer; returns one verdict
// per case and removes the dropped ones from `tests`.
std::vector<Screening> screen_tests(std::vector<cases::TestCase>& tests, const Solution* solution,
                                    const checks::CheckEnvironment& env);

}  // namespace upskill::gen
