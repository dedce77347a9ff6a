// Running untrusted commands (model-written code, its builds and tests; docs/SECURITY.md) (see
// sandbox.hpp).
#include "upskill/core/sandbox.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#ifndef LANDLOCK_ACCESS_FS_TRUNCATE  // Landlock ABI 3; older kernel headers lack the name
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

namespace upskill::sandbox {

namespace {

// Bits the sandboxed child reports back through a pipe before it execs.
enum : std::uint16_t {
  kNetNs = 1,
  kPidNs = 2,
  kRlimits = 4,
  kGroup = 8,
  kWrites = 16,
  kReads = 32,
  kUserNs = 64,
  kOwnProc = 128,
  kNoCaps = 256,
  kCgroup = 512,
  kAsUser = 1024,
};

// Folders every confined reader may read and execute below: the system, nothing of any user.
constexpr const char* kSystemReadable[] = {"/usr", "/lib",  "/lib32", "/lib64", "/libx32",
                                           "/bin", "/sbin", "/etc",   "/dev",   "/sys"};
// Without a /proc of its own, a confined reader gets only these files of the shared one.
constexpr const char* kSharedProcReadable[] = {"/proc/cpuinfo", "/proc/meminfo", "/proc/stat"};

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
  std::vector<std::string> readable;  // and read below, besides kSystemReadable and `writable`
  std::string uid_map, gid_map;       // for a user namespace: "<uid> <uid> 1"
  std::string cgroup_procs;           // cgroup.procs of the run's pids cgroup, or empty
  bool root = false;
};

// Landlock: creating, writing, truncating, renaming and removing files only below `writable`, and
// writing to devices (/dev/null, GPU nodes) under /dev and to the names of the program's own
// threads; with `reads`, reading and executing only
// below the system folders, `writable` and `readable`. Sets kWrites/kReads in `flags` for what is
// in force; nothing when the kernel has no Landlock.
void confine(const Prepared& p, bool writes, bool reads, bool own_proc, std::uint16_t& flags) {
  const long abi =
      syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1 || (!writes && !reads)) return;
  __u64 write = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) write |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) write |= LANDLOCK_ACCESS_FS_TRUNCATE;
  const __u64 read =
      LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  const __u64 dev_write =
      LANDLOCK_ACCESS_FS_WRITE_FILE | (abi >= 3 ? LANDLOCK_ACCESS_FS_TRUNCATE : 0);
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = (writes ? write : 0) | (reads ? read : 0);
  const int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) return;
  const auto allow = [&](const char* path, __u64 access) {
    access &= attr.handled_access_fs;
    if (!access) return;
    const int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return;
    // A rule on a file (an object a link reads) may only carry rights that apply to files.
    struct stat st {};
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
      access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
                LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
    landlock_path_beneath_attr rule{};
    rule.allowed_access = access;
    rule.parent_fd = fd;
    syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    close(fd);
  };
  for (const auto& w : p.writable) allow(w.c_str(), write | read);
  allow("/dev", dev_write | read);
  // The names of this process's own threads, and no other process's: CUDA names the threads it
  // starts (/proc/<pid>/task/<tid>/comm) and cuInit fails with error 304 when it cannot. Opened
  // here, in the process that execs, so /proc/self is the run's program; threads it starts later
  // appear below its task folder.
  allow("/proc/self/task", dev_write);
  allow("/proc/self/comm", dev_write);
  if (reads) {
    for (const char* dir : kSystemReadable) allow(dir, read);
    for (const auto& r : p.readable) allow(r.c_str(), read);
    if (own_proc) {
      allow("/proc", read);
    } else {
      for (const char* file : kSharedProcReadable) allow(file, LANDLOCK_ACCESS_FS_READ_FILE);
    }
  }
  const bool ok = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
                  syscall(SYS_landlock_restrict_self, ruleset, 0) == 0;
  close(ruleset);
  if (ok) flags |= (writes ? kWrites : 0) | (reads ? kReads : 0);
}

// Writes `text` to an already known file (a /proc or cgroup file); only system calls, as the child
// of a threaded process must.
bool write_file(const char* path, const std::string& text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// Empties every capability set, so that even a root child holds no privilege: no ptrace of other
// processes, no reading what file permissions forbid, no mounts, no leaving its cgroup.
bool drop_capabilities() {
  for (int cap = 0; cap <= 63; ++cap)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) break;
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  return syscall(SYS_capset, &header, data) == 0;
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

// Closes every descriptor from `first` up. The forked child has every descriptor upskill had at
// the fork, whatever thread opened it: another run's stdin pipe among them (held open, that run's
// program never sees the end of its input) and whatever the caller left open.
void close_from(int first) {
  if (syscall(SYS_close_range, first, ~0U, 0) == 0) return;
  rlimit nofile{};
  const long top = getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY
                       ? static_cast<long>(std::min<rlim_t>(nofile.rlim_cur, 1 << 20))
                       : 1 << 16;
  for (long fd = first; fd < top; ++fd) close(static_cast<int>(fd));
}

// In the forked child: isolate, limit, exec. Never returns.
[[noreturn]] void exec_child(const Options& o, const Prepared& p, int out_fd, int in_fd,
                             int status_fd) {
  // Only the run's own descriptors survive: its stdin and output on 0-2 and the status pipe on 3
  // (closed by exec). Moved above 2 first, so that the dup2s below cannot overwrite one another.
  in_fd = fcntl(in_fd, F_DUPFD, 4);
  out_fd = fcntl(out_fd, F_DUPFD, 4);
  status_fd = fcntl(status_fd, F_DUPFD, 4);
  if (in_fd < 0 || out_fd < 0 || status_fd < 0 || dup2(in_fd, STDIN_FILENO) < 0 ||
      dup2(out_fd, STDOUT_FILENO) < 0 || dup2(out_fd, STDERR_FILENO) < 0 || dup2(status_fd, 3) < 0)
    _exit(127);
  status_fd = 3;
  fcntl(status_fd, F_SETFD, FD_CLOEXEC);
  close_from(4);
  std::uint16_t flags = 0;
  if (setsid() >= 0) flags |= kGroup;
  // Root: RLIMIT_NPROC does not bind, a pids cgroup of the run's own does.
  if (!p.cgroup_procs.empty() && write_file(p.cgroup_procs.c_str(), "0")) flags |= kCgroup;
  // Not root: a user namespace is what allows the network, PID and mount namespaces. The child
  // keeps its own uid and gid inside it. Root asked to run as a user: the same namespace, in which
  // it is kAsUserId (after exec it has no capabilities there; its files stay root's outside).
  const bool want_userns = !p.root ? (o.isolate_network || o.isolate_pids) : o.as_user;
  if (want_userns && unshare(CLONE_NEWUSER) == 0) {
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);  // /proc/self/*_map belong to us only when dumpable
    write_file("/proc/self/setgroups", "deny");
    if (write_file("/proc/self/uid_map", p.uid_map) && write_file("/proc/self/gid_map", p.gid_map))
      flags |= kUserNs | (p.root ? kAsUser : 0);
  }
  if (o.isolate_network && unshare(CLONE_NEWNET) == 0) flags |= kNetNs;
  bool pid_ns = o.isolate_pids && unshare(CLONE_NEWPID | CLONE_NEWNS) == 0;
  if (!pid_ns && o.isolate_pids) pid_ns = unshare(CLONE_NEWPID) == 0;
  if (pid_ns) {
    // The next child is PID 1 of the new namespace; when it exits the kernel kills every process
    // left in it. This process stays outside and only relays the exit status.
    const pid_t init = fork();
    if (init < 0) child_fail(status_fd, "fork");
    if (init > 0) {
      // It only relays the exit status: it holds no descriptor (another run's among them).
      close_from(0);
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
    // A /proc of the namespace's own: the run sees only its processes, not upskill's environment
    // or command line. The mounts are made private first so nothing propagates back.
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0)
      flags |= kOwnProc;
  }
  if (chdir(p.workdir.c_str()) != 0) child_fail(status_fd, "chdir");
  set_limit(RLIMIT_CPU, static_cast<rlim_t>(o.limits.cpu_seconds));
  set_limit(RLIMIT_AS, static_cast<rlim_t>(o.limits.address_space_mb) << 20);
  set_limit(RLIMIT_FSIZE, static_cast<rlim_t>(o.limits.file_size_mb) << 20);
  set_limit(RLIMIT_NPROC, static_cast<rlim_t>(o.limits.processes));
  set_limit(RLIMIT_CORE, 0);
  flags |= kRlimits;
  confine(p, o.confine_writes, o.confine_reads, flags & kOwnProc, flags);
  if (drop_capabilities()) flags |= kNoCaps;
  // 'F' and the flags; a failure after this point follows them as 0xFF and the message.
  const char report[3] = {'F', static_cast<char>(flags & 0xFF), static_cast<char>(flags >> 8)};
  (void)!write(status_fd, report, sizeof report);
  execve(p.program.c_str(), p.argv.data(), p.envp.data());
  child_fail(status_fd, "exec");
}

// A pids cgroup for one run (root only: RLIMIT_NPROC does not bind root). Made below upskill's own
// pids cgroup, in the cgroup v1 pids hierarchy or in cgroup v2 when the pids controller is
// enabled there; removed after the run. Empty when neither can be written.
class PidsCgroup {
 public:
  explicit PidsCgroup(int max_processes) {
    static std::atomic<unsigned> counter{0};
    const std::string name = fmt::format("upskill-{}-{}", ::getpid(), counter++);
    for (const auto& base : candidates()) {
      const std::string dir = base + "/" + name;
      if (::mkdir(dir.c_str(), 0700) != 0) continue;
      std::ofstream max(dir + "/pids.max");
      if (max << max_processes << std::flush) {
        dir_ = dir;
        return;
      }
      ::rmdir(dir.c_str());
    }
  }
  ~PidsCgroup() {
    if (dir_.empty()) return;
    // The run's processes are gone (the PID namespace's init has exited and the group was killed),
    // but the kernel may still be reaping them.
    for (int i = 0; i < 100 && ::rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  PidsCgroup(const PidsCgroup&) = delete;
  PidsCgroup& operator=(const PidsCgroup&) = delete;
  std::string procs() const { return dir_.empty() ? std::string() : dir_ + "/cgroup.procs"; }

 private:
  // Where upskill's own pids cgroup is: from /proc/self/cgroup and the mount table.
  static std::vector<std::string> candidates() {
    std::string v1_path, v2_path;
    std::ifstream cg("/proc/self/cgroup");
    for (std::string line; std::getline(cg, line);) {
      const auto a = line.find(':'), b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      const std::string controllers = line.substr(a + 1, b - a - 1);
      const std::string path = line.substr(b + 1);
      if (controllers.empty()) v2_path = path;
      std::stringstream list(controllers);
      for (std::string c; std::getline(list, c, ',');)
        if (c == "pids") v1_path = path;
    }
    std::string v1_mount, v2_mount;
    std::ifstream mounts("/proc/self/mounts");
    for (std::string dev, dir, type, opts, rest; mounts >> dev >> dir >> type >> opts;) {
      std::getline(mounts, rest);
      if (type == "cgroup2" && v2_mount.empty()) v2_mount = dir;
      if (type == "cgroup" && ("," + opts + ",").find(",pids,") != std::string::npos)
        v1_mount = dir;
    }
    std::vector<std::string> out;
    const auto join = [](const std::string& mount, const std::string& path) {
      return path == "/" ? mount : mount + path;
    };
    if (!v1_mount.empty() && !v1_path.empty()) out.push_back(join(v1_mount, v1_path));
    if (!v2_mount.empty() && !v2_path.empty()) {
      const std::string dir = join(v2_mount, v2_path);
      std::ifstream enabled(dir + "/cgroup.subtree_control");
      std::string controllers((std::istreambuf_iterator<char>(enabled)), {});
      if (controllers.find("pids") != std::string::npos) out.push_back(dir);
    }
    return out;
  }
  std::string dir_;
};

Result<Prepared> prepare(const Options& o) {
  Prepared p;
  p.workdir = o.workdir.string();
  p.writable.push_back(p.workdir);
  for (const auto& w : o.writable) p.writable.push_back(w.string());
  for (const auto& r : o.readable) p.readable.push_back(r.string());
  p.root = ::geteuid() == 0;
  const bool map_to_user = p.root && o.as_user;
  p.uid_map = fmt::format("{} {} 1", map_to_user ? kAsUserId : ::geteuid(), ::geteuid());
  p.gid_map = fmt::format("{} {} 1", map_to_user ? kAsUserId : ::getegid(), ::getegid());
  std::map<std::string, std::string> env = base_environment(o.workdir);
  for (const auto& [k, v] : o.env) env[k] = v;
  for (const auto& [k, v] : env) p.env.push_back(k + "=" + v);
  p.args = o.argv;
  // Resolve the program against the sandbox's PATH, not ours.
  const auto found = find_program(o.argv[0], env["PATH"]);
  if (!found)
    return fail(Error::infrastructure(
        fmt::format("sandbox: cannot start {}: not found in {}", o.argv[0], env["PATH"])));
  p.program = *found;
  return p;
}

// The exec arrays point into the strings, so they are built once the Prepared has its final place.
void point_into(Prepared& p) {
  for (auto& e : p.env) p.envp.push_back(e.data());
  p.envp.push_back(nullptr);
  for (auto& a : p.args) p.argv.push_back(a.data());
  p.argv.push_back(nullptr);
}

// The protections the child reported ('F' and two bytes of flags on the status pipe).
void read_protections(const std::string& status_bytes, bool root, Protections& p) {
  const auto flags = static_cast<std::uint16_t>(static_cast<unsigned char>(status_bytes[1]) |
                                                static_cast<unsigned char>(status_bytes[2]) << 8);
  p.own_process_group = flags & kGroup;
  p.network_namespace = flags & kNetNs;
  p.pid_namespace = flags & kPidNs;
  p.writes_confined = flags & kWrites;
  p.reads_confined = flags & kReads;
  p.rlimits = flags & kRlimits;
  p.user_namespace = flags & kUserNs;
  p.own_proc = flags & kOwnProc;
  p.no_capabilities = flags & kNoCaps;
  p.pids_cgroup = flags & kCgroup;
  p.nproc_limit = p.pids_cgroup || (p.rlimits && !root);
  p.unprivileged = !root || (flags & kAsUser);
}

// Feeds `data` to the program's stdin on a thread of its own and closes it. SIGPIPE is blocked in
// the writer (a program that never reads ends the write), and the writer gives up once the run is
// over (a leftover holder of the pipe cannot hang us).
std::thread write_stdin(int fd, const std::string& data, const std::atomic<bool>& run_over) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return std::thread([fd, &data, &run_over] {
    sigset_t pipe_signal;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
    for (std::size_t at = 0; at < data.size() && !run_over;) {
      const ssize_t n = write(fd, data.data() + at, data.size() - at);
      if (n > 0) {
        at += static_cast<std::size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        pollfd out{fd, POLLOUT, 0};
        poll(&out, 1, 50);
      } else {
        break;
      }
    }
    close(fd);
  });
}

}  // namespace

std::string Protections::summary() const {
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  return fmt::format(
      "scrubbed environment: {}, rlimits: {}, process limit binding: {}{}, own process group: {}, "
      "user namespace: {}, no network: {}, own PID namespace: {}, own /proc: {}, no capabilities: "
      "{}, writes confined to the workspace: {}, reads confined: {}, as an ordinary user: {}",
      yes(scrubbed_environment), yes(rlimits), yes(nproc_limit),
      pids_cgroup ? " (pids cgroup)" : "", yes(own_process_group), yes(user_namespace),
      yes(network_namespace), yes(pid_namespace), yes(own_proc), yes(no_capabilities),
      yes(writes_confined), yes(reads_confined), yes(unprivileged));
}

std::vector<std::string> Protections::missing(const Options& asked) const {
  std::vector<std::string> out;
  if (!nproc_limit) out.push_back("process limit");
  if (asked.isolate_network && !network_namespace) out.push_back("network namespace");
  if (asked.isolate_pids && !pid_namespace) out.push_back("PID namespace");
  if (asked.isolate_pids && !own_proc) out.push_back("own /proc");
  if (!no_capabilities) out.push_back("capabilities dropped");
  if (asked.confine_writes && !writes_confined) out.push_back("writes confined");
  if (asked.confine_reads && !reads_confined) out.push_back("reads confined");
  if (asked.as_user && !unprivileged) out.push_back("as an ordinary user");
  return out;
}

std::map<std::string, std::string> base_environment(const std::filesystem::path& workdir) {
  return {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
          {"HOME", workdir.string()},
          {"TMPDIR", workdir.string()},
          {"LANG", "C.UTF-8"},
          {"LC_ALL", "C.UTF-8"},
          {"PYTHONDONTWRITEBYTECODE", "1"}};
}

std::optional<std::string> find_program(const std::string& name, std::string_view path_list) {
  if (name.find('/') != std::string::npos) return name;
  while (!path_list.empty()) {
    const std::size_t colon = path_list.find(':');
    const std::string dir(path_list.substr(0, colon));
    const std::string candidate = dir + "/" + name;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
    path_list = colon == std::string_view::npos ? std::string_view() : path_list.substr(colon + 1);
  }
  return std::nullopt;
}

Result<RunResult> run(const Options& o) {
  if (o.argv.empty()) return fail(Error::usage("sandbox: no command"));
  std::error_code ec;
  if (!std::filesystem::is_directory(o.workdir, ec))
    return fail(Error::usage(fmt::format("sandbox: {} is not a directory", o.workdir.string())));
  UPSKILL_ASSIGN_OR_RETURN(Prepared prepared, prepare(o));
  std::optional<PidsCgroup> cgroup;
  if (prepared.root) {
    cgroup.emplace(o.limits.processes);
    prepared.cgroup_procs = cgroup->procs();
  }
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
  // Written beside the output reader, so a program that prints before it reads cannot deadlock a
  // large input.
  std::atomic<bool> run_over{false};
  std::thread stdin_writer = write_stdin(in_pipe[1], o.stdin_data, run_over);

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
  run_over = true;
  stdin_writer.join();
  close(out_pipe[0]);
  close(status_pipe[0]);
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  const bool reported = status_bytes.size() >= 3 && status_bytes[0] == 'F';
  if (const std::string after = reported ? status_bytes.substr(3) : status_bytes;
      !after.empty() && after[0] == '\xFF')
    return fail(
        Error::infrastructure("sandbox: cannot start " + o.argv[0] + ": " + after.substr(1)));
  if (reported) read_protections(status_bytes, prepared.root, result.protections);
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
