// cases/: test cases and their files parsed and validated, every check kind's parameters, errors
// that name file, line and column, and round trips.
#include <gtest/gtest.h>

#include "upskill/cases/json_path.hpp"
#include "upskill/cases/test_suite.hpp"

namespace upskill::cases {
namespace {

// What upskill itself writes and reads (docs/test-cases.md): both top-level shapes, string or list.
constexpr const char* kUpskillWrapped = R"({
  "cases": [
    {"input": "Write a function that reverses a string", "expected": {"contains": ["def", "return"]}},
    {"input": "Explain git rebase", "expected": {"contains": "rebase"},
     "context": {"files": {"notes.md": "# notes"}}},
    {"input": "Benchmark it", "output_file": "out.json", "validator": "bench",
     "validator_config": {"min": 2, "strict": true, "name": "x", "ratio": 0.5}}
  ]
})";

Result<TestSuite> parse(const std::string& text) {
  return parse_test_suite(text, "tests.json");
}

std::string error_of(const std::string& text) {
  auto suite = parse(text);
  EXPECT_FALSE(suite) << "expected an error for: " << text;
  return suite ? std::string() : suite.error().message;
}

TEST(TestCases, LoadsUpskillFilesUnchanged) {
  auto suite = parse(kUpskillWrapped);
  ASSERT_TRUE(suite) << suite.error().message;
  EXPECT_TRUE(suite->wrapped);
  ASSERT_EQ(suite->cases.size(), 3u);
  const auto& first = suite->cases[0];
  EXPECT_EQ(first.expected_contains, (std::vector<std::string>{"def", "return"}));
  EXPECT_TRUE(first.id_generated);
  EXPECT_EQ(first.id.rfind("write-a-function-that-reverses-", 0), 0u) << first.id;
  EXPECT_EQ(suite->cases[1].expected_contains, (std::vector<std::string>{"rebase"}));
  EXPECT_TRUE(suite->cases[1].expected_contains_was_string);
  ASSERT_EQ(suite->cases[1].context_files.size(), 1u);
  EXPECT_EQ(suite->cases[1].context_files[0].first, "notes.md");
  EXPECT_EQ(*suite->cases[2].validator, "bench");
  EXPECT_EQ(suite->cases[2].validator_config->at("min"), 2);

  auto bare = parse(R"([{"input": "hi", "expected": {"contains": "hello"}}])");
  ASSERT_TRUE(bare);
  EXPECT_FALSE(bare->wrapped);
  EXPECT_EQ(bare->cases.size(), 1u);
}

TEST(TestCases, EffectiveChecksMapUpskillFieldsToChecks) {
  auto suite = parse(kUpskillWrapped);
  ASSERT_TRUE(suite);
  auto checks = suite->cases[0].effective_checks();
  // upskill main: expected.contains is one assertion, every string, ignoring case.
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].kind, CheckKind::contains_all);
  EXPECT_EQ(std::get<TextMatchParams>(checks[0].params).values,
            (std::vector<std::string>{"def", "return"}));
  auto validator = suite->cases[2].effective_checks();
  ASSERT_EQ(validator.size(), 1u);
  EXPECT_EQ(validator[0].kind, CheckKind::validator);
}

TEST(TestCases, IdsAreStableAndDuplicatesRejected) {
  EXPECT_EQ(derive_case_id("Write a kernel"), derive_case_id("Write a kernel"));
  EXPECT_NE(derive_case_id("Write a kernel"), derive_case_id("Write a kernel!"));
  EXPECT_EQ(derive_case_id("???").rfind("case-", 0), 0u);
  auto msg = error_of(R"([{"id": "a", "input": "x", "expected": {"contains": "x"}},
                          {"id": "a", "input": "y", "expected": {"contains": "y"}}])");
  EXPECT_NE(msg.find("tests.json:2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("id 'a' is already used by case 1"), std::string::npos) << msg;
  auto same_input = error_of(R"([{"input": "x", "expected": {"contains": "x"}}, {"input": "x"}])");
  EXPECT_NE(same_input.find("same input"), std::string::npos) << same_input;
  EXPECT_NE(error_of(R"([{"id": "-bad", "input": "x"}])").find("id '-bad'"), std::string::npos);
}

TEST(TestCases, ErrorsNameFileLineColumnAndCase) {
  const std::string text =
      "[\n  {\"input\": \"a\", \"expected\": {\"contains\": \"a\"}},\n"
      "  {\"id\": \"k\", \"input\": \"b\",\n   \"expectd\": {}}\n]";
  auto msg = error_of(text);
  EXPECT_EQ(msg.rfind("tests.json:4:4: case 2 ('k'): unknown key 'expectd'", 0), 0u) << msg;
}

struct BadCase {
  const char* json;
  const char* message;
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.json;
}

class SchemaErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(SchemaErrors, AreRejectedWithTheirReason) {
  auto msg = error_of(GetParam().json);
  EXPECT_NE(msg.find(GetParam().message), std::string::npos) << msg;
  EXPECT_NE(msg.find("tests.json:"), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    AllPaths, SchemaErrors,
    ::testing::Values(
        BadCase{"{\"cases\": [], \"extra\": 1}", "unknown key 'extra'"},
        BadCase{"{\"tests\": []}", "unknown key 'tests'"},
        BadCase{"{}", "expected a list of test cases or an object"}, BadCase{"42", "found integer"},
        BadCase{"{\"cases\": {}}", "expected a list of test cases, found object"},
        BadCase{"[1]", "expected a test case (a JSON object), found integer"},
        BadCase{"[{}]", "missing required key 'input'"},
        BadCase{"[{\"input\": null}]",
                "tests.json:1:12: case 1: 'input' must be a string, found null"},
        BadCase{"[{\"input\": 3}]", "'input' must be a string"},
        BadCase{"[{\"input\": \"  \"}]", "'input' must not be empty"},
        BadCase{"[{\"input\": \"x\", \"context\": []}]", "expected 'context'"},
        BadCase{"[{\"input\": \"x\", \"context\": {\"dirs\": 1}}]", "unknown key 'dirs'"},
        BadCase{"[{\"input\": \"x\", \"context\": {\"files\": []}}]", "expected 'context.files'"},
        BadCase{"[{\"input\": \"x\", \"context\": {\"files\": {\"a\": 1}}}]",
                "file 'a' must have string content"},
        BadCase{"[{\"input\": \"x\", \"expected\": \"y\"}]", "expected 'expected'"},
        BadCase{"[{\"input\": \"x\", \"expected\": {\"equals\": \"y\"}}]", "unknown key 'equals'"},
        BadCase{"[{\"input\": \"x\", \"expected\": {\"contains\": 5}}]",
                "must be a string or a list of strings"},
        BadCase{"[{\"input\": \"x\", \"expected\": {\"contains\": [\"a\", 5]}}]",
                "'contains[1]' must be a string"},
        BadCase{"[{\"input\": \"x\", \"output_file\": 1}]", "'output_file' must be a string"},
        BadCase{"[{\"input\": \"x\", \"validator_config\": []}]",
                "'validator_config' must be an object"},
        BadCase{"[{\"input\": \"x\", \"validator_config\": {\"a\": [1]}}]",
                "'validator_config.a' must be a string"},
        BadCase{"[{\"input\": \"x\", \"mode\": \"batch\"}]", "mode must be 'chat' or 'agent'"},
        BadCase{"[{\"input\": \"x\", \"threshold\": 1.5}]", "'threshold' must be between 0 and 1"},
        BadCase{"[{\"input\": \"x\", \"checks\": {}}]", "'checks' must be a list"},
        BadCase{"[{\"input\": \"x\", \"checks\": [1]}]", "expected a check (a JSON object)"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{}]}]", "missing required key 'type'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"grep\"}]}]",
                "unknown check type 'grep'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"contains\", \"values\": [\"a\"]}]}]",
                "unknown key 'values'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"contains\", \"value\": \"\"}]}]",
                "'value' must not be empty"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"contains_all\"}]}]",
                "missing required key 'values'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"contains_any\", \"values\": []}]}]",
                "'values' must not be empty"},
        BadCase{
            "[{\"input\": \"x\", \"checks\": [{\"type\": \"contains_any\", \"values\": [\"\"]}]}]",
            "must not contain empty strings"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"regex\", \"pattern\": \"(\"}]}]",
                "invalid regular expression"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"regex\", \"pattern\": \"a\", "
                "\"flags\": \"s\"}]}]",
                "flags may only contain"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"equals\"}]}]",
                "missing required key 'value'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"equals\", \"value\": \"a\", "
                "\"trim\": 1}]}]",
                "'trim' must be true or false"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"is_json\", \"value\": 1}]}]",
                "unknown key 'value'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"json_path\", \"path\": \"$.a[\"}]}]",
                "invalid path '$.a['"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"file_exists\", \"path\": "
                "\"/etc/passwd\"}]}]",
                "must be relative to the workspace"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"file_exists\", \"path\": "
                "\"a/../../b\"}]}]",
                "must stay inside the workspace"},
        BadCase{
            "[{\"input\": \"x\", \"checks\": [{\"type\": \"file_contains\", \"path\": \"a\"}]}]",
            "needs exactly one of 'value' and 'values'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"command\"}]}]",
                "missing required key 'run'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"command\", \"run\": \"true\", "
                "\"expect_exit\": 300}]}]",
                "between 0 and 255"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"command\", \"run\": \"true\", "
                "\"timeout_s\": 0}]}]",
                "'timeout_s' must be greater than 0"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"validator\"}]}]",
                "missing required key 'name'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"validator\", \"name\": \"v\", "
                "\"config\": 1}]}]",
                "'config' must be an object"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"contains\", \"value\": \"a\", "
                "\"weight\": -1}]}]",
                "'weight' must not be negative"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"kernel\", \"stages\": [\"extract\", "
                "\"jit\"]}]}]",
                "unknown kernel stage 'jit'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"kernel\", \"stages\": [\"extract\", "
                "\"layout\", \"extract\"]}]}]",
                "in pipeline order"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"kernel\", \"stages\": [\"extract\", "
                "\"compile\"]}]}]",
                "stage 'compile' needs stage 'layout'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"kernel\", \"stages\": "
                "[\"extract\"], \"backend\": \"rocm\"}]}]",
                "backend must be 'cuda' or 'cpu'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"kernel\", \"stages\": "
                "[\"extract\"], \"capabilities\": [\"sm_90\"]}]}]",
                "capability 'sm_90' must look like '9.0'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"kernel\", \"stages\": "
                "[\"extract\"], \"backend\": \"cpu\", \"capabilities\": [\"9.0\"]}]}]",
                "capabilities only apply to the cuda backend"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"kernel\", \"stages\": "
                "[\"extract\"], \"lint\": \"strict\"}]}]",
                "unknown lint profile 'strict'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"kernel\"}]}]", "needs 'spec'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"kernel\", \"stages\": "
                "[\"extract\"], \"min_speedup\": 2}]}]",
                "'min_speedup' needs stage 'bench'"},
        BadCase{"[{\"input\": \"x\", \"checks\": [{\"type\": \"kernel\", \"stages\": "
                "[\"extract\"], \"timeout_s\": -1}]}]",
                "'timeout_s' must be greater than 0"}));

TEST(TestCases, EveryCheckKindParsesAndRoundTrips) {
  const std::string text =
      R"([{"id": "all", "input": "x", "mode": "agent", "threshold": 0.5, "checks": [
    {"type": "contains", "value": "A"},
    {"type": "icontains", "value": "a", "weight": 2, "label": "mentions a"},
    {"type": "contains_all", "values": ["a", "b"]},
    {"type": "contains_any", "values": ["a", "b"]},
    {"type": "not_contains", "value": "TODO"},
    {"type": "regex", "pattern": "^def \\w+", "flags": "im"},
    {"type": "equals", "value": "42", "trim": false, "ignore_case": true},
    {"type": "is_json"},
    {"type": "json_path", "path": "$.result[0].name", "equals": {"k": [1, 2]}},
    {"type": "file_exists", "path": "src/main.py"},
    {"type": "file_contains", "path": "build.toml", "value": "[general]", "ignore_case": true},
    {"type": "command", "run": "python -m pytest -q", "expect_exit": 0, "timeout_s": 120},
    {"type": "validator", "name": "python_syntax", "config": {"file": "a.py"}},
    {"type": "kernel", "stages": ["extract", "layout", "compile", "bind", "correct", "bench"], "backend": "cuda",
     "capabilities": ["9.0", "8.0"], "lint": "kernel-builder", "spec": "specs/rmsnorm.py", "project": "rmsnorm",
     "min_speedup": 1.5, "timeout_s": 600},
    {"type": "judge", "criteria": ["names the file", "explains why"], "model": ["a", "b"], "scale": 5,
     "threshold": 0.6}
  ]}])";
  auto suite = parse(text);
  ASSERT_TRUE(suite) << suite.error().message;
  const auto& c = suite->cases.at(0);
  EXPECT_EQ(c.mode, Mode::agent);
  EXPECT_EQ(cases_to_json(suite->cases)[0]["mode"], "agent");
  for (const std::string& name : mode_names()) EXPECT_EQ(to_string(*mode_from_string(name)), name);
  EXPECT_FALSE(mode_from_string("Agent"));
  ASSERT_EQ(c.checks.size(), check_kind_names().size());
  for (std::size_t i = 0; i < c.checks.size(); ++i)
    EXPECT_EQ(to_string(c.checks[i].kind), check_kind_names()[i]);
  EXPECT_EQ(c.checks[1].weight, 2);
  const auto& kernel = std::get<KernelParams>(c.checks[13].params);
  const auto& judge = std::get<JudgeParams>(c.checks.back().params);
  EXPECT_EQ(judge.models, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(judge.scale, 5);
  EXPECT_EQ(kernel.stages.size(), 6u);  // lint may be left out
  EXPECT_EQ(*kernel.min_speedup, 1.5);
  // Round trip: serialise, parse again, compare.
  const std::string again = cases_to_json(suite->cases).dump();
  auto reparsed = parse(again);
  ASSERT_TRUE(reparsed) << reparsed.error().message;
  EXPECT_EQ(reparsed->cases, suite->cases);
  EXPECT_EQ(cases_to_json(reparsed->cases), cases_to_json(suite->cases));
}

TEST(TestCases, UpskillCasesRoundTripInTheirOwnShape) {
  auto suite = parse(kUpskillWrapped);
  ASSERT_TRUE(suite);
  const Json out = cases_to_json(suite->cases);
  EXPECT_FALSE(out[0].contains("id"));                      // generated ids are not written
  EXPECT_TRUE(out[1]["expected"]["contains"].is_string());  // string stays a string
  EXPECT_EQ(out[0]["expected"]["contains"], Json::array({"def", "return"}));
  auto again = parse(out.dump());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->cases, suite->cases);
}

TEST(TestCases, KernelDefaultsAndACaseWithNoCheckRefused) {
  auto suite = parse(R"([{"input": "k", "checks": [{"type": "kernel", "spec": "s.py"}]}])");
  ASSERT_TRUE(suite) << suite.error().message;
  const auto& k = std::get<KernelParams>(suite->cases[0].checks[0].params);
  EXPECT_EQ(k.stages.size(), 6u);
  EXPECT_EQ(k.backend, "cuda");
  EXPECT_EQ(k.lint, "kernel-builder");
  EXPECT_TRUE(suite->warnings.empty());
  // Upstream refuses a case with nothing to check when it loads: so does upskill, naming the file,
  // the line and the case.
  auto none = parse_test_suite(
      "[{\"input\": \"k\", \"expected\": {\"contains\": \"k\"}},\n {\"input\": \"none\"}]",
      "tests.json");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ExitCode::usage);
  EXPECT_NE(none.error().message.find("tests.json:2:"), std::string::npos) << none.error().message;
  EXPECT_NE(none.error().message.find("case 2 ('none-"), std::string::npos) << none.error().message;
  // An empty contains list is no check either.
  EXPECT_FALSE(parse(R"([{"input": "x", "expected": {"contains": []}}])"));
  // A batch's own plan, written by an older version, still loads: the case is a warning there.
  auto doc = parse_json_document(R"({"cases": [{"input": "none"}]})", "plan.json");
  ASSERT_TRUE(doc);
  auto tolerated = parse_case_array(*doc, "/cases", true);
  ASSERT_TRUE(tolerated);
  ASSERT_EQ(tolerated->warnings.size(), 1u);
  EXPECT_NE(tolerated->warnings[0].find("can never pass"), std::string::npos);
}

TEST(TestCases, FindCaseAndLoadFromFile) {
  auto suite = parse(R"([{"id": "a", "input": "x", "expected": {"contains": "x"}}])");
  ASSERT_TRUE(suite);
  EXPECT_NE(find_case(suite->cases, "a"), nullptr);
  EXPECT_EQ(find_case(suite->cases, "b"), nullptr);
  auto missing = load_test_suite("/nonexistent/tests.json");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("/nonexistent/tests.json"), std::string::npos);
}

TEST(JsonPath, ParsesBothSyntaxesAndResolves) {
  const Json doc = Json::parse(R"({"a": {"b": [10, {"c d": "x"}]}, "s/t": 1})");
  auto dotted = parse_json_path("$.a.b[1]['c d']");
  ASSERT_TRUE(dotted);
  ASSERT_NE(resolve_json_path(doc, *dotted), nullptr);
  EXPECT_EQ(*resolve_json_path(doc, *dotted), "x");
  auto bare = parse_json_path("a.b[0]");
  ASSERT_TRUE(bare);
  EXPECT_EQ(*resolve_json_path(doc, *bare), 10);
  auto pointer = parse_json_path("/a/b/0");
  ASSERT_TRUE(pointer);
  EXPECT_EQ(*resolve_json_path(doc, *pointer), 10);
  auto escaped = parse_json_path("/s~1t");
  ASSERT_TRUE(escaped);
  EXPECT_EQ(*resolve_json_path(doc, *escaped), 1);
  EXPECT_EQ(resolve_json_path(doc, *parse_json_path("$.a.zz")), nullptr);
  EXPECT_EQ(resolve_json_path(doc, *parse_json_path("$.a.b[7]")), nullptr);
  EXPECT_FALSE(parse_json_path("$.a["));
  EXPECT_FALSE(parse_json_path("$..a"));
  EXPECT_FALSE(parse_json_path("$['a"));
  EXPECT_FALSE(parse_json_path("/a~2"));
  EXPECT_FALSE(parse_json_path(""));
}

}  // namespace
}  // namespace upskill::cases

namespace upskill::cases {
namespace {
TEST(TestCases, ShippedExampleLoads) {
  auto suite = load_test_suite(std::filesystem::path(UPSKILL_SOURCE_DIR) /
                               "examples/tests/upskill-format.json");
  ASSERT_TRUE(suite) << suite.error().message;
  EXPECT_EQ(suite->cases.size(), 3u);
  EXPECT_TRUE(suite->warnings.empty());
}
}  // namespace
}  // namespace upskill::cases
