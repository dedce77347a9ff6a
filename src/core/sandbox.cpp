#include "upskill/core/sandbox.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/landlock.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#ifndef LANDLOCK_ACCESS_FS_TRUNCATE  // Landlock ABI 3; older kernel headers lack the name
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

namespace upskill::sandbox {

namespace {

// Bits the sandboxed child reports back through a pipe before it execs.
enum : unsigned char { kNetNs = 1, kPidNs = 2, kRlimits = 4, kGroup = 8, kWrites = 16 };

void set_limit(int resource, rlim_t value) {
  rlimit r{value, value};
  setrlimit(resource, &r);
}

// Everything the child needs, built before fork: after fork in a threaded process the child should
// only make system calls.
struct Prepared {
  std::string workdir;
  std::string program;  // argv[0] resolved against the sandbox's PATH
  std::vector<std::string> args, env;
  std::vector<char*> argv, envp;
  std::vector<std::string> writable;  // folders the child may write below (Landlock)
};

// Landlock: reading and executing stay allowed everywhere; creating, writing, truncating, renaming
// and removing files only below `writable`, and writing to devices (/dev/null, GPU nodes) under
// /dev. False when the kernel has no Landlock (the run then reports writes as unconfined).
bool confine_writes(const Prepared& p) {
  const long abi =
      syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return false;
  __u64 write = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) write |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) write |= LANDLOCK_ACCESS_FS_TRUNCATE;
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = write;
  const int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) return false;
  const auto allow = [&](const char* path, __u64 access) {
    const int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return;
    landlock_path_beneath_attr rule{};
    rule.allowed_access = access;
    rule.parent_fd = fd;
    syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    close(fd);
  };
  for (const auto& w : p.writable) allow(w.c_str(), write);
  allow("/dev", LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 3 ? LANDLOCK_ACCESS_FS_TRUNCATE : 0));
  const bool ok = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
                  syscall(SYS_landlock_restrict_self, ruleset, 0) == 0;
  close(ruleset);
  return ok;
}

[[noreturn]] void child_fail(int status_fd, const char* what) {
  const int err = errno;
  const unsigned char marker = 0xFF;
  const char* reason = std::strerror(err);
  (void)!write(status_fd, &marker, 1);
  (void)!write(status_fd, what, std::strlen(what));
  (void)!write(status_fd, ": ", 2);
  (void)!write(status_fd, reason, std::strlen(reason));
  _exit(127);
}

// In the forked child: isolate, limit, exec. Never returns.
[[noreturn]] void exec_child(const Options& o, const Prepared& p, int out_fd, int in_fd,
                             int status_fd) {
  unsigned char flags = 0;
  if (setsid() >= 0) flags |= kGroup;
  if (o.isolate_network && unshare(CLONE_NEWNET) == 0) flags |= kNetNs;
  bool pid_ns = o.isolate_pids && unshare(CLONE_NEWPID) == 0;
  if (pid_ns) {
    // The next child is PID 1 of the new namespace; when it exits the kernel kills every process
    // left in it. This process stays outside and only relays the exit status.
    const pid_t init = fork();
    if (init < 0) child_fail(status_fd, "fork");
    if (init > 0) {
      close(out_fd);
      close(in_fd);
      close(status_fd);
      int status = 0;
      while (waitpid(init, &status, 0) < 0 && errno == EINTR) {
      }
      if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        kill(getpid(), WTERMSIG(status));
      }
      _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
    }
    flags |= kPidNs;
  }
  dup2(in_fd, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  if (chdir(p.workdir.c_str()) != 0) child_fail(status_fd, "chdir");
  set_limit(RLIMIT_CPU, static_cast<rlim_t>(o.limits.cpu_seconds));
  set_limit(RLIMIT_AS, static_cast<rlim_t>(o.limits.address_space_mb) << 20);
  set_limit(RLIMIT_FSIZE, static_cast<rlim_t>(o.limits.file_size_mb) << 20);
  set_limit(RLIMIT_NPROC, static_cast<rlim_t>(o.limits.processes));
  set_limit(RLIMIT_CORE, 0);
  flags |= kRlimits;
  if (o.confine_writes && confine_writes(p)) flags |= kWrites;
  (void)!write(status_fd, &flags, 1);
  execve(p.program.c_str(), p.argv.data(), p.envp.data());
  child_fail(status_fd, "exec");
}

Result<Prepared> prepare(const Options& o) {
  Prepared p;
  p.workdir = o.workdir.string();
  p.writable.push_back(p.workdir);
  for (const auto& w : o.writable) p.writable.push_back(w.string());
  std::map<std::string, std::string> env = base_environment(o.workdir);
  for (const auto& [k, v] : o.env) env[k] = v;
  for (const auto& [k, v] : env) p.env.push_back(k + "=" + v);
  p.args = o.argv;
  // Resolve the program against the sandbox's PATH, not ours.
  p.program = o.argv[0];
  if (p.program.find('/') == std::string::npos) {
    std::string found;
    std::string_view path = env["PATH"];
    while (!path.empty() && found.empty()) {
      const std::size_t colon = path.find(':');
      const std::string dir(path.substr(0, colon));
      const std::string candidate = dir + "/" + p.program;
      if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) found = candidate;
      path = colon == std::string_view::npos ? std::string_view() : path.substr(colon + 1);
    }
    if (found.empty())
      return fail(Error::infrastructure(
          fmt::format("sandbox: cannot start {}: not found in {}", p.program, env["PATH"])));
    p.program = found;
  }
  return p;
}

// The exec arrays point into the strings, so they are built once the Prepared has its final place.
void point_into(Prepared& p) {
  for (auto& e : p.env) p.envp.push_back(e.data());
  p.envp.push_back(nullptr);
  for (auto& a : p.args) p.argv.push_back(a.data());
  p.argv.push_back(nullptr);
}

}  // namespace

std::string Protections::summary() const {
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  return fmt::format(
      "scrubbed environment: {}, rlimits: {}, process limit binding: {}, own process group: {}, no "
      "network: {}, "
      "own PID namespace: {}, writes confined to the workspace: {}",
      yes(scrubbed_environment), yes(rlimits), yes(nproc_limit), yes(own_process_group),
      yes(network_namespace), yes(pid_namespace), yes(writes_confined));
}

std::map<std::string, std::string> base_environment(const std::filesystem::path& workdir) {
  return {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
          {"HOME", workdir.string()},
          {"TMPDIR", workdir.string()},
          {"LANG", "C.UTF-8"},
          {"LC_ALL", "C.UTF-8"},
          {"PYTHONDONTWRITEBYTECODE", "1"}};
}

Result<RunResult> run(const Options& o) {
  if (o.argv.empty()) return fail(Error::usage("sandbox: no command"));
  std::error_code ec;
  if (!std::filesystem::is_directory(o.workdir, ec))
    return fail(Error::usage(fmt::format("sandbox: {} is not a directory", o.workdir.string())));
  UPSKILL_ASSIGN_OR_RETURN(Prepared prepared, prepare(o));
  point_into(prepared);
  int out_pipe[2], in_pipe[2], status_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(in_pipe, O_CLOEXEC) != 0 ||
      pipe2(status_pipe, O_CLOEXEC) != 0)
    return fail(Error::infrastructure(fmt::format("sandbox: pipe: {}", std::strerror(errno))));
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0)
    return fail(Error::infrastructure(fmt::format("sandbox: fork: {}", std::strerror(errno))));
  if (pid == 0) {
    close(out_pipe[0]);
    close(in_pipe[1]);
    close(status_pipe[0]);
    exec_child(o, prepared, out_pipe[1], in_pipe[0], status_pipe[1]);
  }
  close(out_pipe[1]);
  close(in_pipe[0]);
  close(status_pipe[1]);
  if (!o.stdin_data.empty()) (void)!write(in_pipe[1], o.stdin_data.data(), o.stdin_data.size());
  close(in_pipe[1]);

  RunResult result;
  result.protections.scrubbed_environment = true;
  std::string status_bytes;
  const auto deadline = start + o.limits.wall;
  char buffer[65536];
  bool out_open = true, status_open = true, exited = false;
  int status = 0;
  std::optional<std::chrono::steady_clock::time_point> drain_until;
  auto take_output = [&](ssize_t n) {
    result.output_total += static_cast<std::size_t>(n);
    const std::size_t room =
        o.limits.output_bytes - std::min(o.limits.output_bytes, result.output.size());
    result.output.append(buffer, std::min(room, static_cast<std::size_t>(n)));
  };
  while (out_open || status_open || !exited) {
    const auto now = std::chrono::steady_clock::now();
    if (!exited && now >= deadline) {
      result.timed_out = true;
      break;
    }
    if (drain_until && now >= *drain_until)
      break;  // a descendant still holds the pipe: stop reading
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0},
                     {status_open ? status_pipe[0] : -1, POLLIN, 0}};
    const auto wait_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    const int ready = poll(fds, 2, static_cast<int>(std::clamp<long long>(wait_ms, 0, 50)));
    if (ready < 0 && errno != EINTR) break;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = read(out_pipe[0], buffer, sizeof buffer);
      if (n <= 0)
        out_open = false;
      else
        take_output(n);
    }
    if (status_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = read(status_pipe[0], buffer, sizeof buffer);
      if (n <= 0)
        status_open = false;
      else
        status_bytes.append(buffer, static_cast<std::size_t>(n));
    }
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      drain_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    }
  }
  // Nothing of the run may outlive it: kill the process group (with a PID namespace the kernel has
  // already killed everything when the command, its PID 1, exited).
  kill(-pid, SIGKILL);
  if (!exited) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  close(out_pipe[0]);
  close(status_pipe[0]);
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  if (const auto marker = status_bytes.find('\xFF'); marker != std::string::npos)
    return fail(Error::infrastructure("sandbox: cannot start " + o.argv[0] + ": " +
                                      status_bytes.substr(marker + 1)));
  if (!status_bytes.empty()) {
    const auto flags = static_cast<unsigned char>(status_bytes[0]);
    result.protections.own_process_group = flags & kGroup;
    result.protections.network_namespace = flags & kNetNs;
    result.protections.pid_namespace = flags & kPidNs;
    result.protections.writes_confined = flags & kWrites;
    result.protections.rlimits = flags & kRlimits;
  }
  result.protections.nproc_limit = result.protections.rlimits && geteuid() != 0;
  if (result.timed_out) {
    result.exit_code = -1;
    result.signal = SIGKILL;
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

Result<RunResult> run_shell(const std::string& command, const std::filesystem::path& workdir,
                            const Limits& limits) {
  Options o;
  o.workdir = workdir;
  o.argv = {"/bin/sh", "-c", command};
  o.limits = limits;
  return run(o);
}

}  // namespace upskill::sandbox
