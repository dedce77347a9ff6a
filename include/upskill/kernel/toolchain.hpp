#pragma once
// What the kernel pipeline builds and runs with: g++, nvcc (CUDA_HOME or /usr/local/cuda) and the
// configured Python's torch (include paths, library folder, C++11 ABI, version, CUDA device).
// Probed once per process; every field feeds the build cache key.
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "upskill/core/error.hpp"

namespace upskill::kernel {

struct TorchInfo {
  std::string python;  // the interpreter
  std::string version;
  bool cxx11_abi = true;
  std::vector<std::string> include_dirs;
  std::string lib_dir;
  std::string python_include;
  bool built_with_cuda = false;   // torch.version.cuda is set
  bool cuda_device = false;       // torch.cuda.is_available()
  std::string cuda_problem;       // built with CUDA but no device: torch's and cuInit's words
  std::string device_name;        // of device 0, when there is one
  std::string device_capability;  // "9.0"
};

struct Toolchain {
  std::string cxx = "g++";
  std::string cxx_version;  // first line of `g++ --version`
  std::optional<std::string> nvcc;
  std::string nvcc_version;  // "13.0.88"
  std::string cuda_home;
  std::vector<std::string> nvcc_archs;  // "sm_75", … from `nvcc --list-gpu-arch`
  TorchInfo torch;

  // A one-line identity of everything that changes build output (part of every cache key).
  std::string fingerprint() const;

  // The folders a confined process needs to read to run this Python with torch, and to compile
  // against torch and CUDA: the interpreter's prefix (as named and as resolved), torch's
  // site-packages, its include folders and CUDA_HOME. Nothing of any user's files besides these.
  std::vector<std::filesystem::path> read_roots() const;
};

// Probes the toolchain with `python` (the interpreter that has torch). An Error names what is
// missing (no torch for that Python, no g++).
Result<Toolchain> probe_toolchain(const std::string& python);

// The same, remembered under `cache_dir`/toolchain/ and re-probed when the interpreter, torch, nvcc
// or g++ change on disk or a GPU appears or goes away (importing torch takes seconds).
Result<Toolchain> probe_toolchain_cached(const std::string& python,
                                         const std::filesystem::path& cache_dir);

// The interpreter to use: `configured` when set, else $UPSKILL_PYTHON, else /usr/bin/python3 when
// it exists, else python3. A name without a slash ("python3") is looked up in upskill's own PATH,
// as the user's shell would: the sandboxed processes that run it have a PATH of their own.
std::string default_python(const std::optional<std::string>& configured);

// Virtual memory for a process that uses a CUDA device, in MiB: CUDA reserves terabytes of address
// space when it starts, so a tighter RLIMIT_AS makes torch see no device.
inline constexpr std::size_t kCudaAddressSpaceMb = std::size_t{1} << 26;

// What the kernel pipeline's Python processes (the torch probe, the judge, the candidate) take from
// upskill's own environment so that they find the GPU driver and device the user's Python finds:
// LD_LIBRARY_PATH (GPU containers put the driver's libraries there, /usr/local/nvidia/lib64) and
// CUDA_VISIBLE_DEVICES, where set. Nothing else crosses the scrubbed environment.
std::map<std::string, std::string> driver_environment();

}  // namespace upskill::kernel
