// Shards and merge (docs/scale-out.md): four shards of an evaluation, merged, give every figure an
// unsharded run with the same seed gives; a missing shard is named, a shard given twice refused,
// shards of different evaluations refused; shard shares are balanced and keep pairs together.
#include <gtest/gtest.h>

#include <filesystem>

#include "scripted_server.hpp"
#include "support/cli_run.hpp"
#include "support/temp_dir.hpp"
#include "upskill/eval/evaluation.hpp"

namespace upskill {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::read_file;
using testing::ScriptedServer;
using testing::TempDir;

// Ten cases; with the skill the student gets c1..c8 right, without it c1..c3; c9 always fails.
Json script() {
  Json rules = Json::array();
  for (int i = 1; i <= 10; ++i) {
    const std::string id = "c" + std::to_string(i);
    rules.push_back({{"match", {{"any_message", "## Skill: demo"}, {"message", "^task " + id + "$"}}},
                     {"reply", {{"content", i <= 8 ? "MAGIC-" + id : "no"},
                                {"usage", {{"prompt_tokens", 100 + i}, {"completion_tokens", 10}}}}}});
    rules.push_back({{"match", {{"message", "^task " + id + "$"}}},
                     {"reply", {{"content", i <= 3 ? "MAGIC-" + id : "no"},
                                {"usage", {{"prompt_tokens", 50 + i}, {"completion_tokens", 30}}}}}});
  }
  return {{"rules", rules}};
}

// Figures only a clock decides.
void strip_times(Json& j) {
  if (j.is_object()) {
    j.erase("latency_ms");
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
    tmp.write("demo/SKILL.md", "---\nname: demo\ndescription: Demo. Use when testing.\n---\nSay MAGIC.\n");
    Json tests = Json::array();
    for (int i = 1; i <= 10; ++i)
      tests.push_back({{"id", "c" + std::to_string(i)},
                       {"input", "task c" + std::to_string(i)},
                       {"expected", {{"contains", "magic-c" + std::to_string(i)}}}});
    tmp.write("demo/skill_meta.json", Json{{"metadata", Json::object()}, {"tests", tests}}.dump());
    tmp.write("upskill.config.yaml", "models:\n  student: {provider: generic, base_url: \"" +
                                         server.base_url() + "\"}\n");
  }
  CliRun run(std::vector<std::string> args) {
    return testing::run_cli(tmp.path(), "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG",
                            UPSKILL_BINARY, args, tmp.path());
  }
  // Runs shard k/n into runs/s<k>/ and returns its batch folder.
  fs::path shard(int k, int n, const std::string& seed = "7") {
    const std::string dir = "runs/s" + std::to_string(k) + "-" + seed;
    const CliRun r = run({"eval", "demo", "-m", "student", "--runs", "2", "--seed", seed,
                          "--shard", std::to_string(k) + "/" + std::to_string(n), "--runs-dir",
                          dir, "--json", dir + ".json"});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    for (const auto& e : fs::directory_iterator(tmp / dir)) return e.path();
    return {};
  }
};

TEST_F(ScaleOut, MergedShardsEqualAnUnshardedRun) {
  const CliRun whole = run({"eval", "demo", "-m", "student", "--runs", "2", "--seed", "7",
                            "--runs-dir", "runs/whole", "--json", "whole.json"});
  ASSERT_EQ(whole.code, 0) << whole.err;
  std::vector<fs::path> shards;
  std::vector<long long> sizes;
  for (int k = 1; k <= 4; ++k) {
    shards.push_back(shard(k, 4));
    const Json part = Json::parse(read_file(tmp / ("runs/s" + std::to_string(k) + "-7.json")));
    long long trials = 0;
    for (const auto& [_, arm] : part["models"][0]["arms"].items()) trials += arm["trials"].get<long long>();
    sizes.push_back(trials);
  }
  // 10 cases × 2 runs = 20 pairs dealt to 4 shards: 5 pairs (10 trials) each, both arms together.
  EXPECT_EQ(sizes, (std::vector<long long>{10, 10, 10, 10}));
  std::vector<std::string> args{"runs", "merge"};
  for (auto it = shards.rbegin(); it != shards.rend(); ++it) args.push_back(it->string());
  for (const char* extra : {"--runs-dir", "runs/merged", "--json", "merged.json"}) args.push_back(extra);
  const CliRun merged = run(args);
  ASSERT_EQ(merged.code, 0) << merged.out << merged.err;
  Json a = Json::parse(read_file(tmp / "whole.json"));
  Json b = Json::parse(read_file(tmp / "merged.json"));
  strip_times(a);
  strip_times(b);
  EXPECT_EQ(a, b);
  EXPECT_NEAR(b["models"][0]["lift"]["lift"].get<double>(), 0.5, 1e-9);
  // The merged batch is a batch like any other: `runs` reads it.
  EXPECT_EQ(run({"runs", "-d", "runs/merged"}).code, 0);
  // Gates on the merged figures, as a CI matrix's last job uses them.
  std::vector<std::string> gated{"runs", "merge"};
  for (const auto& s : shards) gated.push_back(s.string());
  for (const char* extra : {"--no-log-runs", "--min-lift", "0.9"}) gated.push_back(extra);
  const CliRun strict = run(gated);
  EXPECT_EQ(strict.code, 1) << strict.out;
  EXPECT_NE(strict.out.find("gate --min-lift +90%: FAILED"), std::string::npos) << strict.out;
  gated.back() = "0.1";
  EXPECT_EQ(run(gated).code, 0);
}

TEST_F(ScaleOut, MissingDuplicatedOrForeignShardsAreRefused) {
  const fs::path s1 = shard(1, 4), s2 = shard(2, 4), s3 = shard(3, 4);
  const CliRun three = run({"runs", "merge", s1.string(), s2.string(), s3.string()});
  EXPECT_EQ(three.code, 2);
  EXPECT_NE(three.err.find("missing shard 4/4"), std::string::npos) << three.err;
  const CliRun twice = run({"runs", "merge", s1.string(), s2.string(), s2.string()});
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.err.find("shard 2/4 is given twice"), std::string::npos) << twice.err;
  const fs::path other = shard(4, 4, "8");  // another seed: another evaluation
  const CliRun foreign = run({"runs", "merge", s1.string(), s2.string(), s3.string(), other.string()});
  EXPECT_EQ(foreign.code, 2);
  EXPECT_NE(foreign.err.find("shards of different evaluations"), std::string::npos) << foreign.err;
  EXPECT_EQ(run({"eval", "demo", "-m", "student", "--shard", "5/4"}).code, 2);
  EXPECT_EQ(run({"eval", "demo", "-m", "student", "--shard", "x"}).code, 2);
}

TEST(Shards, BalancedDeterministicAndPairsTogether) {
  eval::Evaluation e;
  e.cases.resize(7);
  e.models.resize(2);
  e.runs = 3;
  for (int n : {1, 2, 3, 5, 8, 64}) {
    std::vector<int> counts(static_cast<std::size_t>(n), 0);
    for (std::size_t m = 0; m < 2; ++m)
      for (int run = 0; run < 3; ++run)
        for (std::size_t c = 0; c < 7; ++c) {
          int owners = 0;
          for (int k = 1; k <= n; ++k) {
            e.shard = eval::Shard{k, n};
            const bool base = e.in_shard({m, eval::Arm::baseline, run, c});
            EXPECT_EQ(base, e.in_shard({m, eval::Arm::with_skill, run, c}));  // pairs together
            if (base) {
              ++owners;
              ++counts[static_cast<std::size_t>(k - 1)];
            }
          }
          EXPECT_EQ(owners, 1);  // every pair in exactly one shard
        }
    const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
    EXPECT_LE(*hi - *lo, 1) << n;  // balanced
  }
}

}  // namespace
}  // namespace upskill
