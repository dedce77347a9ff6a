// The checkers every front end uses, wired in one place: command checks in the sandbox, kernel
// checks on the pipeline, specs found beside the tests (see checkers.hpp).
#include "upskill/checks/checkers.hpp"

namespace upskill::checks {

namespace {

// The kernel options a configuration implies: its `python:`, specs resolved against `spec_base`.
KernelPipelineOptions kernel_options(const config::Config& config,
                                     const std::filesystem::path& spec_base) {
  KernelPipelineOptions o;
  o.python = config.python;
  o.spec_base = spec_base;
  return o;
}

}  // namespace

Checkers::Checkers(KernelPipelineOptions kernel) : kernels_(std::move(kernel)) {
  env_.commands = &commands_;
  env_.kernels = &kernels_;
}

Checkers::Checkers(const config::Config& config, const std::filesystem::path& spec_base)
    : Checkers(kernel_options(config, spec_base)) {}

}  // namespace upskill::checks
