// The fault battery (docs/eval.md, "Run logs"): evaluations started at once into one runs folder,
// kill -9 at random moments each followed by --resume, a disk that fills while the logs are
// written, two resumes of one batch at once, endpoints that answer nothing, and a merge with a
// shard that stopped early. Every file left behind must parse, every batch must hold one
// evaluation, and every figure must equal an uninterrupted run's with the same seed — or say it is
// incomplete.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "scripted_server.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"

namespace upskill {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::read_file;
using testing::ScriptedServer;
using testing::shell_quote;
using testing::TempDir;

// `cases` cases c0, c1, …: with the skill the even ones pass, without it those ending in 0 or 5.
// Every reply waits `delay_ms`, so that a run lasts long enough to be killed part-way.
Json script(int delay_ms) {
  auto reply = [](const std::string& content, int prompt, int completion) {
    return Json{{"content", content},
                {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completion}}}};
  };
  return {{"delay_ms", delay_ms},
          {"rules",
           Json::array(
               {{{"match", {{"any_message", "## Skill: "}, {"message", "^task c\\d*[02468]$"}}},
                 {"reply", reply("MAGIC, as the skill says", 200, 30)}},
                {{"match", {{"any_message", "## Skill: "}}}, {"reply", reply("not sure", 210, 31)}},
                {{"match", {{"message", "^task c\\d*[05]$"}}}, {"reply", reply("MAGIC", 100, 60)}},
                {{"match", Json::object()}, {"reply", reply("no idea", 90, 50)}}})}};
}

class FaultBattery : public ::testing::Test {
 protected:
  TempDir tmp;
  void skill(const std::string& name, int cases) {
    tmp.write(name + "/SKILL.md", "---\nname: " + name +
                                      "\ndescription: Says MAGIC. Use when "
                                      "testing.\n---\nSay MAGIC.\n");
    Json tests = Json::array();
    for (int i = 0; i < cases; ++i)
      tests.push_back({{"id", "c" + std::to_string(i)},
                       {"input", "task c" + std::to_string(i)},
                       {"expected", {{"contains", "magic"}}}});
    tmp.write(name + "/skill_meta.json",
              Json{{"metadata", Json::object()}, {"tests", tests}}.dump());
  }
  void config_for(const std::string& base_url) {
    tmp.write("upskill.config.yaml",
              "runs_dir: runs\nretry_delay_s: 0.01\nretries: 1\nmodels:\n  student:\n    provider: "
              "generic\n    base_url: " +
                  base_url + "\n    model: student-7b\n");
  }
  std::string upskill_words(const std::vector<std::string>& args) const {
    std::string cmd = "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG " + shell_quote(UPSKILL_BINARY);
    for (const auto& a : args) cmd += " " + shell_quote(a);
    return cmd;
  }
  CliRun run(const std::vector<std::string>& args) {
    return testing::run_cli(tmp.path(), "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG",
                            UPSKILL_BINARY, args, tmp.path());
  }
  // Runs upskill in the background and kills it with SIGKILL after `seconds`.
  void run_and_kill(const std::vector<std::string>& args, double seconds) {
    const std::string cmd = "cd " + shell_quote(tmp.path().string()) + " && (" +
                            upskill_words(args) + " >/dev/null 2>&1 & pid=$!; sleep " +
                            std::to_string(seconds) + "; kill -9 $pid 2>/dev/null; wait $pid)" +
                            " >/dev/null 2>&1";
    std::system(("bash -c " + shell_quote(cmd)).c_str());
  }
  std::vector<fs::path> batches(const std::string& runs = "runs") const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(tmp / runs, ec))
      if (e.is_directory()) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }
};

// Every file a batch holds parses: each .json as a whole, each line of trials.jsonl. A kill -9 in
// the middle of an atomic write leaves its temporary file (hidden, never read), which the next
// resume removes: `killed` allows them, else none may be left. Returns the number of trial lines.
std::size_t expect_intact(const fs::path& batch, bool killed = false) {
  std::size_t lines = 0;
  for (const auto& f : fs::recursive_directory_iterator(batch)) {
    if (!f.is_regular_file()) continue;
    const std::string name = f.path().filename().string();
    if (name.front() == '.' && killed) continue;
    EXPECT_NE(name.front(), '.') << "temporary file left: " << f.path();
    if (f.path().extension() == ".jsonl") {
      std::istringstream in(read_file(f.path()));
      for (std::string line; std::getline(in, line); ++lines)
        EXPECT_TRUE(Json::accept(line)) << f.path() << ": " << line;
    } else if (f.path().extension() == ".json") {
      EXPECT_TRUE(Json::accept(read_file(f.path()))) << f.path();
    }
  }
  return lines;
}

// A result with what cannot repeat (latencies) taken out: every other figure must be equal.
Json figures(Json j) {
  if (j.is_object()) {
    j.erase("latency_ms");
    for (auto& [key, value] : j.items()) value = figures(value);
  } else if (j.is_array()) {
    for (auto& value : j) value = figures(value);
  }
  return j;
}

TEST_F(FaultBattery, FourEvaluationsStartedAtOnceLeaveFourIntactBatches) {
  ScriptedServer server(script(5));
  server.start();
  config_for(server.base_url());
  std::string cmd = "cd " + shell_quote(tmp.path().string()) + " && (";
  for (int i = 1; i <= 4; ++i) {
    skill("demo" + std::to_string(i), 7);
    cmd += upskill_words({"eval", "demo" + std::to_string(i), "-m", "student"}) + " > out" +
           std::to_string(i) + ".txt 2>&1 & ";
  }
  cmd += "wait)";
  ASSERT_EQ(std::system(("bash -c " + shell_quote(cmd)).c_str()), 0);
  const auto found = batches();
  ASSERT_EQ(found.size(), 4u);
  std::set<std::string> skills;
  for (const auto& b : found) {
    EXPECT_EQ(expect_intact(b), 14u) << b;  // 7 cases × 2 arms, of this evaluation only
    const Json plan = Json::parse(read_file(b / "plan.json"));
    skills.insert(plan["skill"].get<std::string>());
    const Json summary = Json::parse(read_file(b / "batch_summary.json"));
    EXPECT_EQ(summary["task"], plan["skill"]);
    EXPECT_EQ(summary["total_runs"], 2);
    for (const char* run : {"run_1", "run_2"})
      EXPECT_EQ(Json::parse(read_file(b / run / "run_result.json"))["skill_name"], plan["skill"]);
  }
  EXPECT_EQ(skills, (std::set<std::string>{"demo1", "demo2", "demo3", "demo4"}));
  // Each printed --resume id and run-log folder is its own.
  std::set<std::string> printed;
  for (int i = 1; i <= 4; ++i) {
    const std::string out = read_file(tmp / ("out" + std::to_string(i) + ".txt"));
    const auto at = out.find("run logs: ");
    ASSERT_NE(at, std::string::npos) << out;
    printed.insert(out.substr(at, out.find('\n', at) - at));
  }
  EXPECT_EQ(printed.size(), 4u);
  const CliRun runs = run({"runs"});
  ASSERT_EQ(runs.code, 0) << runs.err;
  for (int i = 1; i <= 4; ++i)
    EXPECT_NE(runs.out.find("demo" + std::to_string(i) + "\n  student"), std::string::npos)
        << runs.out;
}

// kill -9 at 20 random moments of a 200-trial evaluation, each followed by --resume: the figures
// are those of an uninterrupted run with the same seed, and every file left between kills parses.
TEST_F(FaultBattery, KilledTwentyTimesAndResumedGivesTheUninterruptedFigures) {
  skill("demo", 100);  // × 2 arms = 200 trials
  ScriptedServer server(script(15));
  server.start();
  config_for(server.base_url());
  const std::vector<std::string> eval{"eval", "demo", "-m", "student", "-j", "4", "--seed", "99"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = eval;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  ASSERT_EQ(run(with({"--runs-dir", "reference", "--json", "reference.json"})).code, 0);

  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("kill moments drawn with seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> moment(0.05, 0.5);
  // The first run is killed once its batch exists (at worst it is started again).
  for (int tries = 0; batches().empty() && tries < 10; ++tries)
    run_and_kill(eval, 0.15 + tries * 0.1);
  ASSERT_EQ(batches().size(), 1u);
  const std::string batch = batches()[0].filename().string();
  for (int kill = 2; kill <= 20; ++kill) {
    run_and_kill(with({"--resume", batch}), moment(rng));
    ASSERT_EQ(batches().size(), 1u) << "a resume wrote to another batch";
    expect_intact(batches()[0], true);
  }
  const CliRun finished = run(with({"--resume", batch, "--json", "resumed.json"}));
  ASSERT_EQ(finished.code, 0) << finished.out << finished.err;
  const Json a = Json::parse(read_file(tmp / "reference.json"));
  const Json b = Json::parse(read_file(tmp / "resumed.json"));
  EXPECT_EQ(b["complete"], true);
  EXPECT_EQ(figures(a["models"]), figures(b["models"]));
  EXPECT_EQ(a["errors"], b["errors"]);
  EXPECT_EQ(expect_intact(batches()[0]), 200u);  // each trial logged once, no temporary left
  // The batch's own files agree with it: every trial of both arms is in run_1 and run_2.
  for (const char* run_dir : {"run_1", "run_2"}) {
    const Json r = Json::parse(read_file(batches()[0] / run_dir / "run_result.json"));
    EXPECT_EQ(r["cases_scored"], 100) << run_dir;
  }
}

// A file-size limit reached while the logs are written: a clear error naming the file, a documented
// exit, every file already written intact; a resume once there is room finishes the batch.
TEST_F(FaultBattery, AFullDiskIsAClearErrorAndEveryEarlierFileStaysIntact) {
  skill("demo", 100);
  ScriptedServer server(script(0));
  server.start();
  config_for(server.base_url());
  const std::string cmd = "cd " + shell_quote(tmp.path().string()) + " && ulimit -f 48 && " +
                          upskill_words({"eval", "demo", "-m", "student", "--seed", "3"}) +
                          " > full.out 2> full.err; echo $? > full.code";
  std::system(("bash -c " + shell_quote(cmd)).c_str());
  const std::string err = read_file(tmp / "full.err");
  EXPECT_EQ(read_file(tmp / "full.code"), "2\n") << err;
  EXPECT_NE(err.find("File too large"), std::string::npos) << err;
  EXPECT_NE(err.find("trials.jsonl"), std::string::npos) << err;
  // What was computed is still printed.
  EXPECT_NE(read_file(tmp / "full.out").find("with skill"), std::string::npos);
  ASSERT_EQ(batches().size(), 1u);
  const std::size_t logged = expect_intact(batches()[0]);
  EXPECT_GT(logged, 0u);
  EXPECT_LT(logged, 200u);
  const CliRun resumed = run({"eval", "demo", "-m", "student", "--seed", "3", "--resume",
                              batches()[0].filename().string(), "--json", "resumed.json"});
  ASSERT_EQ(resumed.code, 0) << resumed.out << resumed.err;
  EXPECT_EQ(Json::parse(read_file(tmp / "resumed.json"))["complete"], true);
  EXPECT_EQ(expect_intact(batches()[0]), 200u);
}

// Two resumes of one batch at once: the second is refused while the first holds it.
TEST_F(FaultBattery, ASecondResumeOfTheSameBatchIsRefused) {
  skill("demo", 7);
  config_for("http://127.0.0.1:9/v1");  // nothing listens: every trial errors
  ASSERT_EQ(run({"eval", "demo", "-m", "student"}).code, 3);
  ASSERT_EQ(batches().size(), 1u);
  const std::string batch = batches()[0].filename().string();
  ScriptedServer server(script(100));
  server.start();
  config_for(server.base_url());
  const std::string first =
      "cd " + shell_quote(tmp.path().string()) + " && " +
      upskill_words({"eval", "demo", "-m", "student", "-j", "1", "--resume", batch}) +
      " > first.out 2>&1; echo $? > first.code";
  std::thread runner([&] { std::system(("bash -c " + shell_quote(first)).c_str()); });
  // Once the first resume asks the model, it holds the batch.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (server.request_count() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const CliRun second = run({"eval", "demo", "-m", "student", "--resume", batch});
  runner.join();
  EXPECT_EQ(second.code, 2) << second.out << second.err;
  EXPECT_NE(second.err.find("is in use by another upskill process (pid "), std::string::npos)
      << second.err;
  EXPECT_EQ(read_file(tmp / "first.code"), "0\n") << read_file(tmp / "first.out");
  EXPECT_EQ(server.request_count(), 14u);  // the refused resume asked nothing
}

// An endpoint that refuses every call: no figure, no lift and no recommendation are printed as if
// computed; the screen, the markdown and the JSON say what is missing and why.
TEST_F(FaultBattery, NothingAnsweredPrintsNoFigureAndNoRecommendation) {
  skill("demo", 7);
  Json refusals = Json::array();
  for (int i = 0; i < 40; ++i)
    refusals.push_back({{"type", "status"},
                        {"status", 401},
                        {"body", R"({"error": {"message": "Invalid API key"}})"}});
  ScriptedServer denied(Json{{"rules", Json::array({{{"match", Json::object()},
                                                     {"faults", refusals},
                                                     {"reply", {{"content", "x"}}}}})}});
  denied.start();
  config_for(denied.base_url());
  const CliRun r = run({"eval", "demo", "-m", "student", "--json", "out.json", "--summary-md",
                        "out.md", "--min-lift", "0.1"});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("incomplete: 14 of 14 trials unanswered — first cause: model student at"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("No recommendation: incomplete"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lift not computed: neither arm has a scored trial"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gate --min-lift +10%: FAILED, not decided"), std::string::npos) << r.out;
  for (const char* figure :
       {"  lift +", "Recommendation:", "keep skill", "may not be beneficial", " 0% "})
    EXPECT_EQ(r.out.find(figure), std::string::npos) << figure << "\n" << r.out;
  const Json j = Json::parse(read_file(tmp / "out.json"));
  EXPECT_EQ(j["complete"], false);
  EXPECT_EQ(j["incomplete"]["unanswered"], 14);
  EXPECT_NE(j["incomplete"]["first_cause"].get<std::string>().find("Invalid API key"),
            std::string::npos);
  EXPECT_TRUE(j["models"][0]["arms"]["with_skill"]["pass_rate"].is_null());
  EXPECT_EQ(j["models"][0]["lift"]["computed"], false);
  const std::string md = read_file(tmp / "out.md");
  EXPECT_NE(md.find("**incomplete: 14 of 14 trials unanswered"), std::string::npos) << md;
  EXPECT_EQ(md.find("+0%"), std::string::npos) << md;
}

// A judge that cannot be reached scores nothing: its trials have no verdict, so no rate, lift or
// recommendation is printed as if computed, the cause is the judge's, and the exit is 3.
TEST_F(FaultBattery, AJudgeThatCannotScoreIsAnErrorNotAFigure) {
  skill("demo", 3);
  ScriptedServer server(script(0));
  server.start();
  tmp.write("upskill.config.yaml",
            "runs_dir: runs\nretry_delay_s: 0.01\nretries: 1\nmodels:\n  student: {provider: "
            "generic, base_url: \"" +
                server.base_url() +
                "\"}\n  judge: {provider: generic, "
                "base_url: \"http://127.0.0.1:9/v1\"}\n");
  const CliRun r = run({"eval", "demo", "-m", "student", "--judge", "is friendly", "--judge-model",
                        "judge", "--json", "out.json"});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("incomplete: 6 of 6 trials unanswered — first cause: the judge could not "
                       "score the answer: judge judge: model judge at http://127.0.0.1:9/v1"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("No recommendation: incomplete"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Recommendation:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("  lift +"), std::string::npos) << r.out;
  const Json j = Json::parse(read_file(tmp / "out.json"));
  EXPECT_EQ(j["complete"], false);
  EXPECT_EQ(j["errors"], 6);
  EXPECT_TRUE(j["models"][0]["arms"]["with_skill"]["pass_rate"].is_null());
  // --resume runs the unjudged trials again (once the judge answers, they get their verdicts).
  const std::string batch = batches()[0].filename().string();
  tmp.write("upskill.config.yaml",
            "runs_dir: runs\nretry_delay_s: 0.01\nmodels:\n  student: {provider: generic, "
            "base_url: \"" +
                server.base_url() + "\"}\n  judge: {provider: generic, base_url: \"" +
                server.base_url() + "\"}\n");
  const std::size_t before = server.request_count();
  const CliRun resumed = run({"eval", "demo", "-m", "student", "--judge", "is friendly",
                              "--judge-model", "judge", "--resume", batch});
  EXPECT_GT(server.request_count(), before + 6) << "each trial asked again, then judged";
}

// A merge with a shard that stopped early (interrupted): incomplete, its cause the shard, and no
// recommendation.
TEST_F(FaultBattery, AMergeWithAShardThatStoppedEarlyIsIncomplete) {
  skill("demo", 8);
  ScriptedServer server(script(250));
  server.start();
  config_for(server.base_url());
  ASSERT_EQ(run({"eval", "demo", "-m", "student", "--shard", "1/2", "--runs-dir", "s1"}).code, 0);
  const std::string cmd = "cd " + shell_quote(tmp.path().string()) + " && (" +
                          upskill_words({"eval", "demo", "-m", "student", "-j", "1", "--shard",
                                         "2/2", "--runs-dir", "s2"}) +
                          " >/dev/null 2>&1 & pid=$!; sleep 1; kill -INT $pid; wait $pid)";
  std::system(("bash -c " + shell_quote(cmd)).c_str());
  const auto s1 = batches("s1"), s2 = batches("s2");
  ASSERT_EQ(s1.size(), 1u);
  ASSERT_EQ(s2.size(), 1u);
  const CliRun merged =
      run({"runs", "merge", s1[0].string(), s2[0].string(), "--json", "merged.json"});
  EXPECT_EQ(merged.code, 3) << merged.out << merged.err;
  EXPECT_NE(merged.out.find("incomplete: "), std::string::npos) << merged.out;
  EXPECT_NE(merged.out.find("first cause: shard 2/2 (" + s2[0].string() + ") logged "),
            std::string::npos)
      << merged.out;
  EXPECT_NE(merged.out.find("No recommendation: incomplete"), std::string::npos) << merged.out;
  EXPECT_EQ(merged.out.find("Recommendation:"), std::string::npos) << merged.out;
  const Json j = Json::parse(read_file(tmp / "merged.json"));
  EXPECT_EQ(j["complete"], false);
  EXPECT_GT(j["incomplete"]["missing"].get<int>(), 0);
}

}  // namespace
}  // namespace upskill
