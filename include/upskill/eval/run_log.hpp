#pragma once
// Run logs in upskill's layout: runs/<batch>/run_<n>/{run_metadata.json, run_result.json},
// batch_summary.json and results.csv — with batch ids that never collide (batch.hpp; upskill's
// minute ids merge batches) and our fields added, never renamed. Each trial is also appended, when
// it completes, as one line of trials.jsonl; the run and batch files, which repeat every trial, are
// rewritten every few seconds and at the end (docs/eval.md, "Run logs"). Those files are written
// atomically and trials.jsonl only ever gains whole lines, so an interrupted batch leaves only
// valid files and
// `--resume` can finish it from trials.jsonl.
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "upskill/core/files.hpp"
#include "upskill/core/json.hpp"
#include "upskill/eval/summary.hpp"

namespace upskill::eval {

// How often, at most, the run and batch files are rewritten while trials complete (each trial's
// own file is written as it completes).
inline constexpr std::chrono::seconds kRunLogInterval{5};

// run_<n>: baseline and with-skill runs alternate per model and run index, as upskill numbers them.
int run_number(const Evaluation& e, std::size_t model, Arm arm, int run);

struct RunLogWriter {
  std::filesystem::path batch_dir;
  std::string batch_id;
  std::string task;

  // Each trial's run_result.json entry as written by write_trial, so that the rewrites of the run
  // files serialise a trial once, not once per rewrite.
  struct Entries {
    std::mutex mutex;
    std::unordered_map<std::size_t, std::string> text;  // by trial index
    std::optional<files::LineAppender> trials_file;     // trials.jsonl, open from the first trial
    // The entry of trial `index`: the one kept, else made from `t`.
    std::string get(std::size_t index, const TrialResult& t, const cases::TestCase& test_case);
  };
  std::shared_ptr<Entries> entries = std::make_shared<Entries>();

  // Writes every run directory, batch_summary.json and results.csv for the evaluation so far:
  // each run folder's files in turn, then the batch's files.
  Status write(const Evaluation& evaluation, const EvalSummary& summary) const;
  // Appends one completed trial to trials.jsonl (not flushed to disk: a trial a power loss takes
  // is run again by --resume).
  Status write_trial(const Evaluation& evaluation, const TrialResult& trial) const;
};

// The trials a batch already holds (for --resume): completed ones without errors, by key, from
// run_result.json and then trials.jsonl (which is never older). A trial whose case or check
// status is not one checks::to_string writes is left out (run again); a missing check status reads
// as not run, a missing case status is derived from its checks. A run_result.json that is not
// valid JSON or has a field of the wrong type is a usage error; such a line of trials.jsonl is left
// out (its trial is run again).
// With `with_errors` (merging shards), trials whose model call failed are read too, as errors.
Result<std::map<std::size_t, TrialResult>> load_completed_trials(
    const std::filesystem::path& batch_dir, const Evaluation& shape, bool with_errors = false);

// One run folder of a batch as its logs hold it, for the readers of run logs (`upskill runs`).
struct RunFile {
  std::filesystem::path dir;  // run_<n>/
  Json result;                // run_result.json (an object), its cases brought up to date
  bool rebuilt = false;       // made from trials.jsonl alone: the run's files were never written
};
// Every run folder of a batch: each run_result.json as written (one that cannot be read is
// reported in `problems` and skipped); each of its case entries replaced by a later completed line
// of trials.jsonl for the same run and case (the run files are rewritten only every few seconds, so
// a killed batch's lines are newer); and the runs only trials.jsonl holds (a batch killed before
// its run files were first written) rebuilt from its lines. Ordered by run number. With `logged`
// (the batch's trials as load_logged_evaluation read them), every run's counts and each entry's
// "excluded" are the writer's own, made from those trials by the rule summarize() leaves pairs out
// by; without it (logs with no plan), the counts of runs whose entries changed are taken again
// from the entries.
std::vector<RunFile> read_logged_runs(const std::filesystem::path& batch_dir,
                                      std::vector<std::string>& problems,
                                      const Evaluation* logged = nullptr);

// A batch as its logs hold it, with the figures `eval` computes of it: the plan's shape with every
// trial the logs hold (errors too) and summarize() of it with the plan's seed — the one
// computation `eval`, `runs` (its text, CSV and page) and `runs merge` show. nullopt when the batch
// has no readable plan (upskill's own logs, older batches).
struct LoggedEvaluation {
  Evaluation evaluation;
  EvalSummary summary;
};
std::optional<LoggedEvaluation> load_logged_evaluation(const std::filesystem::path& batch_dir);

// How complete a batch is by its logs (plan.json and the runs read_logged_runs gives): the trials
// its plan holds, those whose logged entry is an error, and those no entry answers (never ran).
// nullopt when the batch has no readable plan (upskill's own logs, older batches).
std::optional<Completeness> logged_completeness(const std::filesystem::path& batch_dir,
                                                const std::vector<RunFile>& runs);

// upskill's results.csv columns, in its order; ours follow.
const std::vector<std::string>& results_csv_columns();
// One run's line of results.csv (newline-terminated), in results_csv_columns()' order, from its
// run_result.json object: the one place a row is made, for the batch's results.csv and for
// `upskill runs --csv`. Fields are read leniently (upskill's own logs lack ours: those cells are
// empty); text is quoted as CSV needs.
std::string results_csv_row(const Json& run_result);

}  // namespace upskill::eval
