#pragma once
// The compile and bind stages. compile: every kernel source of the requested backend (and the torch
// binding, in parallel with them) built to an object — nvcc with one -gencode per capability and
// `-Xptxas -v` (registers, spills, shared and constant memory per kernel), g++ for C++ sources.
// bind: the torch binding built and linked with the objects into a loadable module, in either
// binding style — kernel-builder (we generate `registration.h` and the op namespace
// `_<name>_<backend>_<hash>`, as kernel-builder does) or a classic torch extension (pybind11) —
// plus a Python package that imports like kernel-builder's build output (`<package>/_ops.py`
// exposing `ops`). The module is then imported in a sandboxed child to prove it loads, and the ops
// it registers are listed.
//
// Every compiler run is sandboxed (docs/SECURITY.md). Objects, precompiled torch headers and linked
// modules are kept in a content-addressed cache keyed by sources, flags, toolchain and torch
// version, so a second build of the same candidate does no compiling at all.
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "upskill/kernel/extract.hpp"
#include "upskill/kernel/layout.hpp"
#include "upskill/kernel/toolchain.hpp"

namespace upskill::kernel {

struct PtxasKernel {
  std::string function;  // demangled when possible
  std::string arch;      // "sm_90"
  int registers = 0;
  int barriers = 0;
  int stack_bytes = 0;
  int spill_stores = 0;
  int spill_loads = 0;
  int shared_bytes = 0;
  int constant_bytes = 0;
};

// Parses `ptxas -v` output (as printed by nvcc -Xptxas -v).
std::vector<PtxasKernel> parse_ptxas(std::string_view output);

struct BuildStep {
  std::string source;  // project-relative, or the output for a link step
  std::string tool;    // "nvcc", "g++", "link", "pch", "load"
  bool ok = false;
  bool cached = false;
  bool timed_out = false;
  double seconds = 0;
  std::string diagnostics;  // the tool's output, trimmed
  std::vector<PtxasKernel> ptxas;
  std::filesystem::path output;
  bool binding = false;  // a torch binding source (compiled in the compile stage, used by bind)
};

struct BuildRequest {
  const Extraction* project = nullptr;
  const LayoutReport* layout = nullptr;
  const Toolchain* toolchain = nullptr;
  std::string backend = "cuda";           // cuda | cpu
  std::vector<std::string> capabilities;  // empty: the kernels' cuda-capabilities, else the
                                          // device's, else 9.0
  std::filesystem::path work_dir;         // this candidate's folder (created)
  std::filesystem::path cache_dir;        // shared, content-addressed
  bool use_pch = true;
  int jobs = 2;
  std::chrono::seconds timeout{600};         // per compiler run
  std::chrono::seconds import_timeout{120};  // the bind stage's import check (runs candidate code)
  // Start the bind stage's import check (Python and torch loading) as soon as a source compiles,
  // so that it is ready when the module is linked: for a pipeline that binds after compiling.
  bool import_early = false;
};

namespace detail {
class WarmImport;
}

struct CompileReport {
  bool passed = false;
  std::string style;         // of the binding: kernel-builder | torch-extension
  std::string op_namespace;  // TORCH_EXTENSION_NAME the binding was compiled with
  std::vector<std::string> capabilities;
  std::vector<BuildStep> steps;
  std::vector<std::string> problems;  // what stopped the stage before or besides a compiler
  std::filesystem::path source_dir;   // where the project was written
  std::shared_ptr<detail::WarmImport> warm_import;  // started while compiling (import_early)
};

struct BindReport {
  bool passed = false;
  std::string style;                     // kernel-builder | torch-extension
  std::string op_namespace;              // TORCH_EXTENSION_NAME
  std::filesystem::path package_parent;  // put on sys.path to `import <python_name>`
  std::string python_name;
  std::vector<std::string> ops;  // what the loaded module registers
  bool cached = false;
  std::vector<BuildStep> steps;
  std::vector<std::string> problems;
};

// The cache folder: $UPSKILL_CACHE_DIR, else $XDG_CACHE_HOME/upskill, else ~/.cache/upskill.
std::filesystem::path default_cache_dir();

// False when $UPSKILL_PCH is 0, off, no or false: candidates compile without the precompiled
// torch headers and none is built in the background (a one-off check, a cache that does not
// outlive the job, a small disk).
bool precompiled_headers_enabled();

CompileReport compile_kernels(const BuildRequest& request);
BindReport bind_kernels(const BuildRequest& request, const CompileReport& compiled);

// kernel-builder's generated registration.h (the vLLM macros, REGISTER_EXTENSION with a bare
// PyInit_ and no pybind11).
std::string_view registration_header();

}  // namespace upskill::kernel
