#pragma once
// Running untrusted commands (model-written code, its builds and tests; docs/SECURITY.md). The
// child gets its own working directory, a scrubbed environment, rlimits on CPU time, address space,
// file size and processes, a wall-clock timeout that kills its whole process group, no network (a
// new network namespace), its own PID namespace with a fresh /proc (so no descendant outlives the
// run and no other process is visible) whose PID 1 is a supervisor of upskill's, not the program
// (signals reach the program as anywhere else), no capabilities, a pids cgroup when running as root
// (where RLIMIT_NPROC does not bind; killed as a whole at the end) and a user namespace when not
// (which is what lets an unprivileged user create the others). The run dies with upskill, even
// when upskill is killed. Landlock confines writes and, on request, reads; of /dev only a few
// device files are reachable. Descriptors other than stdin, stdout and stderr are closed. What was
// actually in force is reported with every result.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "upskill/core/error.hpp"

namespace upskill::sandbox {

struct Limits {
  std::chrono::milliseconds wall{std::chrono::seconds(60)};
  int cpu_seconds = 60;
  std::size_t address_space_mb = 8192;
  std::size_t file_size_mb = 512;
  int processes = 512;  // RLIMIT_NPROC, or pids.max of a pids cgroup when running as root
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
  // (and write to /dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom, the GPU's
  // /dev/nvidia* and terminals); reading stays allowed.
  bool confine_writes = true;
  std::vector<std::filesystem::path> writable;
  // Landlock: reading and executing only below the system folders (/usr, /lib*, /bin, /sbin,
  // /etc, /sys, and /proc when the run has its own), workdir, `writable` and `readable`, and of
  // /dev only the devices above without terminals.
  // Off by default (a coding agent's CLI reads its own install wherever it is); run_shell, the
  // kernel pipeline's processes and the import check turn it on.
  bool confine_reads = false;
  std::vector<std::filesystem::path> readable;
  std::string stdin_data;  // written to the program's stdin (any size), then closed
  // Where the program prints `marker` (the first time), the run has at most `marker_wall` left
  // from then on: a program that waits before its bounded part (the import check loads Python and
  // torch while the sources compile) is held to that part's own limit however it behaves.
  std::string marker;
  std::chrono::milliseconds marker_wall{0};
  // Run as an ordinary user even when upskill is root: a user namespace in which the program is
  // uid/gid kAsUserId, so programs that refuse root (Claude Code's bypassPermissions) run. Its
  // files stay root's outside; it has no capabilities. Not root: it already runs as itself.
  bool as_user = false;
  // Descriptors the program gets as 3, 4, ... in this order (a socket to the process that judges
  // it, say); every other descriptor is closed as usual. The caller keeps its own copies: close
  // them in `on_start` so that the program's end of a socket is held by the program alone.
  std::vector<int> pass_fds;
  // Called in upskill's process just after the run's first process is forked, with its pid (the
  // run's processes are it and its descendants: cpu_time_ns).
  std::function<void(pid_t)> on_start;
  // When it becomes true, the run is ended as a timed-out one is (RunResult::stopped): a run a
  // caller no longer needs (the kernel candidate once its judge has finished).
  const std::atomic<bool>* stop = nullptr;
};

// The user and group id a root run with `as_user` has inside its user namespace.
inline constexpr unsigned kAsUserId = 1000;

// Which protections were in force for a run.
struct Protections {
  bool scrubbed_environment = false;
  bool rlimits = false;
  bool nproc_limit = false;  // the process count is bounded: RLIMIT_NPROC (not root) or pids cgroup
  bool pids_cgroup = false;  // the run was placed in a pids cgroup of its own
  bool own_process_group = false;
  bool user_namespace = false;  // an unprivileged run got its namespaces through a user namespace
  bool network_namespace = false;  // no network at all
  bool pid_namespace = false;      // descendants die with the run, even ones that left the group
  bool own_proc = false;           // a fresh /proc: only the run's own processes are visible
  bool no_capabilities = false;    // bounding, permitted and effective capability sets emptied
  bool writes_confined = false;    // Landlock: files change only below the workdir (+ writable)
  bool reads_confined = false;     // Landlock: reads only below system folders, workdir, readable
  bool unprivileged = false;       // the program's uid is not 0 (not root, or `as_user` in force)
  std::string summary() const;     // "environment, rlimits, ..., no network: yes/no ..."
  // The protections asked for that were not in force, by name ("reads confined", ...).
  std::vector<std::string> missing(const Options& asked) const;
};

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  bool stopped = false;  // ended because Options::stop became true
  std::string output;    // stdout and stderr, interleaved, at most limits.output_bytes
  std::size_t output_total = 0;
  std::chrono::milliseconds elapsed{0};
  Protections protections;

  bool ok() const { return !timed_out && !stopped && exit_code == 0; }
};

// The environment every sandboxed command starts from (PATH, HOME=workdir, LANG, TMPDIR).
std::map<std::string, std::string> base_environment(const std::filesystem::path& workdir);

// The first executable `name` in the folders of `path_list` (a PATH value), as a full path; nullopt
// when none is. A name with a slash is returned as it is.
std::optional<std::string> find_program(const std::string& name, std::string_view path_list);

// The CPU time, in ns, of every process of a run that is still going, `pid` being the pid
// Options::on_start was given: each live process's CPU clock (all its threads, those that ended
// included) and the children each has reaped, by the kernel's own accounting — what the
// run's code cannot forge. nullopt when /proc cannot tell (the run has ended).
std::optional<std::uint64_t> cpu_time_ns(pid_t pid);

// Runs the command; an Error only when it could not be started at all.
Result<RunResult> run(const Options& options);

// `sh -c COMMAND` in the sandbox, reads confined too (the system folders and the workspace): how
// `command` checks and the agent's `run` tool run.
Result<RunResult> run_shell(const std::string& command, const std::filesystem::path& workdir,
                            const Limits& limits = {});

}  // namespace upskill::sandbox
