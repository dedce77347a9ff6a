#pragma once
// Executing a test case's checks against an answer (docs/test-cases.md). Every check reports what
// it expected, what it found (a short excerpt) and why it failed. A case passes when at least one
// check ran and every weighted check ran and passed (or the weighted score reaches the case's
// threshold even with every check that did not run counted as failed). A check that could not run
// (no workspace, no sandbox, no CUDA device) never counts as passed: a case whose checks passed as
// far as they could run is "not run" — neither passed nor failed.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "upskill/cases/test_case.hpp"

namespace upskill::checks {

struct Answer {
  std::string text;       // the answer as the model gave it (reasoning blocks are stripped here)
  std::string reasoning;  // reasoning the server returned separately (never checked)
  std::optional<std::filesystem::path> workspace;  // files the answer produced (agent mode)
  std::string task;  // the case's input, for judges (score_case fills it in)
};

enum class Status { passed, failed, not_run, error };
std::string_view to_string(Status status);  // "passed", "failed", "not run", "error"
// The inverse of to_string; nullopt for any other text.
std::optional<Status> status_from_string(std::string_view text);

struct CheckResult {
  cases::CheckKind kind = cases::CheckKind::icontains;
  std::string label;
  double weight = 1;
  Status status = Status::not_run;
  std::string expected;  // what the check looked for
  std::string found;     // a short excerpt of what it saw
  std::string reason;    // why it failed or did not run
  Json details;          // kind-specific extras (kernel stages, command output, ...)

  bool ran() const {
    return status == Status::passed || status == Status::failed || status == Status::error;
  }
};

struct CaseResult {
  std::string case_id;
  std::vector<CheckResult> checks;
  double score = 0;  // weighted share of the checks that ran and passed
  int ran = 0;
  int passed_checks = 0;
  int not_run = 0;  // checks that could not run here
  bool passed = false;
  bool has_errors = false;  // a check could not be evaluated (infrastructure, not the answer)
  // The case's verdict, by precedence: passed; failed (a check failed, so it could not pass even if
  // every check that did not run passed); error (a check could not be evaluated); not run (the
  // checks that ran passed, but one that could decide the verdict did not run); failed (no check).
  Status status = Status::failed;
};

// A named validator (upskill's `validator:` field): gets the answer and its config.
using ValidatorFn = std::function<CheckResult(const Answer&, const Json& config)>;

class ValidatorRegistry {
 public:
  void add(const std::string& name, std::string description, ValidatorFn fn);
  const ValidatorFn* find(const std::string& name) const;
  std::vector<std::string> names() const;
  std::string description(const std::string& name) const;
  // fenced_code and word_count.
  static const ValidatorRegistry& builtin();

 private:
  std::map<std::string, std::pair<std::string, ValidatorFn>> validators_;
};

// Runs a `command` check in the answer's workspace (the sandbox, in practice).
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  virtual CheckResult run(const cases::CommandParams& params,
                          const std::filesystem::path& workspace) = 0;
};

// Runs a `kernel` check (the kernel pipeline).
class KernelChecker {
 public:
  virtual ~KernelChecker() = default;
  virtual CheckResult check(const cases::KernelParams& params, const Answer& answer) = 0;
};

// What a judge is shown (docs/judge.md): the task, the answer, and how the case's other checks
// went.
struct JudgeRequest {
  const cases::JudgeParams& params;
  std::string task;
  std::string answer;       // reasoning blocks removed
  std::string hard_checks;  // "3 of 4 checks passed" and each failure's reason; empty: none ran
};

// Runs a `judge` check (checks/judge_runner.hpp has the model-backed one).
class JudgeRunner {
 public:
  virtual ~JudgeRunner() = default;
  virtual CheckResult judge(const JudgeRequest& request) = 0;
};

struct CheckEnvironment {
  const ValidatorRegistry* validators = &ValidatorRegistry::builtin();
  CommandRunner* commands = nullptr;  // nullptr: command checks are not run
  KernelChecker* kernels = nullptr;   // nullptr: kernel checks are not run
  JudgeRunner* judges = nullptr;      // nullptr: judge checks are not run
};

// upskill's validation_result for a scored case: passed, assertions passed/total (one a check),
// error_message (the failures' reasons joined with "; ", or null) and details ("missing: X" for
// each string a contains check missed, else the failure's reason).
Json validation_result(const CaseResult& result);

// Kernel checks whose CUDA stages were not run for want of a CUDA device (--require-gpu).
int checks_needing_gpu(const CaseResult& result);

// Removes <think>…</think> blocks (and an unclosed trailing one) wherever they appear.
std::string strip_reasoning(std::string_view text);

CheckResult run_check(const cases::Check& check, const Answer& answer, const CheckEnvironment& env);
CaseResult score_case(const cases::TestCase& test_case, const Answer& answer,
                      const CheckEnvironment& env);

Json to_json(const CheckResult& result);
Json to_json(const CaseResult& result);

}  // namespace upskill::checks
