#pragma once
// The lint stage: named profiles of banned patterns, matched on code with comments and string
// literals blanked out (so a comment that says "never use torch/extension.h" is not a finding).
//   kernel-builder   the hard constraints of HF's cuda-kernels skill (no pybind11 or
//                    torch/extension.h, registration through TORCH_LIBRARY_EXPAND(
//                    TORCH_EXTENSION_NAME, …), REGISTER_EXTENSION, no hand-written PyInit_, no
//                    setup.py/cpp_extension, no hard-coded torch.ops.<ns>, no absolute
//                    self-imports) plus the bypass rules below;
//   torch-extension  classic pybind11 extensions allowed; the bypass rules below;
//   kernelbench      only the bypass rules (KernelBench's static checker and known hacks): no
//   kernel
//                    at all, compute done by torch ops, timing or stream tricks, try/except
//                    fallbacks, threads, output caching, environment, process and network access;
//   none             nothing.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "upskill/kernel/extract.hpp"
#include "upskill/kernel/layout.hpp"

namespace upskill::kernel {

enum class LintProfile { kernel_builder, torch_extension, kernelbench, none };
std::optional<LintProfile> lint_profile_from_string(std::string_view name);
std::string_view to_string(LintProfile profile);

struct LintFinding {
  std::string rule;  // e.g. "pybind11", "hardcoded-namespace", "torch-op-compute"
  bool error = true;
  std::string file;
  int line = 0;  // 1-based within the file, 0 for the whole project
  std::string message;
  std::string excerpt;  // the offending line, trimmed
};

struct LintReport {
  LintProfile profile = LintProfile::kernel_builder;
  std::vector<LintFinding> findings;
  bool passed() const;
};

// `layout` tells which files are the torch binding, which are kernel sources and the Python
// package name; with an empty layout (no build.toml) files are classified by extension.
LintReport lint_project(const Extraction& project, const LayoutReport& layout, LintProfile profile,
                        std::string_view backend);

// Code with comments (and, unless `keep_strings`, the insides of string/char literals) replaced by
// spaces, line breaks kept, for C-like sources (`python` false) or Python.
std::string blank_comments_and_strings(std::string_view code, bool python,
                                       bool keep_strings = false);

}  // namespace upskill::kernel
