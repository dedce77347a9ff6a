#pragma once
// What an evaluation means: per model and arm the pass rate with a Wilson interval, tokens and
// cost; the lift as a paired comparison on the same cases (paired bootstrap interval, exact McNemar
// p); pass@k / pass^k per case when cases were repeated; upskill's is_beneficial; and a verdict.
// A trial whose verdict is "not run" is left out of every pass/fail number together with its pair
// (the other arm's trial of the same model, run and case), so both arms are measured on the same
// trials; tokens, cost and latency still count every answered trial.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "upskill/eval/evaluation.hpp"
#include "upskill/eval/stats.hpp"

namespace upskill::eval {

// What the judges did in one arm (docs/judge.md): their calls, tokens and cost, apart from the
// student's; the mean judged score; how often several judges of one check agreed on its verdict;
// and, with several runs, how often a case's judged verdict was the same in every run.
struct JudgeTally {
  llm::Usage usage;  // calls answered from the cache are free and not counted here
  double cost_usd = 0;
  long long calls = 0;
  long long cached = 0;
  long long checks = 0;              // judge checks that scored
  double mean_score = 0;             // mean share of the scale over those checks
  long long multi_judge_checks = 0;  // checks with several judges
  long long unanimous_checks = 0;    // … on which every judge gave the same verdict
  long long repeated_cases = 0;      // cases judged in more than one run
  long long consistent_cases = 0;    // … whose judged verdicts were the same in every run
};

struct ArmSummary {
  Arm arm = Arm::baseline;
  std::size_t cases = 0;     // cases with at least one scored run
  double pass_rate = 0;      // mean over cases of the per-case pass rate
  stats::Interval interval;  // Wilson over cases
  long long trials = 0;      // scored trials
  long long passed_trials = 0;
  long long errors = 0;      // trials whose model call failed (not scored)
  long long not_run = 0;     // answered trials whose verdict is "not run" (not scored)
  long long excluded = 0;    // answered trials not scored: not run here or in the paired trial
  long long checks_run = 0;  // assertions of the scored trials, as upskill counts them
  long long checks_passed = 0;
  llm::Usage usage;  // every answered trial, scored or not
  double tokens_per_trial = 0;
  double cost_usd = 0;
  double latency_ms = 0;  // mean
  JudgeTally judge;
  // Whether the pass rate and its interval were computed at all: an arm without a scored trial
  // (every trial errored, was never run, or was not run) has none, and reports show "—", never 0%.
  bool scored() const { return trials > 0; }
  // Coding agents: answered trials whose transcript shows its tool calls, and of those the ones in
  // which the agent loaded the skill (read SKILL.md or activated it).
  long long skill_known = 0;
  long long skill_loaded = 0;
  long long reference_reads = 0;
};

struct CaseArm {
  int skill_known = 0;  // coding agents: trials that show tool calls, and those loading the skill
  int skill_loaded = 0;
  int runs = 0;  // scored runs
  int passes = 0;
  int errors = 0;
  int not_run = 0;   // runs whose verdict is "not run"
  int excluded = 0;  // answered runs not scored: not run here or in the other arm
  double rate() const { return runs ? static_cast<double>(passes) / runs : 0; }
};

struct CaseSummary {
  std::string id;
  std::map<Arm, CaseArm> arms;
  std::map<Arm, std::optional<double>> pass_at_k;  // k = runs, when runs > 1
  std::map<Arm, std::optional<double>> pass_hat_k;
  std::map<Arm, std::string> failure_reason;  // the first failing check's reason, for reports
  std::map<Arm, std::string> not_run_reason;  // why the first check that did not run did not
};

struct LiftSummary {
  double lift = 0;           // with − baseline pass rate
  stats::Interval interval;  // paired bootstrap over cases
  stats::PairedTable table;  // per case (majority of runs when repeated)
  double mcnemar_p = 1;
  bool significant = false;  // the interval excludes 0 and McNemar p < 0.05
  double token_savings = 0;
  bool is_beneficial = false;   // upskill's rule
  std::string verdict;          // improved | regressed | inconclusive
  long long not_run_pairs = 0;  // (run, case) pairs left out of both arms: a side was not run
  int resamples = 0;
  std::uint64_t seed = 0;
  std::size_t pairs = 0;  // cases scored in both arms: what the lift is computed over
  // Whether the lift was computed: with no case scored in both arms there is no lift (and no
  // interval, test or verdict), only `not_computed`, the reason.
  bool computed() const { return pairs > 0; }
  std::string not_computed;
};

struct ModelSummary {
  std::string name;
  std::string model_id;
  std::vector<std::string> reported_models;  // ids the server reported
  std::optional<ArmSummary> baseline;
  ArmSummary with_skill;
  std::optional<LiftSummary> lift;  // when the baseline ran
  std::vector<CaseSummary> cases;
  std::vector<std::string> warnings;
};

// How much of what was planned got an answer (docs/eval.md, "Incomplete results"). While trials are
// unanswered every figure is partial: reports say so, and give no recommendation as if the
// evaluation were complete.
struct Completeness {
  long long planned = 0;    // trials this evaluation (its shard, when sharded) was to answer
  long long errors = 0;     // … whose model call failed
  long long missing = 0;    // … that never ran (interrupted, a shard that stopped early)
  std::string first_cause;  // the first reason, in one line
  long long unanswered() const { return errors + missing; }
  bool complete() const { return unanswered() == 0; }
};

// What an evaluation's trials say of it: planned (those its shard holds), errored and never run,
// and the first cause (a failure's message; else that trials never ran).
Completeness completeness(const Evaluation& evaluation);

// "incomplete: 3 of 14 trials unanswered — first cause: …" (empty when complete): the one wording
// every report uses.
std::string incomplete_note(const Completeness& c);

struct EvalSummary {
  std::string skill;
  int runs = 1;
  bool interrupted = false;
  Completeness completeness;
  std::vector<ModelSummary> models;
  long long errors = 0;
  long long not_run = 0;  // trials whose verdict is "not run", over every model and arm
};

// One distinct reason model calls failed: its kind, HTTP status and message, and how many trials
// it cost (those sent and failed, and those not sent after a definitive failure).
struct FailureCause {
  std::string kind;  // llm::to_string(FailureKind)
  int status = 0;    // HTTP status, 0 when none
  std::string message;
  long long failed = 0;
  long long not_sent = 0;
  bool definitive = false;  // a rejected key, unknown model or unreachable endpoint
};
// Every distinct cause, in the order first seen (trial order).
std::vector<FailureCause> failure_causes(const Evaluation& evaluation);

// Whether a trial is left out of the pass/fail numbers as not run: its own verdict is "not run",
// or, with a baseline, that of the other arm's trial for the same model, run and case is.
bool excluded_as_not_run(const Evaluation& evaluation, const TrialKey& key);

EvalSummary summarize(const Evaluation& evaluation, std::uint64_t seed = 20261202,
                      int resamples = 10000);

// How much of each case to_json gives: its per-arm totals and every trial (what `eval --json`
// prints), or the totals only (batch_summary.json: the trials are in the run folders).
enum class CaseDetail { trials, totals };

// The versioned machine-readable result ("schema": "upskill.eval/1"), documented in docs/ci.md.
Json to_json(const EvalSummary& summary, const Evaluation& evaluation,
             CaseDetail detail = CaseDetail::trials);

}  // namespace upskill::eval
