#pragma once
// The correct and bench stages: the Python harness shipped with upskill (src/kernel/harness/
// harness.py, compiled into the binary) run with the configured Python (isolated, -I) in three
// processes — prepare (inputs from a seed chosen per run), candidate (sandboxed, reads confined:
// loads the built package and calls it; can read neither the spec, the reference, the seed nor
// the judge's folder) and compare (never loads candidate code, runs from a folder no candidate
// can write: recomputes the inputs and the reference, reads the candidate's files with
// torch.load(weights_only=True), checks outputs, inputs after each call and outputs of timed
// calls itself, and prints the verdict). The spec is a small Python file next to the skill's
// tests (docs/kernel-checks.md, docs/SECURITY.md).
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "upskill/core/error.hpp"
#include "upskill/core/json.hpp"
#include "upskill/kernel/toolchain.hpp"

namespace upskill::kernel {

struct HarnessRequest {
  const Toolchain* toolchain = nullptr;
  std::filesystem::path spec;            // the op's test spec (Python)
  std::filesystem::path package_parent;  // from bind: sys.path entry for the package
  std::string python_name;
  std::string device = "cpu";  // cpu | cuda
  std::filesystem::path work_dir;
  std::uint64_t seed = 0;
  bool bench = false;
  int warmup = 5;
  int repeats = 30;
  std::chrono::seconds timeout{300};  // per process
};

struct BenchEntry {
  std::string shape;
  std::string dtype;
  std::optional<double> reference_ms, candidate_ms, speedup, achieved_gbps;
  std::optional<double> compiled_ms, speedup_vs_compile;  // torch.compile(reference), CUDA only
  std::optional<double> copy_gbps, bandwidth_fraction;    // measured device copy bandwidth
  // The CPU time a call took by the kernel's accounting (the candidate's read by upskill from
  // outside its PID namespace, the reference's by the judge), the cores that makes while timed,
  // and the timing loop's own time a call, taken off both sides.
  std::optional<double> candidate_cpu_ms, reference_cpu_ms, cores_used, overhead_ms;
  int calls = 0;           // calls a timed segment made
  int segments = 0;        // timed segments of the candidate
  int audited_calls = 0;   // the candidate's timed calls whose outputs the judge checked: all
  std::string unmeasured;  // why no candidate time or speedup was computed, when none was
  std::vector<std::string> implausible;
  std::string problem;
};

struct HarnessResult {
  bool correct = false;
  std::vector<std::string> failures;    // one line per failing case
  std::vector<std::string> weak_cases;  // cases an all-zero or constant output would pass
  std::size_t cases = 0;
  std::vector<BenchEntry> bench;
  std::optional<double> speedup;        // geometric mean over the bench shapes
  std::string candidate_output;         // what the candidate process printed (trimmed)
  std::string protections;              // the sandbox's report for the candidate process
  std::vector<std::string> unenforced;  // protections asked for that this machine could not give
  std::vector<std::string> denied;      // paths the candidate's Python code was refused
  Json verdict;                         // the compare process's full verdict
  double seconds = 0;
};

// An Error when the harness itself could not run (no spec, the reference process failed); a
// candidate that crashes, hangs or writes nothing is a failed HarnessResult.
Result<HarnessResult> run_harness(const HarnessRequest& request);

// The harness source compiled into upskill.
std::string_view harness_source();

}  // namespace upskill::kernel
