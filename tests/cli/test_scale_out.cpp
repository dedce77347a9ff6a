// Shards and merge (docs/scale-out.md): four shards of an evaluation, merged, give every figure an
// unsharded run with the same seed gives; a missing shard is named, a shard given twice refused,
// shards of different evaluations refused; shard shares are balanced and keep pairs together.
#include <gtest/gtest.h>

#include <filesystem>

#include "scale_out_fixture.hpp"
#include "upskill/eval/evaluation.hpp"
#include "upskill/eval/merge.hpp"
#include "upskill/scale/hf_jobs.hpp"
#include "upskill/scale/slurm.hpp"

namespace upskill {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::read_file;
using testing::ScaleOut;
using testing::strip_times;

TEST_F(ScaleOut, MergedShardsEqualAnUnshardedRun) {
  const CliRun whole = run(demo_eval({"--runs-dir", "runs/whole", "--json", "whole.json"}));
  ASSERT_EQ(whole.code, 0) << whole.err;
  std::vector<fs::path> shards;
  std::vector<long long> sizes;
  for (int k = 1; k <= 4; ++k) {
    shards.push_back(shard(k, 4));
    const Json part = Json::parse(read_file(tmp / ("runs/s" + std::to_string(k) + "-7.json")));
    long long trials = 0;
    for (const auto& [_, arm] : part["models"][0]["arms"].items())
      trials += arm["trials"].get<long long>();
    sizes.push_back(trials);
  }
  // 10 cases × 2 runs = 20 pairs dealt to 4 shards: 5 pairs (10 trials) each, both arms together.
  EXPECT_EQ(sizes, (std::vector<long long>{10, 10, 10, 10}));
  std::vector<std::string> args{"runs", "merge"};
  for (auto it = shards.rbegin(); it != shards.rend(); ++it) args.push_back(it->string());
  for (const char* extra : {"--runs-dir", "runs/merged", "--json", "merged.json"})
    args.push_back(extra);
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
  const CliRun foreign =
      run({"runs", "merge", s1.string(), s2.string(), s3.string(), other.string()});
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
            const eval::ShardDeal deal(e);
            const bool base = deal.holds({m, eval::Arm::baseline, run, c});
            EXPECT_EQ(base, deal.holds({m, eval::Arm::with_skill, run, c}));  // pairs together
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

// --gpu-shards G: kernel pairs only in shards 1..G, the others only in G+1..N (all N when G = N),
// every pair in exactly one shard, both arms together, each class balanced.
TEST(Shards, GpuShardsTakeTheKernelCasesOnly) {
  eval::Evaluation e;
  e.cases.resize(9);
  cases::Check kernel_check;
  kernel_check.kind = cases::CheckKind::kernel;
  for (std::size_t c : {1u, 4u, 5u}) e.cases[c].checks.push_back(kernel_check);
  e.models.resize(2);
  e.runs = 2;
  for (const auto& [n, g] :
       std::vector<std::pair<int, int>>{{3, 1}, {4, 2}, {5, 4}, {3, 3}, {6, 0}}) {
    std::vector<int> kernel_counts(static_cast<std::size_t>(n), 0), other_counts = kernel_counts;
    for (std::size_t m = 0; m < 2; ++m)
      for (int run = 0; run < 2; ++run)
        for (std::size_t c = 0; c < 9; ++c) {
          const bool kernel = eval::has_kernel_check(e.cases[c]);
          int owners = 0;
          for (int k = 1; k <= n; ++k) {
            e.shard = eval::Shard{k, n, g};
            const eval::ShardDeal deal(e);
            const bool mine = deal.holds({m, eval::Arm::baseline, run, c});
            EXPECT_EQ(mine, deal.holds({m, eval::Arm::with_skill, run, c}));
            if (!mine) continue;
            ++owners;
            if (g > 0 && kernel) {
              EXPECT_LE(k, g) << n << "/" << g;
            }
            if (g > 0 && g < n && !kernel) {
              EXPECT_GT(k, g) << n << "/" << g;
            }
            ++(kernel ? kernel_counts : other_counts)[static_cast<std::size_t>(k - 1)];
          }
          EXPECT_EQ(owners, 1);
        }
    const auto spread = [](std::vector<int> v, int from, int to) {
      std::vector<int> part(v.begin() + from, v.begin() + to);
      const auto [lo, hi] = std::minmax_element(part.begin(), part.end());
      return *hi - *lo;
    };
    if (g > 0) {
      EXPECT_LE(spread(kernel_counts, 0, g), 1) << n << "/" << g;
      EXPECT_LE(spread(other_counts, g < n ? g : 0, n), 1) << n << "/" << g;
    }
  }
}

// The job script runs exactly the task's arguments, however they are spelled, with the array
// task's shard and folder, and records the exit status.
TEST(SlurmScript, RunsTheShardWithItsArgumentsVerbatim) {
  testing::TempDir tmp;
  const fs::path echo =
      tmp.write("echo-args.sh",
                "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$ARGS_OUT\"\n");
  fs::permissions(echo, fs::perms::owner_exec, fs::perm_options::add);
  scale::TaskCommand task;
  task.request.skill_dir = tmp / "my skill's $HOME `x`";
  task.request.tests = tmp / "tests.json";
  task.request.models = {"a b", "-m"};
  task.request.judge_criteria = {"line one\nline 'two'", "--judge"};
  task.request.seed = 7;
  task.global_options = {"--base-url", "http://h/$(x) y"};
  ASSERT_TRUE(scale::write_task_request(task, tmp / "sub 'dir'" / "task.json"));
  scale::SlurmOptions o;
  o.upskill = echo;
  o.partition = "cpu part";
  o.account = "lab#1 'x' \\y";
  auto sub = scale::new_submission(config::Executor::slurm, tmp / "runs", {5, 0});
  ASSERT_TRUE(sub) << sub.error().message;
  const std::string script = scale::slurm_script(task, o, *sub, 1, 5, false);
  EXPECT_NE(script.find("#SBATCH --partition=\"cpu part\"\n"), std::string::npos) << script;
  // Inside double quotes sbatch takes # ' and a space as they are; \\ and " are escaped.
  EXPECT_NE(script.find("#SBATCH --account=\"lab#1 'x' \\\\y\"\n"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --array=1-5\n"), std::string::npos) << script;
  const fs::path file = tmp.write("job.sh", script);
  const std::string cmd = "cd " + testing::shell_quote(tmp.path().string()) +
                          " && SLURM_ARRAY_TASK_ID=3 ARGS_OUT=args.bin bash job.sh";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string raw = read_file(tmp / "args.bin");
  std::vector<std::string> args;
  for (std::size_t at = 0, nul; (nul = raw.find('\0', at)) != std::string::npos; at = nul + 1)
    args.push_back(raw.substr(at, nul - at));
  const std::vector<std::string> expected{"--base-url",
                                          "http://h/$(x) y",
                                          "eval",
                                          "--request",
                                          task.request_file.string(),
                                          "--shard",
                                          "3/5",
                                          "--runs-dir",
                                          (sub->dir / "shards" / "3").string(),
                                          "--executor=local"};
  EXPECT_EQ(args, expected);
  // The task reads the request it was given, every value as it was.
  auto read = eval::read_request_file(args.at(4));
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(eval::to_json(*read), eval::to_json(task.request));
  EXPECT_EQ(read_file(sub->dir / "status" / "shard-3.rc"), "0\n");
  // A value that would open a new #SBATCH line is refused before anything is submitted.
  o.account = "lab\n#SBATCH --uid=0";
  auto refused = scale::submit_slurm(task, {2, 0}, o, tmp / "runs");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::usage);
}

// Records written by upskill and then damaged: named, refused, never a crash.
TEST(ScaleRecords, MutatedSubmissionsAndPlansAreRefusedWithTheirFile) {
  testing::TempDir tmp;
  auto sub = scale::new_submission(config::Executor::slurm, tmp / "runs", {4, 1});
  ASSERT_TRUE(sub);
  sub->job_ids = {"17"};
  ASSERT_TRUE(scale::write_submission(*sub));
  auto back = scale::read_submission(sub->dir);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->plan.shards, 4);
  EXPECT_EQ(back->plan.gpu_shards, 1);
  EXPECT_EQ(back->job_ids, std::vector<std::string>{"17"});
  EXPECT_EQ(back->executor, config::Executor::slurm);
  const Json good = Json::parse(read_file(sub->dir / "submission.json"));
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, Json>>{{"shards", 0},
                                                 {"shards", "4"},
                                                 {"gpu_shards", 5},
                                                 {"job_ids", 17},
                                                 {"executor", nullptr},
                                                 {"executor", "cloud"},
                                                 {"executor", "local"}}) {
    Json bad = good;
    bad[key] = value;
    tmp.write(fs::relative(sub->dir / "submission.json", tmp.path()).string(), bad.dump());
    auto read = scale::read_submission(sub->dir);
    ASSERT_FALSE(read) << key;
    EXPECT_NE(read.error().message.find("submission.json"), std::string::npos)
        << read.error().message;
  }
  // No batch yet: the merge names every shard as missing rather than failing on the folder.
  tmp.write(fs::relative(sub->dir / "submission.json", tmp.path()).string(), good.dump());
  auto inputs = scale::merge_inputs(sub->dir);
  ASSERT_TRUE(inputs);
  EXPECT_TRUE(inputs->empty());
  const auto outcomes = scale::task_outcomes(*sub, {{2, "TIMEOUT"}});
  ASSERT_EQ(outcomes.size(), 4u);
  EXPECT_TRUE(outcomes[1].failed());
  EXPECT_NE(outcomes[1].describe().find("shard 2/4: TIMEOUT, exit status not written, no batch"),
            std::string::npos)
      << outcomes[1].describe();
}

TEST(ScaleRecords, PlansWithImpossibleShardsAreRefused) {
  testing::TempDir tmp;
  eval::Evaluation e;
  e.skill_name = "demo";
  e.models.resize(1);
  e.models[0].name = "m";
  e.cases.resize(1);
  e.cases[0].id = "c1";
  e.cases[0].input = "x";
  for (const auto& shard : std::vector<eval::Shard>{{0, 4, 0}, {5, 4, 0}, {1, 4, 5}}) {
    e.shard = shard;
    ASSERT_TRUE(eval::write_plan(tmp.path(), e, 7));
    auto plan = eval::read_plan(tmp.path());
    ASSERT_FALSE(plan) << shard.index << "/" << shard.count << " gpu " << shard.gpu;
    EXPECT_NE(plan.error().message.find("is not a shard"), std::string::npos);
  }
  e.shard = eval::Shard{2, 4, 1};
  ASSERT_TRUE(eval::write_plan(tmp.path(), e, 7));
  auto plan = eval::read_plan(tmp.path());
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->shape.shard->gpu, 1);
  // The file changed by hand: a negative or mistyped GPU count.
  const Json good = Json::parse(read_file(tmp / "plan.json"));
  for (const Json& gpu : {Json(-1), Json("1"), Json(nullptr)}) {
    Json bad = good;
    bad["shard"]["gpu"] = gpu;
    tmp.write("plan.json", bad.dump());
    auto read = eval::read_plan(tmp.path());
    ASSERT_FALSE(read) << gpu;
    EXPECT_NE(read.error().message.find("plan.json"), std::string::npos) << read.error().message;
  }
}

TEST(HfJobsDuration, UpstreamsForms) {
  EXPECT_EQ(scale::parse_jobs_duration("2h"), std::chrono::seconds(7200));
  EXPECT_EQ(scale::parse_jobs_duration("30m"), std::chrono::seconds(1800));
  EXPECT_EQ(scale::parse_jobs_duration("90"), std::chrono::seconds(90));
  EXPECT_EQ(scale::parse_jobs_duration("1.5h"), std::chrono::seconds(5400));
  EXPECT_EQ(scale::parse_jobs_duration("1d"), std::chrono::seconds(86400));
  for (const char* bad : {"", "soon", "0", "-1h", "2w", "1h30m", "99d"})
    EXPECT_FALSE(scale::parse_jobs_duration(bad)) << bad;
}

}  // namespace
}  // namespace upskill
