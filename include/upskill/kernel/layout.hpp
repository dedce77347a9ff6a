#pragma once
// The layout stage: is this a kernel-builder project? build.toml is parsed (toml++) and checked
// against kernel-builder's schema — the current edition (5) and the older early-2026 form
// (build2cmake v3, no `edition`) — and the files it names, the torch binding and the Python package
// must be there.
#include <string>
#include <vector>

#include "upskill/kernel/extract.hpp"

namespace upskill::kernel {

struct LayoutFinding {
  bool error = true;  // false: a warning
  int line = 0;       // in build.toml, when known
  std::string message;
};

struct KernelEntry {
  std::string id;
  std::string backend;
  std::vector<std::string> sources;
  std::vector<std::string> capabilities;
  std::vector<std::string> include;     // include folders, relative to the project root
  std::vector<std::string> cxx_flags;   // passed to g++ for this kernel's C++ sources
  std::vector<std::string> cuda_flags;  // passed to nvcc for this kernel's .cu sources
};

struct LayoutReport {
  std::string root;     // folder of build.toml within the extracted files ("" = top level)
  std::string edition;  // "5", "4", "early-2026 (no edition)", or "" when unreadable
  std::string name;     // [general] name
  std::string python_name;
  std::vector<std::string> backends;
  std::vector<KernelEntry> kernels;
  std::vector<std::string> torch_sources;
  std::vector<LayoutFinding> findings;

  bool passed() const;
};

LayoutReport check_layout(const Extraction& project);

// Whether upskill passes a `cxx-flags` / `cuda-flags` entry to the compiler: optimisation, defines,
// warnings, language standard and code-generation switches only — nothing that loads plugins,
// names output files or changes search paths (model-written build files are untrusted).
bool build_flag_allowed(std::string_view flag);

// kernel-builder's supported CUDA capabilities (cuda_supported_archs.json).
const std::vector<std::string>& builder_cuda_capabilities();

}  // namespace upskill::kernel
