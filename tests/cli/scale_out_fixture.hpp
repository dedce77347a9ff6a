#pragma once
// What the scale-out tests share (test_scale_out, test_slurm, test_hf_jobs): a ten-case skill
// against a scripted student, and the comparison of result files without what only a clock
// decides.
#include <gtest/gtest.h>

#include <filesystem>

#include "scripted_server.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"

namespace upskill::testing {

namespace fs = std::filesystem;

// Ten cases; with the skill the student gets c1..c8 right, without it c1..c3; c9 always fails.
inline Json script() {
  Json rules = Json::array();
  for (int i = 1; i <= 10; ++i) {
    const std::string id = "c" + std::to_string(i);
    rules.push_back(
        {{"match", {{"any_message", "## Skill: demo"}, {"message", "^task " + id + "$"}}},
         {"reply",
          {{"content", i <= 8 ? "MAGIC-" + id : "no"},
           {"usage", {{"prompt_tokens", 100 + i}, {"completion_tokens", 10}}}}}});
    rules.push_back({{"match", {{"message", "^task " + id + "$"}}},
                     {"reply",
                      {{"content", i <= 3 ? "MAGIC-" + id : "no"},
                       {"usage", {{"prompt_tokens", 50 + i}, {"completion_tokens", 30}}}}}});
  }
  return {{"rules", rules}};
}

// Figures only a clock decides.
inline void strip_times(Json& j) {
  if (j.is_object()) {
    j.erase("latency_ms");
    j.erase("seconds");
    for (auto& [_, v] : j.items()) strip_times(v);
  } else if (j.is_array()) {
    for (auto& v : j) strip_times(v);
  }
}

class ScaleOut : public ::testing::Test {
 protected:
  TempDir tmp;
  ScriptedServer server{script()};
  void SetUp() override {
    server.start();
    tmp.write("demo/SKILL.md",
              "---\nname: demo\ndescription: Demo. Use when testing.\n---\nSay MAGIC.\n");
    Json tests = Json::array();
    for (int i = 1; i <= 10; ++i)
      tests.push_back({{"id", "c" + std::to_string(i)},
                       {"input", "task c" + std::to_string(i)},
                       {"expected", {{"contains", "magic-c" + std::to_string(i)}}}});
    tmp.write("demo/skill_meta.json", Json{{"metadata", Json::object()}, {"tests", tests}}.dump());
    tmp.write("upskill.config.yaml",
              "models:\n  student: {provider: generic, base_url: \"" + server.base_url() + "\"}\n");
  }
  // Extra words for `env` before the binary (VAR=value …).
  std::string env;
  CliRun run(std::vector<std::string> args) {
    return run_cli(tmp.path(), "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG " + env,
                   UPSKILL_BINARY, args, tmp.path());
  }
  // The JSON result file at `path` (relative to the test folder), without latencies.
  Json result(const std::string& path) {
    Json j = Json::parse(read_file(tmp / path));
    strip_times(j);
    return j;
  }
  // `upskill eval demo` as every scale-out test runs it: the student, two runs, the seed and both
  // arms (two runs a case is upskill's benchmark mode, so the baseline is asked for unless `extra`
  // says --no-baseline), then `extra`.
  static std::vector<std::string> demo_eval(const std::vector<std::string>& extra,
                                            const std::string& seed = "7") {
    std::vector<std::string> args{"eval", "demo", "-m", "student", "--runs", "2", "--seed", seed};
    if (std::find(extra.begin(), extra.end(), "--no-baseline") == extra.end())
      args.push_back("--baseline");
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  // The unsharded run's JSON result, seed 7, 2 runs: what every executor must reproduce.
  Json local_result(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = demo_eval(extra);
    args.insert(args.end(), {"--no-log-runs", "--json", "local.json"});
    const CliRun whole = run(args);
    EXPECT_EQ(whole.code, 0) << whole.err;
    return result("local.json");
  }
  // Runs shard k/n into runs/s<k>/ and returns its batch folder.
  fs::path shard(int k, int n, const std::string& seed = "7") {
    const std::string dir = "runs/s" + std::to_string(k) + "-" + seed;
    const CliRun r = run(demo_eval({"--shard", std::to_string(k) + "/" + std::to_string(n),
                                    "--runs-dir", dir, "--json", dir + ".json"},
                                   seed));
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    for (const auto& e : fs::directory_iterator(tmp / dir)) return e.path();
    return {};
  }
};

}  // namespace upskill::testing
