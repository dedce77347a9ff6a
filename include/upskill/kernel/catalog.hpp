#pragma once
// The op specs (kernels/specs/*.py) and kernel test cases (kernels/cases.json) of the repository,
// compiled into the library: generated kernel tests bind to them wherever upskill runs.
#include <string>
#include <string_view>
#include <vector>

namespace upskill::kernel {

struct ShippedFile {
  std::string path;  // "specs/rmsnorm.py", relative to kernels/
  std::string content;
};

const std::vector<ShippedFile>& shipped_specs();
// kernels/cases.json as written: {"cases": [...]} whose specs are "specs/<op>.py".
std::string_view shipped_kernel_cases();

}  // namespace upskill::kernel
