// upskill's `verifiers` (docs/test-cases.md): files in each upstream shape load unchanged and
// round-trip; every verifier type scores as upskill defines it; the combine order, the assertion
// counts and validation_result; and no mutation of a realistic file makes loading throw.
#include <gtest/gtest.h>

#include <random>

#include "support/temp_dir.hpp"
#include "upskill/cases/test_suite.hpp"
#include "upskill/checks/checks.hpp"
#include "upskill/checks/sandbox_runner.hpp"
#include "upskill/core/files.hpp"
#include "upskill/skill/skill_meta.hpp"

namespace upskill::checks {
namespace {

namespace fs = std::filesystem;
using cases::CheckKind;

fs::path fixture(const std::string& name) {
  return fs::path(UPSKILL_SOURCE_DIR) / "tests/data/upstream-evals" / name;
}

cases::TestSuite load(const std::string& name) {
  auto suite = cases::load_test_suite(fixture(name));
  EXPECT_TRUE(suite) << suite.error().message;
  return suite ? *suite : cases::TestSuite{};
}

TEST(Verifiers, EveryUpstreamShapeLoadsAndRoundTrips) {
  for (const char* name : {"smoke.json", "verifiers.json", "legacy-0.2.1.json"}) {
    SCOPED_TRACE(name);
    const auto suite = load(name);
    ASSERT_FALSE(suite.cases.empty());
    auto again = cases::parse_test_suite(cases::cases_to_json(suite.cases).dump(), "again.json");
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(again->cases, suite.cases);
  }
  // A string `values` is written back as a string, a list as a list.
  const auto smoke = load("smoke.json");
  EXPECT_EQ(cases::case_to_json(smoke.cases[1])["verifiers"][0]["values"], "hf jobs logs");
  EXPECT_TRUE(cases::case_to_json(smoke.cases[0])["verifiers"][0]["values"].is_array());
  // skill_meta.json as upstream main writes it: every key, null where unset.
  auto text = files::read_text(fixture("skill_meta.json"));
  ASSERT_TRUE(text);
  auto meta = skill::parse_skill_meta(*text, "skill_meta.json");
  ASSERT_TRUE(meta) << meta.error().message;
  ASSERT_EQ(meta->tests.size(), 2u);
  EXPECT_EQ(meta->tests[0].effective_checks().size(), 1u);
  EXPECT_EQ(meta->tests[1].effective_checks().at(0).kind, CheckKind::contains_all);
}

TEST(Verifiers, CombineInUpskillsOrderOneAssertionEach) {
  const auto suite = load("verifiers.json");
  const auto checks = suite.cases[0].effective_checks();
  ASSERT_EQ(checks.size(), 5u);  // expected.contains (one), then the four verifiers in file order
  EXPECT_EQ(checks[0].label, "expected.contains");
  EXPECT_EQ(checks[1].kind, CheckKind::file_exists);
  EXPECT_EQ(checks[2].kind, CheckKind::file_contains);
  EXPECT_EQ(checks[2].label, "has a total");
  EXPECT_EQ(std::get<cases::CommandParams>(checks[3].params).timeout_s, 10);
  EXPECT_EQ(std::get<cases::TextMatchParams>(checks[4].params).values,
            std::vector<std::string>{"csv"});  // `text` when there are no values
  // Verifiers before the legacy validator, and both count.
  const auto second = suite.cases[1].effective_checks();
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(std::get<cases::ValidatorParams>(second[0].params).name, "fenced_code");
  EXPECT_EQ(std::get<cases::ValidatorParams>(second[1].params).name, "word_count");
  EXPECT_TRUE(suite.cases[0].verifiers_need_workspace());
  EXPECT_FALSE(suite.cases[1].verifiers_need_workspace());
}

TEST(Verifiers, ContainsIgnoresCaseNeedsEveryValueAndNamesWhatIsMissing) {
  const auto suite = load("smoke.json");
  const auto& c = suite.cases[0];
  auto good = score_case(c, {"Run `HF JOBS PS --format JSON`.", "", {}}, {});
  EXPECT_TRUE(good.passed);
  auto half = score_case(c, {"Run hf jobs ps.", "", {}}, {});
  EXPECT_FALSE(half.passed);
  const Json v = validation_result(half);
  EXPECT_EQ(v["assertions_passed"], 1);
  EXPECT_EQ(v["assertions_total"], 2);
  EXPECT_EQ(v["details"], Json::array({"missing: --format json"}));
  EXPECT_NE(v["error_message"].get<std::string>().find("--format json"), std::string::npos);
  EXPECT_TRUE(validation_result(good)["error_message"].is_null());
}

TEST(Verifiers, WorkspaceVerifiersCheckTheFilesTheStudentLeft) {
  const auto suite = load("verifiers.json");
  const auto& c = suite.cases[0];
  testing::TempDir ws;
  SandboxCommandRunner runner;
  CheckEnvironment env;
  env.commands = &runner;
  const std::string answer = "I wrote the report from data.csv.";
  // Nothing written yet: file_exists, file_contains and the command fail; the text checks pass.
  auto empty = score_case(c, {answer, "", ws.path()}, env);
  EXPECT_FALSE(empty.passed);
  const Json v = validation_result(empty);
  EXPECT_EQ(v["assertions_total"], 5);
  EXPECT_EQ(v["assertions_passed"], 2);
  EXPECT_NE(v["error_message"].get<std::string>().find("expected file does not exist: report.md"),
            std::string::npos);
  // file_contains ignores case, like upskill's.
  ws.write("report.md", "# Report\nTOTAL: 3\n");
  auto written = score_case(c, {answer, "", ws.path()}, env);
  if (written.checks[3].status == Status::not_run) GTEST_SKIP() << written.checks[3].reason;
  EXPECT_TRUE(written.passed) << validation_result(written).dump();
  // A path that leaves the workspace is never followed.
  fs::create_symlink("/etc/hostname", ws / "escape.md");
  auto escaped = score_case(
      *cases::parse_test_suite(
           R"([{"input": "x", "verifiers": [{"type": "file_contains", "path": "escape.md", "text": "a"}]}])",
           "t.json")
           ->cases.begin(),
      {answer, "", ws.path()}, env);
  EXPECT_EQ(escaped.checks[0].status, Status::failed);
}

TEST(Verifiers, ACommandThatHangsIsCutAtItsTimeoutNotTheRun) {
  testing::TempDir ws;
  SandboxCommandRunner runner;
  CheckEnvironment env;
  env.commands = &runner;
  auto suite = cases::parse_test_suite(
      R"([{"input": "x", "verifiers": [{"type": "command", "cmd": "sleep 30", "config": {"timeout_seconds": 1}}]}])",
      "t.json");
  ASSERT_TRUE(suite);
  const auto start = std::chrono::steady_clock::now();
  auto r = score_case(suite->cases[0], {"", "", ws.path()}, env);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  if (r.checks[0].status == Status::not_run) GTEST_SKIP() << r.checks[0].reason;
  EXPECT_FALSE(r.passed);
}

TEST(Verifiers, AnUnknownTypeLoadsButIsAnErrorNeverAPass) {
  const auto suite = load("verifiers.json");
  auto r = score_case(suite.cases[2], {"a clear plan", "", {}}, {});
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_EQ(r.checks[0].status, Status::error);
  EXPECT_EQ(r.checks[0].reason, "unsupported verifier type: llm_rubric");
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.status, Status::error);
  // Missing keys are the same: loaded, then an error.
  for (const char* v :
       {R"({"type": "file_exists"})", R"({"type": "contains"})", R"({"type": "command"})",
        R"({"type": "validator"})", R"({"type": "file_contains", "path": "../x", "text": "a"})",
        R"({"type": "command", "cmd": "true", "config": {"timeout_seconds": "soon"}})"}) {
    SCOPED_TRACE(v);
    auto s = cases::parse_test_suite(std::string(R"([{"input": "x", "verifiers": [)") + v + "]}]",
                                     "t.json");
    ASSERT_TRUE(s) << s.error().message;
    auto scored = score_case(s->cases[0], {"x", "", {}}, {});
    EXPECT_EQ(scored.checks[0].status, Status::error);
    EXPECT_FALSE(scored.passed);
  }
}

TEST(Verifiers, ValidatorsReadTheOutputFileInAWorkspaceAndTheAnswerInChat) {
  const auto suite = load("legacy-0.2.1.json");
  const auto& c = suite.cases[1];
  // Chat: no workspace, the answer is the output.
  EXPECT_TRUE(score_case(c, {"the results are in", "", {}}, {}).passed);
  testing::TempDir ws;
  auto missing = score_case(c, {"the results are in", "", ws.path()}, {});
  EXPECT_FALSE(missing.passed);
  EXPECT_NE(missing.checks[1].reason.find("results.json"), std::string::npos);
  ws.write("results.json", "{\"ms\": 1.5}");
  EXPECT_TRUE(score_case(c, {"the results are in", "", ws.path()}, {}).passed);
}

TEST(Verifiers, BadShapesAreRejectedWithTheirLine) {
  struct Bad {
    const char* text;
    const char* message;
  };
  for (
      const Bad& b : {
          Bad{R"([{"input": "x",
  "verifiers": {"type": "contains"}}])",
              "t.json:2:16: case 1: 'verifiers' must be a list, found object"},
          Bad{R"([{"input": "x", "verifiers": [
  {"type": "contains", "value": "a"}]}])",
              "t.json:2:24: case 1: verifier 1: unknown key 'value'"},
          Bad{R"([{"input": "x", "verifiers": [{"values": ["a"]}]}])",
              "missing required key 'type'"},
          Bad{R"([{"input": "x", "verifiers": [{"type": "contains", "values": [1]}]}])",
              "'values[0]' must be a string, found integer"},
          Bad{R"([{"input": "x", "verifiers": [{"type": "command", "cmd": "true", "config": {"env": {}}}]}])",
              "must be a string, number or boolean"},
      }) {
    SCOPED_TRACE(b.text);
    auto s = cases::parse_test_suite(b.text, "t.json");
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find(b.message), std::string::npos) << s.error().message;
  }
}

// Type mutations of a realistic file: every value of every verifier replaced by each JSON type in
// turn. Loading either succeeds or names the file; scoring what loaded never throws.
TEST(Verifiers, MutatedFilesNeverThrow) {
  auto text = files::read_text(fixture("verifiers.json"));
  ASSERT_TRUE(text);
  const Json original = Json::parse(*text);
  const std::vector<Json> replacements{
      nullptr, true, 3, -1.5, "", "x", Json::array(), Json::array({1, "a"}), Json::object()};
  int mutants = 0, loaded = 0;
  for (std::size_t c = 0; c < original["cases"].size(); ++c) {
    const Json& verifiers = original["cases"][c].value("verifiers", Json::array());
    for (std::size_t v = 0; v < verifiers.size(); ++v)
      for (const auto& [key, _] : verifiers[v].items())
        for (const Json& r : replacements) {
          Json mutant = original;
          mutant["cases"][c]["verifiers"][v][key] = r;
          ++mutants;
          auto s = cases::parse_test_suite(mutant.dump(1), "m.json");
          if (!s) {
            EXPECT_EQ(s.error().message.rfind("m.json:", 0), 0u) << s.error().message;
            continue;
          }
          ++loaded;
          for (const auto& tc : s->cases) {
            auto scored = score_case(tc, {"report csv", "", {}}, {});
            (void)validation_result(scored);
          }
        }
  }
  EXPECT_GT(mutants, 50);
  EXPECT_GT(loaded, 0);
  EXPECT_LT(loaded, mutants);
}

}  // namespace
}  // namespace upskill::checks
