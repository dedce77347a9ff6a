#pragma once
// Test cases written by a teacher model in upskill's schema plus ours: text checks for any domain
// and, for kernel tasks, `kernel` checks bound to the op specs shipped in kernels/ (or to a spec
// the teacher writes). What comes back is screened before it is kept (gen/screening.hpp).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "upskill/cases/test_case.hpp"
#include "upskill/gen/generate.hpp"

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

}  // namespace upskill::gen
