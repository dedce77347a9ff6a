#pragma once
// An evaluation session: everything `upskill eval` / `benchmark` (and the Python module's
// evaluate_skill) do around the engine, as one library call. It loads the skill and its cases,
// resolves the students, resumes a batch, wires the checkers, runs eval::evaluate with run logs
// that survive a kill, writes every requested result file before any verdict, applies the gates
// and decides the exit status. The front end only turns flags into a SessionRequest and prints the
// outcome.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "upskill/core/json.hpp"
#include "upskill/eval/summary.hpp"
#include "upskill/llm/model.hpp"

namespace upskill::eval {

// A file rendered from the finished evaluation (the JSON result, JUnit, a markdown summary). The
// renderers live above `eval` (report/), so the front end passes them in.
struct ResultFile {
  std::filesystem::path path;
  bool append = false;  // append (e.g. $GITHUB_STEP_SUMMARY) instead of replacing atomically
  std::function<std::string(const EvalSummary&, const Evaluation&)> render;
};

// Writes tests for a skill that has none (`--test-gen-model`); gen::tests_on_demand makes one (this
// module cannot depend on gen/). `resolve` checks the test writer's name before anything is
// called; `write` writes, screens and saves the tests over the session's connection.
struct TestWriter {
  std::function<Status()> resolve;
  std::function<Result<std::vector<cases::TestCase>>(const skill::SkillBundle&,
                                                     const llm::Connection&)>
      write;
};

struct Gates {
  std::optional<double> min_lift;    // the lift interval's lower bound must reach this
  std::optional<double> fail_under;  // the with-skill pass rate must reach this
};

struct SessionRequest {
  std::filesystem::path skill_dir;
  std::optional<std::filesystem::path> tests;  // a test-case file; default: skill_meta.json
  // Already in memory (the Python module): used instead of loading skill_dir / tests. Kernel specs
  // still resolve against the tests' folder, else skill_dir.
  std::optional<skill::SkillBundle> skill;
  std::optional<std::vector<cases::TestCase>> cases;
  // Where the cases' relative files (kernel specs) are; default: the tests' folder, else skill_dir.
  std::optional<std::filesystem::path> spec_dir;
  std::vector<std::string> models;  // default: Config::model_for(student)
  int runs = 1;
  bool baseline = true;
  int jobs = 4;
  bool inline_references = false;
  std::optional<cases::Mode> mode;                        // for every case
  SkillDelivery skill_delivery = SkillDelivery::install;  // coding-agent students
  std::optional<Shard> shard;  // --shard K/N: only this share of the trials
  int max_turns = 12;
  bool allow_run = false;
  std::uint64_t seed = 20261202;
  std::optional<std::string> resume;  // a batch id (under runs_dir) or a batch folder
  bool log_runs = true;
  std::optional<std::filesystem::path> runs_dir;  // default: the config's runs_dir
  Gates gates;
  bool require_gpu = false;
  std::vector<ResultFile> result_files;
  // Judges (docs/judge.md): the models of judge checks that name none (default: judge_model, else
  // the teacher); with criteria, every case also gets a judge check with them (per-run judging).
  std::vector<std::string> judge_models;
  std::vector<std::string> judge_criteria;
  std::optional<double> judge_threshold;  // of that per-run check (default 0.7)
  // When the skill has no tests and none are given, they are written by this; unset: a skill
  // without tests is an error.
  std::optional<TestWriter> generate_tests;
};

// What a front end was given of the values a session request otherwise takes from the
// configuration: unset where it was not given. resolve_request is the one place they are resolved
// (docs/configuration.md) — for the command line, the Python module and `upskill ci` alike.
struct RequestSettings {
  std::optional<int> jobs;  // else max_parallel, else 4
  std::optional<int> runs;  // else num_runs, else 1 (a benchmark: 3)
  bool benchmark = false;
  // Whether the baseline arm runs (--baseline / --no-baseline); else the batch's own arms when
  // resuming one, on with a --min-lift gate (it needs the lift), else upskill's rule: off in a
  // benchmark and in its "benchmark mode" (several models, or more than one run a case).
  std::optional<bool> baseline;
};
// Fills the request's jobs, runs and arms from `given`, else the configuration and the rules
// above; its students, the judges of judge checks that name none and its runs folder from the
// configuration when none is named (eval_model, judge_model, each else the teacher; runs_dir).
void resolve_request(SessionRequest& request, const RequestSettings& given,
                     const config::Config& config);
// What resolve_request takes from the configuration when the request names none: its students,
// the judges of judge checks that name none and its runs folder. A request read from its JSON form
// (`eval --request`) is completed by this alone: every other value is the file's, or its default.
void complete_request(SessionRequest& request, const config::Config& config);
// The batch folder --resume names: the folder itself, else a batch id under `runs_dir`.
std::filesystem::path resume_dir(const std::string& resume, const std::filesystem::path& runs_dir);
// The same rules for a front end that has no session request (generate's evaluations).
int resolved_jobs(const RequestSettings& given, const config::Config& config);
int resolved_runs(const RequestSettings& given, const config::Config& config);
// The request's JSON form, over the one field list (request_fields.hpp): what `upskill eval
// --dry-run` prints (with the client's retry policy), what `eval --request FILE` reads, what each
// shard task runs (task.json) and what Python's evaluation_request returns. The skill, tests,
// students, runs, jobs, seed, arms, mode, agent settings, shard, judges, gates and where the logs
// go; not the fields kept in memory only (a loaded skill or cases, result files, the test writer).
Json to_json(const SessionRequest& request);
// The fields the trials depend on beyond what a batch plan records apart (mode, skill delivery,
// inline references, max turns, allow run): the plan keeps them, and a resume compares them.
Json trial_settings(const SessionRequest& request);
// A request from its JSON form. Fields left out keep SessionRequest's defaults; relative paths are
// relative to the document's folder. Errors (file:line:col): not an object, a field of the wrong
// type or value, an unknown field, no skill_dir.
Result<SessionRequest> request_from_json(const JsonDocument& doc);
Result<SessionRequest> read_request_file(const std::filesystem::path& file);
// The request with its folders and files (skill_dir, tests, spec_dir, runs_dir) absolute: what the
// dry run prints, so that its request read back from a file anywhere names the same ones.
SessionRequest with_absolute_paths(SessionRequest request);
Status write_request_file(const SessionRequest& request, const std::filesystem::path& file);

// What a session tells its front end while it runs (every method may be left as is).
class SessionObserver {
 public:
  virtual ~SessionObserver() = default;
  virtual void warning(const std::string& /*message*/) {}
  virtual void notice(const std::string& /*message*/) {}
  virtual void resumed(const std::filesystem::path& /*batch_dir*/, std::size_t /*trials_done*/) {}
  // Before the first trial: what will run.
  virtual void started(const Evaluation& /*plan*/) {}
  // After each trial (serialised, from worker threads).
  virtual void trial_done(const Evaluation& /*plan*/, const TrialResult& /*trial*/,
                          std::size_t /*done*/, std::size_t /*total*/) {}
  // After the last trial, before anything is written.
  virtual void finished() {}
};

struct GateResult {
  enum class Kind { min_lift, fail_under } kind = Kind::min_lift;
  std::string model;
  double threshold = 0;
  bool passed = false;
  bool no_baseline = false;  // min_lift without a baseline arm: failed, nothing to compare
  // The figure the gate reads was not computed (no scored trial, no case scored in both arms):
  // failed, not decided; `why` says what is missing.
  bool not_computed = false;
  std::string why;
  bool partial = false;  // decided on partial results (trials unanswered)
  double value = 0;      // the interval's lower bound, or the pass rate
  double estimate = 0;   // min_lift: the lift's point estimate
};

// How every evaluation ends — a session, a merge of shards: its trials and their numbers, the
// batch it was logged to, the files that could not be written, the gates, the kernel checks that
// needed a GPU, and the exit.
struct EvaluationEnd {
  Evaluation evaluation;
  EvalSummary summary;
  std::string batch_id;
  std::filesystem::path batch_dir;
  bool logged = false;                // run logs were written to batch_dir
  std::vector<Error> write_errors;    // run logs or result files that could not be written
  std::vector<GateResult> gates;      // one per gate and model, in model order
  int needing_gpu = 0;                // kernel checks whose CUDA stages could not run here
  bool gpu_required_missing = false;  // require_gpu and needing_gpu > 0
  ExitCode exit = ExitCode::ok;       // exit_status's order
};

// After the trials, the same for every evaluation: the result files written, the gates applied,
// the kernel checks needing a GPU counted and the exit decided (`interrupted`: Ctrl-C in this
// process). Whatever the caller already failed to write stays in write_errors.
void finish_evaluation(EvaluationEnd& end, const std::vector<ResultFile>& result_files,
                       const Gates& gates, bool require_gpu, bool interrupted);

struct SessionOutcome : EvaluationEnd {};

// Runs a whole session. Errors (before any trial ran): the skill or tests cannot be loaded, no test
// cases, a model name does not resolve, the batch to resume is unreadable or of another shape.
Result<SessionOutcome> run_session(const SessionRequest& request, const llm::ModelAccess& models,
                                   SessionObserver& observer);

// Each result file rendered and written (appended where it asks); the errors of those that could
// not be written. The session and `runs merge` both write their files through this.
std::vector<Error> write_result_files(const std::vector<ResultFile>& files,
                                      const EvalSummary& summary, const Evaluation& evaluation);

// Kernel checks of answered trials whose CUDA stages could not run here.
int kernel_checks_needing_gpu(const Evaluation& evaluation);

// The gates applied to a summary: one result per gate and model, in model order.
std::vector<GateResult> apply_gates(const Gates& gates, const EvalSummary& summary);

// What decides how an evaluation's command exits — the same for a session, a merge of shards and a
// remote run (docs/eval.md): this process interrupted (130) > a GPU required but missing, or
// trials without an answer (3) > a result file not written (2) > a gate failed (1) > ok (0).
struct ExitFacts {
  bool interrupted = false;  // Ctrl-C in this process
  bool gpu_required_missing = false;
  bool unanswered = false;  // trials that errored, or never ran
  bool write_failed = false;
  bool gate_failed = false;
};
ExitCode exit_status(const ExitFacts& facts);

// Whether any gate failed.
bool any_gate_failed(const std::vector<GateResult>& gates);

// The exit status a session's outcome implies (exit_status, its Ctrl-C the evaluation's).
ExitCode session_exit(const SessionOutcome& outcome);

}  // namespace upskill::eval
