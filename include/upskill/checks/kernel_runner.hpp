#pragma once
// The `kernel` check on the kernel pipeline's stages. The stages that exist run (extract, layout);
// a requested stage that does not exist yet is reported "not run" with the reason, and then the
// check as a whole is not run — never passed.
#include "upskill/checks/checks.hpp"

namespace upskill::checks {

class KernelPipelineChecker : public KernelChecker {
 public:
  CheckResult check(const cases::KernelParams& params, const Answer& answer) override;
};

}  // namespace upskill::checks
