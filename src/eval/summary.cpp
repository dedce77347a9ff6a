// What an evaluation means: rates with intervals, tokens and cost per arm, the paired lift,
// per-case results, completeness and the versioned JSON (see summary.hpp).
#include "upskill/eval/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "upskill/checks/judge_runner.hpp"

namespace upskill::eval {

bool excluded_as_not_run(const Evaluation& e, const TrialKey& key) {
  if (e.at(key).not_run()) return true;
  if (!e.baseline) return false;
  TrialKey other = key;
  other.arm = key.arm == Arm::baseline ? Arm::with_skill : Arm::baseline;
  return e.at(other).not_run();
}

namespace {

ArmSummary summarize_arm(const Evaluation& e, std::size_t model, Arm arm,
                         const std::vector<CaseSummary>& cases) {
  ArmSummary s;
  s.arm = arm;
  double rate_sum = 0, latency_sum = 0;
  for (const auto& c : cases) {
    const CaseArm& ca = c.arms.at(arm);
    if (ca.runs == 0) continue;
    ++s.cases;
    rate_sum += ca.rate();
  }
  long long answered = 0;
  double judged_sum = 0;
  std::vector<std::map<std::size_t, std::set<bool>>> judged_verdicts(e.cases.size());
  for (int run = 0; run < e.runs; ++run)
    for (std::size_t c = 0; c < e.cases.size(); ++c) {
      const TrialKey key{model, arm, run, c};
      const TrialResult& t = e.at(key);
      if (!t.completed) continue;
      if (t.unanswered_error()) {
        ++s.errors;
        continue;
      }
      if (t.skill_use && t.skill_use->known) {
        ++s.skill_known;
        s.skill_loaded += t.skill_use->loaded;
        s.reference_reads += t.skill_use->reference_reads;
      }
      const checks::JudgeTotals jt = checks::judge_totals(t.verdict);
      s.judge.usage += jt.usage;
      s.judge.cost_usd += jt.cost_usd;
      s.judge.calls += jt.calls;
      s.judge.cached += jt.cached;
      for (std::size_t i = 0; i < t.verdict.checks.size(); ++i) {
        const checks::CheckResult& check = t.verdict.checks[i];
        if (check.kind != cases::CheckKind::judge || !check.details.is_object() ||
            !check.details.contains("mean"))
          continue;
        ++s.judge.checks;
        judged_sum += check.details.value("mean", 0.0);
        if (check.details.value("judges", Json::array()).size() > 1) {
          ++s.judge.multi_judge_checks;
          s.judge.unanimous_checks += check.details.value("agreement", 0.0) >= 1.0;
        }
        judged_verdicts[c][i].insert(check.status == checks::Status::passed);
      }
      // The model answered: its tokens, cost and time count whether or not the answer is scored.
      ++answered;
      s.usage += t.usage;
      s.cost_usd += t.cost_usd;
      latency_sum += t.latency_ms;
      s.not_run += t.not_run();
      if (excluded_as_not_run(e, key)) {
        ++s.excluded;
        continue;
      }
      ++s.trials;
      s.passed_trials += t.verdict.passed;
      s.checks_run += t.verdict.ran;
      s.checks_passed += t.verdict.passed_checks;
    }
  s.judge.mean_score = s.judge.checks ? judged_sum / static_cast<double>(s.judge.checks) : 0;
  if (e.runs > 1)
    for (const auto& per_check : judged_verdicts) {
      if (per_check.empty()) continue;
      ++s.judge.repeated_cases;
      bool same = true;
      for (const auto& [_, verdicts] : per_check) same = same && verdicts.size() == 1;
      s.judge.consistent_cases += same;
    }
  s.pass_rate = s.cases ? rate_sum / static_cast<double>(s.cases) : 0;
  s.interval = stats::wilson_fractional(s.pass_rate * static_cast<double>(s.cases),
                                        static_cast<double>(s.cases));
  s.tokens_per_trial =
      answered ? static_cast<double>(s.usage.total()) / static_cast<double>(answered) : 0;
  s.latency_ms = answered ? latency_sum / static_cast<double>(answered) : 0;
  return s;
}

// "expected: reason" of the first weighted check with one of `statuses` (else of any weighted check
// that did not pass).
std::optional<std::string> first_reason(const checks::CaseResult& verdict,
                                        std::initializer_list<checks::Status> statuses) {
  for (const auto& check : verdict.checks)
    if (check.weight > 0 &&
        std::find(statuses.begin(), statuses.end(), check.status) != statuses.end())
      return fmt::format(
          "{}: {}", check.expected,
          check.reason.empty() ? std::string(checks::to_string(check.status)) : check.reason);
  return std::nullopt;
}

// The paired comparison of a model's two arms (its baseline summarised): the lift over the cases
// scored in both arms, its interval, McNemar, upskill's is_beneficial and the verdict; a warning
// when too few cases are paired to ever be significant.
LiftSummary summarize_lift(const Evaluation& e, std::size_t m, ModelSummary& ms, std::uint64_t seed,
                           int resamples) {
  LiftSummary lift;
  for (int run = 0; run < e.runs; ++run)
    for (std::size_t c = 0; c < e.cases.size(); ++c)
      lift.not_run_pairs += e.at({m, Arm::with_skill, run, c}).not_run() ||
                            e.at({m, Arm::baseline, run, c}).not_run();
  std::vector<double> with, without;
  for (const auto& c : ms.cases) {
    const CaseArm& w = c.arms.at(Arm::with_skill);
    const CaseArm& b = c.arms.at(Arm::baseline);
    if (w.runs == 0 || b.runs == 0) continue;  // only cases scored in both arms are paired
    with.push_back(w.rate());
    without.push_back(b.rate());
    lift.table.add(w.rate() > 0.5, b.rate() > 0.5);
  }
  lift.pairs = with.size();
  if (!lift.computed())
    lift.not_computed = !ms.with_skill.scored() && !ms.baseline->scored()
                            ? "neither arm has a scored trial"
                        : !ms.with_skill.scored() ? "the with-skill arm has no scored trial"
                        : !ms.baseline->scored()  ? "the baseline arm has no scored trial"
                                                  : "no case was scored in both arms";
  const auto boot = stats::paired_bootstrap_lift(with, without, resamples, seed);
  lift.lift = boot.estimate;
  lift.interval = boot.interval;
  lift.resamples = boot.resamples;
  lift.seed = boot.seed;
  lift.mcnemar_p = stats::mcnemar_exact_p(lift.table.with_only, lift.table.without_only);
  // Significant only when both agree: the percentile bootstrap is optimistic on a handful of
  // cases, and the exact McNemar test on the paired table guards it.
  lift.significant =
      !with.empty() && (lift.interval.low > 0 || lift.interval.high < 0) && lift.mcnemar_p < 0.05;
  // Both arms need scored trials before tokens or benefit mean anything (an interrupted run may
  // lack one).
  const bool both_scored = ms.with_skill.trials > 0 && ms.baseline->trials > 0;
  lift.token_savings = both_scored ? stats::token_savings(ms.with_skill.tokens_per_trial,
                                                          ms.baseline->tokens_per_trial)
                                   : 0;
  lift.is_beneficial =
      both_scored && !with.empty() && stats::is_beneficial(lift.lift, lift.token_savings);
  lift.verdict = !lift.computed()    ? "not computed"
                 : !lift.significant ? "inconclusive"
                 : lift.lift > 0     ? "improved"
                                     : "regressed";
  if (auto warning = stats::small_sample_warning(static_cast<long long>(with.size()));
      warning && lift.computed())
    ms.warnings.push_back(*warning);
  return lift;
}

}  // namespace

Completeness completeness(const Evaluation& e) {
  Completeness c;
  const ShardDeal deal(e);
  for (const auto& t : e.trials) {
    if (!deal.holds(t.key)) continue;
    ++c.planned;
    if (!t.completed)
      ++c.missing;
    else if (t.unanswered_error())
      ++c.errors;
  }
  if (const auto causes = failure_causes(e); !causes.empty())
    c.first_cause = causes.front().message;
  else if (c.missing)
    c.first_cause = fmt::format("{} trial(s) never ran (the run was interrupted)", c.missing);
  return c;
}

std::string incomplete_note(const Completeness& c) {
  if (c.complete()) return {};
  return fmt::format("incomplete: {} of {} trials unanswered{}", c.unanswered(), c.planned,
                     c.first_cause.empty() ? "" : " — first cause: " + c.first_cause);
}

EvalSummary summarize(const Evaluation& e, std::uint64_t seed, int resamples) {
  EvalSummary out;
  out.skill = e.skill_name;
  out.runs = e.runs;
  out.interrupted = e.interrupted;
  for (std::size_t m = 0; m < e.models.size(); ++m) {
    ModelSummary ms;
    ms.name = e.models[m].name;
    ms.model_id = e.models[m].model;
    std::set<std::string> reported;
    for (std::size_t c = 0; c < e.cases.size(); ++c) {
      CaseSummary cs;
      cs.id = e.cases[c].id;
      for (Arm arm : e.arms()) {
        CaseArm ca;
        for (int run = 0; run < e.runs; ++run) {
          const TrialResult& t = e.at({m, arm, run, c});
          if (!t.completed) continue;
          if (t.unanswered_error()) {
            ++ca.errors;
            continue;
          }
          if (!t.reported_model.empty()) reported.insert(t.reported_model);
          if (t.skill_use && t.skill_use->known) {
            ++ca.skill_known;
            ca.skill_loaded += t.skill_use->loaded;
          }
          if (t.not_run()) {
            ++ca.not_run;
            if (!cs.not_run_reason.contains(arm))
              cs.not_run_reason[arm] =
                  first_reason(t.verdict, {checks::Status::not_run}).value_or("not run");
          }
          if (excluded_as_not_run(e, {m, arm, run, c})) {
            ++ca.excluded;
            continue;
          }
          ++ca.runs;
          ca.passes += t.verdict.passed;
          if (!t.verdict.passed && !cs.failure_reason.contains(arm))
            cs.failure_reason[arm] =
                first_reason(t.verdict, {checks::Status::failed, checks::Status::error})
                    .value_or(first_reason(t.verdict, {checks::Status::not_run})
                                  .value_or("no check ran"));
        }
        if (e.runs > 1 && ca.runs > 0) {
          cs.pass_at_k[arm] = stats::pass_at_k(ca.runs, ca.passes, ca.runs);
          cs.pass_hat_k[arm] = stats::pass_hat_k(ca.runs, ca.passes, ca.runs);
        }
        cs.arms[arm] = ca;
      }
      ms.cases.push_back(std::move(cs));
    }
    ms.reported_models.assign(reported.begin(), reported.end());
    ms.with_skill = summarize_arm(e, m, Arm::with_skill, ms.cases);
    out.errors += ms.with_skill.errors;
    out.not_run += ms.with_skill.not_run;
    if (e.baseline) {
      ms.baseline = summarize_arm(e, m, Arm::baseline, ms.cases);
      out.errors += ms.baseline->errors;
      out.not_run += ms.baseline->not_run;
      ms.lift = summarize_lift(e, m, ms, seed, resamples);
    }
    if (const long long not_run = ms.with_skill.not_run + (ms.baseline ? ms.baseline->not_run : 0))
      ms.warnings.push_back(fmt::format(
          "{} trial(s) not run: their checks passed as far as they could run here, but some could "
          "not run (no CUDA device, workspace or sandbox); {} left out of the pass rates, "
          "intervals{}",
          not_run,
          ms.lift ? fmt::format("they and their pairs ({} pair(s)) are", ms.lift->not_run_pairs)
                  : std::string("they are"),
          ms.lift ? ", McNemar test and lift" : ""));
    if (ms.with_skill.errors || (ms.baseline && ms.baseline->errors))
      ms.warnings.push_back(
          fmt::format("{} trial(s) failed to get an answer and are not counted",
                      ms.with_skill.errors + (ms.baseline ? ms.baseline->errors : 0)));
    out.models.push_back(std::move(ms));
  }
  out.completeness = completeness(e);
  return out;
}

namespace {

Json usage_json(const llm::Usage& u) {
  return llm::to_json(u);
}

Json judge_json(const JudgeTally& j) {
  Json out = {{"calls", j.calls},
              {"cached", j.cached},
              {"tokens", usage_json(j.usage)},
              {"cost_usd", j.cost_usd},
              {"checks", j.checks},
              // null when no check was scored: no mean, rather than 0
              {"mean_score", j.checks ? Json(j.mean_score) : Json(nullptr)}};
  if (j.multi_judge_checks)
    out["judge_agreement"] =
        static_cast<double>(j.unanimous_checks) / static_cast<double>(j.multi_judge_checks);
  if (j.repeated_cases)
    out["run_agreement"] =
        static_cast<double>(j.consistent_cases) / static_cast<double>(j.repeated_cases);
  return out;
}

// A figure that was not computed is null, never 0.
Json arm_json(const ArmSummary& a, bool partial) {
  return {{"cases", a.cases},
          {"pass_rate", a.scored() ? Json(a.pass_rate) : Json(nullptr)},
          {"interval", a.scored() ? Json::array({a.interval.low, a.interval.high}) : Json(nullptr)},
          {"partial", partial && a.scored()},
          {"trials", a.trials},
          {"passed_trials", a.passed_trials},
          {"errors", a.errors},
          {"not_run", a.not_run},
          {"excluded", a.excluded},
          {"assertions_passed", a.checks_passed},
          {"assertions_total", a.checks_run},
          {"tokens", usage_json(a.usage)},
          {"tokens_per_trial", a.tokens_per_trial},
          {"cost_usd", a.cost_usd},
          {"latency_ms", a.latency_ms},
          {"judge", judge_json(a.judge)},
          {"skill_use",
           {{"trials_known", a.skill_known},
            {"loaded", a.skill_loaded},
            {"reference_reads", a.reference_reads}}}};
}

}  // namespace

std::vector<FailureCause> failure_causes(const Evaluation& e) {
  std::vector<FailureCause> out;
  for (const auto& t : e.trials) {
    if (!t.completed || !t.unanswered_error()) continue;
    // A judge that could not judge is a cause of its own: the judge's message.
    const auto* judge = t.judge_failure();
    const std::string kind = judge ? "judge failed" : std::string(llm::to_string(t.failure->kind));
    const int status = judge ? 0 : t.failure->status;
    const std::string message =
        judge ? "the judge could not score the answer: " + judge->reason : t.failure->message;
    auto it = std::find_if(out.begin(), out.end(), [&](const FailureCause& c) {
      return c.kind == kind && c.status == status && c.message == message;
    });
    if (it == out.end()) {
      out.push_back({kind, status, message, 0, 0, !judge && t.failure->definitive()});
      it = std::prev(out.end());
    }
    (t.not_sent ? it->not_sent : it->failed) += 1;
  }
  return out;
}

namespace {

// One trial of a case arm, as the JSON's "trials" list gives it.
Json trial_json(const Evaluation& e, const TrialKey& key) {
  const TrialResult& t = e.at(key);
  Json r = {{"run", key.run}, {"completed", t.completed}};
  if (t.failure) {
    r["error"] = {{"kind", std::string(llm::to_string(t.failure->kind))},
                  {"message", t.failure->message}};
  } else if (t.completed) {
    r["status"] = std::string(checks::to_string(t.verdict.status));
    r["passed"] = t.verdict.passed;
    if (excluded_as_not_run(e, key)) r["excluded"] = true;
    r["score"] = t.verdict.score;
    r["checks"] = checks::to_json(t.verdict)["checks"];
    r["tokens"] = usage_json(t.usage);
    r["latency_ms"] = t.latency_ms;
    r["cost_usd"] = t.cost_usd;
  }
  return r;
}

// One case of one model: per arm its totals, rates and reasons (and, with CaseDetail::trials, its
// trials).
Json case_json(const Evaluation& e, std::size_t m, std::size_t c, const CaseSummary& cs,
               CaseDetail detail) {
  Json per_arm = Json::object();
  for (const auto& [arm, ca] : cs.arms) {
    Json entry = {{"passes", ca.passes},   {"runs", ca.runs},         {"errors", ca.errors},
                  {"not_run", ca.not_run}, {"excluded", ca.excluded}, {"rate", ca.rate()}};
    if (ca.skill_known)
      entry["skill_loaded"] = {{"trials", ca.skill_known}, {"loaded", ca.skill_loaded}};
    if (detail == CaseDetail::trials) {
      Json runs = Json::array();
      for (int run = 0; run < e.runs; ++run) runs.push_back(trial_json(e, {m, arm, run, c}));
      entry["trials"] = std::move(runs);
    }
    if (auto it = cs.pass_at_k.find(arm); it != cs.pass_at_k.end() && it->second)
      entry["pass_at_k"] = *it->second;
    if (auto it = cs.pass_hat_k.find(arm); it != cs.pass_hat_k.end() && it->second)
      entry["pass_hat_k"] = *it->second;
    if (auto it = cs.failure_reason.find(arm); it != cs.failure_reason.end())
      entry["failure"] = it->second;
    if (auto it = cs.not_run_reason.find(arm); it != cs.not_run_reason.end())
      entry["not_run_reason"] = it->second;
    per_arm[std::string(to_string(arm))] = entry;
  }
  return {{"id", cs.id}, {"arms", per_arm}};
}

// The lift: its figures when computed (labelled partial on incomplete results, never beneficial
// then), else why it was not, with every figure null.
Json lift_json(const LiftSummary& l, bool partial) {
  if (!l.computed())
    return {{"computed", false},     {"not_computed", l.not_computed},
            {"lift", nullptr},       {"interval", nullptr},
            {"mcnemar_p", nullptr},  {"significant", false},
            {"verdict", l.verdict},  {"not_run_pairs", l.not_run_pairs},
            {"is_beneficial", false}};
  return {{"computed", true},
          {"partial", partial},
          {"lift", l.lift},
          {"interval", {l.interval.low, l.interval.high}},
          {"method", "paired bootstrap over cases"},
          {"resamples", l.resamples},
          {"seed", l.seed},
          {"paired",
           {{"both", l.table.both},
            {"with_only", l.table.with_only},
            {"baseline_only", l.table.without_only},
            {"neither", l.table.neither}}},
          {"mcnemar_p", l.mcnemar_p},
          {"significant", l.significant},
          {"verdict", l.verdict},
          {"not_run_pairs", l.not_run_pairs},
          {"token_savings", l.token_savings},
          {"is_beneficial", l.is_beneficial && !partial}};
}

Json model_json(const EvalSummary& s, const Evaluation& e, std::size_t m, CaseDetail detail) {
  const ModelSummary& ms = s.models[m];
  const bool partial = !s.completeness.complete();
  Json arms = Json::object();
  if (ms.baseline) arms["baseline"] = arm_json(*ms.baseline, partial);
  arms["with_skill"] = arm_json(ms.with_skill, partial);
  Json cases = Json::array();
  for (std::size_t c = 0; c < ms.cases.size(); ++c)
    cases.push_back(case_json(e, m, c, ms.cases[c], detail));
  Json model = {{"name", ms.name}, {"model", ms.model_id}, {"reported_models", ms.reported_models},
                {"arms", arms},    {"cases", cases},       {"warnings", ms.warnings}};
  if (ms.lift) model["lift"] = lift_json(*ms.lift, partial);
  return model;
}

Json completeness_json(const Completeness& c) {
  if (c.complete()) return nullptr;
  return {{"planned", c.planned}, {"unanswered", c.unanswered()}, {"errors", c.errors},
          {"missing", c.missing}, {"first_cause", c.first_cause}, {"note", incomplete_note(c)}};
}

}  // namespace

Json to_json(const EvalSummary& s, const Evaluation& e, CaseDetail detail) {
  Json models = Json::array();
  for (std::size_t m = 0; m < s.models.size(); ++m) models.push_back(model_json(s, e, m, detail));
  Json causes = Json::array();
  for (const auto& c : failure_causes(e))
    causes.push_back({{"kind", c.kind},
                      {"status", c.status},
                      {"message", c.message},
                      {"failed", c.failed},
                      {"not_sent", c.not_sent},
                      {"definitive", c.definitive}});
  return {{"schema", "upskill.eval/1"},
          {"skill", s.skill},
          {"runs", s.runs},
          {"cases", e.cases.size()},
          {"complete", s.completeness.complete()},
          {"incomplete", completeness_json(s.completeness)},
          {"interrupted", s.interrupted},
          {"errors", s.errors},
          {"failure_causes", causes},
          {"not_run", s.not_run},
          {"models", models}};
}

}  // namespace upskill::eval
