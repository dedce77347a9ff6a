// The reference kernels (kernels/<name>/) against their cases (kernels/cases.json), exactly as
// `upskill check kernels/cases.json --case ID --answer kernels/<name>` scores them: the CPU kernel
// passes every stage; the CUDA kernels compile for sm_80 and sm_90 and bind here, and are not run
// without a GPU (scripts/gpu-check.sh runs them on one).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <set>

#include "upskill/cases/test_case.hpp"
#include "upskill/checks/kernel_runner.hpp"
#include "upskill/kernel/toolchain.hpp"

namespace upskill::checks {
namespace {

const std::string kKernels = std::string(UPSKILL_SOURCE_DIR) + "/kernels";

struct Reference {
  const char* case_id;
  const char* project;
};

class ReferenceKernels : public ::testing::TestWithParam<Reference> {};

TEST_P(ReferenceKernels, PassTheirCase) {
  const auto suite = cases::load_test_suite(kKernels + "/cases.json");
  ASSERT_TRUE(suite) << suite.error().message;
  const cases::TestCase* c = cases::find_case(suite->cases, GetParam().case_id);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->checks.size(), 1u);
  const auto& params = std::get<cases::KernelParams>(c->checks[0].params);
  KernelPipelineOptions o;
  o.spec_base = kKernels;
  o.cache_dir = UPSKILL_TEST_KERNEL_CACHE;
  KernelPipelineChecker checker(o);
  const CheckResult r =
      checker.check(params, Answer{"", "", std::filesystem::path(kKernels) / GetParam().project});
  const auto tools = kernel::probe_toolchain_cached(kernel::default_python(std::nullopt),
                                                    UPSKILL_TEST_KERNEL_CACHE);
  ASSERT_TRUE(tools) << tools.error().message;
  const bool runs_here = params.backend == "cpu" || tools->torch.cuda_device;
  for (const auto& s : r.details["stages"]) {
    const std::string stage = s["stage"];
    const bool execution = stage == "correct" || stage == "bench";
    EXPECT_EQ(s["status"], !execution || runs_here ? "passed" : "not run")
        << stage << ": " << s.dump(2);
  }
  EXPECT_EQ(r.status, runs_here ? Status::passed : Status::not_run) << r.reason;
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

INSTANTIATE_TEST_SUITE_P(Kernels, ReferenceKernels,
                         ::testing::Values(Reference{"rmsnorm-cpu", "rmsnorm"},
                                           Reference{"rmsnorm-bf16-sm90", "rmsnorm"},
                                           Reference{"layernorm-gelu-sm90", "layernorm-gelu"},
                                           Reference{"geglu-sm90", "geglu"},
                                           Reference{"rope-sm90", "rope"},
                                           Reference{"adaln-sm90", "adaln"}),
                         [](const auto& info) {
                           std::string name = info.param.case_id;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace upskill::checks

namespace upskill::checks {
namespace {

// `upskill check` on the reference kernels, as a user runs it: exit 0 for the CPU kernel; for a
// CUDA kernel without a GPU exit 1 (not run is never a pass), and 3 with --require-gpu.
TEST(ReferenceKernelsCli, CheckExitCodesAndRequireGpu) {
  const std::string env = std::string("UPSKILL_CACHE_DIR=") + UPSKILL_TEST_KERNEL_CACHE + " ";
  const std::string cmd = "cd " + kKernels + " && " + env + UPSKILL_BINARY + " check cases.json";
  const auto exit_code = [](const std::string& command) {
    const int status = std::system((command + " >/dev/null 2>&1").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(exit_code(cmd + " --case rmsnorm-cpu --answer rmsnorm"), 0);
  const auto tools = kernel::probe_toolchain_cached(kernel::default_python(std::nullopt),
                                                    UPSKILL_TEST_KERNEL_CACHE);
  ASSERT_TRUE(tools);
  if (tools->torch.cuda_device) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(exit_code(cmd + " --case geglu-sm90 --answer geglu"), 1);
  EXPECT_EQ(exit_code(cmd + " --case geglu-sm90 --answer geglu --require-gpu"), 3);
}

}  // namespace
}  // namespace upskill::checks
