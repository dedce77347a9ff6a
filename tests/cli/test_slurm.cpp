// `--executor slurm` against a real single-node Slurm (tests/support/slurm_cluster.sh, started by
// the ctest fixture slurm_cluster): four shards as a job array give every figure of a local run;
// --no-wait then `runs merge`; a failed task is named with its log; kernel cases go to the GPU
// partition with --gres; sbatch's refusal is kept. Skipped, with the reason, when the cluster
// could not start here (no slurm-wlm and munge, or not root) — never faked.
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <thread>

#include "scale_out_fixture.hpp"
#include "upskill/core/text.hpp"

namespace upskill {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::read_file;

const fs::path kCluster = UPSKILL_TEST_SLURM_DIR;

class Slurm : public testing::ScaleOut {
 protected:
  void SetUp() override {
    if (fs::exists(kCluster / "absent"))
      GTEST_SKIP() << "no test Slurm here: " << read_file(kCluster / "absent");
    if (!fs::exists(kCluster / "slurm.conf"))
      GTEST_SKIP() << "no test Slurm here: the slurm_cluster fixture did not run";
    ScaleOut::SetUp();
    env = "SLURM_CONF=" + testing::shell_quote((kCluster / "slurm.conf").string()) +
          " UPSKILL_SLURM_POLL_MS=300";
  }
  // The one submission folder under runs/.
  fs::path submission() {
    for (const auto& e : fs::directory_iterator(tmp / "runs"))
      if (e.path().filename().string().starts_with("slurm-")) return e.path();
    return {};
  }
  // squeue's partition of each array task of the submission's jobs, "K PARTITION" sorted.
  std::string partitions(const fs::path& sub) {
    const Json s = Json::parse(read_file(sub / "submission.json"));
    std::string ids;
    for (const auto& id : s["job_ids"]) ids += (ids.empty() ? "" : ",") + id.get<std::string>();
    const CliRun r = testing::run_cli(
        tmp.path(), env, "squeue",
        {"--noheader", "--array", "--states=all", "--jobs=" + ids, "--format=%K %P"}, tmp.path());
    std::vector<std::string> lines = text::split_lines(r.out);
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

TEST_F(Slurm, FourShardsAsAJobArrayGiveTheLocalFigures) {
  const Json local = local_result();
  const CliRun r = run(demo_eval({"--executor", "slurm", "--shards", "4", "--slurm-time", "10",
                                  "--slurm-option=--comment=upskill-test", "--json", "slurm.json",
                                  "--junit", "slurm.xml", "--summary-md", "slurm.md"}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(result("slurm.json"), local);
  EXPECT_NE(read_file(tmp / "slurm.xml").find("<testsuite"), std::string::npos);
  EXPECT_NE(r.out.find("Recommendation: keep skill"), std::string::npos) << r.out;
  for (int k = 1; k <= 4; ++k)
    EXPECT_NE(r.err.find("merged shard " + std::to_string(k) + "/4"), std::string::npos) << r.err;
  const fs::path sub = submission();
  const std::string script = read_file(sub / "job.sh");
  EXPECT_NE(script.find("#SBATCH --array=1-4"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --time=\"10\""), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --comment=upskill-test"), std::string::npos) << script;
  EXPECT_EQ(script.find("--json"), std::string::npos) << "result files are the merge's";
  for (int k = 1; k <= 4; ++k)
    EXPECT_EQ(read_file(sub / "status" / ("shard-" + std::to_string(k) + ".rc")), "0\n");
  // Every task ran where chat trials run: the default partition.
  EXPECT_EQ(partitions(sub), "1 main\n2 main\n3 main\n4 main\n");
}

// What a cluster admin reads first: the job asks for time, memory and CPUs; and the keys the tasks
// need never enter the environment slurmctld saves with the job (state/hash.N/job.ID/environment):
// they travel in the submission's 0600 secrets file, removed once the tasks have ended.
TEST_F(Slurm, JobsSayTheirLimitsAndKeysStayOutOfSlurmsSavedEnvironment) {
  constexpr const char* kStudentKey = "canary-slurm-student-5d1e";
  constexpr const char* kOtherKey = "canary-slurm-other-9a07";
  Json keyed = testing::script();
  keyed["require_key"] = kStudentKey;
  testing::ScriptedServer keyed_server{keyed};
  ASSERT_GT(keyed_server.start(), 0);
  // The student's key variable is not named like a secret: the config naming it is what counts.
  tmp.write("upskill.config.yaml", "models:\n  student: {provider: generic, base_url: \"" +
                                       keyed_server.base_url() +
                                       "\", api_key_env: STUDENT_CRED}\nslurm:\n  mem: 2G\n");
  env += std::string(" STUDENT_CRED=") + kStudentKey + " OTHER_API_KEY=" + kOtherKey;
  const CliRun r = run({"eval", "demo", "-m", "student", "--runs", "1", "--executor", "slurm",
                        "--shards", "2", "--slurm-cpus", "1", "--json", "keyed.json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const Json out = Json::parse(read_file(tmp / "keyed.json"));
  EXPECT_EQ(out["models"][0]["arms"]["with_skill"]["pass_rate"], 0.8) << out.dump(1);
  const fs::path sub = submission();
  const std::string script = read_file(sub / "job.sh");
  EXPECT_NE(script.find("#SBATCH --time=\"2:00:00\""), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --mem=\"2G\""), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --cpus-per-task=\"1\""), std::string::npos) << script;
  EXPECT_FALSE(fs::exists(sub / "secrets.env")) << "removed once every task has ended";
  // Slurm kept each job's environment: it exists, and holds neither key.
  const Json s = Json::parse(read_file(sub / "submission.json"));
  int saved = 0;
  for (const auto& e : fs::recursive_directory_iterator(kCluster / "state")) {
    if (!e.is_regular_file()) continue;
    const std::string text = read_file(e.path());
    EXPECT_EQ(text.find(kStudentKey), std::string::npos) << e.path();
    EXPECT_EQ(text.find(kOtherKey), std::string::npos) << e.path();
    for (const auto& id : s["job_ids"])
      if (e.path().filename() == "environment" &&
          e.path().parent_path().filename() == "job." + id.get<std::string>())
        ++saved;
  }
  EXPECT_GE(saved, 1) << "Slurm's saved environment was not found: the check above proves nothing";
  for (const auto& e : fs::recursive_directory_iterator(sub))
    if (e.is_regular_file()) {
      EXPECT_EQ(read_file(e.path()).find(kStudentKey), std::string::npos) << e.path();
    }
}

// Flags (no value) and options reach the tasks as given: --no-baseline, -v, --inline-references.
TEST_F(Slurm, NoWaitSubmitsAndRunsMergeFinishes) {
  const Json local = local_result({"--no-baseline", "-v", "--inline-references"});
  const CliRun r = run(demo_eval({"--no-baseline", "-v", "--inline-references", "--executor",
                                  "slurm", "--shards", "3", "--no-wait"}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const fs::path sub = submission();
  EXPECT_NE(r.out.find("upskill runs merge " + sub.string()), std::string::npos) << r.out;
  // The tasks end on their own; their exit statuses say when.
  for (int i = 0; i < 600; ++i) {
    bool all = true;
    for (int k = 1; k <= 3; ++k)
      all = all && fs::exists(sub / "status" / ("shard-" + std::to_string(k) + ".rc"));
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const CliRun merged = run({"runs", "merge", sub.string(), "--json", "merged.json"});
  ASSERT_EQ(merged.code, 0) << merged.out << merged.err;
  EXPECT_EQ(result("merged.json"), local);
}

TEST_F(Slurm, AFailedTaskIsNamedWithItsLog) {
  // The tasks run a wrapper (slurm.upskill in the config) that fails array task 2.
  tmp.write("wrapper.sh", std::string("#!/bin/sh\nif [ \"$SLURM_ARRAY_TASK_ID\" = 2 ]; then echo "
                                      "'boom: disk full' >&2; exit 7; fi\nexec ") +
                              testing::shell_quote(UPSKILL_BINARY) + " \"$@\"\n");
  fs::permissions(tmp / "wrapper.sh", fs::perms::owner_exec, fs::perm_options::add);
  tmp.write("upskill.config.yaml", read_file(tmp / "upskill.config.yaml") + "slurm:\n  upskill: " +
                                       (tmp / "wrapper.sh").string() + "\n  time: \"5\"\n");
  const CliRun r = run(demo_eval({"--executor", "slurm", "--shards", "3"}));
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  const fs::path log = submission() / "logs" / "shard-2.log";
  // Slurm's state (FAILED) is there when squeue said it before the exit status showed.
  const std::regex named(
      "failed: shard 2/3: (FAILED, )?exit status 7, no batch \\(log: " +
      std::regex_replace(log.string(), std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)"));
  EXPECT_TRUE(std::regex_search(r.err, named)) << r.err;
  EXPECT_NE(read_file(log).find("boom: disk full"), std::string::npos);
  EXPECT_EQ(r.err.find("shard 1/3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 of 3 shard task(s) left no batch"), std::string::npos) << r.err;
  EXPECT_NE(
      r.err.find("rerun shard K with `sbatch --array=K " + submission().string() + "/job.sh`"),
      std::string::npos)
      << r.err;
}

// A task Slurm stops itself (here cancelled, its script killed before it could write anything)
// has no exit status; it is named at once, without the wait for a late one from a shared file
// system.
TEST_F(Slurm, ACancelledTaskIsNamedWithoutWaiting) {
  tmp.write("wrapper.sh",
            std::string("#!/bin/sh\nif [ \"$SLURM_ARRAY_TASK_ID\" = 2 ]; then scancel "
                        "\"${SLURM_ARRAY_JOB_ID}_2\"; kill -9 \"$PPID\"; sleep 30; "
                        "fi\nexec ") +
                testing::shell_quote(UPSKILL_BINARY) + " \"$@\"\n");
  fs::permissions(tmp / "wrapper.sh", fs::perms::owner_exec, fs::perm_options::add);
  tmp.write("upskill.config.yaml", read_file(tmp / "upskill.config.yaml") + "slurm:\n  upskill: " +
                                       (tmp / "wrapper.sh").string() + "\n");
  const auto start = std::chrono::steady_clock::now();
  const CliRun r = run({"eval", "demo", "-m", "student", "--executor", "slurm", "--shards", "2"});
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("failed: shard 2/2: CANCELLED, exit status not written, no batch"),
            std::string::npos)
      << r.err;
  EXPECT_LT(took, std::chrono::seconds(25)) << "waited for an exit status that cannot come";
}

TEST_F(Slurm, KernelCasesGoToTheGpuPartition) {
  // Nine chat cases and one kernel case (which fails fast: the answer holds no project).
  Json tests = Json::parse(read_file(tmp / "demo/skill_meta.json"));
  tests["tests"][9] = {
      {"id", "c10"},
      {"input", "task c10"},
      {"checks",
       Json::array({{{"type", "kernel"}, {"stages", Json::array({"extract", "layout"})}}})}};
  tmp.write("demo/skill_meta.json", tests.dump());
  const Json local = local_result();
  const CliRun r = run(demo_eval({"--executor", "slurm", "--shards", "3", "--slurm-gpu-partition",
                                  "gpu", "--json", "slurm.json"}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(result("slurm.json"), local);
  const fs::path sub = submission();
  // One kernel case in ten: one of three shards, on the GPU partition, asking for a GPU.
  const std::string gpu = read_file(sub / "job-gpu.sh");
  EXPECT_NE(gpu.find("#SBATCH --partition=\"gpu\""), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("#SBATCH --gres=\"gpu:1\""), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("#SBATCH --array=1\n"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("--gpu-shards=1"), std::string::npos) << gpu;
  EXPECT_EQ(read_file(sub / "job.sh").find("--gres"), std::string::npos);
  EXPECT_EQ(partitions(sub), "1 gpu\n2 main\n3 main\n");
  // The GPU shard ran exactly the kernel case's pairs.
  fs::path batch1;
  for (const auto& e : fs::directory_iterator(sub / "shards" / "1")) batch1 = e.path();
  const Json plan1 = Json::parse(read_file(batch1 / "plan.json"));
  EXPECT_EQ(plan1["shard"]["gpu"], 1);
}

TEST_F(Slurm, BadValuesAndRefusalsAreErrorsWithReasons) {
  const CliRun partition =
      run({"eval", "demo", "-m", "student", "--executor", "slurm", "--slurm-partition", "nosuch"});
  EXPECT_EQ(partition.code, 3) << partition.err;
  EXPECT_NE(partition.err.find("sbatch"), std::string::npos) << partition.err;
  EXPECT_NE(partition.err.find("nvalid partition"), std::string::npos) << partition.err;
  const CliRun newline = run({"eval", "demo", "-m", "student", "--executor", "slurm",
                              "--slurm-account", "lab\n#SBATCH --uid=0"});
  EXPECT_EQ(newline.code, 2) << newline.err;
  EXPECT_NE(newline.err.find("must be one line"), std::string::npos) << newline.err;
  const CliRun option =
      run({"eval", "demo", "-m", "student", "--executor", "slurm", "--slurm-option", "qos=high"});
  EXPECT_EQ(option.code, 2) << option.err;
  const CliRun shard =
      run({"eval", "demo", "-m", "student", "--executor", "slurm", "--shard", "1/2"});
  EXPECT_EQ(shard.code, 2) << shard.err;
  const CliRun resume =
      run({"eval", "demo", "-m", "student", "--executor", "slurm", "--resume", "x"});
  EXPECT_EQ(resume.code, 2) << resume.err;
  // A skill without tests: refused before anything is submitted (shards writing tests each on
  // their own would disagree).
  tmp.write("bare/SKILL.md", "---\nname: bare\ndescription: Bare. Use when testing.\n---\nBody.\n");
  const CliRun bare =
      run({"eval", "bare", "-m", "student", "--executor", "slurm", "--test-gen-model", "student"});
  EXPECT_EQ(bare.code, 2) << bare.err;
  EXPECT_NE(bare.err.find("no test cases"), std::string::npos) << bare.err;
  const CliRun gpu = run({"eval", "demo", "-m", "student", "--executor", "slurm", "--shards", "2",
                          "--gpu-shards", "3", "--slurm-gpu-partition", "gpu"});
  EXPECT_EQ(gpu.code, 2) << gpu.err;
  // Only sbatch's refusal left a folder (its job script shows what was refused); the values
  // refused before were never written anywhere.
  int folders = 0;
  for (const auto& e : fs::directory_iterator(tmp / "runs")) folders += e.is_directory();
  EXPECT_EQ(folders, 1);
}

}  // namespace
}  // namespace upskill
