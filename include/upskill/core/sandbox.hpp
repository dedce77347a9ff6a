#pragma once
// Running untrusted commands (model-written code, its builds and tests) — DESIGN §6. The child gets
// its own working directory, a scrubbed environment, rlimits on CPU time, address space, file size
// and processes, a wall-clock timeout that kills its whole process group, no network (a new network
// namespace where the kernel allows it) and its own PID namespace where available, so that no
// descendant outlives the run. What was actually in force is reported with every result.
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "upskill/core/error.hpp"

namespace upskill::sandbox {

struct Limits {
  std::chrono::milliseconds wall{std::chrono::seconds(60)};
  int cpu_seconds = 60;
  std::size_t address_space_mb = 8192;
  std::size_t file_size_mb = 512;
  int processes = 512;  // RLIMIT_NPROC; does not bind for root (see Protections::nproc_limit)
  std::size_t output_bytes = 1 << 20;  // captured stdout+stderr; the rest is counted, not kept
};

struct Options {
  std::filesystem::path workdir;           // must exist; becomes cwd and HOME
  std::vector<std::string> argv;           // argv[0] is looked up in PATH
  std::map<std::string, std::string> env;  // added to the scrubbed base environment
  Limits limits;
  bool isolate_network = true;
  bool isolate_pids = true;
  // Landlock: the child may create, change and remove files only below workdir and `writable`
  // (and write to devices under /dev); reading stays allowed.
  bool confine_writes = true;
  std::vector<std::filesystem::path> writable;
  std::string stdin_data;
};

// Which protections were in force for a run.
struct Protections {
  bool scrubbed_environment = false;
  bool rlimits = false;
  bool nproc_limit = false;  // false when running as root: the kernel exempts root
  bool own_process_group = false;
  bool network_namespace = false;  // no network at all
  bool pid_namespace = false;      // descendants die with the run, even ones that left the group
  bool writes_confined = false;    // Landlock: files change only below the workdir (+ writable)
  std::string summary() const;     // "environment, rlimits, ..., no network: yes/no ..."
};

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  std::string output;  // stdout and stderr, interleaved, at most limits.output_bytes
  std::size_t output_total = 0;
  std::chrono::milliseconds elapsed{0};
  Protections protections;

  bool ok() const { return !timed_out && exit_code == 0; }
};

// The environment every sandboxed command starts from (PATH, HOME=workdir, LANG, TMPDIR).
std::map<std::string, std::string> base_environment(const std::filesystem::path& workdir);

// Runs the command; an Error only when it could not be started at all.
Result<RunResult> run(const Options& options);

// Convenience: `sh -c COMMAND` in the sandbox.
Result<RunResult> run_shell(const std::string& command, const std::filesystem::path& workdir,
                            const Limits& limits = {});

}  // namespace upskill::sandbox
