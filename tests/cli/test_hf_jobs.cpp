// `--executor jobs` through a stand-in `hf` (tests/data/fake-hf/hf: a folder for the hub, jobs run
// here in the background): the shards as jobs give every figure of a local run; upstream's flags
// reach `hf jobs run`; secrets go by name and never into an argument, the bundle or a file;
// --no-wait then `runs merge` fetches; a failed job is named with its log; a missing
// --artifact-repo, a refused repository and a missing `hf` are errors with reasons.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "scale_out_fixture.hpp"
#include "upskill/core/text.hpp"

namespace upskill {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::read_file;

const std::string kFakeHf = std::string(UPSKILL_SOURCE_DIR) + "/tests/data/fake-hf";

class HfJobs : public testing::ScaleOut {
 protected:
  void SetUp() override {
    ScaleOut::SetUp();
    env = "FAKE_HF_ROOT=" + testing::shell_quote((tmp / "hub").string()) +
          " PATH=" + testing::shell_quote(kFakeHf) + ":\"$PATH\" UPSKILL_JOBS_POLL_MS=200" +
          " OPENAI_API_KEY=sk-test-SECRET-4242 HF_TOKEN=hf_test_SECRET_4343";
  }
  fs::path submission() {
    for (const auto& e : fs::directory_iterator(tmp / "runs"))
      if (e.path().filename().string().starts_with("jobs-")) return e.path();
    return {};
  }
  std::vector<Json> calls() {
    std::vector<Json> out;
    for (const auto& line : text::split_lines(read_file(tmp / "hub" / "calls.jsonl")))
      out.push_back(Json::parse(line));
    return out;
  }
  // Whether `needle` is in any file under `dir`.
  static bool anywhere(const fs::path& dir, const std::string& needle) {
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file() && read_file(e.path()).find(needle) != std::string::npos) return true;
    return false;
  }
};

TEST_F(HfJobs, ShardsAsJobsGiveTheLocalFiguresWithUpstreamsFlags) {
  const Json local = local_result();
  const CliRun r = run({"eval", "demo", "-m", "student", "--runs", "2", "--seed", "7",
                        "--executor", "jobs", "--artifact-repo", "someone/upskill-runs",
                        "--shards", "3", "--jobs-flavor", "a10g-small", "--jobs-timeout", "30m",
                        "--jobs-secrets", "OPENAI_API_KEY,HF_TOKEN", "--jobs-namespace", "my-org",
                        "--json", "jobs.json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(result("jobs.json"), local);
  int runs = 0;
  for (const Json& call : calls()) {
    const std::string argv = call.dump();
    EXPECT_EQ(argv.find("SECRET-4242"), std::string::npos) << "a secret's value in hf's arguments";
    EXPECT_EQ(argv.find("SECRET_4343"), std::string::npos) << "a secret's value in hf's arguments";
    if (call[0] != "jobs" || call[1] != "run") continue;
    ++runs;
    const auto args = call.get<std::vector<std::string>>();
    const auto after = [&](const std::string& flag) {
      auto it = std::find(args.begin(), args.end(), flag);
      return it == args.end() || it + 1 == args.end() ? std::string() : *(it + 1);
    };
    EXPECT_EQ(after("--flavor"), "a10g-small");
    EXPECT_EQ(after("--timeout"), "30m");
    EXPECT_EQ(after("--namespace"), "my-org");
    EXPECT_NE(std::find(args.begin(), args.end(), "OPENAI_API_KEY"), args.end()) << argv;
    EXPECT_NE(std::find(args.begin(), args.end(), "--detach"), args.end()) << argv;
    EXPECT_NE(argv.find("ARTIFACT_REPO=someone/upskill-runs"), std::string::npos) << argv;
  }
  EXPECT_EQ(runs, 3);
  // Nothing on the hub or in the submission holds a key; the jobs got them by name.
  for (const char* value : {"sk-test-SECRET-4242", "hf_test_SECRET_4343"}) {
    EXPECT_FALSE(anywhere(tmp / "hub" / "repos", value)) << value;
    EXPECT_FALSE(anywhere(submission(), value)) << value;
  }
  EXPECT_TRUE(fs::exists(tmp / "hub/repos/someone/upskill-runs/inputs" /
                         submission().filename() / "bundle.tar.gz"));
  EXPECT_TRUE(fs::exists(submission() / "logs" / "shard-2.log"));
}

TEST_F(HfJobs, NoWaitThenRunsMergeFetchesTheOutputs) {
  const Json local = local_result({"--no-baseline", "-v"});
  const CliRun r = run({"eval", "demo", "-m", "student", "--runs", "2", "--seed", "7",
                        "--no-baseline", "-v", "--executor", "jobs", "--artifact-repo",
                        "someone/upskill-runs", "--shards", "2", "--no-wait"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const fs::path sub = submission();
  EXPECT_NE(r.out.find("upskill runs merge " + sub.string()), std::string::npos) << r.out;
  // The jobs end on their own; the hub then holds their exit statuses.
  const fs::path out = tmp / "hub/repos/someone/upskill-runs/outputs" / sub.filename();
  for (int i = 0; i < 600 && !(fs::exists(out / "shard-1/exit_code.txt") &&
                               fs::exists(out / "shard-2/exit_code.txt"));
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const CliRun merged = run({"runs", "merge", sub.string(), "--json", "merged.json"});
  ASSERT_EQ(merged.code, 0) << merged.out << merged.err;
  EXPECT_EQ(result("merged.json"), local);
}

// The bundle carries what the tasks read — the tests given with -t and the kernel specs beside
// them — and not the skill folder's hidden files.
TEST_F(HfJobs, TheBundleCarriesTheSpecsAndNoHiddenFiles) {
  tmp.write("demo/.env", "OPENAI_API_KEY=sk-test-SECRET-4242\n");
  tmp.write("suite/specs/op.py", "# an op spec\n");
  Json tests = Json::parse(read_file(tmp / "demo/skill_meta.json"))["tests"];
  tests[9] = {{"id", "c10"},
              {"input", "task c10"},
              {"checks", Json::array({{{"type", "kernel"},
                                       {"stages", Json::array({"extract", "layout"})},
                                       {"spec", "specs/op.py"}}})}};
  tmp.write("suite/tests.json", Json{{"cases", tests}}.dump());
  const CliRun r = run({"eval", "demo", "-t", "suite/tests.json", "-m", "student", "--executor",
                        "jobs", "--artifact-repo", "someone/upskill-runs", "--shards", "2",
                        "--no-wait"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const fs::path bundle = tmp / "hub/repos/someone/upskill-runs/inputs" / submission().filename() /
                          "bundle.tar.gz";
  const CliRun listed = testing::run_cli(tmp.path(), "", "tar", {"-tzf", bundle.string()},
                                         tmp.path());
  ASSERT_EQ(listed.code, 0) << listed.err;
  for (const char* present : {"./tests.json", "./specs/op.py", "./skill/SKILL.md", "./run.sh",
                              "./bin/upskill", "./config.yaml"})
    EXPECT_NE(listed.out.find(std::string(present) + "\n"), std::string::npos) << present;
  EXPECT_EQ(listed.out.find(".env"), std::string::npos) << listed.out;
  // The jobs end before the test folder goes.
  const fs::path out = tmp / "hub/repos/someone/upskill-runs/outputs" / submission().filename();
  for (int i = 0; i < 600 && !(fs::exists(out / "shard-1/exit_code.txt") &&
                               fs::exists(out / "shard-2/exit_code.txt"));
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // A spec outside the tests' folder cannot travel: refused before anything is uploaded.
  tests[9]["checks"][0]["spec"] = "../elsewhere/op.py";
  tmp.write("suite/tests.json", Json{{"cases", tests}}.dump());
  const CliRun outside = run({"eval", "demo", "-t", "suite/tests.json", "-m", "student",
                              "--executor", "jobs", "--artifact-repo", "someone/upskill-runs"});
  EXPECT_EQ(outside.code, 2) << outside.err;
  EXPECT_NE(outside.err.find("must lie below the tests' folder"), std::string::npos) << outside.err;
}

TEST_F(HfJobs, AFailedJobIsNamedWithItsLog) {
  env += " FAKE_HF_FAIL_SHARD=2";
  const CliRun r = run({"eval", "demo", "-m", "student", "--runs", "2", "--executor", "jobs",
                        "--artifact-repo", "someone/upskill-runs", "--shards", "3"});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  const fs::path log = submission() / "logs" / "shard-2.log";
  EXPECT_NE(r.err.find("failed: shard 2/3: ERROR, exit status not written, no batch (log: " +
                       log.string()),
            std::string::npos)
      << r.err;
  EXPECT_NE(read_file(log).find("container failed to start"), std::string::npos);
}

TEST_F(HfJobs, MissingRepoRefusedAccessAndMissingClientAreErrors) {
  const CliRun no_repo = run({"eval", "demo", "-m", "student", "--executor", "jobs"});
  EXPECT_EQ(no_repo.code, 2);
  EXPECT_NE(no_repo.err.find("--artifact-repo"), std::string::npos) << no_repo.err;
  const CliRun bad_repo = run({"eval", "demo", "-m", "student", "--executor", "jobs",
                               "--artifact-repo", "no slash"});
  EXPECT_EQ(bad_repo.code, 2) << bad_repo.err;
  const CliRun bad_timeout = run({"eval", "demo", "-m", "student", "--executor", "jobs",
                                  "--artifact-repo", "a/b", "--jobs-timeout", "soon"});
  EXPECT_EQ(bad_timeout.code, 2) << bad_timeout.err;
  const CliRun gpu = run({"eval", "demo", "-m", "student", "--executor", "jobs", "--artifact-repo",
                          "a/b", "--shards", "2", "--gpu-shards", "3"});
  EXPECT_EQ(gpu.code, 2) << gpu.err;
  EXPECT_FALSE(fs::exists(tmp / "hub" / "calls.jsonl")) << "nothing reaches hf";
  const std::string base = env;
  env = base + " FAKE_HF_DENY=1";
  const CliRun denied = run({"eval", "demo", "-m", "student", "--executor", "jobs",
                             "--artifact-repo", "a/b"});
  EXPECT_EQ(denied.code, 3) << denied.err;
  EXPECT_NE(denied.err.find("Repository Not Found"), std::string::npos) << denied.err;
  env = base + " PATH=/usr/bin:/bin";
  const CliRun missing = run({"eval", "demo", "-m", "student", "--executor", "jobs",
                              "--artifact-repo", "a/b"});
  EXPECT_EQ(missing.code, 3) << missing.err;
  EXPECT_NE(missing.err.find("`hf` command-line client was not found"), std::string::npos)
      << missing.err;
}

}  // namespace
}  // namespace upskill
