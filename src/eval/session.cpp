// An evaluation session around the engine (see session.hpp).
#include "upskill/eval/session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "upskill/cases/test_suite.hpp"
#include "upskill/checks/checkers.hpp"
#include "upskill/checks/judge_runner.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/hash.hpp"
#include "upskill/eval/batch.hpp"
#include "upskill/eval/run_log.hpp"
#include "upskill/kernel/build.hpp"

namespace upskill::eval {

namespace fs = std::filesystem;

namespace {

Result<std::vector<cases::TestCase>> load_cases(const SessionRequest& request,
                                                const skill::SkillBundle& bundle,
                                                SessionObserver& observer) {
  std::vector<cases::TestCase> test_cases;
  if (request.cases) {
    test_cases = *request.cases;
  } else if (request.tests) {
    UPSKILL_ASSIGN_OR_RETURN(cases::TestSuite suite, cases::load_test_suite(*request.tests));
    for (const auto& w : suite.warnings) observer.warning(w);
    test_cases = std::move(suite.cases);
  } else {
    test_cases = bundle.tests();
    if (test_cases.empty() && request.generate_tests) return test_cases;  // generated later
  }
  if (test_cases.empty() && request.skill)  // in memory (Python): no files or flags to point at
    return fail(Error::usage(fmt::format("{}: no test cases", bundle.name())));
  if (test_cases.empty())
    return fail(
        Error::usage(fmt::format("{}: no test cases (add tests to skill_meta.json or pass -t FILE)",
                                 request.skill_dir.string())));
  return test_cases;
}

// Adds the per-run judge check to every case.
void add_run_judge(const SessionRequest& request, std::vector<cases::TestCase>& test_cases) {
  if (request.judge_criteria.empty()) return;
  cases::JudgeParams p;
  p.criteria = request.judge_criteria;
  p.models = request.judge_models;
  if (request.judge_threshold) p.threshold = *request.judge_threshold;
  for (auto& c : test_cases)
    c.checks.push_back(cases::Check{cases::CheckKind::judge, p, 1.0, "judge"});
}

// Every judge model the cases name, and the default judges for checks that name none, resolved
// before any call is made. No judge check: nothing to resolve (and no key demanded).
struct Judges {
  std::map<std::string, llm::ResolvedModel> models;
  std::vector<std::string> defaults;
  bool any = false;
};
Result<Judges> resolve_judges(const SessionRequest& request, const config::Config& cfg,
                              const llm::ModelAccess& access,
                              const std::vector<cases::TestCase>& test_cases) {
  Judges j;
  std::vector<std::string> specs;
  bool needs_default = false;
  for (const auto& c : test_cases)
    for (const auto& check : c.effective_checks()) {
      if (check.kind != cases::CheckKind::judge) continue;
      j.any = true;
      const auto& p = std::get<cases::JudgeParams>(check.params);
      needs_default = needs_default || p.models.empty();
      specs.insert(specs.end(), p.models.begin(), p.models.end());
    }
  if (!j.any) return j;
  j.defaults = request.judge_models;
  if (j.defaults.empty()) j.defaults.push_back(cfg.model_for(config::ModelRole::judge));
  if (needs_default) specs.insert(specs.end(), j.defaults.begin(), j.defaults.end());
  for (const auto& spec : specs) {
    if (j.models.contains(spec)) continue;
    UPSKILL_ASSIGN_OR_RETURN(llm::ResolvedModel m, access.resolve(spec));
    j.models.emplace(spec, std::move(m));
  }
  return j;
}

// plan.json: what the batch runs, so that shards can be merged (a failure is only a warning).
void record_plan(const fs::path& batch_dir, const Evaluation& plan, std::uint64_t seed,
                 SessionObserver& observer) {
  if (auto written = write_plan(batch_dir, plan, seed); !written)
    observer.warning(written.error().message);
}

// --resume: the batch must be the request's own evaluation (plan.json); what differs is named. A
// batch from before plans were recorded cannot be checked, and says so.
Status check_resumed_plan(const fs::path& batch_dir, const Evaluation& plan, std::uint64_t seed,
                          SessionObserver& observer) {
  if (!has_plan(batch_dir)) {
    observer.warning(
        fmt::format("{}: no plan.json (the batch predates recorded plans): cannot "
                    "check that this request is the batch's evaluation",
                    batch_dir.string()));
    return {};
  }
  UPSKILL_ASSIGN_OR_RETURN(const Plan recorded, read_plan(batch_dir));
  const std::vector<std::string> differences = plan_differences(recorded, plan, seed);
  if (differences.empty()) return {};
  return fail(Error::usage(fmt::format(
      "--resume {}: this request is not the batch's evaluation:\n  - {}\nresume it with the "
      "arguments it was started with, or start a new batch without --resume",
      batch_dir.string(), fmt::join(differences, "\n  - "))));
}

// The batch a session writes — new, or the one --resume names, checked against the request — held
// locked until the session returns, and the trials it already has.
struct BatchLogs {
  std::optional<BatchFolder> batch;  // none with --no-log-runs (and no --resume)
  std::map<std::size_t, TrialResult> previous;
};
Result<BatchLogs> open_batch_logs(const SessionRequest& request, const config::Config& cfg,
                                  const Evaluation& plan, SessionObserver& observer) {
  BatchLogs logs;
  const fs::path runs_dir = request.runs_dir.value_or(cfg.runs_dir);
  if (request.resume) {
    UPSKILL_ASSIGN_OR_RETURN(logs.batch, open_batch(resume_dir(*request.resume, runs_dir)));
    UPSKILL_RETURN_IF_ERROR(check_resumed_plan(logs.batch->dir, plan, request.seed, observer));
    UPSKILL_ASSIGN_OR_RETURN(logs.previous, load_completed_trials(logs.batch->dir, plan));
    observer.resumed(logs.batch->dir, logs.previous.size());
  } else if (request.log_runs) {
    UPSKILL_ASSIGN_OR_RETURN(logs.batch, create_batch(runs_dir));
  }
  return logs;
}

// Coding-agent students: their programs and settings, checked before anything runs.
Status configure_cli_agents(const config::Config& cfg, const llm::ModelAccess& access,
                            EvalOptions& options) {
  for (const auto& m : options.models) {
    if (m.provider != "cli") continue;
    // cli.<agent>@<models entry>: the command-line form of cli_providers.<agent>.model.
    std::string name = m.model;
    std::optional<std::string> on;
    if (const std::size_t at = name.find('@'); at != std::string::npos) {
      on = name.substr(at + 1);
      name.resize(at);
      if (on->empty() || name.empty())
        return fail(Error::usage(
            fmt::format("model '{}': expected cli.<agent>@<name of a models: entry>", m.name)));
    }
    UPSKILL_ASSIGN_OR_RETURN(agent::CliAgent a, agent::cli_agent(name, cfg));
    if (on) a.model = on;
    if (a.model) {
      // cli_providers.<agent>.model: the agent runs on that entry's endpoint, key and model id.
      auto target = access.resolve(*a.model);
      if (!target)
        return fail(Error::usage(
            fmt::format("cli_providers.{}.model: {}", a.name, target.error().message)));
      UPSKILL_RETURN_IF_ERROR(agent::point_at_model(a, *target, cfg.retries));
    }
    options.cli_agents.emplace(m.name, std::move(a));
  }
  return {};
}

EvalOptions engine_options(const SessionRequest& request, std::vector<llm::ResolvedModel> models) {
  EvalOptions options;
  options.models = std::move(models);
  options.runs = std::max(1, request.runs);
  options.baseline = request.baseline;
  options.jobs = std::max(1, request.jobs);
  options.prompt.inline_references = request.inline_references;
  options.mode = request.mode;
  options.agent.max_turns = request.max_turns;
  options.agent.allow_run = request.allow_run;
  options.skill_delivery = request.skill_delivery;
  options.shard = request.shard;
  return options;
}

// The evaluation's shape before any trial: what resume checks a batch against and what observers
// are told.
// The skill's content as the students see it: its front matter, body and every file but its tests
// (the plan compares those case by case).
std::string skill_hash(const skill::SkillBundle& bundle) {
  std::string text = skill::render_frontmatter(bundle.frontmatter) + "\n" + bundle.body;
  for (const auto& [path, file] : bundle.files)
    if (path != "skill_meta.json")
      text += fmt::format("\n--- {} {}\n{}", path, file.executable, file.content);
  return hash::sha256_hex(text);
}

Evaluation plan_of(const SessionRequest& request, const skill::SkillBundle& bundle,
                   const std::vector<cases::TestCase>& test_cases, const EvalOptions& options,
                   const std::vector<std::string>& default_judges) {
  Evaluation plan;
  plan.skill_name = bundle.name();
  plan.cases = test_cases;
  plan.models = options.models;
  plan.runs = options.runs;
  plan.baseline = options.baseline;
  plan.shard = options.shard;
  plan.settings = {{"skill_hash", skill_hash(bundle)}};
  plan.settings.update(trial_settings(request));
  plan.settings["judges"] = default_judges;
  return plan;
}

}  // namespace

std::vector<Error> write_result_files(const std::vector<ResultFile>& files,
                                      const EvalSummary& summary, const Evaluation& evaluation) {
  std::vector<Error> errors;
  for (const ResultFile& f : files) {
    const std::string text = f.render(summary, evaluation);
    if (auto s =
            f.append ? files::append_line(f.path, text, true) : files::write_atomic(f.path, text);
        !s)
      errors.push_back(s.error());
  }
  return errors;
}

int kernel_checks_needing_gpu(const Evaluation& evaluation) {
  int n = 0;
  for (const auto& t : evaluation.trials)
    if (t.completed && !t.failure) n += checks::checks_needing_gpu(t.verdict);
  return n;
}

std::vector<GateResult> apply_gates(const Gates& gates, const EvalSummary& summary) {
  std::vector<GateResult> out;
  const bool partial = !summary.completeness.complete();
  for (const auto& ms : summary.models) {
    if (gates.min_lift) {
      GateResult g{GateResult::Kind::min_lift, ms.name, *gates.min_lift};
      g.partial = partial;
      if (!ms.lift) {
        g.no_baseline = true;
      } else if (!ms.lift->computed()) {
        g.not_computed = true;
        g.why = "the lift was not computed: " + ms.lift->not_computed;
      } else {
        g.value = ms.lift->interval.low;
        g.estimate = ms.lift->lift;
        g.passed = g.value >= g.threshold;
      }
      out.push_back(g);
    }
    if (gates.fail_under) {
      GateResult g{GateResult::Kind::fail_under, ms.name, *gates.fail_under};
      g.partial = partial;
      g.value = ms.with_skill.pass_rate;
      g.passed = ms.with_skill.scored() && g.value >= g.threshold;
      if (!ms.with_skill.scored()) {
        g.not_computed = true;
        g.why = "the with-skill arm has no scored trial";
      }
      out.push_back(g);
    }
  }
  return out;
}

ExitCode exit_status(const ExitFacts& f) {
  if (f.interrupted) return ExitCode::interrupted;
  if (f.gpu_required_missing || f.unanswered) return ExitCode::infrastructure;
  if (f.write_failed) return ExitCode::usage;
  if (f.gate_failed) return ExitCode::gate_failed;
  return ExitCode::ok;
}

bool any_gate_failed(const std::vector<GateResult>& gates) {
  return std::any_of(gates.begin(), gates.end(), [](const GateResult& g) { return !g.passed; });
}

ExitCode session_exit(const SessionOutcome& o) {
  return exit_status({o.evaluation.interrupted, o.gpu_required_missing,
                      o.summary.errors > 0 || !o.summary.completeness.complete(),
                      !o.write_errors.empty(), any_gate_failed(o.gates)});
}

void finish_evaluation(EvaluationEnd& end, const std::vector<ResultFile>& result_files,
                       const Gates& gates, bool require_gpu, bool interrupted) {
  for (auto& e : write_result_files(result_files, end.summary, end.evaluation))
    end.write_errors.push_back(std::move(e));
  end.gates = apply_gates(gates, end.summary);
  end.needing_gpu = kernel_checks_needing_gpu(end.evaluation);
  end.gpu_required_missing = require_gpu && end.needing_gpu > 0 && !interrupted;
  end.exit = exit_status({interrupted, end.gpu_required_missing,
                          end.summary.errors > 0 || !end.summary.completeness.complete(),
                          !end.write_errors.empty(), any_gate_failed(end.gates)});
}

namespace {

// What a session runs on, every input checked: the skill, its cases (written by the test writer
// when it had none, over the session's connection, which is then already open) and the students.
struct SessionInputs {
  skill::SkillBundle bundle;
  std::vector<cases::TestCase> cases;
  std::vector<llm::ResolvedModel> students;
  std::optional<llm::Connection> connection;
};

Result<SessionInputs> load_inputs(const SessionRequest& request, const llm::ModelAccess& models,
                                  SessionObserver& observer) {
  const config::Config& cfg = *models.config;
  SessionInputs in;
  if (request.skill) {
    in.bundle = *request.skill;
  } else {
    UPSKILL_ASSIGN_OR_RETURN(in.bundle, skill::SkillBundle::load(request.skill_dir));
  }
  UPSKILL_ASSIGN_OR_RETURN(in.cases, load_cases(request, in.bundle, observer));
  std::vector<std::string> specs = request.models;
  if (specs.empty()) specs.push_back(cfg.model_for(config::ModelRole::student));
  UPSKILL_ASSIGN_OR_RETURN(in.students, models.resolve_all(specs));
  if (!in.cases.empty()) return in;
  // A skill without tests gets them from the test writer first (saved with the skill).
  if (auto resolved = request.generate_tests->resolve(); !resolved)
    return fail(Error{resolved.error().code,
                      fmt::format("{}: no test cases, and none can be generated: {} (add tests "
                                  "to skill_meta.json, pass -t FILE or name --test-gen-model)",
                                  request.skill_dir.string(), resolved.error().message)});
  UPSKILL_ASSIGN_OR_RETURN(in.connection, models.connect());
  UPSKILL_ASSIGN_OR_RETURN(in.cases, request.generate_tests->write(in.bundle, *in.connection));
  if (in.cases.empty())
    return fail(Error::usage(fmt::format(
        "{}: the test writer's cases were all dropped; no tests to run", in.bundle.name())));
  observer.notice(fmt::format("{}: no tests, so {} were generated and saved to its skill_meta.json",
                              in.bundle.name(), in.cases.size()));
  return in;
}

// The run logs kept as trials complete: each trial's line at once (unless the batch already had
// it), and the run and batch files, which repeat every trial, every few seconds — never more often
// than keeps their cost to a fiftieth of the time. The first write that fails is a warning.
class RunLogCheckpoint {
 public:
  RunLogCheckpoint(const RunLogWriter& writer, const std::map<std::size_t, TrialResult>& previous,
                   std::uint64_t seed, SessionObserver& observer)
      : writer_(writer), previous_(previous), seed_(seed), observer_(observer) {}

  void operator()(const Evaluation& partial, const TrialResult& trial) {
    Status written = previous_.contains(partial.index(trial.key))
                         ? Status{}
                         : writer_.write_trial(partial, trial);
    const auto now = std::chrono::steady_clock::now();
    if (written && now - last_full_ >= std::max<std::chrono::steady_clock::duration>(
                                           kRunLogInterval, full_cost_ * 50)) {
      written = writer_.write(partial, summarize(partial, seed_, 1000));
      last_full_ = std::chrono::steady_clock::now();
      full_cost_ = last_full_ - now;
    }
    if (!written && !warned_) observer_.warning(written.error().message);
    warned_ = warned_ || !written;
  }

 private:
  const RunLogWriter& writer_;
  const std::map<std::size_t, TrialResult>& previous_;
  std::uint64_t seed_;
  SessionObserver& observer_;
  std::chrono::steady_clock::time_point last_full_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration full_cost_{};
  bool warned_ = false;
};

}  // namespace

Result<SessionOutcome> run_session(const SessionRequest& request, const llm::ModelAccess& models,
                                   SessionObserver& observer) {
  if (models.config == nullptr || !models.connect)
    return fail(Error::usage("an evaluation session needs a configuration and a client"));
  const config::Config& cfg = *models.config;
  UPSKILL_ASSIGN_OR_RETURN(SessionInputs in, load_inputs(request, models, observer));
  add_run_judge(request, in.cases);
  UPSKILL_ASSIGN_OR_RETURN(const Judges judges, resolve_judges(request, cfg, models, in.cases));
  EvalOptions options = engine_options(request, std::move(in.students));
  UPSKILL_RETURN_IF_ERROR(configure_cli_agents(cfg, models, options));
  const Evaluation plan = plan_of(request, in.bundle, in.cases, options, judges.defaults);

  // Where the run logs go, and what an earlier run of this batch already has.
  SessionOutcome out;
  UPSKILL_ASSIGN_OR_RETURN(BatchLogs logs, open_batch_logs(request, cfg, plan, observer));
  if (logs.batch) {
    out.batch_id = logs.batch->id;
    out.batch_dir = logs.batch->dir;
  }
  const std::map<std::size_t, TrialResult>& previous = logs.previous;
  if (request.resume)
    options.previous = [&previous, &plan](const TrialKey& key) -> std::optional<TrialResult> {
      auto it = previous.find(plan.index(key));
      if (it == previous.end()) return std::nullopt;
      return it->second;
    };
  out.logged = request.log_runs && logs.batch;
  const RunLogWriter writer{out.batch_dir, out.batch_id, in.bundle.name()};
  // A resumed batch keeps the plan it was checked against.
  if (out.logged && !has_plan(out.batch_dir))
    record_plan(out.batch_dir, plan, request.seed, observer);
  options.on_trial = [&](const TrialResult& t, std::size_t done, std::size_t total) {
    observer.trial_done(plan, t, done, total);
  };
  RunLogCheckpoint logs_kept(writer, previous, request.seed, observer);
  const Checkpoint checkpoint = [&](const Evaluation& partial, const TrialResult& trial) {
    if (out.logged) logs_kept(partial, trial);
  };
  // Kernel specs are relative to the file the cases came from.
  const checks::Checkers checkers(
      cfg,
      request.spec_dir.value_or(request.tests ? request.tests->parent_path() : request.skill_dir));

  // Every input is checked: only now is the client opened.
  if (!in.connection) {
    UPSKILL_ASSIGN_OR_RETURN(in.connection, models.connect());
  }
  options.cancel = in.connection->cancel;
  checks::CheckEnvironment environment = checkers.environment();
  std::optional<checks::LlmJudge> judge;
  if (judges.any) {
    judge.emplace(*in.connection->client, judges.models, judges.defaults,
                  kernel::default_cache_dir(), in.connection->cancel);
    environment.judges = &*judge;
  }
  observer.started(plan);
  out.evaluation =
      evaluate(in.bundle, in.cases, options, *in.connection->client, environment, checkpoint);
  observer.finished();
  out.summary = summarize(out.evaluation, request.seed);
  if (out.logged)
    if (auto written = writer.write(out.evaluation, out.summary); !written)
      out.write_errors.push_back(written.error());
  finish_evaluation(out, request.result_files, request.gates, request.require_gpu,
                    out.evaluation.interrupted);
  return out;
}

}  // namespace upskill::eval
