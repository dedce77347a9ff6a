#pragma once
// The `kernel` check on the kernel pipeline: extract → layout → lint → compile → bind → correct →
// bench, in order, each stage's status, duration and diagnostics in the check's details. The check
// stops at the first stage that fails. Without a CUDA device the CUDA correct/bench stages are
// "not run" and so is the check — never passed; cpu-backend kernels run every stage anywhere.
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "upskill/checks/checks.hpp"
#include "upskill/kernel/toolchain.hpp"

namespace upskill::checks {

struct KernelPipelineOptions {
  std::filesystem::path spec_base;    // relative `spec` paths resolve here (the test file's folder)
  std::optional<std::string> python;  // config `python:`; see kernel::default_python
  std::filesystem::path cache_dir;    // empty: kernel::default_cache_dir()
  bool keep_work = false;             // keep each candidate's build folder (its path is reported)
  int jobs = 2;                       // parallel compiler runs per candidate
  std::optional<std::uint64_t> seed;  // fixed input seed; default: a fresh one per check
  bool use_pch = true;
};

class KernelPipelineChecker : public KernelChecker {
 public:
  explicit KernelPipelineChecker(KernelPipelineOptions options = {});
  CheckResult check(const cases::KernelParams& params, const Answer& answer) override;

 private:
  Result<kernel::Toolchain> toolchain();

  KernelPipelineOptions options_;
  std::mutex mutex_;
  std::optional<Result<kernel::Toolchain>> toolchain_;
};

}  // namespace upskill::checks
