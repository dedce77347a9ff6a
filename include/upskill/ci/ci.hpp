#pragma once
// The skills-repo CI flow (`upskill ci`, docs/ci.md), compatible with the files huggingface/skills
// keeps for the Python upskill: the eval manifest `.upskill/evals.json` selects scenarios whose
// skill folders changed between a base ref and HEAD; each selected skill is evaluated as it is now
// and as it was at the base ref (the with-skill arm, on the scenario's current tests), scored on
// its hard checks, an optional judge and tokens; regression thresholds decide the exit status; a
// JSON report and a markdown summary are written.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "upskill/eval/session.hpp"

namespace upskill::ci {

struct Scenario {
  std::string id;
  std::vector<std::string> skills;  // skill folders, relative to the repository
  std::string tests;                // test-case file, relative to the repository
  bool judge = false;
  std::vector<std::string> criteria;
  bool include_baseline = false;
};

struct Manifest {
  std::vector<Scenario> scenarios;
};

// Reads the manifest; errors name the file, line and column.
Result<Manifest> parse_manifest(std::string_view text, const std::string& file);
Result<Manifest> load_manifest(const std::filesystem::path& path);

// The skill folder a repository path belongs to: the nearest folder above it (or itself) that
// holds a SKILL.md, as `has_skill_md` says; nullopt when there is none.
std::optional<std::string> skill_folder_of(
    const std::string& path, const std::function<bool(const std::string&)>& has_skill_md);

struct Thresholds {
  double hard = 0.0;    // fail when current hard score + this < base
  double judge = 0.1;   // fail when current judge score + this < base (hard did not improve)
  double tokens = 0.2;  // fail when tokens grew by more than this share (hard did not improve)
};

struct CiRequest {
  std::filesystem::path repo = ".";
  std::filesystem::path manifest = ".upskill/evals.json";  // relative to repo unless absolute
  std::string base_ref;                                    // all zeros: HEAD~1
  std::string head_ref = "HEAD";
  bool all = false;                       // every scenario, changed or not
  std::vector<std::string> scenarios;     // only these ids (still subject to `all` / changes)
  std::optional<int> runs;                // default: num_runs, else 1 (eval::resolve_request)
  std::optional<std::string> eval_model;  // default: eval_model, else skill_generation_model
  std::vector<std::string> judge_models;  // default: judge_model, else skill_generation_model
  Thresholds thresholds;
  std::filesystem::path report_dir = ".upskill/reports";  // relative to repo
  // The report JSON itself (upskill_ci.py's --output); default: report_dir/upskill-ci-report.json.
  std::optional<std::filesystem::path> report_json;
  std::filesystem::path artifacts_dir = ".upskill/artifacts";  // run logs, relative to repo
  std::optional<std::filesystem::path> persist;  // append each scenario's record (JSON lines)
  // Where the markdown summary is also appended ($GITHUB_STEP_SUMMARY, read by the front end).
  std::optional<std::filesystem::path> step_summary;
  std::optional<int> jobs;  // default: max_parallel, else 4
};

// One side of a comparison: the skill as it is, or as it was at the base ref.
struct Side {
  double hard_score = 0;  // assertions passed ÷ assertions, judge checks left out
  long long assertions_passed = 0, assertions_total = 0;
  double avg_tokens = 0;              // student tokens per answered case
  long long answered = 0;             // cases answered (avg_tokens means nothing without one)
  std::optional<double> judge_score;  // mean judged score (share of the scale)
  long long errors = 0;               // trials without an answer
  std::string batch_dir;
  std::string first_error;     // the first cause of the trials without an answer, in one line
  long long judge_errors = 0;  // judge checks that could not score (the judge failed)
  long long judge_checks = 0;  // judge checks in all
  std::string first_judge_error;
  std::string first_failure;  // the first failed hard check: "case: expected: reason"
};

struct ScenarioResult {
  std::string id;
  std::string skill;
  std::string status;  // PASS, FAIL, NEW, ERROR
  std::optional<Side> current, base;
  std::vector<std::string> regressions;  // the checks that failed, in words
  std::string error;                     // for ERROR
};

struct CiOutcome {
  std::vector<std::string> changed_files;
  std::vector<std::string> changed_skills;
  // Skill folders this change deletes (a SKILL.md at the base ref, none now): their scenarios are
  // not evaluated, as upstream's selection never picks them; each is named in `notes`.
  std::vector<std::string> deleted_skills;
  std::vector<std::string> notes;
  std::vector<ScenarioResult> results;  // selected scenarios, manifest order
  std::filesystem::path report_json, summary_md;
  bool persist_failed = false;
  std::string commit;                       // the evaluated commit (head_ref resolved)
  std::string generated_at;                 // when the run started, ISO 8601 UTC
  std::string model;                        // the student, as resolved
  std::string base_ref;                     // as resolved (all zeros: HEAD~1)
  int runs = 1;                             // as resolved (--runs, else num_runs, else 1)
  std::optional<Error> step_summary_error;  // the step summary could not be appended to
  // 2 when a scenario could not be evaluated, else 1 on a regression, else 3 when --persist could
  // not be written, else 0.
  ExitCode exit = ExitCode::ok;
};

// The rows huggingface/skills' upskill_ci.py appends to its Hub history (`--persist` without a
// file,
// `--history-repo`), one a scenario evaluated, in its schema: generated_at, commit_sha, base_ref,
// scenario_id, skill_path, eval_model, runs, hard_score, judge_score, avg_tokens, avg_turns,
// baseline_hard_score, baseline_judge_score, baseline_avg_tokens, regression, notes, reasons. A
// figure not computed is null (avg_turns always: turns are not counted here); an ERROR scenario's
// figures are null and its error is in notes; an interrupted one has no row.
std::vector<Json> history_rows(const CiOutcome& outcome);

class CiObserver {
 public:
  virtual ~CiObserver() = default;
  virtual void planned(const CiOutcome& /*plan*/) {}
  virtual void evaluating(const Scenario& /*scenario*/, const std::string& /*side*/) {}
  virtual void scenario_done(const ScenarioResult& /*result*/) {}
};

// The regression checks of one scenario (empty: none failed).
std::vector<std::string> regressions(const Side& current, const Side& base, const Thresholds& t);

// The session request of one side of a scenario (the skill folder `skill_dir`, `side` "current"
// or "base"), resolved from the request and the configuration as every front end's is.
eval::SessionRequest side_request(const CiRequest& request, const config::Config& config,
                                  const Scenario& scenario, const std::string& student,
                                  const std::filesystem::path& skill_dir, const std::string& side);

// The markdown summary and the JSON report of an outcome.
std::string render_markdown(const CiOutcome& outcome, const CiRequest& request);
Json to_json(const CiOutcome& outcome, const CiRequest& request);

// Runs the flow. Errors (exit 2): an unreadable manifest, a git command that fails, a model name
// that does not resolve.
Result<CiOutcome> run_ci(const CiRequest& request, const llm::ModelAccess& models,
                         CiObserver& observer);

}  // namespace upskill::ci
