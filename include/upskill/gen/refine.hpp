#pragma once
// The refinement loop: evaluate the skill on the eval model(s) with and without it, feed the
// teacher the whole skill and every failing check's reason, and keep the best version by lift — not
// the last. Stops when the skill is beneficial for every model, on a plateau (the with-skill pass
// rate moved less than 5 points since the previous attempt; never on the first), or when attempts
// run out. The baseline arm is run once and reused: it does not depend on the skill. An error
// evaluating the first attempt elsewhere is the loop's error.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "upskill/eval/summary.hpp"
#include "upskill/gen/generate.hpp"

namespace upskill::gen {

struct AttemptRecord {
  int attempt = 0;        // 1-based
  double with_skill = 0;  // pass rate, averaged over models
  std::optional<double> baseline;
  std::optional<double> lift;
  bool beneficial = false;
  long long student_tokens = 0;
  std::string batch_id;  // where its run logs went ("" when not logged)
};

// An attempt evaluated elsewhere (generate --executor slurm|jobs): the skill as it stands, its
// tests, and what to evaluate it with; the caller returns the merged evaluation and the batch it
// was logged to.
struct AttemptInput {
  const skill::SkillBundle& skill;
  const std::vector<cases::TestCase>& tests;
  const std::vector<std::string>& students;  // the eval models as given (names)
  int runs = 1;
  int jobs = 1;
  std::uint64_t seed = 0;
  int attempt = 1;
};
struct AttemptEvaluation {
  eval::Evaluation evaluation;
  std::string batch_id;
};
using EvaluateElsewhere = std::function<Result<AttemptEvaluation>(const AttemptInput&)>;

struct RefineOptions {
  int max_attempts = 2;    // evaluations, at least 1
  eval::EvalOptions eval;  // models, jobs, runs, ...
  std::uint64_t seed = 20261202;
  // Called after each attempt's evaluation (run logs, progress); returns the batch id it logged
  // to ("" for none).
  std::function<std::string(const AttemptRecord&, const eval::Evaluation&,
                            const eval::EvalSummary&)>
      on_attempt;
  // When set, each attempt is evaluated by it (with both arms every time: remote tasks cannot
  // share the first attempt's baseline) and `students` names the models; else here.
  EvaluateElsewhere evaluate_elsewhere;
  std::vector<std::string> students;
};

struct RefineResult {
  skill::SkillBundle best;
  int best_attempt = 1;
  std::vector<AttemptRecord> attempts;
  std::string stopped_because;  // beneficial | plateau | attempts exhausted | interrupted | teacher
  llm::Usage teacher_usage;     // refinement calls only
  eval::EvalSummary best_summary;
  bool interrupted = false;
  // An attempt after the first that could not be evaluated elsewhere (Ctrl-C is `interrupted`
  // instead): the attempts before it stand; generate exits with its code.
  std::optional<Error> evaluation_error;
};

Result<RefineResult> refine_loop(const skill::SkillBundle& initial,
                                 const std::vector<cases::TestCase>& tests,
                                 const SkillRequest& context, const Teacher& teacher,
                                 llm::ChatClient& students, const checks::CheckEnvironment& env,
                                 const RefineOptions& options);

// The failing with-skill trials of an evaluation, for the teacher (every failing check's reason).
std::vector<FailureReport> failure_reports(const eval::Evaluation& evaluation);

// Better by lift (with-skill rate when there is no baseline), then by with-skill rate, then by
// fewer student tokens.
bool better_attempt(const AttemptRecord& a, const AttemptRecord& b);

}  // namespace upskill::gen
