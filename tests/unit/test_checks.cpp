// Every check kind passes on a right answer and fails on a wrong one; plus scoring rules.
#include <gtest/gtest.h>

#include "support/temp_dir.hpp"
#include "upskill/cases/test_suite.hpp"
#include "upskill/checks/checks.hpp"
#include "upskill/checks/sandbox_runner.hpp"
#include "upskill/checks/stage_report.hpp"

namespace upskill::checks {
namespace {

cases::TestCase one_case(const std::string& checks_json, const std::string& extra = "") {
  auto suite = cases::parse_test_suite(
      "[{\"id\": \"c\", \"input\": \"q\"" + extra + ", \"checks\": " + checks_json + "}]",
      "t.json");
  EXPECT_TRUE(suite) << suite.error().message;
  return suite->cases.at(0);
}

CaseResult score(const std::string& checks_json, const std::string& answer,
                 const std::string& extra = "",
                 std::optional<std::filesystem::path> workspace = std::nullopt) {
  return score_case(one_case(checks_json, extra), Answer{answer, "", workspace},
                    CheckEnvironment{});
}

struct KindCase {
  const char* name;
  const char* check;
  const char* good;
  const char* bad;
};
void PrintTo(const KindCase& k, std::ostream* os) {
  *os << k.name;
}

class EveryKind : public ::testing::TestWithParam<KindCase> {};

TEST_P(EveryKind, PassesOnGoodAndFailsOnBad) {
  const auto& k = GetParam();
  const std::string checks = std::string("[") + k.check + "]";
  auto good = score(checks, k.good);
  EXPECT_TRUE(good.passed) << k.name << ": " << (good.checks.empty() ? "" : good.checks[0].reason);
  auto bad = score(checks, k.bad);
  EXPECT_FALSE(bad.passed) << k.name;
  ASSERT_EQ(bad.checks.size(), 1u);
  EXPECT_EQ(bad.checks[0].status, Status::failed);
  EXPECT_FALSE(bad.checks[0].reason.empty()) << k.name;
  EXPECT_FALSE(bad.checks[0].expected.empty()) << k.name;
  auto empty = score(checks, "");
  if (std::string(k.name) != "not_contains") {
    EXPECT_FALSE(empty.passed) << k.name << " passes an empty answer";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Checks, EveryKind,
    ::testing::Values(
        KindCase{"contains", R"({"type": "contains", "value": "TORCH_LIBRARY"})",
                 "uses TORCH_LIBRARY_EXPAND", "uses torch_library"},
        KindCase{"icontains", R"({"type": "icontains", "value": "Édition"})", "the ÉDITION is 5",
                 "version 5"},
        KindCase{"contains_all", R"({"type": "contains_all", "values": ["a1", "b2"]})", "A1 and b2",
                 "a1 only"},
        KindCase{"contains_any", R"({"type": "contains_any", "values": ["uint4", "float4"]})",
                 "load a FLOAT4", "scalar loads"},
        KindCase{"not_contains", R"({"type": "not_contains", "value": "pybind11"})", "clean",
                 "uses PyBind11"},
        KindCase{"regex", R"({"type": "regex", "pattern": "^edition\\s*=\\s*5$", "flags": "m"})",
                 "[general]\nedition = 5\n", "[general]\nedition = 4\n"},
        KindCase{"equals", R"({"type": "equals", "value": "42"})", "  42\n", "42!"},
        KindCase{"is_json", R"({"type": "is_json"})", "```json\n{\"a\": 1}\n```", "{a: 1}"},
        KindCase{"json_path", R"({"type": "json_path", "path": "$.answer", "equals": 42})",
                 "{\"answer\": 42}", "{\"answer\": 41}"},
        KindCase{"validator",
                 R"({"type": "validator", "name": "fenced_code", "config": {"language": "cuda"}})",
                 "```cuda\n__global__ void k() {}\n```", "```python\nprint()\n```"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Checks, ReasoningIsStrippedBeforeTextChecks) {
  EXPECT_EQ(strip_reasoning("a<think>secret</think>b<think>open"), "ab");
  auto r =
      score(R"([{"type": "not_contains", "value": "secret"}])", "<think>the secret</think>answer");
  EXPECT_TRUE(r.passed);
  auto only_thinking =
      score(R"([{"type": "contains", "value": "edition"}])", "<think>edition = 5</think>no");
  EXPECT_FALSE(only_thinking.passed);
}

TEST(Checks, UpskillExpectedContainsIsCaseInsensitiveAndAllMustAppear) {
  auto suite = cases::parse_test_suite(
      R"([{"input": "q", "expected": {"contains": ["Def", "RETURN"]}}])", "t.json");
  ASSERT_TRUE(suite);
  const auto& c = suite->cases[0];
  EXPECT_TRUE(score_case(c, {"def f(): return 1", "", {}}, {}).passed);
  auto half = score_case(c, {"def f(): pass", "", {}}, {});
  EXPECT_FALSE(half.passed);
  // One assertion for all the strings (upskill main), naming the one missing.
  EXPECT_EQ(half.ran, 1);
  EXPECT_EQ(half.passed_checks, 0);
  EXPECT_EQ(half.checks[0].details["missing"], Json::array({"RETURN"}));
  EXPECT_EQ(validation_result(half)["details"], Json::array({"missing: RETURN"}));
}

TEST(Checks, WeightsAndThreshold) {
  const std::string checks =
      R"([{"type": "contains", "value": "a", "weight": 3}, {"type": "contains", "value": "b"}])";
  auto no_threshold = score(checks, "a");
  EXPECT_FALSE(no_threshold.passed);
  EXPECT_DOUBLE_EQ(no_threshold.score, 0.75);
  EXPECT_TRUE(score(checks, "a", ", \"threshold\": 0.75").passed);
  EXPECT_FALSE(score(checks, "b", ", \"threshold\": 0.75").passed);
  // Weight 0 records without gating.
  auto info = score(
      R"([{"type": "contains", "value": "a"}, {"type": "contains", "value": "z", "weight": 0}])",
      "a");
  EXPECT_TRUE(info.passed);
  EXPECT_EQ(info.checks[1].status, Status::failed);
}

TEST(Checks, NothingRanMeansFail) {
  auto r = score(R"([{"type": "file_exists", "path": "a.txt"}])", "anything");
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.ran, 0);
  EXPECT_EQ(r.checks[0].status, Status::not_run);
  EXPECT_NE(r.checks[0].reason.find("workspace"), std::string::npos);
  auto kernel = score(R"([{"type": "kernel", "stages": ["extract", "layout"]}])", "code");
  EXPECT_EQ(kernel.checks[0].status, Status::not_run);
  EXPECT_FALSE(kernel.passed);
  auto command = score(R"([{"type": "command", "run": "true"}])", "x");
  EXPECT_EQ(command.checks[0].status, Status::not_run);
}

// A check that could not run never counts as passed; a failure still decides; an error stays one.
TEST(Checks, NotRunIsNeitherPassedNorFailed) {
  // The text check passes; the file check cannot run without a workspace.
  const std::string mixed =
      R"([{"type": "contains", "value": "a"}, {"type": "file_exists", "path": "x.txt"}])";
  auto not_run = score(mixed, "a");
  EXPECT_FALSE(not_run.passed);
  EXPECT_EQ(not_run.status, Status::not_run);
  EXPECT_EQ(not_run.ran, 1);
  EXPECT_EQ(not_run.passed_checks, 1);
  EXPECT_EQ(not_run.not_run, 1);
  EXPECT_EQ(to_json(not_run)["status"], "not run");
  EXPECT_EQ(to_json(not_run)["checks_not_run"], 1);
  // Nothing ran at all, but nothing failed: not run.
  auto nothing = score(R"([{"type": "kernel", "stages": ["extract", "layout"]}])", "code");
  EXPECT_EQ(nothing.status, Status::not_run);
  // A failed check dominates a check that did not run.
  auto failed = score(mixed, "b");
  EXPECT_FALSE(failed.passed);
  EXPECT_EQ(failed.status, Status::failed);
  // An error stays an error.
  auto error = score(
      R"([{"type": "validator", "name": "nope"}, {"type": "file_exists", "path": "x"}])", "a");
  EXPECT_EQ(error.status, Status::error);
  // An informational (weight 0) check that did not run does not hold the verdict back.
  auto info = score(
      R"([{"type": "contains", "value": "a"}, {"type": "file_exists", "path": "x", "weight": 0}])",
      "a");
  EXPECT_TRUE(info.passed);
  EXPECT_EQ(info.status, Status::passed);
  EXPECT_EQ(info.not_run, 1);
  EXPECT_EQ(score(R"([{"type": "contains", "value": "a"}])", "a").status, Status::passed);
}

TEST(Checks, ThresholdCountsChecksNotRunAsFailedToPassAndAsPassedToFail) {
  // Weights 2 (ran, passed) + 1 (ran, failed) + 1 (not run).
  const std::string checks =
      R"([{"type": "contains", "value": "a", "weight": 2}, {"type": "contains", "value": "b"},
          {"type": "file_exists", "path": "x"}])";
  // 2/4 certain, 3/4 at best: passes 0.5, not run at 0.75, fails at 0.8.
  auto pass = score(checks, "a", ", \"threshold\": 0.5");
  EXPECT_TRUE(pass.passed);
  EXPECT_EQ(pass.status, Status::passed);
  EXPECT_DOUBLE_EQ(pass.score, 2.0 / 3);  // the share of the checks that ran
  auto open = score(checks, "a", ", \"threshold\": 0.75");
  EXPECT_FALSE(open.passed);
  EXPECT_EQ(open.status, Status::not_run);
  auto fail = score(checks, "a", ", \"threshold\": 0.8");
  EXPECT_EQ(fail.status, Status::failed);
}

TEST(Checks, WorkspaceFiles) {
  testing::TempDir ws;
  ws.write("out/result.txt", "Speedup: 2.1x");
  std::filesystem::create_symlink("/etc/hostname", ws / "escape");
  const auto w = std::optional<std::filesystem::path>(ws.path());
  EXPECT_TRUE(score(R"([{"type": "file_exists", "path": "out/result.txt"}])", "", "", w).passed);
  EXPECT_FALSE(score(R"([{"type": "file_exists", "path": "out/missing.txt"}])", "", "", w).passed);
  EXPECT_TRUE(
      score(
          R"([{"type": "file_contains", "path": "out/result.txt", "value": "speedup", "ignore_case": true}])",
          "", "", w)
          .passed);
  auto wrong = score(R"([{"type": "file_contains", "path": "out/result.txt", "value": "speedup"}])",
                     "", "", w);
  EXPECT_FALSE(wrong.passed);
  auto escape = score(R"([{"type": "file_exists", "path": "escape"}])", "", "", w);
  EXPECT_FALSE(escape.passed);
  EXPECT_NE(escape.checks[0].reason.find("outside the workspace"), std::string::npos);
}

TEST(Checks, CommandsRunInTheSandboxedWorkspace) {
  testing::TempDir ws;
  ws.write("main.py", "print(6 * 7)\n");
  SandboxCommandRunner runner;
  CheckEnvironment env;
  env.commands = &runner;
  auto c = one_case(R"([{"type": "command", "run": "test \"$(python3 main.py)\" = 42"},
                        {"type": "command", "run": "exit 3", "expect_exit": 3}])");
  auto good = score_case(c, Answer{"", "", ws.path()}, env);
  EXPECT_TRUE(good.passed) << good.checks[0].reason << good.checks[0].details.dump();
  EXPECT_NE(
      good.checks[0].details["protections"].get<std::string>().find("scrubbed environment: yes"),
      std::string::npos);
  ws.write("main.py", "print(41)\n");
  auto bad = score_case(c, Answer{"", "", ws.path()}, env);
  EXPECT_FALSE(bad.passed);
  EXPECT_EQ(bad.checks[0].reason, "exited 1 (expected 0)");
  auto slow = score_case(one_case(R"([{"type": "command", "run": "sleep 5", "timeout_s": 0.3}])"),
                         Answer{"", "", ws.path()}, env);
  EXPECT_FALSE(slow.passed);
  EXPECT_NE(slow.checks[0].reason.find("did not finish within 0.3 s"), std::string::npos);
}

TEST(Checks, UnknownValidatorIsAnError) {
  auto r = score(R"([{"type": "validator", "name": "nope"}])", "x");
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.has_errors);
  EXPECT_EQ(r.checks[0].status, Status::error);
  EXPECT_NE(r.checks[0].reason.find("fenced_code"), std::string::npos);
}

TEST(Validators, FencedCodeAndWordCount) {
  const auto& registry = ValidatorRegistry::builtin();
  const auto* fenced = registry.find("fenced_code");
  ASSERT_NE(fenced, nullptr);
  Answer two{"```cpp\na\n```\ntext\n~~~cuda\nb\n~~~\n", "", {}};
  EXPECT_EQ((*fenced)(two, Json{{"min_blocks", 2}}).status, Status::passed);
  EXPECT_EQ((*fenced)(two, Json{{"min_blocks", "3"}}).status, Status::failed);
  EXPECT_EQ((*fenced)(two, Json{{"language", "CUDA"}}).status, Status::passed);
  EXPECT_EQ((*fenced)(Answer{"no code", "", {}}, Json::object()).status, Status::failed);
  const auto* words = registry.find("word_count");
  ASSERT_NE(words, nullptr);
  EXPECT_EQ((*words)(Answer{"one two three", "", {}}, Json{{"min", 2}, {"max", 3}}).status,
            Status::passed);
  EXPECT_EQ((*words)(Answer{"one", "", {}}, Json{{"min", 2}}).status, Status::failed);
  EXPECT_EQ((*words)(Answer{"a b c d", "", {}}, Json{{"max", 3}}).status, Status::failed);
  EXPECT_EQ(registry.names(), (std::vector<std::string>{"fenced_code", "word_count"}));
}

TEST(Checks, ResultsSerialise) {
  auto r = score(R"([{"type": "contains", "value": "x", "label": "mentions x"}])", "y");
  const Json j = to_json(r);
  EXPECT_EQ(j["id"], "c");
  EXPECT_EQ(j["passed"], false);
  EXPECT_EQ(j["checks"][0]["status"], "failed");
  EXPECT_EQ(j["checks"][0]["label"], "mentions x");
  EXPECT_EQ(j["checks"][0]["reason"], "\"x\" does not appear (case-sensitive)");
}

TEST(StageReports, RoundTripKeepingTheKeyOrder) {
  StageReport bind;
  bind.stage = cases::KernelStage::bind;
  bind.status = Status::passed;
  bind.seconds = 1.5;
  bind.details = {{"steps", Json::array()}, {"style", "kernel-builder"}, {"cached", true}};
  const Json j = to_json(bind);
  EXPECT_EQ(j.dump(), R"({"stage":"bind","steps":[],"style":"kernel-builder","cached":true,)"
                      R"("status":"passed","seconds":1.5})");
  auto back = stage_report_from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->stage, cases::KernelStage::bind);
  EXPECT_EQ(back->status, Status::passed);
  EXPECT_EQ(back->seconds, 1.5);
  EXPECT_TRUE(back->reason.empty());
  EXPECT_EQ(back->details, bind.details);
  EXPECT_EQ(to_json(*back).dump(), j.dump());

  // A stage skipped after one that was not run: a reason and no duration.
  StageReport bench;
  bench.stage = cases::KernelStage::bench;
  bench.status = Status::not_run;
  bench.reason = "after correct";
  const Json skipped = to_json(bench);
  EXPECT_EQ(skipped.dump(), R"({"stage":"bench","status":"not run","reason":"after correct"})");
  auto skipped_back = stage_report_from_json(skipped);
  ASSERT_TRUE(skipped_back);
  EXPECT_EQ(skipped_back->status, Status::not_run);
  EXPECT_EQ(skipped_back->reason, "after correct");
  EXPECT_FALSE(skipped_back->seconds);
  EXPECT_TRUE(skipped_back->details.empty());

  for (auto status : {Status::passed, Status::failed, Status::error, Status::not_run})
    EXPECT_EQ(status_from_string(to_string(status)), status);
}

TEST(StageReports, UnknownStatusOrStageIsRejected) {
  EXPECT_FALSE(status_from_string("skipped"));
  EXPECT_FALSE(status_from_string("not_run"));
  auto unknown = stage_report_from_json(Json{{"stage", "compile"}, {"status", "skipped"}});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown status"), std::string::npos);
  EXPECT_FALSE(stage_report_from_json(Json{{"stage", "compile"}}));
  EXPECT_FALSE(stage_report_from_json(Json{{"stage", "link"}, {"status", "passed"}}));
  EXPECT_FALSE(stage_report_from_json(Json::array()));

  // Readers over a check: a malformed stage list reads as no stages and no GPU needed.
  CheckResult c;
  c.kind = cases::CheckKind::kernel;
  c.status = Status::not_run;
  const Json skipped = {{"stage", "correct"}, {"status", "skipped"}};
  c.details = {{"stages", Json::array({skipped})}, {"needs_gpu", true}};
  EXPECT_TRUE(stage_reports(c).empty());
  EXPECT_FALSE(needs_gpu(c));
}

TEST(StageReports, KernelDetailsRoundTripAndNeedGpuOnlyWhenNotRun) {
  KernelCheckDetails d;
  StageReport extract;
  extract.stage = cases::KernelStage::extract;
  extract.status = Status::passed;
  extract.seconds = 0.25;
  extract.details = {{"files", Json::array({"build.toml"})}, {"diagnostics", Json::array()}};
  StageReport correct;
  correct.stage = cases::KernelStage::correct;
  correct.status = Status::not_run;
  correct.reason = "no CUDA device";
  correct.seconds = 0.5;
  d.stages = {extract, correct};
  d.work_dir = "/tmp/upskill-kernel-abc123";
  d.needs_gpu = true;
  const Json j = to_json(d);
  EXPECT_EQ(j.dump(), R"({"stages":[{"stage":"extract","files":["build.toml"],"diagnostics":[],)"
                      R"("status":"passed","seconds":0.25},{"stage":"correct","status":"not run",)"
                      R"("reason":"no CUDA device","seconds":0.5}],)"
                      R"("work_dir":"/tmp/upskill-kernel-abc123","needs_gpu":true})");
  auto back = kernel_check_details_from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(to_json(*back).dump(), j.dump());

  CheckResult c;
  c.kind = cases::CheckKind::kernel;
  c.status = Status::not_run;
  c.details = j;
  ASSERT_EQ(stage_reports(c).size(), 2u);
  EXPECT_EQ(stage_reports(c)[1].status, Status::not_run);
  EXPECT_TRUE(needs_gpu(c));
  c.status = Status::failed;
  EXPECT_FALSE(needs_gpu(c));
  CheckResult text;  // no details at all
  EXPECT_TRUE(stage_reports(text).empty());
  EXPECT_FALSE(needs_gpu(text));
}

}  // namespace
}  // namespace upskill::checks
