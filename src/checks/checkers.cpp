#include "upskill/checks/checkers.hpp"

namespace upskill::checks {

KernelPipelineOptions kernel_options(const config::Config& config,
                                     const std::filesystem::path& spec_base) {
  KernelPipelineOptions o;
  o.python = config.python;
  o.spec_base = spec_base;
  return o;
}

Checkers::Checkers(KernelPipelineOptions kernel) : kernels_(std::move(kernel)) {
  env_.commands = &commands_;
  env_.kernels = &kernels_;
}

Checkers::Checkers(const config::Config& config, const std::filesystem::path& spec_base)
    : Checkers(kernel_options(config, spec_base)) {}

}  // namespace upskill::checks
