// The refinement loop (see refine.hpp).
#include "upskill/gen/refine.hpp"

#include <fmt/format.h>

#include <cmath>

#include "upskill/core/text.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::gen {

namespace {

constexpr double kPlateau = 0.05;        // upskill's threshold
constexpr std::size_t kMaxReports = 20;  // failing trials shown to the teacher
constexpr std::size_t kAnswerBytes = 4000;

AttemptRecord record_of(int attempt, const eval::EvalSummary& summary) {
  AttemptRecord r;
  r.attempt = attempt;
  if (summary.models.empty()) return r;
  double with = 0, base = 0, lift = 0;
  bool all_base = true, beneficial = true;
  for (const auto& m : summary.models) {
    with += m.with_skill.pass_rate;
    r.student_tokens += m.with_skill.usage.total();
    if (m.baseline && m.lift) {
      base += m.baseline->pass_rate;
      lift += m.lift->lift;
      beneficial = beneficial && m.lift->is_beneficial;
    } else {
      all_base = false;
      beneficial = beneficial && m.with_skill.pass_rate > 0.5;  // upskill, without a baseline
    }
  }
  const double n = static_cast<double>(summary.models.size());
  r.with_skill = with / n;
  if (all_base) {
    r.baseline = base / n;
    r.lift = lift / n;
  }
  r.beneficial = beneficial;
  return r;
}

}  // namespace

bool better_attempt(const AttemptRecord& a, const AttemptRecord& b) {
  const double la = a.lift.value_or(a.with_skill), lb = b.lift.value_or(b.with_skill);
  if (std::abs(la - lb) > 1e-9) return la > lb;
  if (std::abs(a.with_skill - b.with_skill) > 1e-9) return a.with_skill > b.with_skill;
  return a.student_tokens < b.student_tokens;
}

std::vector<FailureReport> failure_reports(const eval::Evaluation& evaluation) {
  std::vector<FailureReport> out;
  for (const auto& t : evaluation.trials) {
    // A trial not run has nothing to fix: its checks passed as far as they could run.
    if (t.key.arm != eval::Arm::with_skill || !t.completed || t.failure || t.verdict.passed ||
        t.not_run())
      continue;
    if (out.size() >= kMaxReports) break;
    const cases::TestCase& c = evaluation.cases[t.key.test_case];
    FailureReport r;
    r.case_id = c.id;
    r.input = c.input;
    r.answer = trace::bound_text(t.answer, kAnswerBytes);
    for (const auto& check : t.verdict.checks) {
      if (check.status != checks::Status::failed && check.status != checks::Status::error) continue;
      std::string line =
          check.label.empty() ? std::string(cases::to_string(check.kind)) : check.label;
      if (!check.expected.empty()) line += " — expected " + text::excerpt(check.expected, 300);
      if (!check.found.empty()) line += "; found " + text::excerpt(check.found, 300);
      if (!check.reason.empty()) line += "; " + text::excerpt(check.reason, 600);
      r.reasons.push_back(std::move(line));
    }
    out.push_back(std::move(r));
  }
  return out;
}

Result<RefineResult> refine_loop(const skill::SkillBundle& initial,
                                 const std::vector<cases::TestCase>& tests,
                                 const SkillRequest& context, const Teacher& teacher,
                                 llm::ChatClient& students, const checks::CheckEnvironment& env,
                                 const RefineOptions& options) {
  RefineResult result;
  result.best = initial;
  skill::SkillBundle current = initial;
  std::optional<eval::Evaluation> first;
  std::optional<double> previous_rate;
  const int attempts = std::max(1, options.max_attempts);
  for (int a = 1; a <= attempts; ++a) {
    eval::EvalOptions eo = options.eval;
    if (first && first->baseline) {
      // The baseline does not depend on the skill: reuse the first attempt's.
      const eval::Evaluation* base = &*first;
      eo.previous = [base](const eval::TrialKey& key) -> std::optional<eval::TrialResult> {
        if (key.arm != eval::Arm::baseline) return std::nullopt;
        const eval::TrialResult& t = base->at(key);
        if (!t.completed || t.failure) return std::nullopt;
        return t;
      };
    }
    eval::Evaluation ev;
    std::string logged_elsewhere;
    if (options.evaluate_elsewhere) {
      auto remote = options.evaluate_elsewhere(
          {current, tests, options.students, eo.runs, eo.jobs, options.seed, a});
      if (!remote) {
        if (result.attempts.empty()) return fail(remote.error());
        if (remote.error().code == ExitCode::interrupted) {  // Ctrl-C while waiting
          result.interrupted = true;
          result.stopped_because = "interrupted";
        } else {
          result.stopped_because = "evaluation: " + remote.error().message;
          result.evaluation_error = remote.error();
        }
        break;
      }
      ev = std::move(remote->evaluation);
      logged_elsewhere = std::move(remote->batch_id);
    } else {
      ev = eval::evaluate(current, tests, eo, students, env);
    }
    const eval::EvalSummary summary = eval::summarize(ev, options.seed);
    AttemptRecord rec = record_of(a, summary);
    rec.batch_id = logged_elsewhere;
    if (options.on_attempt) {
      std::string logged = options.on_attempt(rec, ev, summary);
      if (rec.batch_id.empty()) rec.batch_id = std::move(logged);
    }
    result.attempts.push_back(rec);
    if (result.attempts.size() == 1 ||
        better_attempt(rec, result.attempts[result.best_attempt - 1])) {
      result.best = current;
      result.best_attempt = a;
      result.best_summary = summary;
    }
    if (!first) first = ev;
    if (ev.interrupted) {
      result.interrupted = true;
      result.stopped_because = "interrupted";
      break;
    }
    if (rec.beneficial) {
      result.stopped_because = "beneficial";
      break;
    }
    if (previous_rate && std::abs(rec.with_skill - *previous_rate) < kPlateau) {
      result.stopped_because = "plateau";
      break;
    }
    if (a == attempts) {
      result.stopped_because = "attempts exhausted";
      break;
    }
    previous_rate = rec.with_skill;
    const std::vector<FailureReport> failures = failure_reports(ev);
    if (failures.empty()) {
      result.stopped_because = "no failing case to learn from";
      break;
    }
    auto refined = refine_skill(current, failures, context, teacher);
    if (!refined) {
      // What was computed is kept: the best so far stands, the reason is reported.
      result.stopped_because = "teacher: " + refined.error().message;
      break;
    }
    result.teacher_usage += refined->usage;
    if (!refined->validation.empty()) {
      result.stopped_because = "the refined skill was invalid: " + refined->validation.front();
      break;
    }
    current = std::move(refined->bundle);
  }
  return result;
}

}  // namespace upskill::gen
