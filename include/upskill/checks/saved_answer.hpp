#pragma once
// A saved answer scored against one test case, with no model involved (`upskill check`): the case
// found in a skill's skill_meta.json or a test-case file, every check run on the answer's text or
// on a private copy of its workspace.
#include <filesystem>
#include <optional>
#include <string>

#include "upskill/checks/checks.hpp"
#include "upskill/checks/kernel_runner.hpp"
#include "upskill/core/error.hpp"

namespace upskill::checks {

struct SavedAnswerRequest {
  std::filesystem::path target;  // a skill directory (its skill_meta.json) or a test-case file
  std::string case_id;
  // The answer: its text when given (a front end read it from stdin), else `answer` — a text file
  // or a directory (an agent's workspace).
  std::optional<std::string> answer_text;
  std::filesystem::path answer;
  KernelPipelineOptions kernel;  // spec_base is set to the test file's folder
};

struct SavedAnswerResult {
  cases::TestCase test_case;
  CaseResult result;
  std::string source;  // where the case came from
};

// Loads the case, runs every check (commands in a sandboxed copy of the workspace) and returns the
// verdicts. Errors: unreadable inputs, unknown case id (the message lists the ids).
Result<SavedAnswerResult> check_saved_answer(const SavedAnswerRequest& request);

}  // namespace upskill::checks
