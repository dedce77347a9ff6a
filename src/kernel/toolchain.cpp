// What the kernel pipeline builds and runs with: g++, nvcc (CUDA_HOME or /usr/local/cuda) and the
// configured Python's torch (include paths, library folder, C++11 ABI, version, CUDA device) (see
// toolchain.hpp).
#include "upskill/kernel/toolchain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "upskill/core/files.hpp"
#include "upskill/core/hash.hpp"
#include "upskill/core/json.hpp"
#include "upskill/core/sandbox.hpp"
#include "upskill/core/temp_dir.hpp"
#include "upskill/core/text.hpp"

namespace upskill::kernel {

namespace fs = std::filesystem;

namespace {

std::unexpected<Error> infra(std::string message) {
  return fail(Error::infrastructure(std::move(message)));
}

// The probe is our own code; it runs with the scrubbed environment so that what the build sees
// is what the probe saw.
constexpr const char* kProbe = R"(import json, sys, sysconfig
import torch
from torch.utils import cpp_extension as ce
info = {"version": torch.__version__.split("+")[0],
        "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
        "include_dirs": ce.include_paths(),
        "lib_dir": ce.library_paths()[0],
        "python_include": sysconfig.get_paths()["include"],
        "built_with_cuda": torch.version.cuda is not None,
        "cuda_device": bool(torch.cuda.is_available())}
if info["built_with_cuda"] and not info["cuda_device"]:
    # Why not, in torch's words and the driver's: what the user needs to fix it.
    why = []
    try:
        torch.cuda.init()
    except Exception as e:
        why.append(str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__)
    try:
        import ctypes
        why.append(f"cuInit returned {ctypes.CDLL('libcuda.so.1').cuInit(0)}")
    except OSError as e:
        why.append(f"libcuda.so.1 not loaded: {e}"[:300])
    info["cuda_problem"] = "; ".join(why)
if info["cuda_device"]:
    info["device_name"] = torch.cuda.get_device_name(0)
    major, minor = torch.cuda.get_device_capability(0)
    info["device_capability"] = f"{major}.{minor}"
print("UPSKILL-PROBE " + json.dumps(info))
)";

// `dir` is the probe's own empty folder, never the shared temporary folder: `python -c` imports
// from its working folder first, and a json.py or http.py anyone left in /tmp would be imported in
// place of the standard library's.
Result<std::string> run_quiet(const std::vector<std::string>& argv, const fs::path& dir,
                              std::map<std::string, std::string> env = {},
                              std::size_t address_space_mb = 16384) {
  sandbox::Options o;
  o.workdir = dir;
  o.argv = argv;
  o.env = std::move(env);
  o.limits.wall = std::chrono::seconds(120);
  o.limits.cpu_seconds = 120;
  o.limits.address_space_mb = address_space_mb;
  o.isolate_network = false;
  o.isolate_pids = false;
  UPSKILL_ASSIGN_OR_RETURN(auto r, sandbox::run(o));
  if (!r.ok())
    return infra(fmt::format("`{}` failed ({}): {}", text::join(argv, " "),
                             r.timed_out ? "timed out" : fmt::format("exit {}", r.exit_code),
                             text::excerpt(text::trim(r.output), 400)));
  return r.output;
}

std::string find_cuda_home() {
  if (const char* h = std::getenv("CUDA_HOME"); h && *h) return h;
  if (const char* h = std::getenv("CUDA_PATH"); h && *h) return h;
  return "/usr/local/cuda";
}

}  // namespace

std::map<std::string, std::string> driver_environment() {
  std::map<std::string, std::string> env;
  for (const char* name : {"LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES"})
    if (const char* v = std::getenv(name); v && *v) env[name] = v;
  return env;
}

std::string default_python(const std::optional<std::string>& configured) {
  const auto on_path = [](const std::string& name) {
    const char* path = std::getenv("PATH");
    return sandbox::find_program(name, path ? path : "").value_or(name);
  };
  if (configured && !configured->empty()) return on_path(*configured);
  if (const char* p = std::getenv("UPSKILL_PYTHON"); p && *p) return on_path(p);
  std::error_code ec;
  if (fs::exists("/usr/bin/python3", ec)) return "/usr/bin/python3";
  return "python3";
}

std::string Toolchain::fingerprint() const {
  return fmt::format("cxx={} nvcc={} torch={} abi={} python={} inc={}", cxx_version,
                     nvcc ? nvcc_version : "none", torch.version, torch.cxx11_abi ? 1 : 0,
                     torch.python_include, text::join(torch.include_dirs, ":"));
}

std::vector<fs::path> Toolchain::read_roots() const {
  std::vector<fs::path> out;
  const auto add = [&](const fs::path& p) {
    if (p.empty() || p == p.root_path()) return;
    std::error_code ec;
    const fs::path resolved = fs::canonical(p, ec);
    for (const fs::path& x : {p, ec ? p : resolved})
      if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  };
  // <prefix>/bin/python3: the prefix holds the standard library (and a venv's site-packages).
  const fs::path python(torch.python);
  if (python.is_absolute()) {
    add(python.parent_path().parent_path());
    std::error_code ec;
    const fs::path real = fs::canonical(python, ec);
    if (!ec) add(real.parent_path().parent_path());
  }
  // <site-packages>/torch/lib: torch's neighbours (numpy, typing_extensions, ...) live there too.
  if (!torch.lib_dir.empty()) add(fs::path(torch.lib_dir).parent_path().parent_path());
  for (const auto& d : torch.include_dirs) add(d);
  if (!torch.python_include.empty()) add(torch.python_include);
  if (!cuda_home.empty()) add(cuda_home);
  return out;
}

namespace {

// The probe, its programs run in `dir` (an empty folder of the probe's own; see run_quiet).
Result<Toolchain> probe_in(const std::string& python, const fs::path& dir) {
  Toolchain t;
  std::error_code ec;
  UPSKILL_ASSIGN_OR_RETURN(auto cxx, run_quiet({t.cxx, "--version"}, dir));
  t.cxx_version = text::trim(text::split_lines(cxx).front());

  t.cuda_home = find_cuda_home();
  const fs::path nvcc = fs::path(t.cuda_home) / "bin" / "nvcc";
  if (fs::exists(nvcc, ec)) {
    t.nvcc = nvcc.string();
    if (auto v = run_quiet({*t.nvcc, "--version"}, dir)) {
      const auto at = v->rfind(", V");
      if (at != std::string::npos) t.nvcc_version = text::trim(v->substr(at + 3));
    }
    if (auto archs = run_quiet({*t.nvcc, "--list-gpu-arch"}, dir))
      for (const auto& line : text::split_lines(*archs))
        if (const auto a = text::trim(line); a.starts_with("compute_"))
          t.nvcc_archs.push_back("sm_" + a.substr(8));
  }

  auto probe = run_quiet({python, "-c", kProbe}, dir, driver_environment(), kCudaAddressSpaceMb);
  if (!probe)
    return infra(
        fmt::format("the Python for kernel checks ({}) cannot import torch: {} (set "
                    "`python:` in upskill.config.yaml to an interpreter with torch)",
                    python, probe.error().message));
  const auto at = probe->rfind("UPSKILL-PROBE ");
  if (at == std::string::npos) return infra("the torch probe printed nothing: " + *probe);
  const std::string line = text::split_lines(probe->substr(at + 14)).front();
  const Json info = Json::parse(line, nullptr, false);
  if (info.is_discarded()) return infra("the torch probe printed malformed JSON: " + line);
  t.torch.python = python;
  t.torch.version = info.value("version", "");
  t.torch.cxx11_abi = info.value("cxx11_abi", true);
  for (const auto& d : info.value("include_dirs", Json::array()))
    t.torch.include_dirs.push_back(d.get<std::string>());
  t.torch.lib_dir = info.value("lib_dir", "");
  t.torch.python_include = info.value("python_include", "");
  t.torch.built_with_cuda = info.value("built_with_cuda", false);
  t.torch.cuda_device = info.value("cuda_device", false);
  t.torch.cuda_problem = info.value("cuda_problem", "");
  t.torch.device_name = info.value("device_name", "");
  t.torch.device_capability = info.value("device_capability", "");
  return t;
}

}  // namespace

Result<Toolchain> probe_toolchain(const std::string& python) {
  UPSKILL_ASSIGN_OR_RETURN(const TempDir dir, TempDir::create("upskill-probe"));
  return probe_in(python, dir.path());
}

namespace {

Json to_json(const Toolchain& t) {
  return {{"cxx", t.cxx},
          {"cxx_version", t.cxx_version},
          {"nvcc", t.nvcc ? Json(*t.nvcc) : Json()},
          {"nvcc_version", t.nvcc_version},
          {"cuda_home", t.cuda_home},
          {"nvcc_archs", t.nvcc_archs},
          {"torch",
           {{"python", t.torch.python},
            {"version", t.torch.version},
            {"cxx11_abi", t.torch.cxx11_abi},
            {"include_dirs", t.torch.include_dirs},
            {"lib_dir", t.torch.lib_dir},
            {"python_include", t.torch.python_include},
            {"built_with_cuda", t.torch.built_with_cuda},
            {"cuda_device", t.torch.cuda_device},
            {"cuda_problem", t.torch.cuda_problem},
            {"device_name", t.torch.device_name},
            {"device_capability", t.torch.device_capability}}}};
}

std::optional<Toolchain> from_json(const Json& j) {
  try {
    Toolchain t;
    t.cxx = j.at("cxx").get<std::string>();
    t.cxx_version = j.at("cxx_version").get<std::string>();
    if (j.at("nvcc").is_string()) t.nvcc = j.at("nvcc").get<std::string>();
    t.nvcc_version = j.at("nvcc_version").get<std::string>();
    t.cuda_home = j.at("cuda_home").get<std::string>();
    t.nvcc_archs = j.at("nvcc_archs").get<std::vector<std::string>>();
    const Json& x = j.at("torch");
    t.torch.python = x.at("python").get<std::string>();
    t.torch.version = x.at("version").get<std::string>();
    t.torch.cxx11_abi = x.at("cxx11_abi").get<bool>();
    t.torch.include_dirs = x.at("include_dirs").get<std::vector<std::string>>();
    t.torch.lib_dir = x.at("lib_dir").get<std::string>();
    t.torch.python_include = x.at("python_include").get<std::string>();
    t.torch.built_with_cuda = x.at("built_with_cuda").get<bool>();
    t.torch.cuda_device = x.at("cuda_device").get<bool>();
    t.torch.cuda_problem = x.value("cuda_problem", "");
    t.torch.device_name = x.at("device_name").get<std::string>();
    t.torch.device_capability = x.at("device_capability").get<std::string>();
    return t;
  } catch (const Json::exception&) {
    return std::nullopt;
  }
}

std::string stamp(const fs::path& p) {
  std::error_code ec;
  const auto canonical = fs::canonical(p, ec);
  if (ec) return p.string() + "?";
  const auto time = fs::last_write_time(canonical, ec);
  return canonical.string() + "@" + std::to_string(time.time_since_epoch().count());
}

}  // namespace

Result<Toolchain> probe_toolchain_cached(const std::string& python, const fs::path& cache_dir) {
  std::error_code ec;
  UPSKILL_ASSIGN_OR_RETURN(const TempDir private_dir, TempDir::create("upskill-probe"));
  const fs::path& dir = private_dir.path();
  // Cheap facts that change when the toolchain does: where torch is (found without importing it)
  // and the files' modification times; a GPU appearing or going away.
  auto where = run_quiet(
      {python, "-c",
       "import importlib.util as u; s = u.find_spec('torch'); print(s.origin if s else '')"},
      dir);
  if (!where) return probe_in(python, dir);
  const std::string origin = text::trim(*where);
  if (origin.empty()) return probe_in(python, dir);
  const fs::path torch_dir = fs::path(origin).parent_path();
  std::string python_path = python;
  if (python.find('/') == std::string::npos) python_path = "/usr/bin/" + python;
  const std::string material =
      fmt::format("{}|{}|{}|{}|{}|{}|{}", python, stamp(python_path), stamp(origin),
                  stamp(torch_dir / "version.py"), stamp(fs::path(find_cuda_home()) / "bin/nvcc"),
                  stamp("/usr/bin/g++"), fs::exists("/dev/nvidiactl", ec) ? "gpu" : "no-gpu");
  const fs::path record =
      cache_dir / "toolchain" / (hash::sha256_hex(material).substr(0, 24) + ".json");
  if (auto text = files::read_text(record)) {
    const Json j = Json::parse(*text, nullptr, false);
    if (!j.is_discarded())
      if (auto t = from_json(j)) return *t;
  }
  UPSKILL_ASSIGN_OR_RETURN(Toolchain t, probe_in(python, dir));
  fs::create_directories(record.parent_path(), ec);
  (void)files::write_atomic(record, to_json(t).dump(2));
  return t;
}

}  // namespace upskill::kernel
