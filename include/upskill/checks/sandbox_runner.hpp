#pragma once
// `command` checks run in the sandbox (core/sandbox.hpp), in the answer's workspace.
#include "upskill/checks/checks.hpp"
#include "upskill/core/sandbox.hpp"

namespace upskill::checks {

class SandboxCommandRunner : public CommandRunner {
 public:
  explicit SandboxCommandRunner(sandbox::Limits limits = {}) : limits_(limits) {}
  CheckResult run(const cases::CommandParams& params,
                  const std::filesystem::path& workspace) override;

 private:
  sandbox::Limits limits_;
};

}  // namespace upskill::checks
