#pragma once
// The whole generate pipeline as one library call: read the source (a trace to learn from, a skill
// to improve, or only the task), have the teacher write the skill (one repair round-trip), save it,
// write and screen the test cases, record the metadata, evaluate and refine keeping the best
// attempt, and save the result with the trace digest. `upskill generate` and the Python module call
// it; they only turn their arguments into a GenerateRequest and show the observer's events.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "upskill/eval/session.hpp"
#include "upskill/gen/case_writer.hpp"
#include "upskill/gen/refine.hpp"
#include "upskill/gen/screening.hpp"
#include "upskill/llm/model.hpp"

namespace upskill::gen {

struct GenerateRequest {
  std::string task;
  std::vector<std::string> examples;          // example requests the skill must serve
  std::optional<std::filesystem::path> from;  // a trace file, or a skill folder to improve
  std::optional<trace::Format> trace_format;  // read `from` as this format (default: detect)
  std::size_t digest_tokens = trace::kDefaultDigestTokens;
  std::optional<std::string> teacher_model;          // default: Config::model_for(teacher)
  std::optional<std::string> test_model;             // default: Config::model_for(test_writer, ...)
  std::vector<std::string> student_models;           // default: Config::model_for(student, ...)
  std::optional<std::filesystem::path> output_root;  // the skill goes in <root>/<name>/
  // The skill's own folder (upskill's -o PATH); wins over output_root. A folder not named as the
  // skill is reported as a warning, not a validation error.
  std::optional<std::filesystem::path> output_dir;
  bool evaluate = true;
  std::optional<int> max_attempts;  // evaluations at most (default: max_refine_attempts)
  int tests = 5;                    // cases to ask the test writer for
  int jobs = 4;
  int runs = 1;
  bool log_runs = true;
  std::optional<std::filesystem::path> runs_dir;  // default: the config's runs_dir
  // Evaluates each attempt elsewhere (generate --executor slurm|jobs); refinement stays here.
  EvaluateElsewhere evaluate_elsewhere;
};

// The source the pipeline read, for the observer.
struct SourceInfo {
  const skill::SkillBundle* existing = nullptr;  // improving this skill
  const trace::Trace* trace = nullptr;           // learning from this trace
  const trace::TraceDigest* digest = nullptr;    // its digest
};

// What a generate run tells its front end as it goes (every method may be left as is).
class GenerateObserver {
 public:
  virtual ~GenerateObserver() = default;
  virtual void source_read(const std::filesystem::path& /*from*/, const SourceInfo& /*source*/) {}
  virtual void writing_skill(const llm::ResolvedModel& /*teacher*/) {}
  virtual void skill_written(const GeneratedSkill& /*skill*/) {}
  virtual void writing_tests(const llm::ResolvedModel& /*test_model*/) {}
  virtual void test_unusable(const std::string& /*why*/) {}
  virtual void screening(std::size_t /*cases*/, bool /*against_solution*/) {}
  virtual void note(const std::string& /*text*/) {}
  virtual void screened(const Screening& /*verdict*/) {}
  virtual void evaluating(const std::vector<llm::ResolvedModel>& /*students*/, int /*attempts*/) {}
  virtual void attempt_done(const AttemptRecord& /*attempt*/) {}
  virtual void refined(const RefineResult& /*result*/) {}
  virtual void no_tests_left() {}
  virtual void warning(const std::string& /*message*/) {}
};

// Tests for a skill: the test writer's cases, the spec files their kernel checks name saved under
// `spec_dir` (kernel checks need them on disk), each case screened against the trace's solution
// and an empty answer.
struct TestsRequest {
  std::string task;
  const skill::SkillBundle* skill = nullptr;  // the skill the tests are for, if written yet
  std::filesystem::path spec_dir;             // the skill's folder; required when specs are written
  const trace::Trace* trace = nullptr;        // the solution to screen against, if any
  const trace::TraceDigest* digest = nullptr;
  int count = 5;
};

struct TestsOutcome {
  std::vector<cases::TestCase> cases;             // the kept ones
  std::map<std::string, std::string> spec_files;  // written under spec_dir: path -> content
  std::vector<Screening> screenings;              // one per usable case in the reply
  Json dropped = Json::array();  // [{id, reason}] for skill_meta.json's dropped_tests
  llm::Usage usage;
  int requests = 0;
};

Result<TestsOutcome> write_and_screen_tests(const TestsRequest& request, const Teacher& teacher,
                                            const checks::CheckEnvironment& checks,
                                            GenerateObserver& observer);

// Tests on demand (`eval`/`benchmark --test-gen-model`, docs/eval.md): for a skill that has
// none, the test writer's cases — written and screened as generate's are, against an empty answer
// since there is no trace — saved to the skill folder's skill_meta.json (spec files beside it).
// The test writer is `test_model`, else the config's test_gen_model, else its
// skill_generation_model. `access` and `observer` must outlive the writer.
eval::TestWriter tests_on_demand(const llm::ModelAccess& access,
                                 const std::optional<std::string>& test_model,
                                 const std::filesystem::path& skill_dir, int count,
                                 GenerateObserver& observer);

struct GenerateOutcome {
  std::filesystem::path skill_dir;
  skill::SkillBundle skill;                    // as saved
  std::size_t tests = 0;                       // test cases saved with it
  bool has_digest = false;                     // references/trace-digest.md was saved
  std::vector<std::string> draft_errors;       // the teacher's draft stayed invalid (saved anyway)
  std::vector<std::string> validation_errors;  // the saved skill fails `validate`
  std::optional<RefineResult> refinement;
  llm::Usage teacher_usage;
  int teacher_requests = 0;
  // invalid draft or saved skill (1) > interrupted (130) > ok (0).
  ExitCode exit = ExitCode::ok;
};

// Runs the pipeline. Errors: bad input (--from is a folder without SKILL.md, an unreadable trace,
// a model name that does not resolve), a failed model call, a file that cannot be written.
Result<GenerateOutcome> run_generate(const GenerateRequest& request, const llm::ModelAccess& models,
                                     GenerateObserver& observer);

}  // namespace upskill::gen
