// The compile stage: the project written to the candidate's folder, then every kernel source of the
// requested backend and the torch binding's sources compiled to objects in parallel, through the
// object cache — nvcc with one -gencode per capability and `-Xptxas -v`, g++ (with the precompiled
// torch header) for C++ sources. The compiler command lines are made here.
#include <fmt/format.h>

#include <mutex>
#include <set>

#include "build_internal.hpp"
#include "upskill/core/cancel.hpp"
#include "upskill/core/files.hpp"

namespace upskill::kernel {

namespace fs = std::filesystem;
using namespace detail;

namespace {

std::string capability_digits(const std::string& cap) {
  std::string d;
  for (char c : cap)
    if (c != '.') d += c;
  return d;
}

std::vector<std::string> torch_includes(const Toolchain& t, bool cuda) {
  std::vector<std::string> out;
  for (const auto& d : t.torch.include_dirs) out.push_back("-I" + d);
  out.push_back("-I" + t.torch.python_include);
  if (cuda) {
    out.push_back("-I" + t.cuda_home + "/include");
    if (!t.torch.built_with_cuda) out.push_back("-I@STANDIN");
  }
  return out;
}

std::string cxx_abi_flag(const Toolchain& t) {
  return fmt::format("-D_GLIBCXX_USE_CXX11_ABI={}", t.torch.cxx11_abi ? 1 : 0);
}

std::vector<std::string> base_cxx_flags(const BuildRequest& req, bool cuda) {
  std::vector<std::string> f{"-std=c++17", "-O2", "-fPIC", cxx_abi_flag(*req.toolchain)};
  for (auto& i : torch_includes(*req.toolchain, cuda)) f.push_back(std::move(i));
  return f;
}

std::vector<std::string> extension_defines() {
  return {"-DTORCH_API_INCLUDE_EXTENSION_H", "-DPYBIND11_COMPILER_TYPE=\"_gcc\"",
          "-DPYBIND11_STDLIB=\"_libstdcpp\"", "-DPYBIND11_BUILD_ABI=\"_cxxabi1011\""};
}

std::vector<std::string> resolve_capabilities(const BuildRequest& req) {
  if (!req.capabilities.empty()) return req.capabilities;
  std::set<std::string> caps;
  for (const auto& k : req.layout->kernels)
    if (k.backend == "cuda") caps.insert(k.capabilities.begin(), k.capabilities.end());
  if (!caps.empty()) return {caps.begin(), caps.end()};
  if (!req.toolchain->torch.device_capability.empty())
    return {req.toolchain->torch.device_capability};
  return {"9.0"};
}

// One compiler run.
struct Unit {
  std::string source;
  Command cmd;
  std::string tool;
};

// What the compile stage is building: its units and the report.
struct Compilation {
  Compilation(const BuildRequest& req, CompileReport& report)
      : req(req), report(report), cuda(req.backend == "cuda"), root(root_prefix(*req.layout)) {}

  const BuildRequest& req;
  CompileReport& report;
  bool cuda;
  std::string root;
  std::vector<Unit> units;
  std::vector<Pch> pch;  // each precompiled header a source asked for

  // False, with the problem in the report, when it cannot go on.
  bool stop(std::string problem) {
    report.problems.push_back(std::move(problem));
    return false;
  }
};

// The project, written under <work>/src.
bool write_sources(Compilation& c) {
  std::error_code ec;
  fs::create_directories(c.report.source_dir, ec);
  for (const auto& f : c.req.project->files) {
    const fs::path p = c.report.source_dir / f.path;
    fs::create_directories(p.parent_path(), ec);
    if (auto w = files::write_atomic(p, f.content); !w) return c.stop(w.error().message);
  }
  return true;
}

// nvcc is there and builds every capability asked for; the stand-in headers are in the cache.
bool prepare_cuda(Compilation& c) {
  const Toolchain& tc = *c.req.toolchain;
  if (!tc.nvcc) return c.stop(fmt::format("nvcc not found under {}", tc.cuda_home));
  c.report.capabilities = resolve_capabilities(c.req);
  for (const auto& cap : c.report.capabilities)
    if (std::find(tc.nvcc_archs.begin(), tc.nvcc_archs.end(), "sm_" + capability_digits(cap)) ==
        tc.nvcc_archs.end())
      c.report.problems.push_back(fmt::format("nvcc {} cannot build for capability {} (sm_{})",
                                              tc.nvcc_version, cap, capability_digits(cap)));
  if (!c.report.problems.empty()) return false;
  if (auto s = ensure_standin(c.req.cache_dir); !s) return c.stop(s.error().message);
  return true;
}

std::vector<std::string> nvcc_command(const Compilation& c, const KernelEntry& k) {
  const Toolchain& tc = *c.req.toolchain;
  std::vector<std::string> argv{*tc.nvcc,        "-std=c++17",
                                "-O3",           "-Xcompiler",
                                "-fPIC",         cxx_abi_flag(tc),
                                "-DCUDA_KERNEL", "--expt-relaxed-constexpr",
                                "-Xptxas",       "-v"};
  for (const auto& cap : c.report.capabilities) {
    const std::string d = capability_digits(cap);
    argv.push_back(fmt::format("-gencode=arch=compute_{0},code=sm_{0}", d));
  }
  for (auto& i : torch_includes(tc, true)) argv.push_back(std::move(i));
  argv.insert(argv.end(), k.cuda_flags.begin(), k.cuda_flags.end());
  return argv;
}

// The -include arguments of the precompiled torch header for a source compiled with `flags`, when
// the source includes torch and the header is ready (its step is reported once per header).
std::vector<std::string> pch_arguments(Compilation& c, const std::string& source,
                                       const std::vector<std::string>& flags, bool extension) {
  if (!c.req.use_pch || !includes_torch(*c.req.project, source)) return {};
  Pch pch = find_pch(c.req, flags, extension);
  auto known = std::find_if(c.pch.begin(), c.pch.end(),
                            [&](const Pch& p) { return p.header == pch.header; });
  if (known == c.pch.end()) known = c.pch.insert(c.pch.end(), pch);
  known->sources.push_back(source);
  if (!pch.ready) return {};
  return {"-include", pch.header.string(), "-Winvalid-pch"};
}

// The precompiled headers' steps, after starting the build of those not built yet that a source
// of this candidate compiled without. A candidate whose objects all came from the cache starts
// none: nothing it compiled would have gained from it.
void report_pch(Compilation& c) {
  for (Pch& pch : c.pch) {
    const bool compiled_without =
        std::any_of(c.report.steps.begin(), c.report.steps.end(), [&](const BuildStep& s) {
          return !s.cached &&
                 std::find(pch.sources.begin(), pch.sources.end(), s.source) != pch.sources.end();
        });
    if (!pch.ready) {
      if (compiled_without)
        start_pch_build(c.req, pch);
      else
        pch.step.diagnostics =
            "not started by this candidate: every source that would use it came from the cache";
    }
    c.report.steps.push_back(pch.step);
  }
}

// g++ for a kernel's C++ source.
Command gxx_command(Compilation& c, const KernelEntry& k, const std::string& source) {
  Command cmd;
  const std::vector<std::string> flags = base_cxx_flags(c.req, c.cuda);
  cmd.argv = {c.req.toolchain->cxx};
  cmd.argv.insert(cmd.argv.end(), flags.begin(), flags.end());
  cmd.argv.push_back(c.cuda ? "-DCUDA_KERNEL" : "-DCPU_KERNEL");
  cmd.pch = pch_arguments(c, source, flags, false);
  cmd.argv.insert(cmd.argv.end(), k.cxx_flags.begin(), k.cxx_flags.end());
  return cmd;
}

// One unit per kernel source (headers aside) of the requested backend.
bool add_kernel_units(Compilation& c) {
  for (const auto& k : c.req.layout->kernels) {
    if (k.backend != c.req.backend) continue;
    std::vector<std::string> includes{"-I@W/src/" + c.root + "torch-ext", "-I@W/src/" + c.root};
    for (const auto& src : k.sources) {
      const std::string path = c.root + src;
      includes.push_back("-I@W/src/" + fs::path(path).parent_path().string());
    }
    for (const auto& dir : k.include) includes.push_back("-I@W/src/" + c.root + dir);
    for (const auto& src : k.sources) {
      const std::string path = c.root + src;
      if (has_ext(src, {".h", ".hpp", ".cuh", ".hh", ".hxx", ".inl"})) continue;
      Unit u;
      u.source = path;
      if (has_ext(src, {".cu"})) {
        u.tool = "nvcc";
        u.cmd.argv = nvcc_command(c, k);
      } else {
        u.tool = "g++";
        u.cmd = gxx_command(c, k, path);
      }
      u.cmd.argv.insert(u.cmd.argv.end(), includes.begin(), includes.end());
      u.cmd.argv.insert(u.cmd.argv.end(), {"-c", "@W/src/" + path});
      c.units.push_back(std::move(u));
    }
  }
  if (c.units.empty())
    return c.stop(fmt::format("build.toml has no {} kernel sources", c.req.backend));
  return true;
}

// One unit per binding source, compiled with registration.h (and, for a classic torch extension,
// pybind11's defines) as TORCH_EXTENSION_NAME=<op namespace>.
bool add_binding_units(Compilation& c, const BindingPlan& plan) {
  if (plan.sources.empty()) return true;
  std::error_code ec;
  fs::create_directories(c.req.work_dir / "gen", ec);
  if (auto w = files::write_atomic(c.req.work_dir / "gen" / "registration.h",
                                   std::string(registration_header()));
      !w)
    return c.stop(w.error().message);
  std::vector<std::string> flags = base_cxx_flags(c.req, c.cuda);
  if (plan.extension_style)
    for (auto& d : extension_defines()) flags.push_back(std::move(d));
  for (const auto& source : plan.sources) {
    Unit u;
    u.source = source;
    u.tool = "g++";
    u.cmd.argv = {c.req.toolchain->cxx};
    u.cmd.argv.insert(u.cmd.argv.end(), flags.begin(), flags.end());
    u.cmd.argv.push_back(c.cuda ? "-DCUDA_KERNEL" : "-DCPU_KERNEL");
    u.cmd.argv.push_back("-DTORCH_EXTENSION_NAME=" + plan.op_namespace);
    u.cmd.pch = pch_arguments(c, source, flags, plan.extension_style);
    u.cmd.argv.insert(u.cmd.argv.end(), {"-I@W/gen", "-I@W/src/" + c.root + "torch-ext",
                                         "-I@W/src/" + c.root, "-c", "@W/src/" + source});
    c.units.push_back(std::move(u));
  }
  return true;
}

// Runs every unit through the object cache, `jobs` at a time; units from `first_binding` on are
// the binding's.
void compile_units(Compilation& c, std::size_t first_binding) {
  std::vector<BuildStep> steps(c.units.size());
  // The import check starts loading Python and torch with the first source that really compiles.
  std::once_flag import_started;
  const auto start_import = [&] {
    std::call_once(import_started, [&] { c.report.warm_import = start_warm_import(c.req); });
  };
  parallel_for(c.units.size(), std::max(1, c.req.jobs), [&](std::size_t i) {
    const Unit& u = c.units[i];
    const bool binding = i >= first_binding;
    const std::string material = object_key_material(c.req, u.source, binding);
    std::string name = u.source;
    std::replace(name.begin(), name.end(), '/', '_');
    steps[i] = cached_compile(c.req, u.cmd, u.source, u.tool, material, name + ".o", start_import);
    steps[i].binding = binding;
  });
  c.report.passed = true;
  for (auto& s : steps) {
    c.report.passed = c.report.passed && s.ok;
    c.report.steps.push_back(std::move(s));
  }
}

}  // namespace

CompileReport compile_kernels(const BuildRequest& req) {
  CompileReport report;
  Compilation c(req, report);
  report.source_dir = req.work_dir / "src";
  if (!write_sources(c)) return report;
  if (c.cuda && !prepare_cuda(c)) return report;
  if (!add_kernel_units(c)) return report;
  // The torch binding compiles alongside the kernels (the link waits for bind).
  const BindingPlan plan = plan_binding(req);
  report.style = plan.extension_style ? "torch-extension" : "kernel-builder";
  report.op_namespace = plan.op_namespace;
  const std::size_t kernel_units = c.units.size();
  if (!add_binding_units(c, plan)) return report;
  compile_units(c, kernel_units);
  report_pch(c);
  return report;
}

}  // namespace upskill::kernel
