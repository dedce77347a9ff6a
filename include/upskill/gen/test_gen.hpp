#pragma once
// Test generation and screening. The teacher writes cases in upskill's schema plus ours: text
// checks for any domain and, for kernel tasks, `kernel` checks bound to the op specs shipped in
// kernels/ (or to a spec the teacher writes). Before a test is kept it is run against the trace's
// own final artifacts (the expert's solution) and against an empty answer: a test the solution
// fails, or an empty answer passes, is dropped with the reason.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "upskill/cases/test_case.hpp"
#include "upskill/checks/checks.hpp"
#include "upskill/gen/generate.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::gen {

struct TestRequest {
  std::string task;
  const skill::SkillBundle* skill = nullptr;
  const trace::TraceDigest* digest = nullptr;
  int count = 5;  // cases to ask for
  // Offer the shipped kernel cases and specs (default: when the task looks like kernel work).
  std::optional<bool> kernel_catalog;
};

struct GeneratedTests {
  std::vector<cases::TestCase> cases;
  std::map<std::string, std::string> spec_files;  // bundle path ("specs/x.py") -> content
  std::vector<std::string> dropped;               // cases the reply had but were unusable, why
  llm::Usage usage;
  int requests = 0;
};

Result<GeneratedTests> generate_tests(const TestRequest& request, const Teacher& teacher);

// True when the text is about GPU/CPU kernels (CUDA, Triton, kernel-builder, nvcc, ...).
bool looks_like_kernel_work(std::string_view text);

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
