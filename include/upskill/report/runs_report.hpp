#pragma once
// `upskill runs`: what the run logs say. Reads every batch under a runs directory (upskill's
// layout, with or without our extra fields), pairs each with-skill run with the latest baseline of
// the same batch and model numbered before it (upskill's rule), keeps the best pairing per skill ×
// model, and renders bars, a skill × model matrix, CSV (upskill's columns first) or one
// self-contained HTML page.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "upskill/core/error.hpp"
#include "upskill/core/json.hpp"
#include "upskill/eval/run_log.hpp"
#include "upskill/eval/summary.hpp"

namespace upskill::report {

// A batch's figures, for a batch with a plan: its logs read as `eval` reads them and summarize()
// of them (eval::load_logged_evaluation), and that summary as batch_summary.json writes it. Every
// rate, interval, lift, token count and cost `runs` shows of such a batch is one of these.
struct BatchFigures {
  eval::LoggedEvaluation logged;
  Json summary;  // eval::to_json(logged.summary, logged.evaluation, CaseDetail::totals)
  // The model's summary, or null when the batch has no model of that name.
  const eval::ModelSummary* model(const std::string& name) const;
};

struct RunRecord {
  std::filesystem::path dir;  // the run folder (run_<n>/), where its batch's transcripts are near
  std::string batch_id;
  int run_number = 0;
  std::string model;
  std::string skill;
  std::string task;
  std::string run_type;  // baseline | with_skill
  std::string timestamp;
  bool passed = false;
  long long assertions_passed = 0;  // checks (upskill main: verifier assertions)
  long long assertions_total = 0;
  // Cases passed and scored: our run_result.json's cases_passed/cases_scored; the assertions for
  // run logs without them (upskill's, and ours before the assertions became checks).
  long long cases_passed = 0;
  long long cases_scored = 0;
  long long not_run = 0;  // cases whose checks could not all run (not in cases_scored)
  long long input_tokens = 0;
  long long output_tokens = 0;
  Json raw;  // the whole run_result.json
  // How complete its batch is by the batch's logs (eval::logged_completeness); unknown without a
  // plan.
  std::optional<eval::Completeness> batch_completeness;
  // Its batch's figures (shared by the batch's runs); null for logs without a plan, whose figures
  // are this run's counts (rate(), tokens()).
  std::shared_ptr<const BatchFigures> figures;

  // Whether anything was scored: a run whose every case errored or was not run has no rate.
  bool scored() const { return cases_scored > 0 || assertions_total > 0; }
  double rate() const {
    if (cases_scored) return static_cast<double>(cases_passed) / static_cast<double>(cases_scored);
    return assertions_total
               ? static_cast<double>(assertions_passed) / static_cast<double>(assertions_total)
               : 0;
  }
  long long tokens() const { return input_tokens + output_tokens; }
};

struct SkillModelResult {
  std::string skill;
  std::string model;
  RunRecord with_skill;
  std::optional<RunRecord> baseline;
  // The model's entry of the batch's summary (intervals, lift, cases): computed from the logs for
  // a batch with a plan (BatchFigures), else batch_summary.json's; null when the batch has neither
  // (upskill's own logs) or it does not list the model. The renderers take any field of it as
  // possibly missing or of another type.
  Json summary;
  // The same figures as computed, for a batch with a plan (kept alive by `figures`); else null.
  const eval::ModelSummary* model_figures = nullptr;
  std::shared_ptr<const BatchFigures> figures;
  std::string incomplete;  // the batch's "incomplete: …" note; empty when complete or unknown
};

// One batch folder as the report shows it: every run it holds and what its summary says.
struct BatchRecord {
  std::filesystem::path dir;
  std::string id;  // the folder's name
  std::string skill;
  std::vector<std::string> models;  // in run order
  std::vector<RunRecord> runs;      // by run number
  Json summary;  // BatchFigures::summary, else batch_summary.json's "summary"; null when none
  std::optional<bool> complete;  // what the summary says; unknown without one
  std::string note;              // its "incomplete: …" note
};

struct RunsFilter {
  std::vector<std::string> skills;
  std::vector<std::string> models;
};

// Loads every run under `runs_dir`; unreadable files are reported in `problems`, never fatal. A
// field missing or of another type reads as absent (0, false, empty).
Result<std::vector<RunRecord>> load_runs(const std::filesystem::path& runs_dir,
                                         std::vector<std::string>& problems);
std::vector<SkillModelResult> best_results(const std::vector<RunRecord>& runs,
                                           const RunsFilter& filter,
                                           const std::filesystem::path& runs_dir);

std::string render_runs_terminal(const std::vector<SkillModelResult>& results, bool tokens_metric,
                                 bool color);
std::string render_runs_csv(const std::vector<RunRecord>& runs, const RunsFilter& filter);
// The batches the runs belong to (a batch is a folder: two folders never mix, whatever ids their
// logs carry), with only the runs the filter keeps; batches left with none are dropped.
std::vector<BatchRecord> group_batches(const std::vector<RunRecord>& runs,
                                       const RunsFilter& filter);

// The batches that no pairing shows because they logged no with-skill run yet (a batch stopped
// early, in its baseline runs): one line each, so that no batch goes unmentioned; "" when none.
std::string render_unpaired_batches(const std::vector<BatchRecord>& batches);

// One self-contained page: the best pairings with charts, lift and cases, then every batch given,
// each trial of each run (docs/eval.md, "The HTML report").
std::string render_runs_html(const std::vector<SkillModelResult>& results,
                             const std::vector<BatchRecord>& batches = {});

}  // namespace upskill::report
