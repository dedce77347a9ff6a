// The `ptxas -v` parser: registers, barriers, stack, spills, shared and constant memory per kernel,
// as nvcc -Xptxas -v prints them in the compile stage.
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <regex>

#include "upskill/core/text.hpp"
#include "upskill/kernel/build.hpp"

namespace upskill::kernel {

std::vector<PtxasKernel> parse_ptxas(std::string_view output) {
  std::vector<PtxasKernel> out;
  static const std::regex entry(R"(Compiling entry function '([^']+)' for '(\w+)')");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex barriers(R"(used (\d+) barriers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  static const std::regex cmem(R"((\d+) bytes cmem\[\d+\])");
  PtxasKernel* current = nullptr;
  for (const auto& line : text::split_lines(output)) {
    std::smatch m;
    if (std::regex_search(line, m, entry)) {
      PtxasKernel k;
      k.function = m[1];
      int status = 0;
      std::unique_ptr<char, decltype(&std::free)> demangled(
          abi::__cxa_demangle(k.function.c_str(), nullptr, nullptr, &status), &std::free);
      if (status == 0 && demangled) k.function = demangled.get();
      k.arch = m[2];
      out.push_back(std::move(k));
      current = &out.back();
      continue;
    }
    if (!current) continue;
    if (std::regex_search(line, m, frame)) {
      current->stack_bytes = std::stoi(m[1]);
      current->spill_stores = std::stoi(m[2]);
      current->spill_loads = std::stoi(m[3]);
    }
    if (std::regex_search(line, m, used)) {
      current->registers = std::stoi(m[1]);
      if (std::regex_search(line, m, barriers)) current->barriers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) current->shared_bytes = std::stoi(m[1]);
      int constant = 0;
      for (std::sregex_iterator it(line.begin(), line.end(), cmem), end; it != end; ++it)
        constant += std::stoi((*it)[1]);
      current->constant_bytes = constant;
    }
  }
  return out;
}

}  // namespace upskill::kernel
