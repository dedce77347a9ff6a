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
  const CliRun r = run(
      demo_eval({"--executor", "jobs", "--artifact-repo", "someone/upskill-runs", "--shards", "3",
                 "--jobs-flavor", "a10g-small", "--jobs-timeout", "30m", "--jobs-secrets",
                 "OPENAI_API_KEY,HF_TOKEN", "--jobs-namespace", "my-org", "--json", "jobs.json"}));
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
  EXPECT_TRUE(fs::exists(tmp / "hub/repos/someone/upskill-runs/inputs" / submission().filename() /
                         "bundle.tar.gz"));
  EXPECT_TRUE(fs::exists(submission() / "logs" / "shard-2.log"));
}

TEST_F(HfJobs, NoWaitThenRunsMergeFetchesTheOutputs) {
  const Json local = local_result({"--no-baseline", "-v"});
  // hf in agent mode (as under a coding agent): the job ids come as `id=… name=… url=…`.
  env += " AI_AGENT=someone-elses-agent";
  const CliRun r = run(demo_eval({"--no-baseline", "-v", "--executor", "jobs", "--artifact-repo",
                                  "someone/upskill-runs", "--shards", "2", "--no-wait"}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const fs::path sub = submission();
  const Json record = Json::parse(read_file(sub / "submission.json"));
  for (const auto& id : record["job_ids"])
    EXPECT_TRUE(fs::exists(tmp / "hub/jobs" / (id.get<std::string>() + ".json"))) << record;
  EXPECT_NE(r.out.find("upskill runs merge " + sub.string()), std::string::npos) << r.out;
  // The jobs end on their own; the hub then holds their exit statuses.
  const fs::path out = tmp / "hub/repos/someone/upskill-runs/outputs" / sub.filename();
  for (int i = 0; i < 600 && !(fs::exists(out / "shard-1/exit_code.txt") &&
                               fs::exists(out / "shard-2/exit_code.txt"));
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // The folder as a user types it, relative to where they are.
  const CliRun merged =
      run({"runs", "merge", fs::relative(sub, tmp.path()).string(), "--json", "merged.json"});
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
  const CliRun r =
      run({"eval", "demo", "-t", "suite/tests.json", "-m", "student", "--executor", "jobs",
           "--artifact-repo", "someone/upskill-runs", "--shards", "2", "--no-wait"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const fs::path bundle =
      tmp / "hub/repos/someone/upskill-runs/inputs" / submission().filename() / "bundle.tar.gz";
  const CliRun listed =
      testing::run_cli(tmp.path(), "", "tar", {"-tzf", bundle.string()}, tmp.path());
  ASSERT_EQ(listed.code, 0) << listed.err;
  // libcurl is not linked but opened on the first request: the bundle carries it and its needs.
  for (const char* present :
       {"./tests.json", "./specs/op.py", "./skill/SKILL.md", "./run.sh", "./bin/upskill",
        "./config.yaml", "./lib/libcurl.so.4", "./lib/libnghttp2.so.14", "./lib/libsimdjson.so.14"})
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
  const CliRun r = run(demo_eval(
      {"--executor", "jobs", "--artifact-repo", "someone/upskill-runs", "--shards", "3"}));
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  const fs::path log = submission() / "logs" / "shard-2.log";
  EXPECT_NE(r.err.find("failed: shard 2/3: ERROR, exit status not written, no batch (log: " +
                       log.string()),
            std::string::npos)
      << r.err;
  EXPECT_NE(read_file(log).find("container failed to start"), std::string::npos);
}

// The hub stops a job at its timeout, so the wait ends a margin after it (a quarter of it, 10 s
// at least) — not at twice it — when jobs never even start.
TEST_F(HfJobs, TheWaitIsBoundedByTheJobsOwnTimeout) {
  env += " FAKE_HF_NO_HARDWARE=1";
  const auto started = std::chrono::steady_clock::now();
  const CliRun r = run({"eval", "demo", "-m", "student", "--executor", "jobs", "--artifact-repo",
                        "someone/upskill-runs", "--shards", "2", "--jobs-timeout", "2s"});
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("have not all ended 12 s after the wait began (--jobs-timeout 2s"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("upskill runs merge " + submission().string()), std::string::npos);
  EXPECT_LT(took, std::chrono::seconds(30));
  EXPECT_GE(took, std::chrono::seconds(12));
  // The jobs are still waiting for hardware: cancelled here, with hf.
  const Json record = Json::parse(read_file(submission() / "submission.json"));
  for (const auto& id : record["job_ids"])
    EXPECT_EQ(testing::run_cli(tmp.path(), env, "hf", {"jobs", "cancel", id.get<std::string>()},
                               tmp.path())
                  .code,
              0);
}

TEST_F(HfJobs, MissingRepoRefusedAccessAndMissingClientAreErrors) {
  const CliRun no_repo = run({"eval", "demo", "-m", "student", "--executor", "jobs"});
  EXPECT_EQ(no_repo.code, 2);
  EXPECT_NE(no_repo.err.find("--artifact-repo"), std::string::npos) << no_repo.err;
  const CliRun bad_repo =
      run({"eval", "demo", "-m", "student", "--executor", "jobs", "--artifact-repo", "no slash"});
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
  const CliRun denied =
      run({"eval", "demo", "-m", "student", "--executor", "jobs", "--artifact-repo", "a/b"});
  EXPECT_EQ(denied.code, 3) << denied.err;
  // hf's own words, without its colours.
  EXPECT_NE(denied.err.find("hf repos create failed: Error: Client error '401 Unauthorized'"),
            std::string::npos)
      << denied.err;
  EXPECT_EQ(denied.err.find("\x1b["), std::string::npos) << denied.err;
  env = base + " PATH=/usr/bin:/bin";
  const CliRun missing =
      run({"eval", "demo", "-m", "student", "--executor", "jobs", "--artifact-repo", "a/b"});
  EXPECT_EQ(missing.code, 3) << missing.err;
  EXPECT_NE(missing.err.find("`hf` command-line client was not found"), std::string::npos)
      << missing.err;
}

// `generate --executor jobs` (upstream main's README: `upskill generate "parse invoices" --executor
// jobs --artifact-repo <user>/upskill-tests`): each attempt's evaluation runs as jobs through the
// `hf` stand-in and is merged into a batch here; the refinement stays local.
class GenerateOnJobs : public ::testing::Test {
 protected:
  testing::TempDir tmp;
  testing::ScriptedServer server{
      Json::parse(read_file(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/generate/script.json"))};
  std::string env;
  void SetUp() override {
    server.start();
    tmp.write("old/SKILL.md", "---\nname: old\ndescription: Old skill. Use when old.\n---\nOld.\n");
    tmp.write("old/skill_meta.json",
              R"({"metadata": {}, "tests": [{"id": "keep-me", "input": "Where do capabilities )"
              R"(go?", "expected": {"contains": ["cuda-capabilities"]}}]})");
    write_config("");
    env = "FAKE_HF_ROOT=" + testing::shell_quote((tmp / "hub").string()) +
          " PATH=" + testing::shell_quote(kFakeHf) + ":\"$PATH\" UPSKILL_JOBS_POLL_MS=200";
  }
  void write_config(const std::string& extra) {
    tmp.write("upskill.config.yaml",
              "skill_generation_model: teacher\nruns_dir: runs\n" + extra +
                  "models:\n  teacher: {provider: generic, base_url: \"" + server.base_url() +
                  "\"}\n  student: {provider: generic, base_url: \"" + server.base_url() + "\"}\n");
  }
  CliRun run(const std::vector<std::string>& args) {
    return testing::run_cli(tmp.path(), "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG " + env,
                            UPSKILL_BINARY, args, tmp.path());
  }
  std::size_t teacher_requests() {
    std::size_t n = 0;
    for (const auto& r : server.requests()) n += r.body.find("\"teacher\"") != std::string::npos;
    return n;
  }
};

TEST_F(GenerateOnJobs, EachAttemptIsEvaluatedAsJobsAndRefinedHere) {
  const CliRun r = run({"generate", "Create a skill document for kernels", "--from", "old",
                        "--eval-model", "student", "-o", "improved", "--executor", "jobs",
                        "--artifact-repo", "someone/upskill-tests", "--shards", "1"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("attempt 1: the skill saved to"), std::string::npos) << r.err;
  EXPECT_GT(teacher_requests(), 0u);  // what the refusals below count
  const Json meta = Json::parse(read_file(tmp / "improved/skill_meta.json"));
  const Json& attempt = meta["metadata"]["refinement"]["attempts"][0];
  EXPECT_EQ(attempt["with_skill"], 1.0) << attempt;
  EXPECT_EQ(attempt["baseline"], 0.0) << attempt;  // both arms ran remotely
  EXPECT_TRUE(
      fs::exists(tmp / "runs" / attempt["batch_id"].get<std::string>() / "batch_summary.json"))
      << attempt;
  // The jobs ran the attempt's skill; hf got `--` before the image, so -lc stayed bash's.
  int runs = 0;
  for (const auto& line : text::split_lines(read_file(tmp / "hub" / "calls.jsonl"))) {
    const auto args = Json::parse(line).get<std::vector<std::string>>();
    if (args.size() < 2 || args[0] != "jobs" || args[1] != "run") continue;
    ++runs;
    const auto dashes = std::find(args.begin(), args.end(), "--");
    ASSERT_NE(dashes, args.end()) << line;
    ASSERT_GE(args.end() - dashes, 4);
    EXPECT_EQ(*(dashes + 2), "bash");
    EXPECT_EQ(*(dashes + 3), "-lc");
  }
  EXPECT_EQ(runs, 1);
}

// The first attempt's evaluation fails remotely: an error (3) with the reason, and the skill and
// its tests saved where they belong, not evaluated.
TEST_F(GenerateOnJobs, AFailedRemoteEvaluationKeepsTheSkillAndItsTests) {
  env += " FAKE_HF_FAIL_SHARD=1";
  const CliRun r = run({"generate", "Create a skill document for kernels", "--from", "old",
                        "--eval-model", "student", "-o", "improved", "--executor", "jobs",
                        "--artifact-repo", "someone/upskill-tests", "--shards", "1"});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("1 of 1 shard task(s) left no batch: shard 1/1: ERROR"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("are saved, not evaluated, in improved"), std::string::npos) << r.err;
  const Json meta = Json::parse(read_file(tmp / "improved/skill_meta.json"));
  EXPECT_EQ(meta["tests"].size(), 1u);
  EXPECT_TRUE(fs::exists(tmp / "improved/SKILL.md"));
}

TEST_F(GenerateOnJobs, AConfiguredExecutorIsNeverIgnoredAndImpossibleCombinationsAreRefused) {
  // The config's executor, without the repository it needs: refused before any teacher call.
  write_config("executor: jobs\n");
  CliRun r = run({"generate", "Create a skill document for kernels", "--from", "old",
                  "--eval-model", "student", "-o", "improved"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--artifact-repo"), std::string::npos) << r.err;
  EXPECT_EQ(teacher_requests(), 0u);
  // Waiting is what refinement needs.
  r = run({"generate", "Create a skill document for kernels", "--from", "old", "--artifact-repo",
           "someone/upskill-tests", "--no-wait"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("generate --no-wait"), std::string::npos) << r.err;
  EXPECT_EQ(teacher_requests(), 0u);
  r = run({"generate", "Create a skill document for kernels", "--from", "old", "--artifact-repo",
           "someone/upskill-tests", "--no-log-runs"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--no-log-runs with --executor jobs"), std::string::npos) << r.err;
  EXPECT_EQ(teacher_requests(), 0u);
  // Nothing to evaluate: said, and nothing reaches hf.
  r = run({"generate", "Create a skill document for kernels", "--from", "old", "--artifact-repo",
           "someone/upskill-tests", "--no-eval", "-o", "improved"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("nothing runs on the jobs executor"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "hub" / "calls.jsonl"));
}

}  // namespace
}  // namespace upskill
