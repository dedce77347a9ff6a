// `upskill eval` against our scripted server: exact pass rates, tokens, lift, p-values, files,
// gates, repeats, several models, faults and --resume.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "scripted_server.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"
#include "upskill/core/text.hpp"
#include "upskill/kernel/toolchain.hpp"
#include "upskill/report/eval_report.hpp"

namespace upskill {
namespace {

using testing::CliRun;
using testing::read_file;
using testing::ScriptedServer;
using testing::shell_quote;
using testing::TempDir;

// Seven cases; with the skill the student answers all right, without it only `shared` is right.
Json student_script(Json faults_for_c3 = Json::array()) {
  Json rules = Json::array();
  for (int i = 1; i <= 7; ++i) {
    const std::string id = i == 7 ? "shared" : "c" + std::to_string(i);
    Json skill_rule = {
        {"name", "skill-" + id},
        {"match", {{"any_message", "## Skill: demo"}, {"message", "^task " + id + "$"}}},
        {"reply",
         {{"content", "answer with MAGIC-" + id},
          {"usage", {{"prompt_tokens", 200}, {"completion_tokens", 30}, {"cached_tokens", 50}}}}}};
    if (id == "c3") skill_rule["faults"] = faults_for_c3;
    rules.push_back(skill_rule);
    rules.push_back({{"name", "base-" + id},
                     {"match", {{"message", "^task " + id + "$"}}},
                     {"reply",
                      {{"content", id == "shared" ? "MAGIC-shared" : "no idea"},
                       {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 60}}}}}});
  }
  return {{"rules", rules}};
}

// Whether this machine can run CUDA kernels (then nothing is "not run" for want of a device).
bool has_cuda_device() {
  const auto tools = kernel::probe_toolchain_cached(kernel::default_python(std::nullopt),
                                                    UPSKILL_TEST_KERNEL_CACHE);
  EXPECT_TRUE(tools) << tools.error().message;
  return tools && tools->torch.cuda_device;
}

class EvalCli : public ::testing::Test {
 protected:
  TempDir tmp;
  void SetUp() override {
    tmp.write("demo/SKILL.md",
              "---\nname: demo\ndescription: Demo skill. Use when testing.\n---\nSay MAGIC.\n");
    Json tests = Json::array();
    for (int i = 1; i <= 7; ++i) {
      const std::string id = i == 7 ? "shared" : "c" + std::to_string(i);
      tests.push_back(
          {{"id", id}, {"input", "task " + id}, {"expected", {{"contains", "magic-" + id}}}});
    }
    tmp.write("demo/skill_meta.json", Json{{"metadata", Json::object()}, {"tests", tests}}.dump(2));
  }
  void config_for(const ScriptedServer& a, const ScriptedServer* b = nullptr) {
    // Retries 10 ms apart, not 1 s: the fault tests need retries, not real backoff.
    std::string yaml =
        "runs_dir: runs\nretry_delay_s: 0.01\nmodels:\n  student:\n    provider: generic\n"
        "    base_url: " +
        a.base_url() +
        "\n    model: student-7b\n    prices: {input: 1, output: 2, cached_input: 0.5}\n";
    if (b)
      yaml += "  other:\n    provider: generic\n    base_url: " + b->base_url() +
              "\n    model: other-1b\n";
    tmp.write("upskill.config.yaml", yaml);
  }
  CliRun run(const std::vector<std::string>& args) {
    return testing::run_cli(tmp.path(), "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG",
                            UPSKILL_BINARY, args, tmp.path());
  }
  Json json(const std::string& rel) { return Json::parse(read_file(tmp / rel)); }
  std::string batch_dir() {
    for (const auto& e : std::filesystem::directory_iterator(tmp / "runs"))
      return e.path().string();
    return {};
  }
};

TEST_F(EvalCli, ExactNumbersInTerminalJsonJunitMarkdownAndRunLogs) {
  ScriptedServer server(student_script());
  server.start();
  config_for(server);
  auto r = run({"eval", "demo", "-m", "student", "-v", "--json", "out.json", "--junit", "out.xml",
                "--summary-md", "sum.md"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  // Terminal: bars, rates, intervals, lift, p-value.
  EXPECT_NE(r.out.find("baseline    ███░░░░░░░░░░░░░░░░░  14%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("with skill  ████████████████████ 100%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lift +86%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("6 gained, 0 lost · McNemar p = 0.0313 · improved"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("c1"), std::string::npos);
  const Json j = json("out.json");
  EXPECT_EQ(j["schema"], "upskill.eval/1");
  const Json& m = j["models"][0];
  EXPECT_EQ(m["reported_models"], Json::array({"student-7b"}));
  EXPECT_NEAR(m["arms"]["baseline"]["pass_rate"].get<double>(), 1.0 / 7, 1e-12);
  EXPECT_EQ(m["arms"]["with_skill"]["pass_rate"], 1.0);
  EXPECT_NEAR(m["arms"]["with_skill"]["interval"][0].get<double>(), 0.6457, 5e-4);  // Wilson 7/7
  EXPECT_EQ(m["arms"]["with_skill"]["tokens"]["input_tokens"],
            7 * 200);  // the server's figures, exactly
  EXPECT_EQ(m["arms"]["with_skill"]["tokens"]["output_tokens"], 7 * 30);
  EXPECT_EQ(m["arms"]["with_skill"]["tokens"]["cached_tokens"], 7 * 50);
  EXPECT_EQ(m["arms"]["baseline"]["tokens"]["input_tokens"], 7 * 100);
  EXPECT_NEAR(m["arms"]["with_skill"]["cost_usd"].get<double>(),
              7 * (150 * 1 + 50 * 0.5 + 30 * 2) / 1e6, 1e-12);
  EXPECT_EQ(m["arms"]["with_skill"]["assertions_passed"], 7);
  EXPECT_NEAR(m["lift"]["lift"].get<double>(), 6.0 / 7, 1e-12);
  EXPECT_NEAR(m["lift"]["mcnemar_p"].get<double>(), 0.03125, 1e-12);
  EXPECT_EQ(m["lift"]["paired"]["with_only"], 6);
  EXPECT_EQ(m["lift"]["paired"]["both"], 1);
  EXPECT_EQ(m["lift"]["significant"], true);
  EXPECT_EQ(m["lift"]["is_beneficial"], true);
  EXPECT_GT(m["lift"]["interval"][0].get<double>(), 0.0);
  // JUnit: failures for the baseline's wrong answers, no errors, well-formed counts.
  const std::string xml = read_file(tmp / "out.xml");
  EXPECT_NE(
      xml.find("<testsuites name=\"upskill eval demo\" tests=\"14\" failures=\"6\" errors=\"0\""),
      std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure type=\"assertion\""), std::string::npos);
  const std::string validate =
      "xmllint --noout --schema " +
      shell_quote(std::string(UPSKILL_SOURCE_DIR) + "/tests/data/junit.xsd") + " " +
      shell_quote((tmp / "out.xml").string()) + " > /dev/null 2>&1";
  EXPECT_EQ(std::system(validate.c_str()), 0)
      << "the JUnit file does not validate against tests/data/junit.xsd";
  const std::string md = read_file(tmp / "sum.md");
  EXPECT_NE(md.find("| student | with skill | 100% |"), std::string::npos) << md;
  EXPECT_LT(md.size(), 1024u * 1024u);
  // Run logs in upskill's layout.
  const std::string batch = batch_dir();
  ASSERT_FALSE(batch.empty());
  // YYYY_MM_DD_HH_MM_SS_xxxxxx: the time, then the random part that keeps batches apart.
  EXPECT_EQ(std::filesystem::path(batch).filename().string().size(), 26u);
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(batch) / "batch.lock"));
  const Json baseline =
      Json::parse(read_file(std::filesystem::path(batch) / "run_1/run_result.json"));
  EXPECT_EQ(baseline["run_type"], "baseline");
  EXPECT_EQ(baseline["assertions_passed"], 1);
  EXPECT_EQ(baseline["assertions_total"], 7);
  EXPECT_EQ(baseline["passed"], false);
  const Json with = Json::parse(read_file(std::filesystem::path(batch) / "run_2/run_result.json"));
  EXPECT_EQ(with["run_type"], "with_skill");
  EXPECT_EQ(with["passed"], true);  // upskill: a with-skill run passes when the skill is beneficial
  EXPECT_EQ(with["stats"]["input_tokens"], 1400);
  const std::string csv = read_file(std::filesystem::path(batch) / "results.csv");
  EXPECT_EQ(
      csv.rfind(
          "batch_id,run_number,model,task,timestamp,passed,assertions_passed,assertions_total,"
          "input_tokens,output_tokens,total_tokens,conversation_span_ms,llm_time_ms,tool_time_ms,"
          "turns,"
          "tool_calls,tool_errors,mcp_calls,execute_calls,error_message,session_id,session_history_"
          "file",
          0),
      0u);
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(batch) / "batch_summary.json"));
  EXPECT_EQ(server.request_count(), 14u);
}

TEST_F(EvalCli, GatesDecideTheExitCode) {
  ScriptedServer server(student_script());
  server.start();
  config_for(server);
  auto strict = run({"eval", "demo", "-m", "student", "--no-log-runs", "--min-lift", "0.95"});
  EXPECT_EQ(strict.code, 1) << strict.out;
  EXPECT_NE(strict.out.find("gate --min-lift +95%: FAILED"), std::string::npos) << strict.out;
  EXPECT_NE(strict.out.find("lower bound"), std::string::npos);
  auto fail_under = run(
      {"eval", "demo", "-m", "student", "--no-log-runs", "--no-baseline", "--fail-under", "0.9"});
  EXPECT_EQ(fail_under.code, 0) << fail_under.out;
  auto no_baseline_lift =
      run({"eval", "demo", "-m", "student", "--no-log-runs", "--no-baseline", "--min-lift", "0.1"});
  EXPECT_EQ(no_baseline_lift.code, 1);
  EXPECT_FALSE(std::filesystem::exists(tmp / "runs"));
}

TEST_F(EvalCli, RepeatsAndTwoModels) {
  ScriptedServer a(student_script()), b(student_script());
  a.start();
  b.start();
  config_for(a, &b);
  auto r = run({"eval", "demo", "-m", "student", "-m", "other", "--runs", "3", "--baseline",
                "--json", "out.json", "--no-log-runs"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const Json j = json("out.json");
  ASSERT_EQ(j["models"].size(), 2u);
  EXPECT_EQ(j["runs"], 3);
  EXPECT_EQ(j["models"][1]["name"], "other");
  EXPECT_EQ(j["models"][0]["arms"]["with_skill"]["trials"], 21);
  EXPECT_EQ(j["models"][0]["cases"][0]["arms"]["with_skill"]["pass_at_k"], 1.0);
  EXPECT_EQ(j["models"][0]["cases"][0]["arms"]["baseline"]["pass_hat_k"], 0.0);
  EXPECT_EQ(a.request_count(), 42u);  // repeats are separate requests
  EXPECT_EQ(b.request_count(), 42u);
}

TEST_F(EvalCli, FaultsAreRetriedAndPermanentFailuresCanBeResumed) {
  // c3 with the skill fails 5 times with 503: more than the retries allow.
  Json faults = Json::array();
  for (int i = 0; i < 5; ++i) faults.push_back({{"type", "status"}, {"status", 503}});
  {
    ScriptedServer broken(student_script(faults));
    const int port = broken.start();
    config_for(broken);
    auto r = run({"eval", "demo", "-m", "student", "--json", "partial.json"});
    EXPECT_EQ(r.code, 3) << r.out << r.err;
    EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
    const Json j = json("partial.json");
    EXPECT_EQ(j["errors"], 1);
    EXPECT_EQ(j["models"][0]["arms"]["with_skill"]["errors"], 1);
    EXPECT_EQ(j["models"][0]["arms"]["with_skill"]["trials"], 6);  // the failed trial is not scored
    broken.stop();
    ScriptedServer healthy(student_script());
    ASSERT_EQ(healthy.start(port), port);
    const std::string batch = std::filesystem::path(batch_dir()).filename().string();
    auto resumed = run({"eval", "demo", "-m", "student", "--resume", batch, "--json", "full.json"});
    EXPECT_EQ(resumed.code, 0) << resumed.out << resumed.err;
    EXPECT_EQ(healthy.request_count(), 1u);  // only the errored trial ran again
    const Json full = json("full.json");
    EXPECT_EQ(full["errors"], 0);
    EXPECT_EQ(full["models"][0]["arms"]["with_skill"]["pass_rate"], 1.0);
    EXPECT_NEAR(full["models"][0]["lift"]["mcnemar_p"].get<double>(), 0.03125, 1e-12);
  }
}

TEST_F(EvalCli, ExampleCiScriptGatesOnLift) {
  ScriptedServer server(student_script());
  server.start();
  config_for(server);
  const std::string script = std::string(UPSKILL_SOURCE_DIR) + "/examples/ci/check-skill-lift.sh";
  auto gate = [&](const std::string& min_lift) {
    const std::string cmd = "cd " + shell_quote(tmp.path().string()) +
                            " && UPSKILL=" + shell_quote(UPSKILL_BINARY) + " " +
                            shell_quote(script) + " demo student " + min_lift + " > .out 2>&1";
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(gate("0.1"), 0) << read_file(tmp / ".out");
  EXPECT_TRUE(std::filesystem::exists(tmp / "upskill-junit.xml"));
  EXPECT_EQ(gate("0.99"), 1) << read_file(tmp / ".out");
  EXPECT_NE(read_file(tmp / ".out").find("gate FAILED"), std::string::npos);
}

// The committed cassette gates the flagship skill with no model and no network; its kernel
// answers are still built and checked (the cache is shared with the kernel tests).
TEST_F(EvalCli, OfflineCassetteGate) {
  const std::string root = UPSKILL_SOURCE_DIR;
  const std::string cmd =
      "cd " + shell_quote(tmp.path().string()) + " && UPSKILL=" + shell_quote(UPSKILL_BINARY) +
      " UPSKILL_CONFIG=" + shell_quote(root + "/examples/ci/offline.config.yaml") +
      " UPSKILL_REPLAY=" + shell_quote(root + "/examples/cassettes/flagship-student.jsonl") +
      " UPSKILL_CACHE_DIR=" + shell_quote(UPSKILL_TEST_KERNEL_CACHE) + " " +
      shell_quote(root + "/examples/ci/check-skill-lift.sh") + " " +
      shell_quote(root + "/skills/kernel-builder-cuda-kernels") + " student 0.1 > .out 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << read_file(tmp / ".out");
  const Json result = json("upskill-eval.json");
  const Json& lift = result["models"][0]["lift"];
  if (has_cuda_device()) {
    EXPECT_EQ(lift["not_run_pairs"], 0);
    EXPECT_EQ(result["models"][0]["arms"]["with_skill"]["cases"], 12);
    return;
  }
  // Without a CUDA device the five CUDA cases are not run (in at least one arm each), so they are
  // left out of both arms with their pairs: the lift is measured on the seven other cases.
  EXPECT_EQ(lift["not_run_pairs"], 5);
  EXPECT_NEAR(lift["lift"].get<double>(), 5.0 / 7, 1e-9);
  EXPECT_EQ(result["models"][0]["arms"]["with_skill"]["cases"], 7);
  EXPECT_EQ(result["models"][0]["arms"]["baseline"]["cases"], 7);
}

TEST_F(EvalCli, AgentModeChecksTheWorkspaceAndCountsTools) {
  // With the skill the agent writes the file; without it, it only talks.
  ScriptedServer server(Json::parse(R"({"rules": [
    {"match": {"any_message": "## Skill: demo", "turn": 1}, "reply": {"tool_calls": [
        {"name": "write_file", "arguments": {"path": "out/answer.txt", "content": "MAGIC"}},
        {"name": "run", "arguments": {"command": "test -f out/answer.txt"}}],
      "usage": {"prompt_tokens": 100, "completion_tokens": 20}}},
    {"match": {"turn": 2}, "reply": {"content": "done", "usage": {"prompt_tokens": 150, "completion_tokens": 5}}},
    {"match": {"turn": 1}, "reply": {"content": "I would write a file.", "usage": {"prompt_tokens": 60, "completion_tokens": 9}}}]})"));
  server.start();
  config_for(server);
  tmp.write("agent.json",
            R"([{"id": "write", "input": "Write MAGIC to out/answer.txt", "mode": "agent",
    "checks": [{"type": "file_contains", "path": "out/answer.txt", "value": "MAGIC"},
               {"type": "command", "run": "grep -q MAGIC out/answer.txt"}]}])");
  auto r = run({"eval", "demo", "-m", "student", "-t", "agent.json", "--allow-run", "--json",
                "agent-out.json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const Json j = json("agent-out.json");
  const Json& m = j["models"][0];
  EXPECT_EQ(m["arms"]["with_skill"]["pass_rate"], 1.0);
  EXPECT_EQ(m["arms"]["baseline"]["pass_rate"], 0.0);
  EXPECT_EQ(m["arms"]["with_skill"]["tokens"]["input_tokens"], 250);  // both turns
  const Json with =
      Json::parse(read_file(std::filesystem::path(batch_dir()) / "run_2/run_result.json"));
  EXPECT_EQ(with["stats"]["turns"], 2);
  EXPECT_EQ(with["stats"]["tool_calls"], 2);
  EXPECT_EQ(with["stats"]["execute_calls"], 1);
  EXPECT_EQ(with["stats"]["tool_call_map"]["write_file"], 1);
  EXPECT_EQ(with["stats"]["tool_errors"], 0);
  EXPECT_EQ(with["cases"][0]["mode"], "agent");
}

TEST_F(EvalCli, RunsShowsBarsCsvAndAnHtmlPageThatRendersInChromium) {
  ScriptedServer server(student_script());
  server.start();
  config_for(server);
  ASSERT_EQ(run({"eval", "demo", "-m", "student"}).code, 0);
  auto r = run({"runs", "--csv", "all.csv", "--html", "report.html"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("demo\n  student"), std::string::npos) << r.out;
  // eval's own lines: the rate with its interval, tokens a trial, the lift.
  EXPECT_NE(r.out.find("    with skill  ████████████████████ 100%  [65%, 100%]"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    lift +86% "), std::string::npos) << r.out;
  const std::string csv = read_file(tmp / "all.csv");
  EXPECT_EQ(
      csv.rfind(
          "batch_id,run_number,model,task,timestamp,passed,assertions_passed,assertions_total,", 0),
      0u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  auto tokens = run({"runs", "--metric", "tokens", "-m", "student"});
  EXPECT_NE(tokens.out.find("230 tokens/trial (+44%)"), std::string::npos) << tokens.out;
  EXPECT_NE(run({"runs", "-m", "nobody"}).out.find("No evaluation runs found"), std::string::npos);
  EXPECT_EQ(run({"runs", "-d", "missing-dir"}).code, 2);

  const std::string html = read_file(tmp / "report.html");
  EXPECT_EQ(html.find("http://"),
            html.find("http://www.w3.org/2000/svg"));  // nothing loaded from a network
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("why it failed"), std::string::npos);
  EXPECT_NE(html.find("magic-c1"), std::string::npos);  // per-case failure reasons
  // Render it headless and count the chart's blue pixels in the screenshot.
  const std::string shot = (tmp / "report.png").string();
  const std::string cmd =
      "chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync --user-data-dir=" +
      shell_quote((tmp / "chrome-profile").string()) +
      " --window-size=1000,700 --screenshot=" + shell_quote(shot) + " " +
      shell_quote("file://" + (tmp / "report.html").string()) + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "headless Chromium could not render the page";
  const std::string count_cmd =
      "python3 " + shell_quote(std::string(UPSKILL_SOURCE_DIR) + "/tests/support/png_pixels.py") +
      " " + shell_quote(shot) + " 2563eb > " + shell_quote((tmp / "blue.txt").string());
  ASSERT_EQ(std::system(count_cmd.c_str()), 0);
  EXPECT_GT(std::stoi(read_file(tmp / "blue.txt")), 5000);  // the with-skill bars are drawn

  // A second batch of three runs: the page holds every trial of both batches, and its search,
  // run by the real browser, finds them (the page's script writes the count into the DOM).
  ASSERT_EQ(run({"eval", "demo", "-m", "student", "--runs", "3", "--baseline"}).code, 0);
  ASSERT_EQ(run({"runs", "--html", "report.html"}).code, 0);
  auto search = [&](const std::string& query) {
    const std::string dom = (tmp / "dom.html").string();
    const std::string open =
        "chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
        "--disable-background-networking --disable-component-update --disable-sync "
        "--user-data-dir=" +
        shell_quote((tmp / "chrome-profile").string()) + " --dump-dom " +
        shell_quote("file://" + (tmp / "report.html").string() + "#q=" + query) + " > " +
        shell_quote(dom) + " 2>/dev/null";
    EXPECT_EQ(std::system(open.c_str()), 0);
    const std::string text = read_file(dom);
    const auto at = text.find("data-results=\"");
    return at == std::string::npos ? std::string("none")
                                   : text.substr(at + 14, text.find('"', at + 14) - at - 14);
  };
  EXPECT_EQ(search("magic-c1"), "8");  // case c1's trials: 2 in the first batch, 6 in the second
  EXPECT_EQ(search("outcome:failed%20arm:baseline"), "24");  // c1..c6 without the skill, 4 runs
  EXPECT_NE(read_file(tmp / "report.html").find("<details class=\"batch\""), std::string::npos);
}

TEST_F(EvalCli, BenchmarkRepeatsThreeTimesAndNeedsModels) {
  ScriptedServer server(student_script());
  server.start();
  config_for(server);
  EXPECT_EQ(run({"benchmark", "demo"}).code, 2);  // -m is required
  auto r = run({"benchmark", "demo", "-m", "student", "--json", "bench.json", "--no-log-runs"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(json("bench.json")["runs"], 3);
  EXPECT_EQ(server.request_count(), 21u);  // the skill arm only, as upskill's benchmark
  EXPECT_EQ(json("bench.json")["models"][0]["arms"].count("baseline"), 0u);
  EXPECT_NE(r.err.find("note: benchmark mode (upskill benchmark)"), std::string::npos) << r.err;
  // --baseline asks for the other arm and the lift.
  auto both = run(
      {"benchmark", "demo", "-m", "student", "--baseline", "--json", "both.json", "--no-log-runs"});
  ASSERT_EQ(both.code, 0) << both.out << both.err;
  EXPECT_EQ(server.request_count(), 21u + 42u);
  EXPECT_TRUE(json("both.json")["models"][0]["arms"].contains("baseline"));
  EXPECT_EQ(run({"eval", "demo", "--baseline", "--no-baseline"}).code, 2);
}

// upskill's benchmark mode: several models or --runs > 1 run the skill arm only, unless --baseline;
// one model and one run keep both arms; --dry-run shows what was decided.
TEST_F(EvalCli, SeveralModelsOrRunsAreUpstreamsBenchmarkMode) {
  ScriptedServer a(student_script()), b(student_script());
  a.start();
  b.start();
  config_for(a, &b);
  auto plan = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"eval", "demo", "--dry-run"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return Json::parse(r.out)["request"]["baseline"].get<bool>();
  };
  EXPECT_TRUE(plan({"-m", "student"}));
  EXPECT_FALSE(plan({"-m", "student", "--runs", "2"}));
  EXPECT_FALSE(plan({"-m", "student", "-m", "other"}));
  EXPECT_TRUE(plan({"-m", "student", "-m", "other", "--baseline"}));
  EXPECT_FALSE(plan({"-m", "student", "--no-baseline"}));
  // --min-lift gates on the lift: it asks for the baseline itself.
  EXPECT_TRUE(plan({"-m", "student", "--runs", "2", "--min-lift", "0.1"}));
  auto r =
      run({"eval", "demo", "-m", "student", "-m", "other", "--json", "two.json", "--no-log-runs"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("several models or --runs > 1"), std::string::npos) << r.err;
  EXPECT_EQ(a.request_count() + b.request_count(), 14u);  // 7 cases, one arm, two models
}

TEST_F(EvalCli, KilledRunLeavesValidFilesAndResumeGivesTheSameTotals) {
  // Reference: one uninterrupted run.
  {
    ScriptedServer server(student_script());
    server.start();
    config_for(server);
    ASSERT_EQ(run({"eval", "demo", "-m", "student", "-j", "1", "--json", "reference.json",
                   "--runs-dir", "ref-runs"})
                  .code,
              0);
  }
  // Every answer takes 250 ms; kill -9 the run part-way through.
  Json slow = student_script();
  for (auto& rule : slow["rules"]) {
    rule["faults"] = Json::array();
    for (int i = 0; i < 2; ++i)
      rule["faults"].push_back({{"type", "slow_first_byte"}, {"delay_ms", 250}});
  }
  ScriptedServer server(slow);
  const int port = server.start();
  config_for(server);
  const std::string cmd =
      "cd " + shell_quote(tmp.path().string()) + " || exit 1; (" + shell_quote(UPSKILL_BINARY) +
      " eval demo -m student -j 1 > /dev/null 2>&1 & pid=$!; sleep 1.6; kill -9 $pid; wait $pid)"
      " > /dev/null 2>&1";
  std::system(cmd.c_str());
  const std::string batch = batch_dir();
  ASSERT_FALSE(batch.empty()) << "nothing was saved before the kill";
  // Every file is valid JSON (trials.jsonl: every line). A kill in the middle of an atomic write
  // may leave its hidden temporary file, which the resume below removes.
  int files = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(batch)) {
    if (f.path().filename().string().front() == '.') continue;
    if (f.path().extension() == ".jsonl") {
      std::istringstream lines(read_file(f.path()));
      for (std::string line; std::getline(lines, line);)
        EXPECT_TRUE(Json::accept(line)) << f.path() << ": " << line;
    } else if (f.path().extension() != ".json") {
      continue;
    } else {
      EXPECT_TRUE(Json::accept(read_file(f.path()))) << f.path();
    }
    ++files;
  }
  EXPECT_GT(files, 0);
  server.stop();
  ScriptedServer healthy(student_script());
  ASSERT_EQ(healthy.start(port), port);
  auto resumed = run({"eval", "demo", "-m", "student", "--resume",
                      std::filesystem::path(batch).filename().string(), "--json", "resumed.json"});
  ASSERT_EQ(resumed.code, 0) << resumed.out << resumed.err;
  EXPECT_LT(healthy.request_count(), 14u);  // only what the killed run had not finished
  for (const auto& f : std::filesystem::recursive_directory_iterator(batch))
    EXPECT_NE(f.path().filename().string().front(), '.') << "temporary file left: " << f.path();
  const Json a = json("reference.json"), b = json("resumed.json");
  for (const char* arm : {"baseline", "with_skill"}) {
    EXPECT_EQ(a["models"][0]["arms"][arm]["pass_rate"], b["models"][0]["arms"][arm]["pass_rate"])
        << arm;
    EXPECT_EQ(a["models"][0]["arms"][arm]["tokens"], b["models"][0]["arms"][arm]["tokens"]) << arm;
    EXPECT_EQ(a["models"][0]["arms"][arm]["trials"], b["models"][0]["arms"][arm]["trials"]) << arm;
  }
  EXPECT_EQ(a["models"][0]["lift"]["lift"], b["models"][0]["lift"]["lift"]);
  EXPECT_EQ(a["models"][0]["lift"]["mcnemar_p"], b["models"][0]["lift"]["mcnemar_p"]);
}

TEST_F(EvalCli, CtrlCSavesWhatFinishedAndExits130) {
  Json slow = student_script();
  for (auto& rule : slow["rules"])
    rule["faults"] = Json::array({{{"type", "slow_first_byte"}, {"delay_ms", 300}}});
  ScriptedServer server(slow);
  server.start();
  config_for(server);
  // Every path the shell writes is absolute inside the temp dir: nothing lands in the caller's
  // working directory (the source tree, when the test is run from there).
  const std::string cmd = "cd " + shell_quote(tmp.path().string()) + " || exit 1; " +
                          shell_quote(UPSKILL_BINARY) + " eval demo -m student -j 1 --json " +
                          shell_quote((tmp / "partial.json").string()) + " > " +
                          shell_quote((tmp / ".out").string()) +
                          " 2>&1 & pid=$!; sleep 1.2; kill -INT $pid; wait $pid; echo $? > " +
                          shell_quote((tmp / "code.txt").string());
  std::system(("bash -c " + shell_quote(cmd)).c_str());
  EXPECT_EQ(read_file(tmp / "code.txt"), "130\n") << read_file(tmp / ".out");
  const Json j = json("partial.json");
  EXPECT_EQ(j["interrupted"], true);
  EXPECT_GT(j["models"][0]["arms"]["baseline"]["trials"].get<int>(), 0);
  EXPECT_LT(j["models"][0]["arms"]["with_skill"]["trials"].get<int>(), 7);
}

TEST_F(EvalCli, SummaryIsAppendedToTheGithubStepSummary) {
  ScriptedServer server(student_script());
  server.start();
  config_for(server);
  tmp.write("step.md", "previous step\n");
  const std::string cmd = "cd " + shell_quote(tmp.path().string()) +
                          " && GITHUB_STEP_SUMMARY=step.md " + shell_quote(UPSKILL_BINARY) +
                          " eval demo -m student --no-log-runs > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string md = read_file(tmp / "step.md");
  EXPECT_EQ(md.rfind("previous step\n## upskill eval: `demo`", 0), 0u) << md;
}

// A CUDA kernel case on a machine without a CUDA device: its stages up to bind pass, correct and
// bench are not run, so the case is "not run" — neither passed nor failed.
class NotRunCli : public EvalCli {
 protected:
  const std::filesystem::path kernels = std::filesystem::path(UPSKILL_SOURCE_DIR) / "kernels";
  CliRun run_cached(const std::vector<std::string>& args) {
    return testing::run_cli(tmp.path(),
                            "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG UPSKILL_CACHE_DIR=" +
                                shell_quote(UPSKILL_TEST_KERNEL_CACHE),
                            UPSKILL_BINARY, args, tmp.path());
  }
  // The reference rmsnorm-bf16-sm90 case as case "k" ("task k"), its spec by absolute path: on a
  // machine without a CUDA device its CUDA stages are not run. Null when kernels/cases.json lacks
  // it.
  Json kernel_case_k() {
    const Json reference = Json::parse(read_file(kernels / "cases.json"));
    Json out;
    for (const auto& c : reference["cases"])
      if (c["id"] == "rmsnorm-bf16-sm90") out = c;
    if (out.is_null()) return out;
    out["id"] = "k";
    out["input"] = "task k";
    out["checks"][0]["spec"] = (kernels / "specs/rmsnorm.py").string();
    return out;
  }
  // The reference rmsnorm project as a chat answer: one fenced block per file, each file verbatim
  // (no newline added to one that ends with one), so that its build is the kernel_prebuild
  // fixture's, from the cache.
  std::string rmsnorm_answer() {
    std::string out = "Here is the project.\n\n";
    const auto root = kernels / "rmsnorm";
    for (const auto& e : std::filesystem::recursive_directory_iterator(root))
      if (e.is_regular_file()) {
        std::string content = read_file(e.path());
        if (!content.ends_with('\n')) content += '\n';
        out += "```text title=\"" + std::filesystem::relative(e.path(), root).string() + "\"\n" +
               content + "```\n\n";
      }
    return out;
  }
};

TEST_F(NotRunCli, CheckExitsThreeForANotRunCaseAndOneForARealFailure) {
  const bool gpu = has_cuda_device();
  auto r = run_cached({"check", (kernels / "cases.json").string(), "--case", "rmsnorm-bf16-sm90",
                       "--answer", (kernels / "rmsnorm").string()});
  if (gpu) {
    EXPECT_EQ(r.code, 0) << r.out << r.err;  // with a device the reference kernel passes
    return;
  }
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("case rmsnorm-bf16-sm90: NOT RUN (0 of 0 checks passed, score 0.00), 1 "
                       "not run"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("bind     passed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("correct  not run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not run: the checks that ran passed, but one could not run here"),
            std::string::npos)
      << r.out;
  auto json = run_cached({"check", (kernels / "cases.json").string(), "--case", "rmsnorm-bf16-sm90",
                          "--answer", (kernels / "rmsnorm").string(), "--json"});
  EXPECT_EQ(json.code, 3) << json.out << json.err;
  const Json verdict = Json::parse(json.out);
  EXPECT_EQ(verdict["status"], "not run");
  EXPECT_EQ(verdict["passed"], false);
  EXPECT_EQ(verdict["checks_not_run"], 1);
  // --require-gpu: still 3, and says why on stderr.
  auto gpu_required =
      run_cached({"check", (kernels / "cases.json").string(), "--case", "rmsnorm-bf16-sm90",
                  "--answer", (kernels / "rmsnorm").string(), "--require-gpu"});
  EXPECT_EQ(gpu_required.code, 3);
  EXPECT_NE(gpu_required.err.find("--require-gpu: no CUDA device"), std::string::npos)
      << gpu_required.err;
  // The same kernel check beside a text check that fails: a failure, exit 1.
  Json cases = Json::parse(read_file(kernels / "cases.json"));
  Json mixed;
  for (const auto& c : cases["cases"])
    if (c["id"] == "rmsnorm-bf16-sm90") mixed = c;
  ASSERT_FALSE(mixed.is_null());
  mixed["id"] = "mixed";
  mixed["checks"][0]["spec"] = (kernels / "specs/rmsnorm.py").string();
  mixed["checks"].push_back({{"type", "file_exists"}, {"path", "NOTES.md"}});
  tmp.write("mixed.json", Json{{"cases", Json::array({mixed})}}.dump(2));
  auto failed = run_cached(
      {"check", "mixed.json", "--case", "mixed", "--answer", (kernels / "rmsnorm").string()});
  EXPECT_EQ(failed.code, 1) << failed.out << failed.err;
  EXPECT_NE(failed.out.find("case mixed: FAIL"), std::string::npos) << failed.out;
}

TEST_F(NotRunCli, EvalLeavesTheNotRunPairOutAndJunitSkipsIt) {
  if (has_cuda_device()) GTEST_SKIP() << "this machine runs CUDA kernels: nothing is not run";
  // Case k: with the skill the student gives the reference project (not run here), without it
  // only prose (a failure). Case t: a text case the skill gets right and the baseline does not.
  const Json script = {
      {"rules",
       {{{"match", {{"any_message", "## Skill: demo"}, {"message", "^task k$"}}},
         {"reply", {{"content", rmsnorm_answer()}}}},
        {{"match", {{"message", "^task k$"}}}, {"reply", {{"content", "I would write a kernel."}}}},
        {{"match", {{"any_message", "## Skill: demo"}, {"message", "^task t$"}}},
         {"reply", {{"content", "MAGIC-t"}}}},
        {{"match", {{"message", "^task t$"}}}, {"reply", {{"content", "no idea"}}}}}}};
  ScriptedServer server(script);
  server.start();
  config_for(server);
  const Json kernel_case = kernel_case_k();
  ASSERT_FALSE(kernel_case.is_null());
  const Json text_case = {
      {"id", "t"}, {"input", "task t"}, {"expected", {{"contains", "magic-t"}}}};
  tmp.write("cases.json", Json::array({kernel_case, text_case}).dump(2));
  auto r = run_cached({"eval", "demo", "-m", "student", "-t", "cases.json", "-v", "--json",
                       "out.json", "--junit", "out.xml", "--summary-md", "sum.md"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const Json j = json("out.json");
  const Json& m = j["models"][0];
  EXPECT_EQ(j["not_run"], 1);
  EXPECT_EQ(m["arms"]["with_skill"]["cases"], 1);
  EXPECT_EQ(m["arms"]["with_skill"]["pass_rate"], 1.0);
  EXPECT_EQ(m["arms"]["with_skill"]["not_run"], 1);
  EXPECT_EQ(m["arms"]["with_skill"]["excluded"], 1);
  EXPECT_EQ(m["arms"]["baseline"]["cases"], 1);  // its failed k is left out with its pair
  EXPECT_EQ(m["arms"]["baseline"]["pass_rate"], 0.0);
  EXPECT_EQ(m["arms"]["baseline"]["not_run"], 0);
  EXPECT_EQ(m["arms"]["baseline"]["excluded"], 1);
  EXPECT_EQ(m["lift"]["lift"], 1.0);
  EXPECT_EQ(m["lift"]["paired"]["with_only"], 1);
  EXPECT_EQ(m["lift"]["paired"]["neither"], 0);
  EXPECT_EQ(m["lift"]["not_run_pairs"], 1);
  EXPECT_EQ(m["cases"][0]["arms"]["with_skill"]["trials"][0]["status"], "not run");
  // Terminal: the count beside the rates.
  EXPECT_NE(r.out.find("with skill  ████████████████████ 100%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("· 1 not run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("· 1 not run pair left out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("with skill: not run"), std::string::npos) << r.out;
  // JUnit: the not-run trial is <skipped>, never a pass or a failure.
  const std::string xml = read_file(tmp / "out.xml");
  EXPECT_NE(xml.find("<testsuite name=\"demo / student / with_skill\" tests=\"2\" failures=\"0\" "
                     "errors=\"0\" skipped=\"1\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testcase classname=\"demo.student.with_skill\" name=\"k\""),
            std::string::npos);
  const std::size_t k = xml.find("name=\"k\"", xml.find("demo.student.with_skill"));
  ASSERT_NE(k, std::string::npos);
  EXPECT_EQ(xml.find("<skipped message=\"not run: kernel stages", k), xml.find("<skipped", k))
      << xml;
  EXPECT_NE(xml.find("<skipped message=\"not run: kernel stages", k), std::string::npos) << xml;
  EXPECT_NE(xml.find("tests=\"4\" failures=\"2\" errors=\"0\" skipped=\"1\""), std::string::npos)
      << xml;
  EXPECT_NE(read_file(tmp / "sum.md").find("| student | with skill | 100% |"), std::string::npos);
  // Run logs: the trial says "not run" and the run's rate leaves it out.
  const Json with =
      Json::parse(read_file(std::filesystem::path(batch_dir()) / "run_2/run_result.json"));
  EXPECT_EQ(with["not_run"], 1);
  EXPECT_EQ(with["assertions_total"], 1);
  EXPECT_EQ(with["cases"][0]["status"], "not run");
  EXPECT_EQ(with["cases"][0]["excluded"], true);
  // --require-gpu still fails the eval.
  auto required = run_cached(
      {"eval", "demo", "-m", "student", "-t", "cases.json", "--require-gpu", "--no-log-runs"});
  EXPECT_EQ(required.code, 3) << required.out << required.err;
}

// Issue 53: one batch with a pair left out (its with-skill trial not run here), errors, two runs
// and two models. Every figure `eval` computed of it — pass rates, intervals, lift, tokens a
// trial, what was not run and left out — is the one `runs` prints, `runs --csv` rows count by and
// the report draws (read from the page as headless Chromium lays it out: the bars' lengths, their
// labels, and no label past its chart's edge).
TEST_F(NotRunCli, EverySurfaceShowsTheFiguresEvalComputed) {
  if (has_cuda_device()) GTEST_SKIP() << "this machine runs CUDA kernels: nothing is not run";
  // k: with the skill, the reference project (not run here), without it prose (a failure).
  // t: right only with the skill. s: right either way. e: the baseline's trials error (both runs'
  // attempts, retries included, meet 503).
  auto script = [&](int e_tokens) {
    Json unavailable = Json::array();
    for (int i = 0; i < 10; ++i) unavailable.push_back({{"type", "status"}, {"status", 503}});
    return Json{
        {"rules",
         {{{"match", {{"any_message", "## Skill: demo"}, {"message", "^task k$"}}},
           {"reply", {{"content", rmsnorm_answer()}}}},
          {{"match", {{"message", "^task k$"}}},
           {"reply", {{"content", "I would write a kernel."}}}},
          {{"match", {{"any_message", "## Skill: demo"}, {"message", "^task t$"}}},
           {"reply",
            {{"content", "MAGIC-t"},
             {"usage", {{"prompt_tokens", 300}, {"completion_tokens", 20}}}}}},
          {{"match", {{"message", "^task t$"}}},
           {"reply",
            {{"content", "no idea"},
             {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 50}}}}}},
          {{"match", {{"message", "^task s$"}}},
           {"reply",
            {{"content", "MAGIC-s"},
             {"usage", {{"prompt_tokens", 120}, {"completion_tokens", 9}}}}}},
          {{"match", {{"any_message", "## Skill: demo"}, {"message", "^task e$"}}},
           {"reply",
            {{"content", "MAGIC-e"},
             {"usage", {{"prompt_tokens", e_tokens}, {"completion_tokens", 7}}}}}},
          {{"match", {{"message", "^task e$"}}},
           {"faults", unavailable},
           {"reply",
            {{"content", "no"}, {"usage", {{"prompt_tokens", 90}, {"completion_tokens", 3}}}}}}}}};
  };
  ScriptedServer a(script(250)), b(script(410));
  a.start();
  b.start();
  config_for(a, &b);
  const Json kernel_case = kernel_case_k();
  ASSERT_FALSE(kernel_case.is_null());
  Json cases = Json::array({kernel_case});
  for (const char* id : {"t", "s", "e"})
    cases.push_back({{"id", id},
                     {"input", std::string("task ") + id},
                     {"expected", {{"contains", std::string("magic-") + id}}}});
  tmp.write("cases.json", cases.dump(2));
  const auto eval = run_cached({"eval", "demo", "-m", "student", "-m", "other", "-t", "cases.json",
                                "--runs", "2", "--baseline", "--json", "out.json"});
  ASSERT_EQ(eval.code, 3) << eval.out << eval.err;  // trials errored
  ASSERT_EQ(json("out.json")["errors"], 4);
  const Json out = json("out.json");
  ASSERT_EQ(out["models"].size(), 2u);
  auto runs = run_cached({"runs", "--csv", "all.csv", "--html", "report.html"});
  ASSERT_EQ(runs.code, 0) << runs.out << runs.err;

  // The text: every line of each model's figures in `eval`'s output is in `runs`' output.
  std::istringstream eval_lines(eval.out);
  int shared = 0;
  for (std::string line; std::getline(eval_lines, line);) {
    const bool figure = line.starts_with("  baseline ") || line.starts_with("  with skill ") ||
                        line.starts_with("  lift ") || line.starts_with("  cost ");
    if (!figure) continue;
    ++shared;
    EXPECT_NE(runs.out.find("  " + line + "\n"), std::string::npos)
        << "eval's «" << line << "» is not in runs':\n"
        << runs.out;
  }
  EXPECT_EQ(shared, 2 * 3 + 1);  // two arms and the lift of each model; the priced one's cost
  EXPECT_NE(eval.out.find("(2 left out with their pairs)"), std::string::npos) << eval.out;

  // The CSV: each run's row counts as the run log's writer counted (pairs left out, errors).
  std::map<std::string, Json> written;
  for (const auto& e : std::filesystem::directory_iterator(batch_dir()))
    if (e.is_directory())
      written[e.path().filename().string()] = Json::parse(read_file(e.path() / "run_result.json"));
  ASSERT_EQ(written.size(), 8u);  // 2 models × 2 arms × 2 runs
  std::istringstream csv(read_file(tmp / "all.csv"));
  const auto cells_of = [](const std::string& row) {  // no cell of these rows is quoted
    std::vector<std::string> cells(1);
    for (const char c : row) {
      if (c == ',')
        cells.emplace_back();
      else
        cells.back().push_back(c);
    }
    return cells;
  };
  std::string header;
  std::getline(csv, header);
  const auto columns = cells_of(header);
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(columns.begin(), columns.end(), name) -
                                    columns.begin());
  };
  int rows = 0;
  for (std::string row; std::getline(csv, row);) {
    const auto cells = cells_of(row);
    ASSERT_EQ(cells.size(), columns.size()) << row;
    const Json& w = written.at("run_" + cells[col("run_number")]);
    const Json rate = w["pass_rate"];
    if (rate.is_null())
      EXPECT_EQ(cells[col("pass_rate")], "") << row;
    else
      EXPECT_NEAR(std::stod(cells[col("pass_rate")]), rate.get<double>(), 1e-4) << row;
    EXPECT_EQ(cells[col("assertions_total")],
              std::to_string(w["assertions_total"].get<long long>()))
        << row;
    ++rows;
  }
  EXPECT_EQ(rows, 8);

  // The page as Chromium lays it out: the script below, added to a copy, writes what it measured.
  std::string page = read_file(tmp / "report.html");
  page.insert(page.rfind("</body>"), R"(<script>
const out = [];
for (const svg of document.querySelectorAll('svg[data-model]')) {
  const w = svg.width.baseVal.value, model = svg.dataset.model, chart = svg.getAttribute('aria-label');
  for (const t of svg.querySelectorAll('text')) {
    const b = t.getBBox();
    out.push({model, chart, kind: t.getAttribute('class') || 'label', arm: t.dataset.arm || '',
              text: t.textContent, right: b.x + b.width, width: w});
  }
  for (const r of svg.querySelectorAll('rect.bar'))
    out.push({model, chart, kind: 'bar', arm: r.dataset.arm, length: r.width.baseVal.value});
}
const pre = document.createElement('pre');
pre.id = 'geometry';
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>)");
  tmp.write("measured.html", page);
  const std::string dom = (tmp / "dom.html").string();
  const std::string cmd =
      "chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync "
      "--user-data-dir=" +
      shell_quote((tmp / "chrome-profile").string()) + " --window-size=1000,700 --dump-dom " +
      shell_quote("file://" + (tmp / "measured.html").string()) + " > " + shell_quote(dom) +
      " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "headless Chromium could not render the page";
  std::string measured = read_file(dom);
  const auto at = measured.find("<pre id=\"geometry\">");
  ASSERT_NE(at, std::string::npos) << measured.substr(0, 2000);
  measured = measured.substr(at + 19, measured.find("</pre>", at) - at - 19);
  for (const auto& [from, to] : {std::pair{"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}})
    for (std::size_t p; (p = measured.find(from)) != std::string::npos;)
      measured.replace(p, std::strlen(from), to);
  const Json shapes = Json::parse(measured);
  int bars = 0, labels = 0;
  for (const Json& m : out["models"]) {
    const std::string name = m["name"];
    for (const char* arm : {"baseline", "with_skill"}) {
      const Json& figures = m["arms"][arm];
      for (const Json& s : shapes) {
        if (s["model"] != name || s["arm"] != arm) continue;
        if (s["chart"] == "pass rate" && s["kind"] == "bar") {
          ++bars;
          EXPECT_NEAR(s["length"].get<double>(), figures["pass_rate"].get<double>() * 300, 0.06)
              << name << " " << arm;
        } else if (s["kind"] == "rate") {
          ++labels;
          EXPECT_EQ(s["text"], fmt::format("{:.0f}%", figures["pass_rate"].get<double>() * 100));
        } else if (s["kind"] == "tokens") {
          ++labels;
          EXPECT_EQ(s["text"],
                    fmt::format("{:.0f} tokens/trial", figures["tokens_per_trial"].get<double>()));
        } else if (s["kind"] == "left-out") {
          ++labels;
          const long long nr = figures["not_run"], ex = figures["excluded"];
          EXPECT_EQ(s["text"], report::not_run_note(nr, ex).substr(std::string(" · ").size()));
        }
      }
    }
  }
  EXPECT_EQ(bars, 4);
  EXPECT_EQ(labels, 2 * (2 + 2 + 2));  // rates, tokens, and both arms' left-out notes
  for (const Json& s : shapes)
    if (s.contains("right"))
      EXPECT_LE(s["right"].get<double>(), s["width"].get<double>()) << s.dump() << " is clipped";
}

TEST_F(EvalCli, BadInputsExitTwo) {
  EXPECT_EQ(run({"eval", "nowhere", "-m", "generic.x"}).code, 2);
  tmp.write("empty/SKILL.md", "---\nname: empty\ndescription: d\n---\n");
  auto no_tests = run({"eval", "empty", "-m", "generic.x"});
  EXPECT_EQ(no_tests.code, 2);
  EXPECT_NE(no_tests.err.find("no test cases"), std::string::npos);
  EXPECT_EQ(run({"eval", "demo", "-m", "unknown-model"}).code, 2);
  tmp.write("bad.json", "[{\"input\": 1}]");
  EXPECT_EQ(run({"eval", "demo", "-m", "generic.x", "-t", "bad.json"}).code, 2);
}

}  // namespace
}  // namespace upskill
