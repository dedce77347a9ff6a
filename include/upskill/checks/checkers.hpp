#pragma once
// The checkers every front end uses, wired in one place: `command` checks in the sandbox and
// `kernel` checks on the kernel pipeline with the configured Python, kernel specs resolved against
// the folder the test cases came from. `eval`, `generate`, `check` and the Python module all get
// their CheckEnvironment from here.
#include <filesystem>

#include "upskill/checks/checks.hpp"
#include "upskill/checks/kernel_runner.hpp"
#include "upskill/checks/sandbox_runner.hpp"
#include "upskill/config/config.hpp"

namespace upskill::checks {

class Checkers {
 public:
  explicit Checkers(KernelPipelineOptions kernel);
  // Kernel options from the configuration (`python:`), specs relative to `spec_base`.
  Checkers(const config::Config& config, const std::filesystem::path& spec_base);
  Checkers(const Checkers&) = delete;
  Checkers& operator=(const Checkers&) = delete;

  const CheckEnvironment& environment() const { return env_; }

 private:
  SandboxCommandRunner commands_;
  KernelPipelineChecker kernels_;
  CheckEnvironment env_;
};

}  // namespace upskill::checks
