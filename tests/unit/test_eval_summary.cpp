// A trial whose verdict is "not run" is left out, with its pair, of both arms' pass rates,
// intervals, McNemar test and lift; it is counted, and shown as not run in every report.
// Run logs: the files one evaluation writes, and the trials --resume reads back from them.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "support/temp_dir.hpp"
#include "upskill/eval/run_log.hpp"
#include "upskill/eval/summary.hpp"
#include "upskill/report/eval_report.hpp"

namespace upskill::eval {
namespace {

using checks::Status;

checks::CaseResult verdict(Status status) {
  checks::CaseResult r;
  r.status = status;
  r.passed = status == Status::passed;
  checks::CheckResult text;
  text.kind = cases::CheckKind::contains;
  text.expected = "contains \"x\"";
  text.status = status == Status::failed ? Status::failed : Status::passed;
  if (text.status == Status::failed) text.reason = "\"x\" does not appear";
  r.checks.push_back(text);
  r.ran = 1;
  r.passed_checks = text.status == Status::passed;
  if (status == Status::not_run) {
    checks::CheckResult kernel;
    kernel.kind = cases::CheckKind::kernel;
    kernel.expected = "kernel pipeline passes";
    kernel.status = Status::not_run;
    kernel.reason = "correct, bench not run: no CUDA device";
    kernel.details = {{"needs_gpu", true}};
    r.checks.push_back(kernel);
    r.not_run = 1;
  }
  return r;
}

// One model; `with_skill[i]` and `baseline[i]` are the verdicts of case i (one run each).
Evaluation make_evaluation(const std::vector<Status>& with_skill,
                           const std::vector<Status>& baseline, int runs = 1) {
  Evaluation e;
  e.skill_name = "demo";
  e.runs = runs;
  e.baseline = !baseline.empty();
  llm::ResolvedModel model;
  model.name = "student";
  model.model = "student-1";
  e.models.push_back(model);
  const std::size_t n = with_skill.size() / static_cast<std::size_t>(runs);
  for (std::size_t c = 0; c < n; ++c) {
    cases::TestCase tc;
    tc.id = "case" + std::to_string(c);
    e.cases.push_back(tc);
  }
  e.trials.resize(e.baseline ? 2 * with_skill.size() : with_skill.size());
  for (Arm arm : e.arms())
    for (int run = 0; run < runs; ++run)
      for (std::size_t c = 0; c < n; ++c) {
        const TrialKey key{0, arm, run, c};
        const std::size_t i = static_cast<std::size_t>(run) * n + c;
        TrialResult& t = e.trials[e.index(key)];
        t.key = key;
        t.completed = true;
        t.verdict = verdict(arm == Arm::with_skill ? with_skill[i] : baseline[i]);
        t.verdict.case_id = e.cases[c].id;
        t.usage.input = 100;
        t.usage.output = 10;
        t.latency_ms = 5;
      }
  return e;
}

constexpr Status P = Status::passed, F = Status::failed, N = Status::not_run;

// Cases 0-2 gained, 3 passes in both, 4 fails in both; case 5 is not run with the skill only,
// case 6 without it only, case 7 in both arms.
const std::vector<Status> kWith{P, P, P, P, F, N, P, N};
const std::vector<Status> kBase{F, F, F, P, F, P, N, N};

TEST(NotRun, LeftOutPairwiseFromRatesIntervalsMcNemarAndLift) {
  const Evaluation e = make_evaluation(kWith, kBase);
  const EvalSummary s = summarize(e);
  ASSERT_EQ(s.models.size(), 1u);
  const ModelSummary& m = s.models[0];
  ASSERT_TRUE(m.baseline && m.lift);
  // Five pairs are scored (cases 0-4): 4/5 with the skill, 1/5 without.
  EXPECT_EQ(m.with_skill.cases, 5u);
  EXPECT_EQ(m.baseline->cases, 5u);
  EXPECT_EQ(m.with_skill.trials, 5);
  EXPECT_EQ(m.baseline->trials, 5);
  EXPECT_DOUBLE_EQ(m.with_skill.pass_rate, 0.8);
  EXPECT_DOUBLE_EQ(m.baseline->pass_rate, 0.2);
  EXPECT_EQ(m.with_skill.passed_trials, 4);
  EXPECT_EQ(m.baseline->passed_trials, 1);
  const stats::Interval with_ci = stats::wilson(4, 5), base_ci = stats::wilson(1, 5);
  EXPECT_DOUBLE_EQ(m.with_skill.interval.low, with_ci.low);
  EXPECT_DOUBLE_EQ(m.with_skill.interval.high, with_ci.high);
  EXPECT_DOUBLE_EQ(m.baseline->interval.low, base_ci.low);
  EXPECT_DOUBLE_EQ(m.baseline->interval.high, base_ci.high);
  // The paired table holds the five scored cases only: 1 both, 3 gained, 0 lost, 1 neither.
  EXPECT_EQ(m.lift->table.both, 1);
  EXPECT_EQ(m.lift->table.with_only, 3);
  EXPECT_EQ(m.lift->table.without_only, 0);
  EXPECT_EQ(m.lift->table.neither, 1);
  EXPECT_DOUBLE_EQ(m.lift->mcnemar_p, 0.25);  // 2 * (1/2)^3
  EXPECT_NEAR(m.lift->lift, 0.6, 1e-12);
  const auto boot = stats::paired_bootstrap_lift({1, 1, 1, 1, 0}, {0, 0, 0, 1, 0});
  EXPECT_DOUBLE_EQ(m.lift->interval.low, boot.interval.low);
  EXPECT_DOUBLE_EQ(m.lift->interval.high, boot.interval.high);
  // The counts: each arm has two trials of its own not run and three left out.
  EXPECT_EQ(m.with_skill.not_run, 2);
  EXPECT_EQ(m.with_skill.excluded, 3);
  EXPECT_EQ(m.baseline->not_run, 2);
  EXPECT_EQ(m.baseline->excluded, 3);
  EXPECT_EQ(m.lift->not_run_pairs, 3);
  EXPECT_EQ(s.not_run, 4);
  EXPECT_EQ(s.errors, 0);
  // Tokens still count every answered trial.
  EXPECT_DOUBLE_EQ(m.with_skill.tokens_per_trial, 110);
  EXPECT_EQ(m.with_skill.usage.input, 800);
  // Per case: case 6 passed with the skill but is left out, since its baseline was not run.
  const CaseArm& gained_unpaired = m.cases[6].arms.at(Arm::with_skill);
  EXPECT_EQ(gained_unpaired.runs, 0);
  EXPECT_EQ(gained_unpaired.excluded, 1);
  EXPECT_EQ(gained_unpaired.not_run, 0);
  EXPECT_EQ(m.cases[5].arms.at(Arm::with_skill).not_run, 1);
  EXPECT_EQ(m.cases[5].not_run_reason.at(Arm::with_skill),
            "kernel pipeline passes: correct, bench not run: no CUDA device");
  EXPECT_FALSE(m.cases[5].failure_reason.contains(Arm::with_skill));
  bool warned = false;
  for (const auto& w : m.warnings)
    warned = warned || w.find("4 trial(s) not run") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(NotRun, CountedAsFailuresWouldGiveOtherNumbers) {
  // The same evaluation with every "not run" replaced by "failed": the numbers above would not
  // hold.
  std::vector<Status> with = kWith, base = kBase;
  for (auto& v : with) v = v == N ? F : v;
  for (auto& v : base) v = v == N ? F : v;
  const ModelSummary m = summarize(make_evaluation(with, base)).models[0];
  EXPECT_EQ(m.with_skill.cases, 8u);
  EXPECT_DOUBLE_EQ(m.with_skill.pass_rate, 5.0 / 8);
  EXPECT_EQ(m.lift->table.with_only, 4);
  EXPECT_EQ(m.lift->table.without_only, 1);
  EXPECT_EQ(m.lift->not_run_pairs, 0);
}

TEST(NotRun, PairsAreDroppedPerRunIndex) {
  // Two runs of one case: run 0 is not run with the skill, run 1 passes with it and fails without.
  const Evaluation e = make_evaluation({N, P}, {P, F}, 2);
  const ModelSummary m = summarize(e).models[0];
  const CaseArm& with = m.cases[0].arms.at(Arm::with_skill);
  const CaseArm& base = m.cases[0].arms.at(Arm::baseline);
  EXPECT_EQ(with.runs, 1);
  EXPECT_EQ(with.passes, 1);
  EXPECT_EQ(base.runs, 1);
  EXPECT_EQ(base.passes, 0);  // the baseline's passing run 0 is left out with its pair
  EXPECT_EQ(base.excluded, 1);
  EXPECT_DOUBLE_EQ(m.lift->lift, 1.0);
  EXPECT_EQ(m.lift->table.with_only, 1);
  EXPECT_EQ(m.lift->not_run_pairs, 1);
}

TEST(NotRun, WithoutABaselineOnlyTheTrialItselfIsLeftOut) {
  const ModelSummary m = summarize(make_evaluation({P, F, N}, {})).models[0];
  EXPECT_FALSE(m.lift.has_value());
  EXPECT_EQ(m.with_skill.cases, 2u);
  EXPECT_DOUBLE_EQ(m.with_skill.pass_rate, 0.5);
  EXPECT_EQ(m.with_skill.not_run, 1);
  EXPECT_EQ(m.with_skill.excluded, 1);
}

TEST(NotRun, ShownAsNotRunInJsonJunitTerminalAndMarkdown) {
  const Evaluation e = make_evaluation(kWith, kBase);
  const EvalSummary s = summarize(e);
  const Json j = to_json(s, e);
  EXPECT_EQ(j["not_run"], 4);
  const Json& m = j["models"][0];
  EXPECT_EQ(m["arms"]["with_skill"]["not_run"], 2);
  EXPECT_EQ(m["arms"]["with_skill"]["excluded"], 3);
  EXPECT_EQ(m["arms"]["with_skill"]["cases"], 5);
  EXPECT_EQ(m["lift"]["not_run_pairs"], 3);
  const Json& case5 = m["cases"][5]["arms"]["with_skill"];
  EXPECT_EQ(case5["not_run"], 1);
  EXPECT_EQ(case5["trials"][0]["status"], "not run");
  EXPECT_EQ(case5["trials"][0]["excluded"], true);
  EXPECT_FALSE(case5.contains("failure"));
  EXPECT_EQ(m["cases"][5]["arms"]["baseline"]["trials"][0]["status"], "passed");
  EXPECT_EQ(m["cases"][5]["arms"]["baseline"]["trials"][0]["excluded"], true);
  EXPECT_FALSE(m["cases"][0]["arms"]["baseline"]["trials"][0].contains("excluded"));

  const std::string junit = report::render_junit(s, e);
  EXPECT_NE(junit.find("<testsuite name=\"demo / student / with_skill\" tests=\"8\" failures=\"1\" "
                       "errors=\"0\" skipped=\"2\""),
            std::string::npos)
      << junit;
  EXPECT_NE(junit.find("<testcase classname=\"demo.student.with_skill\" name=\"case5\" "
                       "time=\"0.005\"><skipped message=\"not run: kernel pipeline passes — "
                       "correct, bench not run: no CUDA device\"/></testcase>"),
            std::string::npos)
      << junit;
  EXPECT_NE(junit.find("tests=\"16\" failures=\"5\" errors=\"0\" skipped=\"4\""), std::string::npos)
      << junit;

  const std::string terminal = report::render_terminal(s, e, {true, false});
  EXPECT_NE(terminal.find(" · 2 not run (3 left out with their pairs)"), std::string::npos)
      << terminal;
  EXPECT_NE(terminal.find("· 3 not run pairs left out"), std::string::npos) << terminal;
  EXPECT_NE(terminal.find("with skill: not run (kernel pipeline passes"), std::string::npos)
      << terminal;

  const std::string markdown = report::render_markdown(s, e);
  EXPECT_NE(markdown.find("| student | with skill | 80% |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| 0 | 2 (3 left out) |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("3 not run pairs left out of both arms"), std::string::npos) << markdown;
}

// Run logs: every file written, and the completed trials read back for --resume.
Evaluation logged_evaluation() {
  Evaluation e = make_evaluation({P, F, N}, {F, F, P}, 1);
  e.models.push_back(e.models[0]);
  e.models[1].name = "other, model";
  e.models[1].model = "other-1";
  e.trials.resize(e.trials.size() * 2);
  for (Arm arm : e.arms())
    for (std::size_t c = 0; c < e.cases.size(); ++c) {
      const TrialKey key{1, arm, 0, c};
      TrialResult& t = e.trials[e.index(key)];
      t.key = key;
      t.completed = c != 2;
      t.verdict = verdict(c == 0 ? P : F);
      t.verdict.case_id = e.cases[c].id;
      t.agent = true;
      t.turns = 3;
      t.tool_calls = 4;
      t.tool_errors = 1;
      t.run_calls = 2;
      t.tool_call_map = {{"bash", 3}, {"write", 1}};
      t.tool_error_map = {{"bash", 1}};
      t.hit_turn_limit = c == 1;
      t.cost_usd = 0.0125;
      t.reported_model = "other-1-2026";
      t.answer = "an \"answer\", with, commas\n";
      t.reasoning = "because";
      t.usage.input = 200;
      t.usage.output = 20;
      t.usage.cached = 50;
      t.usage.reasoning = 7;
      t.latency_ms = 12.5;
    }
  TrialResult& failed = e.trials[e.index({1, Arm::with_skill, 0, 1})];
  failed.failure = llm::LlmFailure(llm::FailureKind::server_error, 500, "model other at URL: boom");
  return e;
}

// Writes the logs of logged_evaluation() into `dir`.
void write_logs(const std::filesystem::path& dir, const Evaluation& e) {
  const RunLogWriter writer{dir, "2026_01_02_03_04_05", "demo task"};
  ASSERT_TRUE(writer.write(e, summarize(e, 7, 200)));
}

Json read_json(const std::filesystem::path& file) {
  return Json::parse(testing::read_file(file));
}

void write_json(const std::filesystem::path& file, const Json& j) {
  std::ofstream(file, std::ios::binary) << j.dump(2);
}

// Incomplete results (docs/eval.md): a figure computed from no trial is not shown as one, a figure
// computed from part of the trials says so, and no report recommends anything from them.
void fail_trial(TrialResult& t, const std::string& message) {
  t.failure = llm::LlmFailure(llm::FailureKind::auth, 401, message);
  t.verdict = {};
  t.usage = {};
}

TEST(Incomplete, NothingAnsweredComputesNoFigure) {
  Evaluation e = make_evaluation({P, P}, {F, F});
  for (auto& t : e.trials) fail_trial(t, "HTTP 401: invalid key");
  const EvalSummary s = summarize(e, 1, 200);
  EXPECT_FALSE(s.completeness.complete());
  EXPECT_EQ(s.completeness.planned, 4);
  EXPECT_EQ(s.completeness.errors, 4);
  EXPECT_EQ(s.completeness.first_cause, "HTTP 401: invalid key");
  const ModelSummary& m = s.models.at(0);
  EXPECT_FALSE(m.with_skill.scored());
  EXPECT_FALSE(m.baseline->scored());
  ASSERT_TRUE(m.lift);
  EXPECT_FALSE(m.lift->computed());
  EXPECT_EQ(m.lift->not_computed, "neither arm has a scored trial");
  EXPECT_FALSE(m.lift->is_beneficial);

  const std::string term = report::render_terminal(s, e, {});
  EXPECT_NE(term.find("incomplete: 4 of 4 trials unanswered — first cause: HTTP 401: invalid key"),
            std::string::npos)
      << term;
  EXPECT_NE(term.find("lift not computed: neither arm has a scored trial"), std::string::npos)
      << term;
  EXPECT_NE(term.find("not computed: no scored trial (2 errors)"), std::string::npos) << term;
  EXPECT_EQ(term.find("0%"), std::string::npos) << "no rate was computed\n" << term;
  EXPECT_EQ(term.find("lift +"), std::string::npos) << term;

  const Json j = to_json(s, e);
  EXPECT_EQ(j["complete"], false);
  EXPECT_EQ(j["incomplete"]["unanswered"], 4);
  EXPECT_EQ(j["incomplete"]["first_cause"], "HTTP 401: invalid key");
  EXPECT_TRUE(j["models"][0]["arms"]["with_skill"]["pass_rate"].is_null());
  EXPECT_TRUE(j["models"][0]["arms"]["with_skill"]["interval"].is_null());
  EXPECT_EQ(j["models"][0]["lift"]["computed"], false);
  EXPECT_TRUE(j["models"][0]["lift"]["lift"].is_null());
  EXPECT_TRUE(j["models"][0]["lift"]["mcnemar_p"].is_null());

  const std::string md = report::render_markdown(s, e);
  EXPECT_NE(md.find("> **incomplete: 4 of 4 trials unanswered — first cause: HTTP 401: invalid "
                    "key**. Every figure below is partial"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| student | with skill | — | not computed |"), std::string::npos) << md;
  EXPECT_NE(md.find("**student**: lift not computed: neither arm has a scored trial"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("+0%"), std::string::npos) << md;
}

TEST(Incomplete, FiguresFromPartOfTheTrialsAreLabelledPartial) {
  // Four cases; with the skill case 3 errored, and case 2's baseline never ran (interrupted).
  Evaluation e = make_evaluation({P, P, P, P}, {F, F, F, F});
  fail_trial(e.trials[e.index({0, Arm::with_skill, 0, 3})], "connection failed after 5 attempts");
  e.trials[e.index({0, Arm::baseline, 0, 2})].completed = false;
  e.interrupted = true;
  const EvalSummary s = summarize(e, 1, 200);
  EXPECT_EQ(s.completeness.unanswered(), 2);
  EXPECT_EQ(s.completeness.missing, 1);
  EXPECT_EQ(s.completeness.first_cause, "connection failed after 5 attempts");
  const ModelSummary& m = s.models.at(0);
  ASSERT_TRUE(m.lift && m.lift->computed());
  EXPECT_EQ(m.lift->pairs, 2u);  // cases 0 and 1: scored in both arms
  const std::string term = report::render_terminal(s, e, {});
  EXPECT_NE(term.find("(partial: 2 of 8 trials unanswered)"), std::string::npos) << term;
  EXPECT_NE(term.find("[0%, 56%]    (partial) tokens 110/trial"), std::string::npos) << term;
  EXPECT_EQ(term.find("beneficial"), std::string::npos) << "no verdict from partial results\n"
                                                        << term;
  const Json j = to_json(s, e);
  EXPECT_EQ(j["complete"], false);
  EXPECT_EQ(j["incomplete"]["missing"], 1);
  EXPECT_EQ(j["models"][0]["arms"]["with_skill"]["partial"], true);
  EXPECT_EQ(j["models"][0]["lift"]["partial"], true);
  EXPECT_NE(report::render_markdown(s, e).find("100% (partial) |"), std::string::npos);

  // Only the interruption: its cause is that trials never ran.
  Evaluation cut = make_evaluation({P, P}, {F, F});
  cut.trials[cut.index({0, Arm::with_skill, 0, 1})].completed = false;
  EXPECT_EQ(summarize(cut, 1, 200).completeness.first_cause,
            "1 trial(s) never ran (the run was interrupted)");
  // Complete: no note, and the JSON says so.
  const Evaluation whole = make_evaluation({P, P}, {F, F});
  const EvalSummary ok = summarize(whole, 1, 200);
  EXPECT_TRUE(ok.completeness.complete());
  EXPECT_EQ(incomplete_note(ok.completeness), "");
  EXPECT_EQ(to_json(ok, whole)["complete"], true);
  EXPECT_TRUE(to_json(ok, whole)["incomplete"].is_null());
}

// A shard's evaluation plans only its own trials: the others are not "unanswered".
TEST(Incomplete, AShardPlansOnlyItsOwnTrials) {
  Evaluation e = make_evaluation({P, P, P, P}, {F, F, F, F});
  e.shard = Shard{1, 2};
  const ShardDeal deal(e);
  for (auto& t : e.trials)
    if (!deal.holds(t.key)) t.completed = false;
  const EvalSummary s = summarize(e, 1, 200);
  EXPECT_EQ(s.completeness.planned, 4);
  EXPECT_TRUE(s.completeness.complete());
}

// What `upskill runs` reads of a batch: the run files, brought up to date by the later lines of
// trials.jsonl, and the runs only those lines hold.
TEST(RunLog, LoggedRunsTakeTheLaterTrialLinesAndRunsOnlyTheLinesHold) {
  testing::TempDir tmp;
  const auto batch = tmp / "b";
  tmp.write("b/plan.json", R"({"skill": "demo"})");
  tmp.write("b/run_1/run_result.json",
            Json{{"metadata", {{"run_number", 1}, {"model", "m"}}},
                 {"run_type", "baseline"},
                 {"cases_passed", 0},
                 {"cases_scored", 0},
                 {"cases", Json::array({{{"id", "a"}, {"completed", false}},
                                        {{"id", "b"}, {"completed", false}}})}}
                .dump());
  tmp.write("b/run_9/notes.txt", "not a run");
  auto line = [](const std::string& id, int run_number, const std::string& type,
                 const std::string& status) {
    return Json{{"id", id},
                {"completed", true},
                {"status", status},
                {"checks_run", 1},
                {"checks_passed", status == "passed" ? 1 : 0},
                {"tokens", {{"input_tokens", 10}, {"output_tokens", 2}}},
                {"model", "m"},
                {"run_type", type},
                {"run_index", 0},
                {"run_number", run_number},
                {"case_index", id == "a" ? 0 : 1}}
               .dump() +
           "\n";
  };
  tmp.write("b/trials.jsonl", line("a", 1, "baseline", "passed") + "{\"cut" + "\n" +
                                  line("a", 2, "with_skill", "passed") +
                                  line("b", 2, "with_skill", "failed"));
  std::vector<std::string> problems;
  const auto runs = read_logged_runs(batch, problems);
  EXPECT_TRUE(problems.empty());
  ASSERT_EQ(runs.size(), 2u);
  const Json& first = runs[0].result;
  EXPECT_FALSE(runs[0].rebuilt);
  EXPECT_EQ(first["cases"][0]["status"], "passed");
  EXPECT_FALSE(first["cases"][0].contains("run_number"));
  EXPECT_EQ(first["cases"][1]["completed"], false);
  EXPECT_EQ(first["cases_passed"], 1);
  EXPECT_EQ(first["cases_scored"], 1);
  const Json& second = runs[1].result;
  EXPECT_TRUE(runs[1].rebuilt);
  EXPECT_EQ(runs[1].dir, batch / "run_2");
  EXPECT_EQ(second["skill_name"], "demo");
  EXPECT_EQ(second["metadata"]["batch_id"], "b");
  EXPECT_EQ(second["run_type"], "with_skill");
  EXPECT_EQ(second["cases"].size(), 2u);
  EXPECT_EQ(second["cases_passed"], 1);
  EXPECT_EQ(second["cases_scored"], 2);
  EXPECT_EQ(second["assertions_total"], 2);
  EXPECT_EQ(second["stats"]["input_tokens"], 20);
  EXPECT_EQ(second["pass_rate"], 0.5);
}

TEST(RunLog, WritesEveryRunAndReadsCompletedTrialsBack) {
  testing::TempDir tmp;
  const Evaluation e = logged_evaluation();
  write_logs(tmp.path(), e);
  for (int n = 1; n <= 4; ++n) {
    const auto dir = tmp / ("run_" + std::to_string(n));
    EXPECT_EQ(read_json(dir / "run_result.json")["metadata"], read_json(dir / "run_metadata.json"));
  }
  const Json batch = read_json(tmp / "batch_summary.json");
  EXPECT_EQ(batch["total_runs"], 4);
  EXPECT_EQ(batch["model"], "student,other, model");
  const std::string csv = testing::read_file(tmp / "results.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  EXPECT_NE(csv.find(",\"other, model\",demo task,"), std::string::npos) << csv;

  // Every completed trial without a failed call: six of the student's, three of the other model's.
  auto loaded = load_completed_trials(tmp.path(), e);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->size(), 9u);
  EXPECT_FALSE(loaded->contains(e.index({1, Arm::with_skill, 0, 1})));  // its call failed
  EXPECT_FALSE(loaded->contains(e.index({1, Arm::baseline, 0, 2})));    // never completed
  for (const auto& [index, t] : *loaded) {
    const TrialResult& original = e.trials[index];
    EXPECT_EQ(t.verdict.status, original.verdict.status) << index;
    EXPECT_EQ(t.verdict.passed, original.verdict.passed) << index;
    EXPECT_EQ(t.verdict.checks.size(), original.verdict.checks.size()) << index;
    EXPECT_EQ(t.tool_call_map, original.tool_call_map) << index;
    EXPECT_EQ(t.answer, original.answer) << index;
    EXPECT_EQ(t.usage.cached, original.usage.cached) << index;
  }
}

TEST(RunLog, StatusStringsReadBackOnlyAsWritten) {
  for (Status s : {Status::passed, Status::failed, Status::not_run, Status::error})
    EXPECT_EQ(checks::status_from_string(checks::to_string(s)), s);
  for (const char* other : {"", "Passed", "not_run", "skipped", "passed "})
    EXPECT_FALSE(checks::status_from_string(other).has_value()) << other;
}

// A status the log spells in a way checks::to_string never does is not guessed at: the trial is
// not taken, and --resume runs it again. A missing one is read as before: a check without a status
// did not run, a case without one is derived from its checks.
TEST(RunLog, AnUnknownStatusIsNeverReadAsAVerdict) {
  testing::TempDir tmp;
  const Evaluation e = logged_evaluation();
  write_logs(tmp.path(), e);
  const auto file = tmp / "run_2/run_result.json";  // the student with the skill: P, F, N
  Json run = read_json(file);
  run["cases"][0]["status"] = "skipped";
  run["cases"][1]["checks"][0]["status"] = "PASSED";
  run["cases"][2].erase("status");
  write_json(file, run);
  auto loaded = load_completed_trials(tmp.path(), e);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_FALSE(loaded->contains(e.index({0, Arm::with_skill, 0, 0})));
  EXPECT_FALSE(loaded->contains(e.index({0, Arm::with_skill, 0, 1})));
  ASSERT_TRUE(loaded->contains(e.index({0, Arm::with_skill, 0, 2})));
  EXPECT_EQ(loaded->at(e.index({0, Arm::with_skill, 0, 2})).verdict.status, Status::not_run);

  run["cases"][0]["status"] = 1;  // not a string either
  run["cases"][2]["checks"][1].erase("status");
  write_json(file, run);
  loaded = load_completed_trials(tmp.path(), e);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_FALSE(loaded->contains(e.index({0, Arm::with_skill, 0, 0})));
  const TrialResult& derived = loaded->at(e.index({0, Arm::with_skill, 0, 2}));
  EXPECT_EQ(derived.verdict.checks[1].status, Status::not_run);
  EXPECT_EQ(derived.verdict.status, Status::not_run);
}

TEST(RunLog, AFieldOfTheWrongTypeIsAnErrorNotACrash) {
  testing::TempDir tmp;
  const Evaluation e = logged_evaluation();
  write_logs(tmp.path(), e);
  const auto file = tmp / "run_1/run_result.json";
  Json run = read_json(file);
  run["cases"][0]["turns"] = "three";
  write_json(file, run);
  auto loaded = load_completed_trials(tmp.path(), e);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find("run_1/run_result.json"), std::string::npos)
      << loaded.error().message;
  write_json(file, Json::array({1, 2}));
  EXPECT_FALSE(load_completed_trials(tmp.path(), e));
}

// trials.jsonl alone (a batch killed before its run files were first written) gives back every
// completed trial; later lines win over earlier ones; a line cut by a power loss, one of another
// model or of a case no longer in the file is left out, never an error.
TEST(RunLog, TrialLinesAloneResumeABatch) {
  testing::TempDir tmp;
  const Evaluation e = logged_evaluation();
  const RunLogWriter writer{tmp.path(), "2026_01_02_03_04_05", "demo task"};
  for (const TrialResult& t : e.trials)
    if (t.completed) ASSERT_TRUE(writer.write_trial(e, t));
  EXPECT_FALSE(std::filesystem::exists(tmp / "run_1"));
  auto loaded = load_completed_trials(tmp.path(), e);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->size(), 9u);
  for (const auto& [index, t] : *loaded) {
    EXPECT_EQ(t.verdict.status, e.trials[index].verdict.status) << index;
    EXPECT_EQ(t.answer, e.trials[index].answer) << index;
    EXPECT_EQ(t.usage.reasoning, e.trials[index].usage.reasoning) << index;
  }

  // A later line for the same trial wins (a resumed batch appends).
  TrialResult again = e.trials[e.index({0, Arm::with_skill, 0, 0})];
  again.answer = "the second answer";
  ASSERT_TRUE(writer.write_trial(e, again));
  std::string lines = testing::read_file(tmp / "trials.jsonl");
  Json foreign = Json::parse(lines.substr(0, lines.find('\n')));
  foreign["model"] = "someone else";
  Json gone = Json::parse(lines.substr(0, lines.find('\n')));
  gone["id"] = "a case no longer in the file";
  lines += foreign.dump() + "\n" + gone.dump() + "\n" + "{\"completed\": true, \"id\": \"c";
  std::ofstream(tmp / "trials.jsonl", std::ios::binary) << lines;
  loaded = load_completed_trials(tmp.path(), e);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->size(), 9u);
  EXPECT_EQ(loaded->at(e.index({0, Arm::with_skill, 0, 0})).answer, "the second answer");
}

}  // namespace
}  // namespace upskill::eval
