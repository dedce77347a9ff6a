// report/: how an evaluation is shown (terminal bars, JUnit XML, GitHub markdown) and what the run
// logs say (`upskill runs`: loading, pairing, terminal, CSV, HTML). Summaries come from
// eval::summarize over hand-built evaluations, so every number below follows from the verdicts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "support/report_page.hpp"
#include "support/temp_dir.hpp"
#include "upskill/checks/stage_report.hpp"
#include "upskill/eval/summary.hpp"
#include "upskill/report/eval_report.hpp"
#include "upskill/report/runs_report.hpp"

namespace upskill::report {
namespace {

using eval::Arm;
using testing::TempDir;

// What happened to one trial.
enum class Outcome { pass, fail, not_run, error, interrupted };
constexpr Outcome P = Outcome::pass, F = Outcome::fail, N = Outcome::not_run, E = Outcome::error,
                  I = Outcome::interrupted;

checks::CaseResult verdict(Outcome o) {
  checks::CaseResult r;
  checks::CheckResult text;
  text.kind = cases::CheckKind::contains;
  text.expected = "contains \"x\"";
  text.status = o == F ? checks::Status::failed : checks::Status::passed;
  if (o == F) text.reason = "\"x\" does not appear";
  r.checks.push_back(text);
  r.ran = 1;
  r.passed_checks = o != F;
  r.status = o == F ? checks::Status::failed : checks::Status::passed;
  if (o == N) {
    checks::CheckResult kernel;
    kernel.kind = cases::CheckKind::kernel;
    kernel.expected = "kernel pipeline passes";
    kernel.status = checks::Status::not_run;
    kernel.reason = "correct, bench not run: no CUDA device";
    r.checks.push_back(kernel);
    r.not_run = 1;
    r.status = checks::Status::not_run;
  }
  r.passed = r.status == checks::Status::passed;
  return r;
}

// One model ("student"); `with_skill[run * ids.size() + c]` is the outcome of case c in that run.
// No baseline arm when `baseline` is empty. The baseline spends 110 tokens a trial, the skill 55.
eval::Evaluation make_evaluation(const std::vector<std::string>& ids,
                                 const std::vector<Outcome>& with_skill,
                                 const std::vector<Outcome>& baseline, int runs = 1) {
  eval::Evaluation e;
  e.skill_name = "demo";
  e.runs = runs;
  e.baseline = !baseline.empty();
  llm::ResolvedModel model;
  model.name = "student";
  model.model = "student-1";
  e.models.push_back(model);
  for (const auto& id : ids) {
    cases::TestCase tc;
    tc.id = id;
    e.cases.push_back(tc);
  }
  e.trials.resize(e.baseline ? 2 * with_skill.size() : with_skill.size());
  for (Arm arm : e.arms())
    for (int run = 0; run < runs; ++run)
      for (std::size_t c = 0; c < ids.size(); ++c) {
        const eval::TrialKey key{0, arm, run, c};
        const std::size_t i = static_cast<std::size_t>(run) * ids.size() + c;
        const Outcome o = arm == Arm::with_skill ? with_skill[i] : baseline[i];
        eval::TrialResult& t = e.trials[e.index(key)];
        t.key = key;
        if (o == I) continue;  // never completed
        t.completed = true;
        t.latency_ms = 5;
        if (o == E) {
          t.failure = llm::LlmFailure(llm::FailureKind::timeout, 0,
                                      "model student at http://127.0.0.1:1/v1: timed out");
          continue;
        }
        t.verdict = verdict(o);
        t.verdict.case_id = ids[c];
        t.usage.input = arm == Arm::baseline ? 100 : 50;
        t.usage.output = arm == Arm::baseline ? 10 : 5;
      }
  return e;
}

// Two cases: the skill gains case0, both arms fail case1.
eval::Evaluation two_cases() {
  return make_evaluation({"case0", "case1"}, {P, F}, {F, F});
}

const std::string kFailReason = "contains \"x\": \"x\" does not appear";

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---------------------------------------------------------------------------------------------
// bar, render_terminal

TEST(Bar, FillsToTheRoundedFractionAndClamps) {
  EXPECT_EQ(bar(0.5, 4), "██░░");
  EXPECT_EQ(bar(0.0, 3), "░░░");
  EXPECT_EQ(bar(0.6, 4), "██░░");   // 2.4 rounds to 2
  EXPECT_EQ(bar(0.65, 4), "███░");  // 2.6 rounds to 3
  EXPECT_EQ(bar(1.7, 3), "███");
  EXPECT_EQ(bar(-0.2, 2), "░░");
  std::string twenty;
  for (int i = 0; i < 20; ++i) twenty += "█";
  EXPECT_EQ(bar(1.0), twenty);
}

TEST(RenderTerminal, ArmLinesWithBarsIntervalsTokensAndLift) {
  const eval::Evaluation e = two_cases();
  const std::string out = render_terminal(eval::summarize(e), e, {false, false});
  EXPECT_EQ(out.rfind("student (student-1) · 2 cases × 1 run\n", 0), 0u) << out;
  // Wilson 95%: 0 of 2 is [0%, 66%], 1 of 2 is [9%, 91%]; tokens 110 vs 55 a trial.
  EXPECT_TRUE(has(out, "\n  baseline    " + bar(0.0) + "   0%  [0%, 66%]    tokens 110/trial\n"))
      << out;
  EXPECT_TRUE(has(
      out, "\n  with skill  " + bar(0.5) + "  50%  [9%, 91%]    tokens 55/trial (-50% tokens)\n"))
      << out;
  EXPECT_TRUE(has(out, "\n  lift +50% [")) << out;
  EXPECT_TRUE(has(out,
                  " · paired: 1 gained, 0 lost · McNemar p = 1 · inconclusive · beneficial "
                  "(upskill's rule)\n"))
      << out;
  EXPECT_TRUE(has(out, "\n  warning: 2 paired cases cannot show a significant lift")) << out;
  EXPECT_FALSE(has(out, "case0")) << "per-case lines only with verbose\n" << out;
  EXPECT_FALSE(has(out, "interrupted")) << out;
}

TEST(RenderTerminal, VerboseAddsOneLinePerCaseWithTheFailingCheck) {
  const eval::Evaluation e = two_cases();
  const std::string out = render_terminal(eval::summarize(e), e, {true, false});
  const std::string pad(19, ' ');  // case ids are padded to 24 columns
  EXPECT_TRUE(
      has(out, "\n    case0" + pad + "  baseline: ✗ (" + kFailReason + ")  with skill: ✓\n"))
      << out;
  EXPECT_TRUE(has(out, "\n    case1" + pad + "  baseline: ✗ (" + kFailReason +
                           ")  with skill: ✗ (" + kFailReason + ")\n"))
      << out;
}

TEST(RenderTerminal, VerboseCellsForNotRunLeftOutErrorsAndRepeats) {
  const std::string pad(23, ' ');
  {
    const eval::Evaluation e = make_evaluation({"n"}, {N}, {P});
    const std::string out = render_terminal(eval::summarize(e), e, {true, false});
    EXPECT_TRUE(has(out, "\n    n" + pad +
                             "  baseline: left out (the other arm was not run)  with skill: not "
                             "run (kernel pipeline passes: correct, bench not run: no CUDA "
                             "device)\n"))
        << out;
    // Neither arm has a scored trial: no rate and no lift, only what is missing and why.
    EXPECT_TRUE(has(out, "\n  with skill  " + bar(0.0) + "    —" + std::string(15, ' ') +
                             "tokens 55/trial · not computed: no scored trial (1 not run)\n"))
        << out;
    EXPECT_TRUE(has(out, "\n  baseline    " + bar(0.0) + "    —" + std::string(15, ' ') +
                             "tokens 110/trial · not computed: no scored trial (1 left out with "
                             "their pairs)\n"))
        << out;
    EXPECT_TRUE(has(out,
                    "\n  lift not computed: neither arm has a scored trial · 1 not run pair "
                    "left out\n"))
        << out;
    EXPECT_FALSE(has(out, "0%")) << out;
  }
  {
    const eval::Evaluation e = make_evaluation({"c"}, {P}, {E});
    const std::string out = render_terminal(eval::summarize(e), e, {true, false});
    EXPECT_TRUE(has(out, "\n    c" + pad + "  baseline: ! (1 error)  with skill: ✓\n")) << out;
    EXPECT_TRUE(has(out, "  warning: 1 trial(s) failed to get an answer and are not counted\n"))
        << out;
  }
  {
    // Two runs: run 0 not run with the skill, run 1 passes with it and fails without.
    const eval::Evaluation e = make_evaluation({"k"}, {N, P}, {P, F}, 2);
    const std::string out = render_terminal(eval::summarize(e), e, {true, false});
    EXPECT_EQ(out.rfind("student (student-1) · 1 case × 2 runs\n", 0), 0u) << out;
    EXPECT_TRUE(has(out, "\n    k" + pad + "  baseline: 0/1 (" + kFailReason +
                             ")  with skill: 1/1 (1 not run)\n"))
        << out;
  }
}

TEST(RenderTerminal, ColourOnlyWhenAskedFor) {
  const eval::Evaluation e = two_cases();
  const eval::EvalSummary s = eval::summarize(e);
  const std::string plain = render_terminal(s, e, {true, false});
  EXPECT_FALSE(has(plain, "\033[")) << plain;
  const std::string colour = render_terminal(s, e, {true, true});
  EXPECT_EQ(colour.rfind("\033[1mstudent\033[0m (student-1) · 2 cases", 0), 0u) << colour;
  EXPECT_TRUE(has(colour, " · \033[33minconclusive\033[0m")) << colour;
  EXPECT_TRUE(has(colour, "  \033[33mwarning:\033[0m 2 paired cases")) << colour;
  EXPECT_TRUE(has(colour, "baseline: ✗\033[2m (" + kFailReason + ")\033[0m")) << colour;
}

TEST(RenderTerminal, AnInterruptedEvaluationSaysHowToFinish) {
  eval::Evaluation e = make_evaluation({"a", "b"}, {P, I}, {F, I});
  e.interrupted = true;
  const std::string out = render_terminal(eval::summarize(e), e, {false, false});
  const std::string last = "interrupted: results so far are saved; finish with --resume\n";
  ASSERT_GE(out.size(), last.size());
  EXPECT_EQ(out.substr(out.size() - last.size()), last) << out;
}

// ---------------------------------------------------------------------------------------------
// render_junit

bool have_xmllint() {
  return std::system("command -v xmllint >/dev/null 2>&1") == 0;
}

// xmllint's complaints about `xml` (well-formedness, and the JUnit schema tests/data/junit.xsd);
// empty when it accepts the document.
std::string xmllint_errors(const std::string& xml) {
  TempDir dir;
  const auto file = dir.write("junit.xml", xml);
  const std::string cmd = std::string("xmllint --noout --schema '") + UPSKILL_SOURCE_DIR +
                          "/tests/data/junit.xsd' '" + file.string() + "' 2>'" +
                          (dir / "errors").string() + "'";
  if (std::system(cmd.c_str()) == 0) return "";
  const std::string errors = testing::read_file(dir / "errors");
  return errors.empty() ? "xmllint failed" : errors;
}

// The document is well-formed and valid JUnit; without xmllint the test is skipped here, after
// its other assertions ran.
#define EXPECT_VALID_JUNIT(xml)                                                      \
  do {                                                                               \
    if (!have_xmllint()) GTEST_SKIP() << "xmllint is not installed (libxml2-utils)"; \
    EXPECT_EQ(xmllint_errors(xml), "") << (xml);                                     \
  } while (false)

TEST(RenderJunit, FailuresErrorsAndSkippedForNotRunAndInterrupted) {
  const eval::Evaluation e =
      make_evaluation({"pass", "fail", "error", "notrun", "cut"}, {P, F, E, N, I}, {});
  const std::string xml = render_junit(eval::summarize(e), e);
  const std::string cls = "    <testcase classname=\"demo.student.with_skill\" name=";
  const std::string failed = "failed contains &quot;x&quot;: &quot;x&quot; does not appear";
  const std::string expected =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"upskill eval demo\" tests=\"5\" failures=\"1\" errors=\"1\" "
      "skipped=\"2\">\n"
      "  <testsuite name=\"demo / student / with_skill\" tests=\"5\" failures=\"1\" errors=\"1\" "
      "skipped=\"2\" time=\"0.020\">\n" +
      cls + "\"pass\" time=\"0.005\"/>\n" + cls +
      "\"fail\" time=\"0.005\"><failure type=\"assertion\" message=\"" + failed + "\">" + failed +
      "\n</failure></testcase>\n" + cls +
      "\"error\" time=\"0.005\"><error type=\"timed out\" message=\"model student at "
      "http://127.0.0.1:1/v1: timed out\"/></testcase>\n" +
      cls +
      "\"notrun\" time=\"0.005\"><skipped message=\"not run: kernel pipeline passes — correct, "
      "bench not run: no CUDA device\"/></testcase>\n" +
      cls + "\"cut\" time=\"0.000\"><skipped message=\"not run (interrupted)\"/></testcase>\n" +
      "  </testsuite>\n</testsuites>\n";
  EXPECT_EQ(xml, expected);
  EXPECT_VALID_JUNIT(xml);
}

TEST(RenderJunit, OneSuitePerArmAndRunNumbersInNames) {
  const eval::Evaluation e = make_evaluation({"k"}, {P, F}, {E, F}, 2);
  const std::string xml = render_junit(eval::summarize(e), e);
  EXPECT_TRUE(has(xml,
                  "<testsuites name=\"upskill eval demo\" tests=\"4\" failures=\"2\" "
                  "errors=\"1\" skipped=\"0\">\n"))
      << xml;
  EXPECT_TRUE(has(xml,
                  "<testsuite name=\"demo / student / baseline\" tests=\"2\" failures=\"1\" "
                  "errors=\"1\" skipped=\"0\" time=\"0.010\">\n"))
      << xml;
  EXPECT_TRUE(has(xml,
                  "<testsuite name=\"demo / student / with_skill\" tests=\"2\" "
                  "failures=\"1\" errors=\"0\" skipped=\"0\" time=\"0.010\">\n"))
      << xml;
  EXPECT_TRUE(has(xml,
                  "<testcase classname=\"demo.student.baseline\" name=\"k#1\" "
                  "time=\"0.005\"><error "))
      << xml;
  EXPECT_TRUE(has(xml,
                  "<testcase classname=\"demo.student.with_skill\" name=\"k#1\" "
                  "time=\"0.005\"/>\n"))
      << xml;
  EXPECT_TRUE(has(xml, "name=\"k#2\" time=\"0.005\"><failure ")) << xml;
  EXPECT_LT(xml.find("demo / student / baseline"), xml.find("demo / student / with_skill"));
  EXPECT_VALID_JUNIT(xml);
}

TEST(RenderJunit, NeverAnEmptySuite) {
  const eval::Evaluation no_cases = make_evaluation({}, {}, {});
  const std::string a = render_junit(eval::summarize(no_cases), no_cases);
  EXPECT_TRUE(has(a,
                  "<testsuite name=\"demo / student / with_skill\" tests=\"1\" failures=\"0\" "
                  "errors=\"0\" skipped=\"1\""))
      << a;
  EXPECT_TRUE(has(a,
                  "<testcase classname=\"upskill\" name=\"no-cases\"><skipped message=\"no "
                  "test cases\"/></testcase>"))
      << a;
  eval::Evaluation no_models = make_evaluation({"a"}, {P}, {});
  no_models.models.clear();
  no_models.trials.clear();
  const std::string b = render_junit(eval::summarize(no_models), no_models);
  EXPECT_TRUE(has(b,
                  "<testsuites name=\"upskill eval demo\" tests=\"1\" failures=\"0\" "
                  "errors=\"0\" skipped=\"1\">"))
      << b;
  EXPECT_TRUE(has(b, "name=\"no-models\"><skipped message=\"nothing was evaluated\"/>")) << b;
  if (!have_xmllint()) GTEST_SKIP() << "xmllint is not installed (libxml2-utils)";
  EXPECT_EQ(xmllint_errors(a), "") << a;
  EXPECT_EQ(xmllint_errors(b), "") << b;
}

TEST(XmlEscape, MarkupQuotesAndControlCharacters) {
  EXPECT_EQ(xml_escape("a<&\"'>b"), "a&lt;&amp;&quot;&apos;&gt;b");
  EXPECT_EQ(xml_escape(std::string("\x01x\x1b\x1f\t\n\r", 7)), "?x??\t\n\r");
  EXPECT_EQ(xml_escape(std::string("nul\0!", 5)), "nul?!");
  EXPECT_EQ(xml_escape("&amp;"), "&amp;amp;");  // escaped again, never taken as an entity
  EXPECT_EQ(xml_escape("grüße ✓"), "grüße ✓");  // UTF-8 passes through
}

TEST(RenderJunit, HostileIdsNamesAndAnswersStayWellFormed) {
  const std::string hostile = std::string("<&\"'>") + "\x01\x1b";
  eval::Evaluation e = make_evaluation({"id" + hostile}, {F}, {E});
  e.skill_name = "skill" + hostile;
  e.models[0].name = "m]]>" + hostile;
  eval::TrialResult& with = e.trials[e.index({0, Arm::with_skill, 0, 0})];
  with.verdict.checks[0].reason = "line1\nline2 \x02 <b>";
  with.verdict.checks[0].found = "</failure><x y=\"1\">&amp;";
  e.trials[e.index({0, Arm::baseline, 0, 0})].failure->message = "server said <html>&\"'";
  const std::string xml = render_junit(eval::summarize(e), e);
  const std::string esc = "&lt;&amp;&quot;&apos;&gt;??";
  EXPECT_TRUE(has(xml, "name=\"upskill eval skill" + esc + "\"")) << xml;
  EXPECT_TRUE(has(
      xml, "classname=\"skill" + esc + ".m]]&gt;" + esc + ".with_skill\" name=\"id" + esc + "\""))
      << xml;
  EXPECT_TRUE(has(xml, "(found: &lt;/failure&gt;&lt;x y=&quot;1&quot;&gt;&amp;amp;)\n</failure>"))
      << xml;
  EXPECT_TRUE(has(xml, "line1\nline2 ? &lt;b&gt;")) << xml;
  EXPECT_TRUE(has(xml, "message=\"server said &lt;html&gt;&amp;&quot;&apos;\"")) << xml;
  EXPECT_FALSE(has(xml, "<x y")) << xml;
  for (char c : xml)
    EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 && c != '\n') << "control character left";
  EXPECT_VALID_JUNIT(xml);
}

// ---------------------------------------------------------------------------------------------
// render_markdown

TEST(RenderMarkdown, ArmTableLiftWarningsAndPerCaseRows) {
  const eval::Evaluation e = two_cases();
  const std::string md = render_markdown(eval::summarize(e), e);
  EXPECT_EQ(
      md.rfind("## upskill eval: `demo`\n\n2 cases × 1 run\n\n"
               "| model | arm | pass rate | 95% interval | tokens / trial | errors | not run |\n"
               "|---|---|---|---|---|---|---|\n"
               "| student | baseline | 0% | [0%, 66%] | 110 | 0 | 0 |\n"
               "| student | with skill | 50% | [9%, 91%] | 55 | 0 | 0 |\n\n"
               "**student**: lift **+50%** [",
               0),
      0u)
      << md;
  EXPECT_TRUE(has(md,
                  " (paired bootstrap over cases), 1 gained / 0 lost, exact McNemar p = 1 — "
                  "**inconclusive** (beneficial by upskill's rule)\n\n"))
      << md;
  EXPECT_TRUE(has(md, "\n> ⚠️ student: 2 paired cases cannot show a significant lift")) << md;
  EXPECT_TRUE(has(md,
                  "<details><summary>Per case</summary>\n\n"
                  "| model | case | baseline | with skill | why it failed |\n"
                  "|---|---|---|---|---|\n"
                  "| student | `case0` | 0/1 | 1/1 | baseline: " +
                      kFailReason +
                      " |\n"
                      "| student | `case1` | 0/1 | 0/1 | baseline: " +
                      kFailReason + "; with skill: " + kFailReason + " |\n\n</details>\n"))
      << md;
  EXPECT_FALSE(has(md, "interrupted")) << md;
}

TEST(RenderMarkdown, WithoutBaselineNotRunAndInterrupted) {
  eval::Evaluation e = make_evaluation({"a", "n"}, {P, N}, {});
  e.interrupted = true;
  const std::string md = render_markdown(eval::summarize(e), e);
  EXPECT_EQ(md.rfind("## upskill eval: `demo`\n\n2 cases × 1 run — **interrupted**, partial "
                     "results\n\n",
                     0),
            0u)
      << md;
  EXPECT_FALSE(has(md, "| baseline |")) << md;
  EXPECT_FALSE(has(md, "lift")) << md;
  EXPECT_TRUE(has(md, "| student | with skill | 100% | [21%, 100%] | 55 | 0 | 1 |\n")) << md;
  EXPECT_TRUE(has(md, "| model | case | with skill | why it failed |\n|---|---|---|---|\n")) << md;
  EXPECT_TRUE(has(md,
                  "| student | `n` | 0/0 (1 not run) | with skill: not run: kernel pipeline "
                  "passes: correct, bench not run: no CUDA device |\n"))
      << md;
}

TEST(RenderMarkdown, PipesInReasonsAreEscaped) {
  eval::Evaluation e = make_evaluation({"p"}, {F}, {});
  e.trials[0].verdict.checks[0].reason = "a|b || c";
  const std::string md = render_markdown(eval::summarize(e), e);
  EXPECT_TRUE(has(md, "| with skill: contains \"x\": a\\|b \\|\\| c |\n")) << md;
}

TEST(RenderMarkdown, CutToTheSizeLimitWithANote) {
  std::vector<std::string> ids;
  std::vector<Outcome> with, base;
  for (int i = 0; i < 200; ++i) {
    ids.push_back("case" + std::to_string(i));
    with.push_back(F);
    base.push_back(F);
  }
  const eval::Evaluation e = make_evaluation(ids, with, base);
  const eval::EvalSummary s = eval::summarize(e);
  const std::string note =
      "_…more cases left out to stay under GitHub's summary size limit; see the JSON report._";
  const std::string whole = render_markdown(s, e);
  EXPECT_TRUE(has(whole, "`case199`")) << whole.size();
  EXPECT_FALSE(has(whole, note));
  const std::string cut = render_markdown(s, e, 4096);
  EXPECT_LE(cut.size(), 4096u);
  EXPECT_TRUE(has(cut, "| student | `case0` |")) << cut;
  EXPECT_FALSE(has(cut, "`case199`")) << cut;
  EXPECT_TRUE(has(cut, "\n" + note + "\n\n</details>\n")) << cut;
}

// ---------------------------------------------------------------------------------------------
// runs: load_runs, best_results

Json run_result(const std::string& batch, int number, const std::string& run_type, long long passed,
                long long total, long long input, long long output) {
  return {{"metadata",
           {{"batch_id", batch},
            {"run_number", number},
            {"model", "student"},
            {"task", "task text"},
            {"timestamp", "2026-01-0" + std::to_string(number) + "T00:00:00"}}},
          {"skill_name", "s"},
          {"run_type", run_type},
          {"passed", passed == total},
          {"assertions_passed", passed},
          {"assertions_total", total},
          {"stats", {{"input_tokens", input}, {"output_tokens", output}}}};
}

class Runs : public ::testing::Test {
 protected:
  TempDir tmp;
  std::filesystem::path dir = tmp / "runs";
  void put(const std::string& rel, const Json& j) { tmp.write("runs/" + rel, j.dump(2)); }
};

TEST_F(Runs, LoadsEveryRunInOrderAndReportsUnreadableOnes) {
  put("b2/run_1/run_result.json", run_result("b2", 1, "with_skill", 1, 2, 10, 1));
  put("b1/run_2/run_result.json", run_result("b1", 2, "with_skill", 2, 2, 50, 10));
  Json old = run_result("ignored", 1, "baseline", 1, 2, 100, 20);
  old["metadata"].erase("batch_id");  // older logs: the folder names the batch
  old["skill_name"] = nullptr;        // and the task names the skill
  old["not_run"] = 3;
  put("b1/run_1/run_result.json", old);
  tmp.write("runs/b3/run_1/run_result.json", "{ not json");
  tmp.write("runs/b1/run_3/notes.txt", "no result here");
  tmp.write("runs/stray.txt", "x");
  std::vector<std::string> problems;
  const auto runs = load_runs(dir, problems);
  ASSERT_TRUE(runs) << runs.error().message;
  ASSERT_EQ(runs->size(), 3u);
  const RunRecord& first = (*runs)[0];
  EXPECT_EQ(first.batch_id, "b1");
  EXPECT_EQ(first.run_number, 1);
  EXPECT_EQ(first.skill, "task text");
  EXPECT_EQ(first.run_type, "baseline");
  EXPECT_EQ(first.timestamp, "2026-01-01T00:00:00");
  EXPECT_FALSE(first.passed);
  EXPECT_EQ(first.not_run, 3);
  EXPECT_DOUBLE_EQ(first.rate(), 0.5);
  EXPECT_EQ(first.tokens(), 120);
  EXPECT_EQ((*runs)[1].run_number, 2);
  EXPECT_EQ((*runs)[1].skill, "s");
  EXPECT_TRUE((*runs)[1].passed);
  EXPECT_EQ((*runs)[2].batch_id, "b2");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(has(problems[0], "b3/run_1/run_result.json: invalid JSON")) << problems[0];

  const auto missing = load_runs(tmp / "nowhere", problems);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ExitCode::usage);
  EXPECT_TRUE(has(missing.error().message, "nowhere: no such runs directory"))
      << missing.error().message;
}

TEST_F(Runs, BestRunPerSkillAndModelWithTheLatestEarlierBaseline) {
  // b1: baseline 1, with skill 2 (2/2). b2: with skill 1 (1/2) is worse than b1's.
  put("b1/run_1/run_result.json", run_result("b1", 1, "baseline", 1, 2, 100, 20));
  put("b1/run_2/run_result.json", run_result("b1", 2, "with_skill", 2, 2, 50, 10));
  put("b2/run_1/run_result.json", run_result("b2", 1, "with_skill", 1, 2, 10, 1));
  // b4 (skill t): the with-skill run 2 pairs with baseline 1, not with baseline 3 numbered after.
  for (const auto& [number, type, passed] : std::vector<std::tuple<int, std::string, int>>{
           {1, "baseline", 0}, {2, "with_skill", 2}, {3, "baseline", 1}}) {
    Json j = run_result("b4", number, type, passed, 2, 1, 1);
    j["skill_name"] = "t";
    put("b4/run_" + std::to_string(number) + "/run_result.json", j);
  }
  put("b1/batch_summary.json", Json::parse(R"({"summary": {"models": [{"name": "other"},
      {"name": "student", "lift": 0.5}]}})"));
  std::vector<std::string> problems;
  const auto runs = load_runs(dir, problems);
  ASSERT_TRUE(runs);
  const auto best = best_results(*runs, {}, dir);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].skill, "s");
  EXPECT_EQ(best[0].with_skill.batch_id, "b1");
  EXPECT_EQ(best[0].with_skill.run_number, 2);
  ASSERT_TRUE(best[0].baseline);
  EXPECT_EQ(best[0].baseline->run_number, 1);
  EXPECT_EQ(best[0].summary, Json({{"name", "student"}, {"lift", 0.5}}));
  EXPECT_EQ(best[1].skill, "t");
  ASSERT_TRUE(best[1].baseline);
  EXPECT_EQ(best[1].baseline->run_number, 1);
  EXPECT_TRUE(best[1].summary.is_null());  // b4 has no batch summary

  EXPECT_TRUE(best_results(*runs, {{}, {"nobody"}}, dir).empty());
  const auto only_t = best_results(*runs, {{"t"}, {}}, dir);
  ASSERT_EQ(only_t.size(), 1u);
  EXPECT_EQ(only_t[0].skill, "t");
}

TEST_F(Runs, EqualRatesPreferTheLaterBatch) {
  put("a/run_1/run_result.json", run_result("a", 1, "with_skill", 1, 2, 1, 1));
  put("c/run_1/run_result.json", run_result("c", 1, "with_skill", 1, 2, 1, 1));
  put("b/run_1/run_result.json", run_result("b", 1, "with_skill", 1, 2, 1, 1));
  std::vector<std::string> problems;
  const auto runs = load_runs(dir, problems);
  ASSERT_TRUE(runs);
  const auto best = best_results(*runs, {}, dir);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].with_skill.batch_id, "c");
  EXPECT_FALSE(best[0].baseline);
}

// ---------------------------------------------------------------------------------------------
// runs: terminal, CSV, HTML

RunRecord record(const std::string& batch, const std::string& type, long long passed,
                 long long total, long long tokens) {
  RunRecord r;
  r.batch_id = batch;
  r.run_number = type == "baseline" ? 1 : 2;
  r.model = "student";
  r.skill = "s";
  r.task = "task";
  r.run_type = type;
  r.assertions_passed = passed;
  r.assertions_total = total;
  r.input_tokens = tokens;
  r.raw = Json::object();
  return r;
}

SkillModelResult paired_result() {
  return {"s", "student", record("b1", "with_skill", 2, 2, 60), record("b1", "baseline", 1, 2, 120),
          Json()};
}

TEST(RunsTerminal, RateAndTokenBars) {
  EXPECT_EQ(render_runs_terminal({}, false, false), "No evaluation runs found.\n");
  SkillModelResult r = paired_result();
  r.with_skill.not_run = 1;
  EXPECT_EQ(render_runs_terminal({r}, false, false), "s\n  student  (batch b1)\n    baseline    " +
                                                         bar(0.5) + "  50%\n    with skill  " +
                                                         bar(1.0) + " 100% (+50%) · 1 not run\n");
  EXPECT_EQ(render_runs_terminal({r}, true, false),
            "s\n  student  (batch b1)\n    baseline    " + bar(1.0) +
                "      120 tokens\n    with skill  " + bar(0.5) + "       60 tokens (-50%)\n");
  EXPECT_EQ(render_runs_terminal({r}, false, true).rfind("\033[1ms\033[0m\n  student", 0), 0u);
}

TEST(RunsTerminal, MatrixWhenThereAreSeveralSkillsOrModels) {
  SkillModelResult other = paired_result();
  other.skill = "t";
  other.model = "teacher";
  other.baseline.reset();
  const std::string out = render_runs_terminal({paired_result(), other}, false, false);
  EXPECT_TRUE(has(out, "\nskill \\ model" + std::string(19, ' ') +
                           "          student          "
                           "teacher\n"))
      << out;
  // Skill s: 50% → 100% for student, nothing for teacher; skill t: only teacher, 100%.
  EXPECT_TRUE(
      has(out, "\ns" + std::string(31, ' ') + "       50% → 100%" + std::string(16, ' ') + "-\n"))
      << out;
  EXPECT_TRUE(has(out, "\nt" + std::string(31, ' ') + std::string(16, ' ') + "-" +
                           std::string(13, ' ') + "100%\n"))
      << out;
  EXPECT_FALSE(has(render_runs_terminal({paired_result()}, false, false), "skill \\ model"));
}

// `runs --csv` writes the run logs' own columns (upskill's first) with the run logs' own writer.
TEST(RunsCsv, UpskillColumnsAndQuotedFields) {
  RunRecord r = record("b1", "with_skill", 1, 2, 100);
  r.model = "a,b";
  r.task = "say \"hi\"";
  r.timestamp = "2026-01-01T00:00:00";
  r.passed = true;
  r.output_tokens = 20;
  r.raw = {{"stats", {{"conversation_span_ms", 1200}, {"turns", 3}}},
           {"error_message", "line1\nline2"},
           {"session_id", nullptr},
           {"session_history_file", "h\r.json"}};
  RunRecord plain = record("b1", "baseline", 0, 2, 5);
  const std::string csv = render_runs_csv({plain, r}, {});
  const std::string header =
      "batch_id,run_number,model,task,timestamp,passed,assertions_passed,assertions_total,"
      "input_tokens,output_tokens,total_tokens,conversation_span_ms,llm_time_ms,tool_time_ms,"
      "turns,tool_calls,tool_errors,mcp_calls,execute_calls,error_message,session_id,"
      "session_history_file,run_type,skill_name,run_index,pass_rate,cached_tokens,reasoning_tokens,"
      "cost_usd,errors,reported_model,not_run\n";
  EXPECT_EQ(csv, header +
                     "b1,1,student,task,,False,0,2,5,0,5,,,,,,,,,,,,baseline,s,,0.0000,,,,,,\n" +
                     "b1,2,\"a,b\",\"say \"\"hi\"\"\",2026-01-01T00:00:00,True,1,2,100,20,120,"
                     "1200,,,3,,,,,\"line1\nline2\",,\"h\r.json\",with_skill,s,,0.5000,,,,,,\n");
  EXPECT_EQ(render_runs_csv({plain, r}, {{}, {"student"}}),
            header + "b1,1,student,task,,False,0,2,5,0,5,,,,,,,,,,,,baseline,s,,0.0000,,,,,,\n");
  EXPECT_EQ(render_runs_csv({plain, r}, {{"nothing"}, {}}), header);
}

TEST(RunsHtml, ChartsLiftAndCasesWithHostileNamesEscaped) {
  SkillModelResult r = paired_result();
  r.skill = "<script>alert(\"x\")</script>";
  r.model = "m&m's";
  r.with_skill.batch_id = "b<1>";
  r.summary = Json::parse(R"({
    "arms": {"baseline": {"interval": [0.1, 0.9]}, "with_skill": {"interval": [0.5, 1.0],
             "not_run": 1}},
    "lift": {"lift": 0.5, "interval": [0.1, 0.9], "mcnemar_p": 0.25, "verdict": "improved<b>",
             "not_run_pairs": 1},
    "cases": [{"id": "<img src=x onerror=alert(1)>",
               "arms": {"baseline": {"passes": 0, "runs": 1, "failure": "</td><script>"},
                        "with_skill": {"passes": 0, "runs": 0, "not_run": 1,
                                       "not_run_reason": "no <CUDA>"}}},
              {"id": "ok", "arms": {"baseline": {"passes": 0, "runs": 0, "excluded": 1},
                                    "with_skill": {"passes": 2, "runs": 2}}}]})");
  const std::string html = render_runs_html({r});
  EXPECT_EQ(html.rfind("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">", 0), 0u);
  EXPECT_EQ(html.substr(html.size() - 15), "</body></html>\n");
  EXPECT_TRUE(has(html,
                  "<section><h2>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; "
                  "<small>· m&amp;m&apos;s</small></h2><p class=\"meta\">batch "
                  "b&lt;1&gt;</p>"))
      << html;
  EXPECT_FALSE(has(html, "<script")) << html;
  EXPECT_FALSE(has(html, "<img")) << html;
  EXPECT_FALSE(has(html, "<CUDA")) << html;
  EXPECT_TRUE(has(html,
                  "<p class=\"lift\">lift <b>+50%</b> [+10%, +90%] · McNemar p = 0.25 · "
                  "<b>improved&lt;b&gt;</b> · 1 not run pair left out of both arms</p>"))
      << html;
  EXPECT_TRUE(has(html,
                  "<tr><td><code>&lt;img src=x onerror=alert(1)&gt;</code></td>"
                  "<td class=\"fail\">0/1</td><td class=\"notrun\">not run</td>"
                  "<td><div><i>baseline</i>: &lt;/td&gt;&lt;script&gt;</div>"
                  "<div><i>with_skill</i>: not run: no &lt;CUDA&gt;</div></td></tr>"))
      << html;
  EXPECT_TRUE(has(html,
                  "<tr><td><code>ok</code></td><td class=\"notrun\">left out (pair not "
                  "run)</td><td class=\"pass\">2/2</td><td></td></tr>"))
      << html;
  // Rate bars: baseline 1/2 of 300 px in grey, with skill all of it in blue, with whiskers.
  EXPECT_TRUE(has(html,
                  "<rect class=\"bar\" data-arm=\"baseline\" x=\"90\" y=\"8\" width=\"150.0\" "
                  "height=\"22\" fill=\"#9ca3af\"/>"))
      << html;
  EXPECT_TRUE(has(html,
                  "<rect class=\"bar\" data-arm=\"with_skill\" x=\"90\" y=\"60\" width=\"300.0\" "
                  "height=\"22\" fill=\"#2563eb\"/>"))
      << html;
  EXPECT_TRUE(has(html, "<line x1=\"120.0\" y1=\"19.0\" x2=\"360.0\" y2=\"19.0\"")) << html;
  EXPECT_TRUE(has(html, "font-size=\"13\">100%</text>")) << html;
  // Under the with-skill bar, in the terminal's words: what was not run (no "left out" count in
  // this summary: as many as were not run).
  EXPECT_TRUE(has(html, "<text class=\"left-out\" data-arm=\"with_skill\" x=\"90\" y=\"97\""))
      << html;
  EXPECT_TRUE(has(html, ">1 not run</text>")) << html;
  // Token bars: the baseline's 120 tokens fill the width, the skill's 60 half of it.
  EXPECT_TRUE(has(html, "width=\"300.0\" height=\"18\" fill=\"#9ca3af\"/>")) << html;
  EXPECT_TRUE(has(html, "width=\"150.0\" height=\"18\" fill=\"#2563eb\"/>")) << html;
  // No tokens a trial in this summary: the run's total, labelled as one.
  EXPECT_TRUE(has(html, ">60 tokens (run total)</text>")) << html;
}

TEST(RunsHtml, EmptyAndWithoutIntervalsLiftOrCases) {
  const std::string empty = render_runs_html({});
  EXPECT_TRUE(has(empty, "<h1>upskill runs</h1><p>No evaluation runs found.</p></body>")) << empty;
  SkillModelResult r = paired_result();
  r.baseline.reset();
  r.summary = Json::object();
  const std::string html = render_runs_html({r});
  EXPECT_FALSE(has(html, "class=\"lift\"")) << html;
  EXPECT_FALSE(has(html, "<table>")) << html;
  EXPECT_FALSE(has(html, "#9ca3af\"/>")) << "no baseline bar without a baseline\n" << html;
  EXPECT_TRUE(has(html,
                  "<rect class=\"bar\" data-arm=\"with_skill\" x=\"90\" y=\"8\" width=\"300.0\" "
                  "height=\"22\" fill=\"#2563eb\"/>"))
      << html;
}

TEST(RunsHtml, AnArmMissingFromACaseKeepsItsColumn) {
  SkillModelResult r = paired_result();
  r.summary = Json::parse(R"({"cases": [
    {"id": "skill-only", "arms": {"with_skill": {"passes": 1, "runs": 1}}}]})");
  const std::string html = render_runs_html({r});
  // Four cells, as the header has four columns: the missing baseline is a cell of its own.
  EXPECT_TRUE(has(html,
                  "<tr><td><code>skill-only</code></td><td>-</td>"
                  "<td class=\"pass\">1/1</td><td></td></tr>"))
      << html;
}

// Logs from upskill itself have no batch_summary.json, and a summary may not list the model: the
// page renders from the runs alone. Nothing read from disk can make a renderer throw.
TEST_F(Runs, HtmlWithoutABatchSummaryOrWithoutTheModelInIt) {
  // Skill s: batch b1, no batch summary. Skill t: batch b2, whose summary lists another model.
  put("b1/run_1/run_result.json", run_result("b1", 1, "baseline", 1, 2, 100, 20));
  put("b1/run_2/run_result.json", run_result("b1", 2, "with_skill", 2, 2, 50, 10));
  Json t = run_result("b2", 1, "with_skill", 2, 2, 10, 1);
  t["skill_name"] = "t";
  put("b2/run_1/run_result.json", t);
  put("b2/batch_summary.json", Json::parse(R"({"summary": {"models": [{"name": "other"}]}})"));
  std::vector<std::string> problems;
  const auto runs = load_runs(dir, problems);
  ASSERT_TRUE(runs);
  const auto best = best_results(*runs, {}, dir);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_TRUE(best[0].summary.is_null());
  EXPECT_TRUE(best[1].summary.is_null());
  const std::string html = render_runs_html(best);
  EXPECT_EQ(html.substr(html.size() - 15), "</body></html>\n");
  EXPECT_TRUE(has(html, "<section><h2>s <small>· student</small></h2>")) << html;
  EXPECT_TRUE(has(html, "<section><h2>t <small>· student</small></h2>")) << html;
  // Bars from the runs themselves: b1's baseline 1/2 and with skill 2/2, b2's with skill 2/2.
  EXPECT_TRUE(has(html,
                  "<rect class=\"bar\" data-arm=\"baseline\" x=\"90\" y=\"8\" width=\"150.0\" "
                  "height=\"22\" fill=\"#9ca3af\"/>"))
      << html;
  EXPECT_TRUE(has(html,
                  "<rect class=\"bar\" data-arm=\"with_skill\" x=\"90\" y=\"8\" width=\"300.0\" "
                  "height=\"22\" fill=\"#2563eb\"/>"))
      << html;
  EXPECT_FALSE(has(html, "<line ")) << html;
  EXPECT_FALSE(has(html, "class=\"lift\"")) << html;
  EXPECT_FALSE(has(html, "<table>")) << html;
}

TEST(RunsHtml, SummaryFieldsOfAnotherShapeReadAsAbsent) {
  SkillModelResult r = paired_result();
  r.summary = Json::parse(R"({
    "arms": {"baseline": {"interval": [0.1]}, "with_skill": {"interval": "wide", "not_run": "2"}},
    "lift": {"lift": "big", "verdict": 3, "not_run_pairs": null},
    "cases": [7, {"id": 9, "arms": {"baseline": [], "with_skill": {"passes": "1", "runs": 1,
                                                                  "failure": {"why": 1}}}}]})");
  std::string html;
  ASSERT_NO_THROW(html = render_runs_html({r}));
  EXPECT_FALSE(has(html, "<line ")) << "no whiskers without an interval\n" << html;
  EXPECT_TRUE(has(html, "<p class=\"lift\">lift <b>+0%</b> · McNemar p = 1 · <b></b></p>")) << html;
  EXPECT_TRUE(has(html,
                  "<tr><td><code></code></td><td class=\"fail\">0/0</td>"
                  "<td class=\"fail\">0/1</td><td><div><i>with_skill</i>: "
                  "{&quot;why&quot;:1}</div></td></tr>"))
      << html;
  for (const Json& odd : {Json(), Json(3), Json::array({1}), Json::parse(R"({"arms": [],
       "lift": [], "cases": {}})")}) {
    r.summary = odd;
    ASSERT_NO_THROW(html = render_runs_html({r}));
    EXPECT_EQ(html.substr(html.size() - 15), "</body></html>\n");
  }

  // A record built without its raw JSON still renders as CSV.
  RunRecord bare = record("b1", "baseline", 0, 2, 5);
  bare.raw = Json();
  EXPECT_TRUE(has(render_runs_csv({bare}, {}),
                  "\nb1,1,student,task,,False,0,2,5,0,5,,,,,,,,,,,,baseline,s,,0.0000,,,,,,\n"));
}

TEST_F(Runs, RunFieldsOfAnotherShapeReadAsAbsent) {
  Json odd = run_result("b1", 2, "with_skill", 1, 2, 10, 1);
  odd["metadata"]["run_number"] = "2";
  odd["run_type"] = nullptr;  // as upskill's older logs may have it
  odd["passed"] = 1;
  odd["assertions_total"] = "2";
  odd["stats"] = "none";
  put("b1/run_2/run_result.json", odd);
  put("b1/run_3/run_result.json", Json::array({1, 2}));
  put("b1/batch_summary.json", Json::array());
  std::vector<std::string> problems;
  const auto runs = load_runs(dir, problems);
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 1u);
  const RunRecord& r = (*runs)[0];
  EXPECT_EQ(r.run_number, 0);
  EXPECT_EQ(r.run_type, "with_skill");
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.assertions_passed, 1);
  EXPECT_EQ(r.assertions_total, 0);
  EXPECT_EQ(r.tokens(), 0);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(has(problems[0], "b1/run_3/run_result.json: not a run result")) << problems[0];
  const auto best = best_results(*runs, {}, dir);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_TRUE(best[0].summary.is_null());
  EXPECT_NO_THROW(render_runs_html(best));
  EXPECT_NO_THROW(render_runs_csv(*runs, {}));
  EXPECT_NO_THROW(render_runs_terminal(best, false, false));
}

}  // namespace
}  // namespace upskill::report

namespace upskill::report {
namespace {

Json page_data(const std::string& html) {
  return testing::report_page_data(html);
}

// The report's trials: each with its prompt, answer, checks and a kernel check's stages; hostile
// text never markup — the data escapes every '<', and the page draws texts as text.
TEST(RunsHtmlTrials, PromptAnswerChecksAndKernelStages) {
  checks::KernelCheckDetails kernel;
  checks::StageReport compile;
  compile.stage = cases::KernelStage::compile;
  compile.status = checks::Status::passed;
  compile.seconds = 4.2;
  compile.details = {{"ptxas", {{"kernel", "rmsnorm"}, {"registers", 32}, {"spills", 0}}}};
  checks::StageReport correct;
  correct.stage = cases::KernelStage::correct;
  correct.status = checks::Status::not_run;
  correct.reason = "no CUDA device";
  kernel.stages = {compile, correct};
  Json entry = {{"id", "rms"},
                {"input", "Write <b>RMSNorm</b>"},
                {"status", "not run"},
                {"score", 1.0},
                {"answer", "</pre></script><script>alert(1)</script><!--"},
                {"tokens", {{"input_tokens", 10}, {"output_tokens", 5}}},
                {"checks", Json::array({{{"type", "kernel"},
                                         {"status", "not run"},
                                         {"expected", "kernel pipeline passes"},
                                         {"found", ""},
                                         {"reason", "CUDA stages not run"},
                                         {"details", checks::to_json(kernel)}}})}};
  RunRecord run;
  run.dir = "/runs/b<1>/run_1";
  run.batch_id = "b<1>";
  run.run_number = 1;
  run.model = "student";
  run.skill = "k";
  run.run_type = "with_skill";
  run.raw = {{"metadata", {{"run_index", 0}}}, {"cases", Json::array({entry})}};
  BatchRecord batch{
      "/runs/b<1>", "b<1>",  "k",   {"student"},
      {run},        nullptr, false, "incomplete: 1 of 2 trials unanswered — first cause: <x>"};
  const std::string html = render_runs_html({}, {batch});
  // The data is one JSON text in which nothing can end the element or open a comment.
  const auto data_at = html.find("id=\"upskill-data\">");
  ASSERT_NE(data_at, std::string::npos) << html;
  const std::string data_text = html.substr(data_at, html.find("</script>", data_at) - data_at);
  EXPECT_EQ(data_text.find("</"), std::string::npos);
  EXPECT_EQ(data_text.find("<!"), std::string::npos);
  EXPECT_NE(data_text.find("<b>RMSNorm"), std::string::npos) << "other '<' are kept as they are";
  const Json data = page_data(html);
  ASSERT_EQ(data["batches"].size(), 1u);
  const Json& b = data["batches"][0];
  EXPECT_EQ(b["id"], "b<1>");
  EXPECT_EQ(b["models"], Json::array({"student"}));
  EXPECT_EQ(b["cases"][0]["p"], "Write <b>RMSNorm</b>");
  ASSERT_EQ(b["trials"].size(), 1u);
  const Json& t = b["trials"][0];
  EXPECT_EQ(t["a"], 1);
  EXPECT_EQ(t["o"], "not run");
  EXPECT_EQ(t["tk"], 15);
  EXPECT_EQ(t["ans"], entry["answer"]);
  EXPECT_NE(t["why"].get<std::string>().find("kernel pipeline passes: CUDA stages not run"),
            std::string::npos);
  const std::string checks_html = t["chk"].get<std::string>();
  for (const char* part :
       {"<table class=\"stages\">", "<td>compile</td><td class=\"pass\">passed</td><td>4.2</td>",
        "<td>correct</td><td class=\"notrun\">not run</td><td>—</td><td>no CUDA device",
        "&quot;registers&quot;: 32"})
    EXPECT_NE(checks_html.find(part), std::string::npos) << part << "\n" << checks_html;
  // The batch is listed, labelled, folded; hostile names escaped.
  EXPECT_NE(
      html.find("<details class=\"batch\" data-b=\"0\"><summary><b>b&lt;1&gt;</b> · 1 trial · "
                "student: — · <span class=\"warn\">incomplete: 1 of 2 trials unanswered — "
                "first cause: &lt;x&gt;</span></summary>"),
      std::string::npos)
      << html;
  EXPECT_NE(html.find("<input id=\"q\" type=\"search\""), std::string::npos);
  // The data element runs to the first "</script>" (the answer came back whole from it, above),
  // and the next element is the page's own script: nothing the answer carried became markup.
  const auto data_end = html.find("</script>", data_at);
  EXPECT_EQ(html.substr(data_end, 25), "</script><script>\n\"use st");
}

// A batch stopped before its summary was first written — a plan and some trial lines, in its
// baseline runs only — is neither shown as complete nor left out: the logs say what is missing.
TEST_F(Runs, ABatchStoppedEarlyIsIncompleteByItsLogsAndStillListed) {
  const Json plan = {
      {"skill", "s"},
      {"models", Json::array({{{"name", "student"}, {"model", "student"}}})},
      {"runs", 1},
      {"baseline", true},
      {"cases", Json::array({{{"id", "a"}, {"input", "x"}, {"expected", {{"contains", "y"}}}},
                             {{"id", "b"}, {"input", "z"}, {"expected", {{"contains", "y"}}}}})},
      {"seed", 1},
      {"plan_hash", "h"}};
  put("b1/plan.json", plan);
  tmp.write("runs/b1/trials.jsonl", Json{{"id", "a"},
                                         {"completed", true},
                                         {"status", "failed"},
                                         {"model", "student"},
                                         {"run_type", "baseline"},
                                         {"run_index", 0},
                                         {"run_number", 1},
                                         {"case_index", 0}}
                                            .dump() +
                                        "\n");
  std::vector<std::string> problems;
  const auto runs = load_runs(dir, problems);
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 1u);
  ASSERT_TRUE((*runs)[0].batch_completeness);
  EXPECT_EQ((*runs)[0].batch_completeness->planned, 4);
  EXPECT_EQ((*runs)[0].batch_completeness->missing, 3);
  const auto batches = group_batches(*runs, {});
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].complete, std::optional<bool>(false));
  EXPECT_EQ(batches[0].note,
            "incomplete: 3 of 4 trials unanswered — first cause: 3 trial(s) never "
            "ran (the batch was stopped before they ran)");
  EXPECT_TRUE(best_results(*runs, {}, dir).empty());  // nothing to pair yet, but …
  EXPECT_EQ(render_unpaired_batches(batches),
            "s  (batch b1): no with-skill run logged; " + batches[0].note + "\n");
  // … and the page lists it, labelled.
  EXPECT_NE(render_runs_html({}, batches).find("<span class=\"warn\">incomplete: 3 of 4"),
            std::string::npos);
}

// A lift the summary says was not computed is not drawn as a number; a partial one says so; an
// arm with only errors shows "error", not 0/0.
TEST(RunsHtml, ALiftNotComputedIsNoNumberAndErrorsAreNoRate) {
  SkillModelResult r = paired_result();
  r.summary =
      Json::parse(R"({"lift": {"computed": false, "not_computed": "neither arm has a scored trial",
    "lift": null, "mcnemar_p": null},
    "cases": [{"id": "c", "arms": {"baseline": {"passes": 0, "runs": 0, "errors": 2},
                                   "with_skill": {"passes": 0, "runs": 0, "errors": 1}}}]})");
  std::string html = render_runs_html({r});
  EXPECT_NE(html.find("<p class=\"lift\">lift not computed: neither arm has a scored trial</p>"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("lift <b>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td class=\"fail\">error ×2</td><td class=\"fail\">error</td>"),
            std::string::npos)
      << html;
  r.summary = Json::parse(R"({"lift": {"computed": true, "partial": true, "lift": 0.5,
    "interval": [0.1, 0.9], "mcnemar_p": 0.25, "verdict": "inconclusive"}})");
  html = render_runs_html({r});
  EXPECT_NE(html.find("lift <b>+50%</b> [+10%, +90%] (partial) · McNemar p = 0.25"),
            std::string::npos)
      << html;
}

// Every trial of every run of every batch is in the page, batches grouped by skill and labelled.
TEST_F(Runs, EveryTrialOfEveryRunOfEveryBatchIsInThePage) {
  auto with_cases = [](Json r, int run_index, const std::string& outcome) {
    r["metadata"]["run_index"] = run_index;
    r["cases"] = Json::array({{{"id", "c1"},
                               {"input", "task 1"},
                               {"status", outcome},
                               {"completed", true},
                               {"answer", "answer " + outcome}},
                              {{"id", "c2"}, {"input", "task 2"}, {"completed", false}}});
    return r;
  };
  // Batch b1: three runs of each arm; batch b2 (another skill): one run, with an error.
  for (int run = 0; run < 3; ++run) {
    put(fmt::format("b1/run_{}/run_result.json", 2 * run + 1),
        with_cases(run_result("b1", 2 * run + 1, "baseline", 0, 2, 10, 1), run, "failed"));
    put(fmt::format("b1/run_{}/run_result.json", 2 * run + 2),
        with_cases(run_result("b1", 2 * run + 2, "with_skill", 1, 2, 10, 1), run, "passed"));
  }
  Json other = run_result("b2", 1, "with_skill", 0, 1, 10, 1);
  other["skill_name"] = "t";
  other["cases"] = Json::array({{{"id", "x"},
                                 {"input", "task x"},
                                 {"completed", true},
                                 {"error", {{"kind", "auth"}, {"message", "HTTP 401"}}}}});
  put("b2/run_1/run_result.json", other);
  put("b2/batch_summary.json",
      Json::parse(
          R"({"summary": {"complete": false, "incomplete": {"note": "incomplete: 1 of 1 trials unanswered"}}})"));
  std::vector<std::string> problems;
  const auto runs = load_runs(dir, problems);
  ASSERT_TRUE(runs);
  const auto batches = group_batches(*runs, {});
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].runs.size(), 6u);
  EXPECT_EQ(batches[1].complete, std::optional<bool>(false));
  const std::string html = render_runs_html(best_results(*runs, {}, dir), batches);
  const Json data = page_data(html);
  ASSERT_EQ(data["batches"].size(), 2u);
  EXPECT_EQ(data["batches"][0]["runs"], 3);
  EXPECT_EQ(data["batches"][0]["trials"].size(), 12u);  // 2 cases × 3 runs × 2 arms
  std::map<std::string, int> outcomes;
  for (const auto& t : data["batches"][0]["trials"]) ++outcomes[t["o"].get<std::string>()];
  EXPECT_EQ(outcomes, (std::map<std::string, int>{{"failed", 3}, {"passed", 3}, {"never ran", 6}}));
  EXPECT_EQ(data["batches"][1]["trials"][0]["o"], "error");
  EXPECT_EQ(data["batches"][1]["trials"][0]["err"], "HTTP 401");
  EXPECT_NE(html.find("<div class=\"skill\"><h3>s</h3><details class=\"batch\" data-b=\"0\">"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<span class=\"warn\">incomplete: 1 of 1 trials unanswered</span>"),
            std::string::npos);
  // A filter keeps only the batches (and runs) it names.
  EXPECT_EQ(group_batches(*runs, {{"t"}, {}}).size(), 1u);
}

}  // namespace
}  // namespace upskill::report
