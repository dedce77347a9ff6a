// What users of the Python upskill and skills repositories run, against the scripted server:
// `upskill ci` on a two-commit git repository of skills (the changed skill is selected, a
// regression exits 1, an improvement passes, a new skill is NEW, a bad manifest names its line;
// the manifest, skill-folder and threshold rules as a library), `eval --test-gen-model` on a public
// skill that ships no tests, upstream's flags, and failed calls explained on screen.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <set>

#include "scripted_server.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"
#include "upskill/ci/ci.hpp"
#include "upskill/config/config.hpp"
#include "upskill/core/text.hpp"

namespace upskill {
namespace {

using testing::CliRun;
using testing::read_file;
using testing::ScriptedServer;
using testing::shell_quote;
using testing::TempDir;

const char* const kGood = "Use `hf jobs ps --format json` to list jobs.";
const char* const kBad = "Use the legacy huggingface-cli to list jobs.";

// The student repeats what its skill says; without `hf jobs ps` in the prompt it answers with the
// legacy tool, at twice the tokens. The judge scores answers naming `hf jobs ps` 9 of 10, else 2.
Json script() {
  auto reply = [](std::string content, int prompt, int completion) {
    return Json{{"content", std::move(content)},
                {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completion}}}};
  };
  return {{"rules",
           Json::array({{{"match", {{"model", "judge"}, {"message", "<answer>\\n[^<]*hf jobs ps"}}},
                         {"reply", reply(R"({"score": 9, "reasoning": "uses hf"})", 400, 20)}},
                        {{"match", {{"model", "judge"}}},
                         {"reply", reply(R"({"score": 2, "reasoning": "legacy tool"})", 400, 20)}},
                        {{"match", {{"model", "student"}, {"any_message", "hf jobs ps --format"}}},
                         {"reply", reply("Run hf jobs ps --format json", 100, 20)}},
                        {{"match", {{"model", "student"}}},
                         {"reply", reply("Run huggingface-cli jobs list", 100, 140)}}})}};
}

class CiCli : public ::testing::Test {
 protected:
  TempDir tmp;
  ScriptedServer server{script()};
  void SetUp() override { server.start(); }

  std::filesystem::path repo() const { return tmp / "repo"; }
  void sh(const std::string& command) {
    const std::string full =
        "cd " + shell_quote(repo().string()) + " && " + command + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(full.c_str()), 0) << command;
  }
  void skill(const std::string& name, const std::string& body) {
    tmp.write("repo/skills/" + name + "/SKILL.md",
              "---\nname: " + name +
                  "\ndescription: Hugging Face jobs. Use when asked about "
                  "jobs.\n---\n" +
                  body + "\n");
  }
  void commit(const std::string& message) {
    sh("git add -A && git -c user.name=t -c user.email=t@example.com commit -q -m " +
       shell_quote(message));
  }
  // A repository whose first commit has hf-cli saying `first`, the second saying `second`.
  void make_repo(const std::string& first, const std::string& second) {
    tmp.write("repo/.upskill/evals.json", R"({"scenarios": [
      {"id": "hf-cli-smoke", "skills": ["skills/hf-cli"], "tests": "evals/hf-cli/smoke.json",
       "judge": {"enabled": true, "criteria": ["Uses the hf command, not huggingface-cli"]},
       "include_baseline": false},
      {"id": "other-smoke", "skills": ["skills/other"], "tests": "evals/hf-cli/smoke.json",
       "judge": {"enabled": false}, "include_baseline": false}]})");
    tmp.write("repo/evals/hf-cli/smoke.json", R"({"cases": [
      {"input": "Which command lists my jobs as JSON?",
       "verifiers": [{"type": "contains", "values": ["hf jobs ps"]},
                     {"type": "contains", "values": "--format json"}]}]})");
    tmp.write("repo/upskill.config.yaml", "models:\n  student: {provider: generic, base_url: \"" +
                                              server.base_url() +
                                              "\"}\n  judge: {provider: generic, base_url: \"" +
                                              server.base_url() + "\"}\nretry_delay_s: 0.01\n");
    sh("git init -q");
    skill("hf-cli", first);
    skill("other", kGood);
    commit("first");
    skill("hf-cli", second);
    tmp.write("repo/skills/hf-cli/references/notes.md", "notes\n");
    commit("second");
  }
  CliRun ci(std::vector<std::string> args) {
    std::vector<std::string> all{"ci", "-m", "student", "--judge-model", "judge"};
    all.insert(all.end(), args.begin(), args.end());
    return testing::run_cli(repo(),
                            "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG UPSKILL_CACHE_DIR=" +
                                shell_quote((tmp / "cache").string()),
                            UPSKILL_BINARY, all, tmp.path());
  }
  Json report() const {
    return Json::parse(read_file(repo() / ".upskill/reports/upskill-ci-report.json"));
  }
};

TEST_F(CiCli, ARegressionInTheChangedSkillExitsOne) {
  make_repo(kGood, kBad);
  const CliRun r = ci({"--base-ref", "HEAD~1"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const Json rep = report();
  ASSERT_EQ(rep["scenarios"].size(), 1u);  // other-smoke's skill did not change
  const Json& s = rep["scenarios"][0];
  EXPECT_EQ(s["id"], "hf-cli-smoke");
  EXPECT_EQ(s["status"], "FAIL");
  EXPECT_EQ(s["base"]["hard_score"], 1.0);
  EXPECT_EQ(s["current"]["hard_score"], 0.0);
  EXPECT_NEAR(s["base"]["judge_score"].get<double>(), 0.9, 1e-9);
  EXPECT_NEAR(s["current"]["judge_score"].get<double>(), 0.2, 1e-9);
  EXPECT_EQ(s["current"]["avg_tokens"], 240);  // the student's tokens only, never the judge's
  EXPECT_EQ(s["base"]["avg_tokens"], 120);
  EXPECT_NE(s["regressions"][0].get<std::string>().find("hard score fell"), std::string::npos);
  EXPECT_EQ(rep["changed_skills"], Json::array({"skills/hf-cli"}));
  const std::string md = read_file(repo() / ".upskill/reports/upskill-ci-summary.md");
  EXPECT_NE(md.find("| hf-cli-smoke | skills/hf-cli | **FAIL** | 100% → 0%"), std::string::npos)
      << md;
  EXPECT_NE(r.out.find("FAIL   hf-cli-smoke"), std::string::npos) << r.out;
}

// A case whose check cannot run here (a file check without a workspace: not run, as a kernel
// check's CUDA stages are on a machine without a GPU) is left out of the hard score, as eval leaves
// it out of the pass rate — never counted as a failed assertion.
TEST_F(CiCli, ACaseNotRunHereIsLeftOutOfTheHardScore) {
  make_repo(kGood, kGood + std::string("\nBe brief."));
  tmp.write("repo/evals/hf-cli/smoke.json", R"({"cases": [
    {"input": "Which command lists my jobs as JSON?",
     "verifiers": [{"type": "contains", "values": ["hf jobs ps"]},
                   {"type": "contains", "values": "--format json"}]},
    {"id": "notes", "input": "Which command lists my jobs as JSON?",
     "checks": [{"type": "file_exists", "path": "NOTES.md"}]}]})");
  skill("hf-cli", kGood + std::string("\nBe briefer."));
  commit("a case with a check that needs a workspace");
  const CliRun r = ci({"--base-ref", "HEAD~1"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  ASSERT_EQ(report()["scenarios"].size(), 1u) << r.out << r.err;
  const Json s = report()["scenarios"][0];
  EXPECT_EQ(s["current"]["hard_score"], 1.0) << s.dump(1);
  EXPECT_EQ(s["base"]["hard_score"], 1.0) << s.dump(1);
}

TEST_F(CiCli, AnImprovementPassesAndANewSkillIsNew) {
  make_repo(kBad, kGood);
  tmp.write("repo/skills/fresh/SKILL.md",
            "---\nname: fresh\ndescription: New. Use when asked about jobs.\n---\n" +
                std::string(kGood) + "\n");
  tmp.write("repo/.upskill/evals.json", R"({"scenarios": [
      {"id": "hf-cli-smoke", "skills": ["skills/hf-cli"], "tests": "evals/hf-cli/smoke.json",
       "judge": {"enabled": true, "criteria": ["Uses the hf command"]}},
      {"id": "fresh-smoke", "skills": ["skills/fresh/"], "tests": "evals/hf-cli/smoke.json"}]})");
  commit("third");
  const CliRun r = ci({"--base-ref", "HEAD~2", "--persist", "history.jsonl"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const Json rep = report();
  ASSERT_EQ(rep["scenarios"].size(), 2u);
  EXPECT_EQ(rep["scenarios"][0]["status"], "PASS");
  EXPECT_EQ(rep["scenarios"][0]["current"]["hard_score"], 1.0);
  EXPECT_EQ(rep["scenarios"][1]["status"], "NEW");
  EXPECT_TRUE(rep["scenarios"][1]["base"].is_null());
  const std::string history = read_file(repo() / "history.jsonl");
  EXPECT_EQ(std::count(history.begin(), history.end(), '\n'), 2);
  EXPECT_NE(history.find("\"status\":\"NEW\""), std::string::npos);
  // A push of a new branch: GitHub sends an all-zero base, which means HEAD~1.
  const CliRun zeros = ci({"--base-ref", "0000000000000000000000000000000000000000"});
  EXPECT_EQ(zeros.code, 0) << zeros.out << zeros.err;
  EXPECT_EQ(report()["base_ref"], "HEAD~1");
  // Nothing changed between two refs: nothing to evaluate, a clean exit.
  const CliRun none = ci({"--base-ref", "HEAD", "--head-ref", "HEAD"});
  EXPECT_EQ(none.code, 0) << none.err;
  EXPECT_NE(none.out.find("No scenario's skills changed."), std::string::npos);
}

TEST_F(CiCli, ADeletedSkillIsNotEvaluatedAndUpskillCiPyFlagsWork) {
  make_repo(kBad, kGood);
  // The pull request deletes skills/other while changing hf-cli: upstream's selection never picks
  // the deleted skill's scenario; it is named, not an error.
  sh("git rm -q -r skills/other");
  commit("delete other");
  const CliRun r = ci({"--base-ref", "HEAD~2", "--hard-regression-threshold", "0.05",
                       "--judge-regression-threshold", "0.2", "--token-regression-threshold", "0.5",
                       "--output", "out/ci.json"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const Json rep = Json::parse(read_file(repo() / "out/ci.json"));
  ASSERT_EQ(rep["scenarios"].size(), 1u) << rep.dump(1);
  EXPECT_EQ(rep["scenarios"][0]["id"], "hf-cli-smoke");
  EXPECT_EQ(rep["deleted_skills"], Json::array({"skills/other"}));
  ASSERT_EQ(rep["notes"].size(), 1u);
  EXPECT_NE(rep["notes"][0].get<std::string>().find("other-smoke not evaluated"),
            std::string::npos);
  EXPECT_EQ(rep["thresholds"]["hard"], 0.05);
  EXPECT_EQ(rep["thresholds"]["judge"], 0.2);
  EXPECT_EQ(rep["thresholds"]["tokens"], 0.5);
  EXPECT_NE(r.err.find("other-smoke not evaluated: this change deletes skills/other"),
            std::string::npos)
      << r.err;
  EXPECT_NE(read_file(repo() / ".upskill/reports/upskill-ci-summary.md").find("other-smoke"),
            std::string::npos);
  EXPECT_NE(r.out.find("report: " + (repo() / "out/ci.json").string()), std::string::npos) << r.out;
}

// upskill_ci.py's `--persist --history-repo REPO`: the report appended to a Hub dataset's history
// through hf (the stand-in built from hf v1.28.0's source), in upskill_ci.py's layout and row
// schema; a second run appends; a refused hub exits 3 with hf's words and the report kept.
TEST_F(CiCli, PersistWithoutAFileAppendsToTheHubHistory) {
  make_repo(kBad, kGood);
  // Runs from the config: the rows say what was resolved, not what was given.
  tmp.write("repo/upskill.config.yaml",
            read_file(repo() / "upskill.config.yaml") + "num_runs: 2\n");
  const std::string fake_hf = std::string(UPSKILL_SOURCE_DIR) + "/tests/data/fake-hf";
  auto ci_hub = [&](const std::vector<std::string>& args, const std::string& extra = "") {
    std::vector<std::string> all{"ci",    "-m",         "student", "--judge-model",
                                 "judge", "--base-ref", "HEAD~1"};
    all.insert(all.end(), args.begin(), args.end());
    return testing::run_cli(
        repo(),
        "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG -u UPSKILL_HISTORY_REPO UPSKILL_CACHE_DIR=" +
            shell_quote((tmp / "cache").string()) +
            " FAKE_HF_ROOT=" + shell_quote((tmp / "hub").string()) +
            " PATH=" + shell_quote(fake_hf) + ":\"$PATH\" " + extra,
        UPSKILL_BINARY, all, tmp.path());
  };
  CliRun r = ci_hub({"--persist", "--history-repo", "someone/skill-history"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("history: 1 row(s) appended to the dataset someone/skill-history"),
            std::string::npos)
      << r.err;
  const std::filesystem::path data = tmp / "hub/repos/someone/skill-history";
  auto lines = text::split_lines(read_file(data / "data/history.jsonl"));
  ASSERT_EQ(lines.size(), 1u);
  const Json row = Json::parse(lines[0]);
  std::set<std::string> keys;
  for (const auto& [k, _] : row.items()) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"generated_at", "commit_sha", "base_ref", "scenario_id",
                                         "skill_path", "eval_model", "runs", "hard_score",
                                         "judge_score", "avg_tokens", "avg_turns",
                                         "baseline_hard_score", "baseline_judge_score",
                                         "baseline_avg_tokens", "regression", "notes", "reasons"}));
  EXPECT_EQ(row["scenario_id"], "hf-cli-smoke");
  EXPECT_EQ(row["skill_path"], "skills/hf-cli");
  EXPECT_EQ(row["eval_model"], "student");
  EXPECT_EQ(row["runs"], 2);
  EXPECT_EQ(row["base_ref"], "HEAD~1");
  EXPECT_EQ(row["hard_score"], 1.0);
  EXPECT_EQ(row["baseline_hard_score"], 0.0);
  EXPECT_EQ(row["regression"], false);
  EXPECT_TRUE(row["avg_turns"].is_null());  // not counted here: null, not 0
  EXPECT_TRUE(row["judge_score"].is_number());
  const CliRun head = testing::run_cli(repo(), "", "git", {"rev-parse", "HEAD"}, tmp.path());
  const std::string sha = text::trim(head.out);
  EXPECT_EQ(row["commit_sha"], sha);
  Json meta = Json::parse(read_file(data / "data/metadata.json"));
  EXPECT_EQ(meta["total_rows"], 1);
  EXPECT_EQ(meta["latest_sha"], sha);
  EXPECT_EQ(meta["latest_scenarios"], Json::array({"hf-cli-smoke"}));
  EXPECT_EQ(Json::parse(read_file(data / "reports" / (sha + ".json")))["schema"], "upskill.ci/1");

  // A second run appends to what is there.
  r = ci_hub({"--persist", "--history-repo", "someone/skill-history"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(text::split_lines(read_file(data / "data/history.jsonl")).size(), 2u);
  EXPECT_EQ(Json::parse(read_file(data / "data/metadata.json"))["total_rows"], 2);

  // $UPSKILL_HISTORY_REPO names the default repository; a hub that refuses is exit 3, hf's words
  // said, the report written all the same.
  std::filesystem::remove(repo() / ".upskill/reports/upskill-ci-report.json");
  r = ci_hub({"--persist"}, "UPSKILL_HISTORY_REPO=someone/elsewhere FAKE_HF_DENY=1");
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("--persist: hf repos create failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("401 Unauthorized"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::exists(repo() / ".upskill/reports/upskill-ci-report.json"));
  EXPECT_FALSE(std::filesystem::exists(tmp / "hub/repos/someone/elsewhere"));
}

TEST_F(CiCli, BadInputExitsTwoWithItsPlace) {
  make_repo(kGood, kBad);
  tmp.write("repo/.upskill/evals.json", "{\"scenarios\": [\n  {\"id\": \"x\", \"skill\": []}]}");
  const CliRun bad = ci({"--base-ref", "HEAD~1"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("evals.json:2:"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("unknown key 'skill'"), std::string::npos) << bad.err;
  make_repo(kGood, kBad);
  const CliRun ref = ci({"--base-ref", "no-such-ref"});
  EXPECT_EQ(ref.code, 2);
  EXPECT_NE(ref.err.find("git rev-parse"), std::string::npos) << ref.err;
  const CliRun option = ci({"--base-ref=--output=/tmp/upskill-ci-injected"});
  EXPECT_EQ(option.code, 2);
  EXPECT_NE(option.err.find("is not a git ref"), std::string::npos) << option.err;
  EXPECT_FALSE(std::filesystem::exists("/tmp/upskill-ci-injected"));
  // A scenario whose tests do not load is an error for that scenario, reported, exit 2.
  tmp.write("repo/evals/hf-cli/smoke.json", "{\"cases\": [{\"input\": \"x\", \"verifiers\": 3}]}");
  const CliRun tests = ci({"--base-ref", "HEAD~1"});
  EXPECT_EQ(tests.code, 2) << tests.out;
  EXPECT_EQ(report()["scenarios"][0]["status"], "ERROR");
}

// A skill as public repositories ship them: SKILL.md and a reference, no skill_meta.json.
TEST_F(CiCli, ASkillWithoutTestsGetsThemGeneratedAndSaved) {
  make_repo(kGood, kGood);
  Json writer = script();
  const Json writer_rule = {
      {"match", {{"model", "writer"}}},
      {"reply",
       {{"content",
         Json{{"cases",
               Json::array({{{"id", "list-json"},
                             {"input", "Which command lists my jobs as JSON?"},
                             {"expected", {{"contains", Json::array({"hf jobs ps"})}}}},
                            {{"id", "format"},
                             {"input", "How do I get JSON out of the jobs list?"},
                             {"expected", {{"contains", Json::array({"--format json"})}}}}})}}
             .dump()}}}};
  writer["rules"].insert(writer["rules"].begin(), writer_rule);
  ScriptedServer with_writer(writer);
  with_writer.start();
  tmp.write("repo/upskill.config.yaml", "models:\n  student: {provider: generic, base_url: \"" +
                                            with_writer.base_url() +
                                            "\"}\n  writer: {provider: generic, base_url: \"" +
                                            with_writer.base_url() + "\"}\n");
  const CliRun r =
      testing::run_cli(repo(), "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG", UPSKILL_BINARY,
                       {"eval", "skills/hf-cli", "-m", "student", "--test-gen-model", "writer",
                        "--json", "out.json"},
                       tmp.path());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("no tests, so 2 were generated and saved"), std::string::npos) << r.err;
  const Json meta = Json::parse(read_file(repo() / "skills/hf-cli/skill_meta.json"));
  EXPECT_EQ(meta["tests"].size(), 2u);
  EXPECT_EQ(meta["metadata"]["test_gen_model"], "writer");
  const Json out = Json::parse(read_file(repo() / "out.json"));
  EXPECT_EQ(out["models"][0]["lift"]["lift"], 1.0);  // both arms ran on the generated tests
  // Without a test writer that can be reached, the message says what to do.
  std::filesystem::remove(repo() / "skills/other/skill_meta.json");
  const CliRun none =
      testing::run_cli(repo(), "env -u UPSKILL_CONFIG -u ANTHROPIC_API_KEY", UPSKILL_BINARY,
                       {"eval", "skills/other", "-m", "student"}, tmp.path());
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("no test cases, and none can be generated"), std::string::npos)
      << none.err;
}

// Judge calls go through the students' client: a --record cassette holds them, and --replay scores
// the same with no server and an empty judge cache.
TEST_F(CiCli, JudgedRunsRecordAndReplayFromACassette) {
  make_repo(kGood, kGood);
  const std::vector<std::string> eval{"eval",
                                      "skills/hf-cli",
                                      "-t",
                                      "evals/hf-cli/smoke.json",
                                      "-m",
                                      "student",
                                      "--judge",
                                      "Uses the hf command",
                                      "--judge-model",
                                      "judge",
                                      "--json"};
  auto run = [&](const std::string& cassette_flag, const std::string& cache,
                 const std::string& json) {
    std::vector<std::string> args{cassette_flag, (tmp / "judge.jsonl").string()};
    args.insert(args.end(), eval.begin(), eval.end());
    args.push_back(json);
    return testing::run_cli(repo(),
                            "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG UPSKILL_CACHE_DIR=" +
                                shell_quote((tmp / cache).string()),
                            UPSKILL_BINARY, args, tmp.path());
  };
  const CliRun recorded = run("--record", "cache-a", "a.json");
  ASSERT_EQ(recorded.code, 0) << recorded.out << recorded.err;
  server.stop();
  const CliRun replayed = run("--replay", "cache-b", "b.json");
  ASSERT_EQ(replayed.code, 0) << replayed.out << replayed.err;
  Json a = Json::parse(read_file(repo() / "a.json"));
  Json b = Json::parse(read_file(repo() / "b.json"));
  for (Json* j : {&a, &b})  // latency is the one figure a replay does not reproduce
    for (auto& [_, arm] : (*j)["models"][0]["arms"].items()) arm.erase("latency_ms");
  const Json& judge = a["models"][0]["arms"]["with_skill"]["judge"];
  EXPECT_EQ(judge["calls"], 1);
  EXPECT_NEAR(judge["mean_score"].get<double>(), 0.9, 1e-9);
  EXPECT_EQ(b["models"][0]["arms"], a["models"][0]["arms"]);
  EXPECT_NE(replayed.out.find("judge (with skill): mean 90%"), std::string::npos) << replayed.out;
}

// The example workflow only uses flags `upskill ci` has.
TEST_F(CiCli, TheExampleWorkflowUsesRealFlags) {
  const std::string workflow =
      read_file(std::filesystem::path(UPSKILL_SOURCE_DIR) / "examples/ci/skills-repo-workflow.yml");
  const std::size_t at = workflow.find("build/upskill ci");
  ASSERT_NE(at, std::string::npos);
  const std::string command = workflow.substr(at, workflow.find("- name:", at) - at);
  const CliRun help =
      testing::run_cli(tmp.path(), "env", UPSKILL_BINARY, {"ci", "--help"}, tmp.path());
  ASSERT_EQ(help.code, 0);
  int flags = 0;
  for (std::size_t i = command.find("--"); i != std::string::npos; i = command.find("--", i + 2)) {
    if (command[i - 1] != ' ' && command[i - 1] != '\'') continue;
    const std::size_t end = command.find_first_of(" \n'\"", i);
    const std::string flag = command.substr(i, end - i);
    ++flags;
    EXPECT_NE(help.out.find(flag + " "), std::string::npos) << flag;
  }
  EXPECT_EQ(flags, 4);  // --base-ref, --runs, --judge-model, --persist
}

// A rejected key or a dead port: each cause once on screen with its count; the first definitive
// failure stops the model's other calls; no resume hint without a batch.
TEST_F(CiCli, FailedCallsAreExplainedAndDefinitiveOnesStopEarly) {
  make_repo(kGood, kGood);
  Json refusals = Json::array();
  for (int i = 0; i < 20; ++i)
    refusals.push_back({{"type", "status"},
                        {"status", 401},
                        {"body", R"({"error": {"message": "Invalid API key"}})"}});
  ScriptedServer denied(Json{{"rules", Json::array({{{"match", Json::object()},
                                                     {"faults", refusals},
                                                     {"reply", {{"content", "x"}}}}})}});
  denied.start();
  // Six cases, one request at a time: the first is refused, the other five are never sent.
  Json cases = Json::array();
  for (int i = 0; i < 6; ++i)
    cases.push_back({{"input", "case " + std::to_string(i)}, {"expected", {{"contains", "x"}}}});
  tmp.write("repo/six.json", Json{{"cases", cases}}.dump());
  tmp.write("repo/upskill.config.yaml",
            "retry_delay_s: 0.01\nmodels:\n  student: {provider: generic, base_url: \"" +
                denied.base_url() +
                "\"}\n  dead: {provider: generic, base_url: "
                "\"http://127.0.0.1:9/v1\"}\n");
  auto eval = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"eval", "skills/hf-cli", "-t", "six.json", "-j", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_cli(repo(), "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG", UPSKILL_BINARY,
                            args, tmp.path());
  };
  const CliRun r = eval({"-m", "student", "--no-baseline"});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_EQ(denied.request_count(), 1u);
  EXPECT_NE(r.err.find("6 trial(s) (5 not sent after it): model student at"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Invalid API key"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--resume"), std::string::npos);
  const CliRun quiet = eval({"-m", "student", "--no-baseline", "--no-log-runs"});
  EXPECT_EQ(quiet.code, 3);
  EXPECT_EQ(quiet.err.find("--resume"), std::string::npos) << quiet.err;
  // Nothing listens on port 9: one trial's retries, not six.
  const auto start = std::chrono::steady_clock::now();
  const CliRun dead = eval({"-m", "dead", "--no-log-runs"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(dead.code, 3);
  EXPECT_NE(dead.err.find("12 trial(s) (11 not sent after it): model dead at"), std::string::npos)
      << dead.err;
}

// A student or a judge that cannot be reached is an ERROR that names its cause on its own line,
// never a PASS: no verdict from answers nobody scored (docs/ci.md).
TEST_F(CiCli, AStudentOrJudgeThatCannotAnswerIsAnErrorWithItsCause) {
  make_repo(kGood, kBad);
  auto config = [&](const std::string& student, const std::string& judge) {
    tmp.write(
        "repo/upskill.config.yaml",
        "retry_delay_s: 0.01\nretries: 1\nmodels:\n  student: {provider: generic, base_url: \"" +
            student + "\"}\n  judge: {provider: generic, base_url: \"" + judge + "\"}\n");
  };
  const std::string dead = "http://127.0.0.1:9/v1";
  config(dead, server.base_url());
  CliRun r = ci({"--base-ref", "HEAD~1"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("ERROR  hf-cli-smoke (skills/hf-cli): hard —, — tokens/case — the current "
                       "skill's evaluation is "
                       "incomplete: 1 of 1 trials unanswered — first cause: model student at "
                       "http://127.0.0.1:9/v1"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(report()["scenarios"][0]["status"], "ERROR");

  config(server.base_url(), dead);
  r = ci({"--base-ref", "HEAD~1"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.out.find("PASS"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find(
          "ERROR  hf-cli-smoke (skills/hf-cli): hard 0%, 240 tokens/case — the judge could not "
          "score 1 of 1 "
          "answer(s) of the current skill: judge judge: model "
          "judge at http://127.0.0.1:9/v1"),
      std::string::npos)
      << r.out;
  const Json s = report()["scenarios"][0];
  EXPECT_EQ(s["status"], "ERROR");
  EXPECT_NE(s["error"].get<std::string>().find("the judge could not score"), std::string::npos);
  // What the side measured is in the report, the judge's failure counted.
  EXPECT_EQ(s["current"]["judge_errors"], 1) << s.dump();
  EXPECT_EQ(s["current"]["assertions_total"], 2) << s.dump();
  EXPECT_NE(read_file(repo() / ".upskill/reports/upskill-ci-summary.md")
                .find("the judge could not score"),
            std::string::npos);
}

// One resolver for every front end (eval::resolve_request): for one config, `eval --dry-run` and
// ci's side request get the same students, runs, jobs and seed (the Python module's, in
// tests/python/test_api.py); and what is given wins over the config in both.
TEST_F(CiCli, TheCliAndCiResolveTheSameRequestFromOneConfig) {
  make_repo(kGood, kGood);
  tmp.write("repo/upskill.config.yaml",
            "eval_model: student\nnum_runs: 2\nmax_parallel: 3\nretries: 7\nmodels:\n  student: "
            "{provider: generic, base_url: \"" +
                server.base_url() + "\"}\n");
  const CliRun dry = testing::run_cli(
      repo(), "env -u UPSKILL_CONFIG", UPSKILL_BINARY,
      {"eval", "skills/hf-cli", "-t", "evals/hf-cli/smoke.json", "--dry-run"}, tmp.path());
  ASSERT_EQ(dry.code, 0) << dry.err;
  const Json cli = Json::parse(dry.out);
  EXPECT_EQ(cli["retry"]["retries"], 7);
  EXPECT_EQ(cli["executor"], "local");
  auto cfg = config::load_config(repo() / "upskill.config.yaml");
  ASSERT_TRUE(cfg) << cfg.error().message;
  auto manifest = ci::load_manifest(repo() / ".upskill/evals.json");
  ASSERT_TRUE(manifest);
  ci::CiRequest request;
  request.repo = repo();
  const Json side = eval::to_json(ci::side_request(request, *cfg, manifest->scenarios[0], "student",
                                                   repo() / "skills/hf-cli", "current"));
  for (const char* key : {"models", "runs", "jobs", "seed"})
    EXPECT_EQ(side[key], cli["request"][key]) << key;
  EXPECT_EQ(side["runs"], 2);
  EXPECT_EQ(side["jobs"], 3);
  request.runs = 4;  // given: wins
  EXPECT_EQ(ci::side_request(request, *cfg, manifest->scenarios[0], "student",
                             repo() / "skills/hf-cli", "current")
                .runs,
            4);
}

// upstream's flags and config keys: benchmark -o, eval --log-runs, --max-parallel, num_runs, the
// recommendation line, and `plot`.
TEST_F(CiCli, UpstreamFlagsAndKeysWork) {
  make_repo(kGood, kGood);
  tmp.write("repo/upskill.config.yaml",
            "num_runs: 2\nmax_parallel: 1\nexecutor: local\njobs_secrets: HF_TOKEN,OTHER\n"
            "models:\n  student: {provider: generic, base_url: \"" +
                server.base_url() + "\"}\n");
  auto run = [&](std::vector<std::string> args) {
    return testing::run_cli(repo(), "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG", UPSKILL_BINARY,
                            args, tmp.path());
  };
  const CliRun e = run({"eval", "skills/hf-cli", "-t", "evals/hf-cli/smoke.json", "-m", "student",
                        "--log-runs", "--max-parallel", "2", "--json", "e.json"});
  ASSERT_EQ(e.code, 0) << e.out << e.err;
  EXPECT_EQ(Json::parse(read_file(repo() / "e.json"))["runs"], 2);  // num_runs
  // Two runs a case is upskill's benchmark mode: the skill arm only, said on stderr.
  EXPECT_NE(e.err.find("benchmark mode"), std::string::npos) << e.err;
  EXPECT_EQ(e.out.find("Recommendation"), std::string::npos) << e.out;
  EXPECT_EQ(Json::parse(read_file(repo() / "e.json"))["models"][0]["arms"].count("baseline"), 0u);
  const CliRun one = run({"eval", "skills/hf-cli", "-t", "evals/hf-cli/smoke.json", "-m", "student",
                          "--runs", "1", "--no-log-runs"});
  ASSERT_EQ(one.code, 0) << one.out << one.err;
  EXPECT_NE(one.out.find("Recommendation: keep skill"), std::string::npos) << one.out;
  const CliRun b = run({"benchmark", "skills/hf-cli", "-t", "evals/hf-cli/smoke.json", "-m",
                        "student", "--runs", "1", "-o", "bench-out"});
  ASSERT_EQ(b.code, 0) << b.out << b.err;
  EXPECT_TRUE(std::filesystem::exists(repo() / "bench-out"));
  const CliRun plot = run({"plot", "-d", "bench-out"});
  EXPECT_EQ(plot.code, 0) << plot.err;
  EXPECT_NE(plot.err.find("'plot' is deprecated"), std::string::npos) << plot.err;
  EXPECT_NE(plot.out.find("hf-cli"), std::string::npos) << plot.out;
}

// The composite action: its inputs are declared, every `${{ inputs.X }}` it uses exists, and each
// of its shell steps parses.
TEST(Action, InputsAreDeclaredAndStepsParse) {
  const YAML::Node action =
      YAML::LoadFile((std::filesystem::path(UPSKILL_SOURCE_DIR) / "action.yml").string());
  ASSERT_EQ(action["runs"]["using"].as<std::string>(), "composite");
  std::set<std::string> declared;
  for (const auto& input : action["inputs"]) declared.insert(input.first.as<std::string>());
  EXPECT_TRUE(declared.contains("command"));
  const std::string text = read_file(std::filesystem::path(UPSKILL_SOURCE_DIR) / "action.yml");
  for (std::size_t at = text.find("inputs."); at != std::string::npos;
       at = text.find("inputs.", at + 1)) {
    const std::size_t end = text.find_first_not_of("abcdefghijklmnopqrstuvwxyz-", at + 7);
    const std::string name = text.substr(at + 7, end - at - 7);
    if (!name.empty()) {
      EXPECT_TRUE(declared.contains(name)) << name;
    }
  }
  TempDir tmp;
  int shells = 0;
  for (const auto& step : action["runs"]["steps"]) {
    if (!step["run"]) continue;
    ++shells;
    tmp.write("step.sh", step["run"].as<std::string>());
    EXPECT_EQ(std::system(("bash -n " + shell_quote((tmp / "step.sh").string())).c_str()), 0)
        << step["name"].as<std::string>();
  }
  EXPECT_EQ(shells, 2);
}

TEST(CiRules, ManifestSkillFoldersAndThresholds) {
  auto m =
      ci::parse_manifest(R"({"scenarios": [{"id": "a", "skills": "./skills/a/", "tests": "t.json",
    "judge": {"criteria": "Good"}}]})",
                         "evals.json");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->scenarios[0].skills, std::vector<std::string>{"skills/a"});
  EXPECT_TRUE(m->scenarios[0].judge);  // criteria without `enabled`: on
  for (
      const char* bad :
      {R"([])", R"({"scenarios": {}})", R"({"scenarios": [{"id": "a"}]})",
       R"({"scenarios": [{"id": "a", "skills": [], "tests": "../t"}]})",
       R"({"scenarios": [{"id": "a", "skills": [], "tests": "t", "judge": {"enabled": true}}]})",
       R"({"scenarios": [{"id": "a", "skills": [], "tests": "t"}, {"id": "a", "skills": [], "tests": "t"}]})"}) {
    SCOPED_TRACE(bad);
    auto r = ci::parse_manifest(bad, "evals.json");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message.rfind("evals.json", 0), 0u) << r.error().message;
  }
  const auto has = [](const std::string& dir) { return dir == "skills/a" || dir == "skills"; };
  EXPECT_EQ(ci::skill_folder_of("skills/a/references/x.md", has), "skills/a");
  EXPECT_EQ(ci::skill_folder_of("skills/a/SKILL.md", has), "skills/a");
  EXPECT_EQ(ci::skill_folder_of("skills/b/SKILL.md", has), "skills");
  EXPECT_EQ(ci::skill_folder_of("README.md", has), std::nullopt);

  ci::Side base{0.5, 1, 2, 100, 1, 0.8, 0, "", "", 0, 0, "", ""};
  ci::Side same = base;
  EXPECT_TRUE(ci::regressions(same, base, {}).empty());
  ci::Side worse = base;
  worse.hard_score = 0.49;
  EXPECT_EQ(ci::regressions(worse, base, {}).size(), 1u);
  EXPECT_TRUE(ci::regressions(worse, base, {0.05, 0.1, 0.2}).empty());
  ci::Side judged_down = base;
  judged_down.judge_score = 0.69;
  EXPECT_EQ(ci::regressions(judged_down, base, {}).size(), 1u);
  judged_down.judge_score = 0.71;
  EXPECT_TRUE(ci::regressions(judged_down, base, {}).empty());
  ci::Side costly = base;
  costly.avg_tokens = 121;
  EXPECT_EQ(ci::regressions(costly, base, {}).size(), 1u);
  costly.avg_tokens = 120;
  EXPECT_TRUE(ci::regressions(costly, base, {}).empty());
  // A better hard score excuses a lower judge score and more tokens.
  ci::Side better = base;
  better.hard_score = 0.75;
  better.judge_score = 0.1;
  better.avg_tokens = 1000;
  EXPECT_TRUE(ci::regressions(better, base, {}).empty());
}

}  // namespace
}  // namespace upskill
