#pragma once
// `upskill check`: score a saved answer against one test case, with no model involved.
#include <filesystem>
#include <string>

#include "upskill/checks/checks.hpp"
#include "upskill/checks/kernel_runner.hpp"
#include "upskill/core/error.hpp"

namespace upskill::eval {

struct SavedAnswerRequest {
  std::filesystem::path target;  // a skill directory (its skill_meta.json) or a test-case file
  std::string case_id;
  std::filesystem::path
      answer;  // a text file, "-" for stdin, or a directory (an agent's workspace)
  checks::KernelPipelineOptions kernel;  // spec_base is set to the test file's folder
};

struct SavedAnswerResult {
  cases::TestCase test_case;
  checks::CaseResult result;
  std::string source;  // where the case came from
};

// Loads the case, runs every check (commands in a sandboxed copy of the workspace) and returns the
// verdicts. Errors: unreadable inputs, unknown case id (the message lists the ids).
Result<SavedAnswerResult> check_saved_answer(const SavedAnswerRequest& request);

}  // namespace upskill::eval
