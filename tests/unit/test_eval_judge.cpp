// Judged checks and tests on demand in an evaluation session, against the scripted server: the
// judge's verdicts, tokens and cost kept apart from the student's, replies cached by content, a
// failed judge an error and never a pass, agreement between judges; a skill without tests gets
// them from the test writer, saved to its skill_meta.json.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "model_access.hpp"
#include "scripted_server.hpp"
#include "support/temp_dir.hpp"
#include "upskill/checks/judge_runner.hpp"
#include "upskill/core/files.hpp"
#include "upskill/eval/session.hpp"
#include "upskill/gen/pipeline.hpp"
#include "upskill/report/eval_report.hpp"

namespace upskill::eval {
namespace {

namespace fs = std::filesystem;
using testing::ScriptedServer;

// Students say MAGIC only with the skill. Judge "judge" scores MAGIC 9 of 10 and anything else 2;
// "lenient" gives 8 to everything; "broken" answers prose.
Json script() {
  auto rule = [](Json match, std::string content, int prompt = 50) {
    return Json{{"match", std::move(match)},
                {"reply",
                 {{"content", std::move(content)},
                  {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", 10}}}}}};
  };
  return Json{
      {"rules",
       Json::array(
           {rule({{"model", "judge"}, {"message", "<answer>\\nMAGIC"}},
                 R"({"score": 9, "reasoning": "says the word"})", 300),
            rule({{"model", "judge"}}, "```json\n{\"score\": \"2\", \"summary\": \"no word\"}\n```",
                 300),
            rule({{"model", "lenient"}}, R"({"score": 8, "reasoning": "fine"})", 300),
            rule({{"model", "broken"}}, "I think it is quite good."),
            rule({{"model", "writer"}},
                 Json{{"cases",
                       Json::array({{{"id", "w1"},
                                     {"input", "Say the word"},
                                     {"expected", {{"contains", Json::array({"MAGIC"})}}}},
                                    {{"id", "w2"},
                                     {"input", "Say it again"},
                                     {"expected", {{"contains", Json::array({"MAGIC"})}}}}})}}
                     .dump()),
            rule({{"model", "student"}, {"any_message", "Say MAGIC"}}, "MAGIC"),
            rule({{"model", "student"}}, "no")})}};
}

struct Fixture {
  testing::TempDir tmp;
  config::Config config;
  llm::CurlTransport transport;
  llm::ChatClient client{transport};
  int connects = 0;
  explicit Fixture(const ScriptedServer& server, bool with_tests = true) {
    tmp.write("skill/SKILL.md",
              "---\nname: magic\ndescription: Says the word. Use when asked for it.\n---\n"
              "Say MAGIC.\n");
    if (with_tests)
      tmp.write("skill/skill_meta.json",
                R"({"metadata": {}, "tests": [
                  {"id": "a", "input": "case a", "expected": {"contains": ["MAGIC"]}},
                  {"id": "b", "input": "case b", "expected": {"contains": ["MAGIC"]}}]})");
    std::string models;
    for (const char* m : {"student", "judge", "lenient", "broken", "writer"})
      models +=
          fmt::format("  {}: {{provider: generic, base_url: \"{}\"}}\n", m, server.base_url());
    config =
        *config::parse_config("eval_model: student\nmodels:\n" + models, "upskill.config.yaml");
    config.runs_dir = tmp / "runs";
    ::setenv("UPSKILL_CACHE_DIR", (tmp / "cache").c_str(), 1);
  }
  SessionRequest request() const {
    SessionRequest r;
    r.skill_dir = tmp / "skill";
    return r;
  }
  llm::ModelAccess access() { return testing::counted_access(config, client, connects); }
};

std::size_t judge_requests(const ScriptedServer& server) {
  std::size_t n = 0;
  for (const auto& r : server.requests()) n += r.body.find("impartial grader") != std::string::npos;
  return n;
}

TEST(EvalJudge, JudgesEveryAnswerApartFromTheStudentAndCachesReplies) {
  ScriptedServer server(script());
  server.start();
  Fixture f(server);
  SessionRequest request = f.request();
  request.judge_criteria = {"Says the magic word"};
  request.judge_models = {"judge"};
  SessionObserver quiet;
  auto out = run_session(request, f.access(), quiet);
  ASSERT_TRUE(out) << out.error().message;
  const ModelSummary& m = out->summary.models.at(0);
  EXPECT_EQ(m.with_skill.pass_rate, 1.0);
  EXPECT_EQ(m.baseline->pass_rate, 0.0);  // the judge gave 2 of 10 as well as the text failing
  EXPECT_EQ(m.with_skill.judge.calls, 2);
  EXPECT_EQ(m.with_skill.judge.usage.input, 600);  // apart from the student's
  EXPECT_EQ(m.with_skill.usage.input, 100);
  EXPECT_NEAR(m.with_skill.judge.mean_score, 0.9, 1e-9);
  EXPECT_NEAR(m.baseline->judge.mean_score, 0.2, 1e-9);
  // The judge's reasoning is in the results; its request is at temperature 0.
  const auto& trial = out->evaluation.trials.back();
  const auto& judged = trial.verdict.checks.back();
  EXPECT_EQ(judged.kind, cases::CheckKind::judge);
  EXPECT_NE(judged.found.find("says the word"), std::string::npos);
  EXPECT_EQ(judged.details["judges"][0]["reasoning"], "says the word");
  for (const auto& r : server.requests())
    if (r.body.find("impartial grader") != std::string::npos) {
      EXPECT_EQ(r.json["temperature"], 0);
      EXPECT_NE(r.body.find("Says the magic word"), std::string::npos);
    }
  EXPECT_EQ(judge_requests(server), 4u);
  // The run logs carry validation_result, and run_result.json sums the assertions.
  const auto text = files::read_text(out->batch_dir / "run_2" / "run_result.json");
  ASSERT_TRUE(text);
  const Json run = Json::parse(*text);
  EXPECT_EQ(run["assertions_total"], 4);  // 2 cases × (expected.contains + judge)
  EXPECT_EQ(run["assertions_passed"], 4);
  EXPECT_EQ(run["cases"][0]["validation_result"]["assertions_total"], 2);

  // Scored again: every judge reply comes from the cache, free.
  auto again = run_session(request, f.access(), quiet);
  ASSERT_TRUE(again);
  EXPECT_EQ(judge_requests(server), 4u);
  EXPECT_EQ(again->summary.models[0].with_skill.judge.cached, 2);
  EXPECT_EQ(again->summary.models[0].with_skill.judge.usage.input, 0);
  EXPECT_EQ(again->summary.models[0].with_skill.pass_rate, 1.0);
}

TEST(EvalJudge, AJudgeThatDoesNotJudgeIsAnErrorNeverAPass) {
  ScriptedServer server(script());
  server.start();
  Fixture f(server);
  SessionRequest request = f.request();
  request.judge_criteria = {"Says the magic word"};
  request.judge_models = {"broken"};
  request.baseline = false;
  SessionObserver quiet;
  auto out = run_session(request, f.access(), quiet);
  ASSERT_TRUE(out) << out.error().message;
  for (const auto& t : out->evaluation.trials) {
    EXPECT_FALSE(t.passed());
    EXPECT_EQ(t.verdict.status, checks::Status::error);
    EXPECT_NE(t.verdict.checks.back().reason.find("not a JSON object"), std::string::npos);
  }
  // A judge model that does not resolve stops the session before any call.
  request.judge_models = {"nowhere.model"};
  const int before = f.connects;
  EXPECT_FALSE(run_session(request, f.access(), quiet));
  EXPECT_EQ(f.connects, before);
}

TEST(EvalJudge, SeveralJudgesTakeTheMeanAndReportAgreement) {
  ScriptedServer server(script());
  server.start();
  Fixture f(server);
  SessionRequest request = f.request();
  request.judge_criteria = {"Says the magic word"};
  request.judge_models = {"judge", "lenient"};
  SessionObserver quiet;
  auto out = run_session(request, f.access(), quiet);
  ASSERT_TRUE(out) << out.error().message;
  const ModelSummary& m = out->summary.models.at(0);
  // With the skill both judges pass it (9 and 8); without, 2 and 8: mean 0.5, they disagree.
  EXPECT_EQ(m.with_skill.judge.unanimous_checks, 2);
  EXPECT_EQ(m.baseline->judge.unanimous_checks, 0);
  EXPECT_EQ(m.baseline->judge.multi_judge_checks, 2);
  const auto& baseline_judge = out->evaluation.trials.front().verdict.checks.back();
  EXPECT_NEAR(baseline_judge.details["mean"].get<double>(), 0.5, 1e-9);
  EXPECT_NEAR(baseline_judge.details["agreement"].get<double>(), 0.5, 1e-9);
  const Json summary = to_json(out->summary, out->evaluation);
  EXPECT_EQ(summary["models"][0]["arms"]["baseline"]["judge"]["judge_agreement"], 0.0);
  EXPECT_EQ(summary["models"][0]["arms"]["with_skill"]["judge"]["judge_agreement"], 1.0);
  // The reports say it beside the pass rates, with the judges' own tokens.
  const std::string terminal =
      report::render_terminal(out->summary, out->evaluation, {false, false});
  EXPECT_NE(
      terminal.find("judge (baseline): mean 50% of the scale over 2 checks · judges agreed on "
                    "0/2 · 4 calls (0 cached), 1240 tokens"),
      std::string::npos)
      << terminal;
  EXPECT_NE(report::render_markdown(out->summary, out->evaluation).find("judges agreed on 2/2"),
            std::string::npos);
}

TEST(EvalJudge, JudgeChecksInTheFileUseTheirOwnModelAndScale) {
  ScriptedServer server(script());
  server.start();
  Fixture f(server);
  f.tmp.write("tests.json", R"([{"id": "j", "input": "case j",
    "checks": [{"type": "judge", "criteria": "Says the magic word", "model": "lenient",
                "scale": 10, "threshold": 0.9}]}])");
  SessionRequest request = f.request();
  request.tests = f.tmp / "tests.json";
  SessionObserver quiet;
  auto out = run_session(request, f.access(), quiet);
  ASSERT_TRUE(out) << out.error().message;
  for (const auto& t : out->evaluation.trials) {
    EXPECT_EQ(t.verdict.checks[0].status, checks::Status::failed);  // 8 < 9
    EXPECT_NE(t.verdict.checks[0].reason.find("judged 8 of 10 (needs 9)"), std::string::npos)
        << t.verdict.checks[0].reason;
  }
}

TEST(EvalTestsOnDemand, ASkillWithoutTestsGetsThemSavedThenRunsBothArms) {
  ScriptedServer server(script());
  server.start();
  Fixture f(server, false);
  struct Notices : SessionObserver {
    std::vector<std::string> lines;
    void notice(const std::string& m) override { lines.push_back(m); }
  } observer;
  gen::GenerateObserver gen_quiet;
  SessionRequest request = f.request();
  const llm::ModelAccess access = f.access();
  request.generate_tests =
      gen::tests_on_demand(access, std::string("writer"), request.skill_dir, 2, gen_quiet);
  auto out = run_session(request, access, observer);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(f.connects, 1);  // one connection for the test writer and the students
  ASSERT_EQ(out->evaluation.cases.size(), 2u);
  EXPECT_EQ(out->summary.models[0].lift->lift, 1.0);
  ASSERT_EQ(observer.lines.size(), 1u);
  EXPECT_NE(observer.lines[0].find("2 were generated"), std::string::npos);
  const auto saved = files::read_text(f.tmp / "skill/skill_meta.json");
  ASSERT_TRUE(saved);
  const Json meta = Json::parse(*saved);
  EXPECT_EQ(meta["tests"].size(), 2u);
  EXPECT_EQ(meta["metadata"]["test_gen_model"], "writer");
  // Without a test writer that resolves, the message says what to do, and nothing is called.
  Fixture bare(server, false);
  SessionRequest r2 = bare.request();
  const llm::ModelAccess a2 = bare.access();
  r2.generate_tests =
      gen::tests_on_demand(a2, std::string("nowhere.model"), r2.skill_dir, 2, gen_quiet);
  auto failed = run_session(r2, a2, observer);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("no test cases, and none can be generated"),
            std::string::npos);
  EXPECT_EQ(bare.connects, 0);
}

TEST(JudgeReply, ScoresAreReadStrictly) {
  using checks::parse_judge_reply;
  EXPECT_EQ(parse_judge_reply(R"({"score": 7, "reasoning": "ok"})", 10)->score, 7);
  EXPECT_EQ(parse_judge_reply("Here:\n```json\n{\"score\": 0.5}\n```", 1)->score, 0.5);
  EXPECT_EQ(parse_judge_reply(R"({"score": "3"})", 5)->score, 3);
  for (const char* bad : {"", "great", R"({"score": 11})", R"({"score": -1})",
                          R"({"score": "high"})", R"({"reasoning": "no score"})",
                          R"({"score": null})", R"({"score": "3 points"})", "[1, 2]"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(parse_judge_reply(bad, 10));
  }
}

}  // namespace
}  // namespace upskill::eval
