// The reference kernels (kernels/<name>/) against their cases (kernels/cases.json), exactly as
// `upskill check kernels/cases.json --case ID --answer kernels/<name>` scores them: the CPU kernel
// passes every stage (ReferenceKernelsCli); the CUDA kernels compile for sm_80 and sm_90 and bind
// here, and are not run without a GPU (scripts/gpu-check.sh runs them on one).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <set>

#include "support/temp_dir.hpp"
#include "upskill/cases/test_suite.hpp"
#include "upskill/checks/kernel_runner.hpp"
#include "upskill/core/files.hpp"
#include "upskill/kernel/toolchain.hpp"
#include "upskill/skill/skill_bundle.hpp"

namespace upskill::checks {
namespace {

const std::string kKernels = std::string(UPSKILL_SOURCE_DIR) + "/kernels";
const std::string kFlagship =
    std::string(UPSKILL_SOURCE_DIR) + "/skills/kernel-builder-cuda-kernels";

struct Reference {
  const char* case_id;
  const char* project;
};

class ReferenceKernels : public ::testing::TestWithParam<Reference> {};

// Where a case is defined: kernels/cases.json, and the flagship skill, which ships the same cases
// with copies of the specs.
struct CaseSource {
  std::string name;
  std::vector<cases::TestCase> cases;
  std::string spec_base;
};

std::vector<CaseSource> case_sources() {
  std::vector<CaseSource> out;
  const auto suite = cases::load_test_suite(kKernels + "/cases.json");
  EXPECT_TRUE(suite) << suite.error().message;
  if (suite) out.push_back({"kernels/cases.json", suite->cases, kKernels});
  const auto skill = skill::SkillBundle::load(kFlagship);
  EXPECT_TRUE(skill) << skill.error().message;
  if (skill) out.push_back({"the flagship skill", skill->tests(), kFlagship});
  return out;
}

TEST_P(ReferenceKernels, PassTheirCase) {
  const std::vector<CaseSource> sources = case_sources();
  ASSERT_EQ(sources.size(), 2u);
  for (const CaseSource& source : sources) {
    SCOPED_TRACE(source.name);
    const cases::TestCase* c = cases::find_case(source.cases, GetParam().case_id);
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(c->checks.size(), 1u);
    const auto& params = std::get<cases::KernelParams>(c->checks[0].params);
    // The CPU case, the same check word for word in both (FlagshipSkill below), is run once, by
    // ReferenceKernelsCli through `upskill check` on the skill folder: not twice.
    if (params.backend == "cpu") continue;
    KernelPipelineOptions o;
    o.spec_base = source.spec_base;
    o.cache_dir = UPSKILL_TEST_KERNEL_CACHE;
    KernelPipelineChecker checker(o);
    const CheckResult r =
        checker.check(params, Answer{"", "", std::filesystem::path(kKernels) / GetParam().project});
    const auto tools = kernel::probe_toolchain_cached(kernel::default_python(std::nullopt),
                                                      UPSKILL_TEST_KERNEL_CACHE);
    ASSERT_TRUE(tools) << tools.error().message;
    const bool runs_here = tools->torch.cuda_device;  // every case here is a CUDA one
    for (const auto& s : r.details["stages"]) {
      const std::string stage = s["stage"];
      const bool execution = stage == "correct" || stage == "bench";
      EXPECT_EQ(s["status"], !execution || runs_here ? "passed" : "not run")
          << stage << ": " << s.dump(2);
    }
    EXPECT_EQ(r.status, runs_here ? Status::passed : Status::not_run) << r.reason;
    if (source.spec_base != kKernels) continue;  // the ptxas details were checked once
    if (params.backend == "cuda") {
      // Both capabilities were built, and ptxas reported every kernel for each.
      for (const auto& s : r.details["stages"])
        if (s["stage"] == "compile") {
          EXPECT_EQ(s["capabilities"], Json::array({"8.0", "9.0"}));
          std::set<std::string> archs;
          for (const auto& step : s["steps"])
            for (const auto& k : step.value("ptxas", Json::array())) archs.insert(k["arch"]);
          EXPECT_EQ(archs, (std::set<std::string>{"sm_80", "sm_90"}));
          for (const auto& step : s["steps"])
            for (const auto& k : step.value("ptxas", Json::array())) {
              EXPECT_GT(k["registers"].get<int>(), 0) << k.dump();
              EXPECT_EQ(k["spill_stores"], 0) << k.dump();  // the reference kernels never spill
            }
        }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, ReferenceKernels,
                         ::testing::Values(Reference{"rmsnorm-bf16-sm90", "rmsnorm"},
                                           Reference{"layernorm-gelu-sm90", "layernorm-gelu"},
                                           Reference{"geglu-sm90", "geglu"},
                                           Reference{"rope-sm90", "rope"},
                                           Reference{"adaln-sm90", "adaln"}),
                         [](const auto& info) {
                           std::string name = info.param.case_id;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// The flagship skill carries copies of kernels/specs so that it works wherever it is installed;
// they must not drift.
TEST(FlagshipSkill, ShipsTheSpecsOfKernelsUnchangedAndEveryReferenceCase) {
  const auto skill = skill::SkillBundle::load(kFlagship);
  ASSERT_TRUE(skill) << skill.error().message;
  int kernel_cases = 0;
  for (const auto& c : skill->tests())
    for (const auto& check : c.checks)
      if (const auto* k = std::get_if<cases::KernelParams>(&check.params)) {
        ++kernel_cases;
        ASSERT_TRUE(k->spec);
        EXPECT_EQ(*files::read_text(kFlagship + "/" + *k->spec),
                  *files::read_text(kKernels + "/" + *k->spec))
            << *k->spec;
      }
  EXPECT_EQ(kernel_cases, 6);
  // Each reference case's checks are the same as in kernels/cases.json, word for word.
  const Json meta = Json::parse(*files::read_text(kFlagship + "/skill_meta.json"));
  const Json suite = Json::parse(*files::read_text(kKernels + "/cases.json"));
  int same = 0;
  for (const auto& reference : suite["cases"])
    for (const auto& copy : meta["tests"])
      if (copy["id"] == reference["id"]) {
        EXPECT_EQ(copy["checks"], reference["checks"]) << reference["id"];
        ++same;
      }
  EXPECT_EQ(same, 6);
  EXPECT_GE(skill->tests().size(), 10u);
  EXPECT_TRUE(cases::find_case(skill->tests(), "buildtoml-h100"));
}

}  // namespace
}  // namespace upskill::checks

namespace upskill::checks {
namespace {

// `upskill check` on the reference kernels, as a user runs it: the CPU kernel passes every stage
// of the flagship skill's copy of its case (the skill folder as the target, its own spec; the
// same check as kernels/cases.json's, so this is its only run) and exits 0; for a CUDA kernel
// without a GPU exit 3 (could not run as asked: never a pass, nor a failure of the answer), with
// --require-gpu too.
TEST(ReferenceKernelsCli, CheckExitCodesAndRequireGpu) {
  const std::string env = std::string("UPSKILL_CACHE_DIR=") + UPSKILL_TEST_KERNEL_CACHE + " ";
  const std::string cmd = "cd " + kKernels + " && " + env + UPSKILL_BINARY + " check cases.json";
  const auto exit_code = [](const std::string& command, const std::string& out = "/dev/null") {
    const int status = std::system((command + " >" + out + " 2>/dev/null").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  testing::TempDir tmp;
  const std::string verdict = (tmp / "cpu.json").string();
  EXPECT_EQ(exit_code("cd " + kKernels + " && " + env + UPSKILL_BINARY + " check " + kFlagship +
                          " --case rmsnorm-cpu --answer rmsnorm --json",
                      verdict),
            0);
  const auto text = files::read_text(verdict);
  ASSERT_TRUE(text);
  const Json r = Json::parse(*text, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << *text;
  EXPECT_EQ(r["status"], "passed") << *text;
  std::vector<std::string> stages;
  for (const auto& s : r["checks"][0]["details"]["stages"]) {
    stages.push_back(s["stage"]);
    EXPECT_EQ(s["status"], "passed") << s.dump(2);
  }
  EXPECT_EQ(stages, (std::vector<std::string>{"extract", "layout", "lint", "compile", "bind",
                                              "correct", "bench"}));
  const auto tools = kernel::probe_toolchain_cached(kernel::default_python(std::nullopt),
                                                    UPSKILL_TEST_KERNEL_CACHE);
  ASSERT_TRUE(tools);
  if (tools->torch.cuda_device) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(exit_code(cmd + " --case geglu-sm90 --answer geglu"), 3);
  EXPECT_EQ(exit_code(cmd + " --case geglu-sm90 --answer geglu --require-gpu"), 3);
}

}  // namespace
}  // namespace upskill::checks
