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
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
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
                                           "/bin", "/sbin", "/etc",   "/sys"};
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
  std::vector<std::string> devices;   // device files it may read and write (devices())
  std::vector<int> pass_fds;          // become 3, 4, ... in the program
  pid_t parent = 0;                   // upskill: the child dies with it
  bool root = false;
};

// Landlock: creating, writing, truncating, renaming and removing files only below `writable`, and
// writing to the devices of p.devices and to the names of the program's own threads; with `reads`,
// reading and executing only below the system folders, `writable`, `readable` and p.devices. Sets
// kWrites/kReads in `flags` for what is in force; nothing when the kernel has no Landlock.
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
  // Devices: only the few a program needs (devices() lists them), not /dev as a whole — as root,
  // without capabilities, a program could still open raw block devices (/dev/loop*, /dev/zram*)
  // and read others' shared memory (/dev/shm) through file permissions alone.
  for (const auto& d : p.devices) allow(d.c_str(), dev_write | read);
  allow("/dev", LANDLOCK_ACCESS_FS_READ_DIR);
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

// Asks for SIGKILL when the parent dies; if it already has (the parent is no longer `parent`), the
// signal would never come, so this process ends now.
void die_with_parent(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != parent) _exit(127);
}

// Exits the way `status` (a wait status) says: with its code, or by its signal (without a core
// file: the relay's working directory is upskill's).
[[noreturn]] void exit_like(int status) {
  if (WIFSIGNALED(status)) {
    set_limit(RLIMIT_CORE, 0);
    signal(WTERMSIG(status), SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, WTERMSIG(status));
    sigprocmask(SIG_UNBLOCK, &only, nullptr);
    kill(getpid(), WTERMSIG(status));
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

// Called just after unshare(CLONE_NEWPID): three processes, of which only the last returns.
//   relay       this process, outside the namespace: waits, then exits as the program did.
//   supervisor  the namespace's PID 1: holds no descriptor and no capability, reaps orphans and,
//               once the program has exited, hands its status to the relay and exits, upon which
//               the kernel kills every process left in the namespace. It dies with the relay.
//   program     PID 2: returns, to be confined and exec'd. Not PID 1, so the signals it gets act
//               as they do anywhere (Linux drops default-action signals sent to a PID 1 from inside
//               its namespace: an alarm(2) would never end it).
// Sets kPidNs, and kOwnProc when the namespace got a /proc of its own.
void become_supervisor(int status_fd, std::uint16_t& flags) {
  // handoff: the program's wait status, supervisor to relay. alive: held open by the relay only,
  // so the supervisor can tell whether the relay died before it asked to die with it (its
  // getppid() is 0 inside the namespace and cannot tell).
  int handoff[2], alive[2];
  if (pipe2(handoff, O_CLOEXEC) != 0 || pipe2(alive, O_CLOEXEC) != 0) child_fail(status_fd, "pipe");
  const pid_t supervisor = fork();
  if (supervisor < 0) child_fail(status_fd, "fork");
  if (supervisor > 0) {
    // The relay holds only these two ends (another run's descriptors among the rest).
    dup2(handoff[0], 0);
    dup2(alive[1], 1);
    close_from(2);
    int status = 0;
    while (waitpid(supervisor, &status, 0) < 0 && errno == EINTR) {
    }
    int program_status = 0;
    if (read(0, &program_status, sizeof program_status) == sizeof program_status)
      exit_like(program_status);
    exit_like(status);
  }
  close(alive[1]);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  pollfd relay_gone{alive[0], POLLIN, 0};
  if (poll(&relay_gone, 1, 0) != 0) _exit(127);  // the relay's end is closed: it is gone
  close(alive[0]);
  flags |= kPidNs;
  // A /proc of the namespace's own: the run sees only its processes, not upskill's environment
  // or command line. The mounts are made private first so nothing propagates back.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
      mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0)
    flags |= kOwnProc;
  const pid_t program = fork();
  if (program < 0) child_fail(status_fd, "fork");
  if (program == 0) {
    close(handoff[0]);
    close(handoff[1]);
    return;
  }
  dup2(handoff[1], 0);
  close_from(1);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);  // not to be traced by what runs in the namespace
  drop_capabilities();
  for (;;) {
    int status = 0;
    const pid_t ended = waitpid(-1, &status, 0);
    if (ended == program) {
      (void)!write(0, &status, sizeof status);
      _exit(0);
    }
    if (ended < 0 && errno != EINTR) _exit(127);
  }
}

// In the forked child: isolate, limit, exec. Never returns.
[[noreturn]] void exec_child(const Options& o, const Prepared& p, int out_fd, int in_fd,
                             int status_fd) {
  // Only the run's own descriptors survive: its stdin and output on 0-2, the descriptors passed
  // on 3, 4, ... and the status pipe after them (closed by exec). Moved above every target first,
  // so that the dup2s below cannot overwrite one another.
  const int passed = static_cast<int>(p.pass_fds.size());
  const int above = 4 + passed;
  in_fd = fcntl(in_fd, F_DUPFD, above);
  out_fd = fcntl(out_fd, F_DUPFD, above);
  status_fd = fcntl(status_fd, F_DUPFD, above);
  int moved[16];
  for (int i = 0; i < passed; ++i)
    if ((moved[i] = fcntl(p.pass_fds[static_cast<std::size_t>(i)], F_DUPFD, above)) < 0) _exit(127);
  if (in_fd < 0 || out_fd < 0 || status_fd < 0 || dup2(in_fd, STDIN_FILENO) < 0 ||
      dup2(out_fd, STDOUT_FILENO) < 0 || dup2(out_fd, STDERR_FILENO) < 0 ||
      dup2(status_fd, 3 + passed) < 0)
    _exit(127);
  for (int i = 0; i < passed; ++i)
    if (dup2(moved[i], 3 + i) < 0) _exit(127);  // dup2 leaves the copy without close-on-exec
  status_fd = 3 + passed;
  fcntl(status_fd, F_SETFD, FD_CLOEXEC);
  close_from(above);
  // Nothing of the run outlives upskill: killed when upskill (the thread that forked it, which
  // waits for the run) dies, even by SIGKILL.
  die_with_parent(p.parent);
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
  if (pid_ns) become_supervisor(status_fd, flags);
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
    const auto bases = candidates();
    static std::once_flag swept;
    std::call_once(swept, [&] { sweep_orphans(bases); });
    for (const auto& base : bases) {
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
    // The run's processes are being killed (the PID namespace's supervisor has exited, or the
    // group was killed) and the kernel may still be reaping them. A group still busy after 5 s (a
    // process in uninterruptible I/O) is left for sweep_orphans() of a later upskill; so is, at
    // once, the group of a run whose descendants may outlive it (a tool that starts a daemon).
    if (!killed_) {
      ::rmdir(dir_.c_str());
      return;
    }
    for (int i = 0; i < 500 && ::rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++i) {
      kill_members(dir_);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  PidsCgroup(const PidsCgroup&) = delete;
  PidsCgroup& operator=(const PidsCgroup&) = delete;
  std::string procs() const { return dir_.empty() ? std::string() : dir_ + "/cgroup.procs"; }
  // Kills every process in the group (those a run left, wherever they are), now and until the
  // group is removed.
  void kill_all() {
    killed_ = true;
    if (!dir_.empty()) kill_members(dir_);
  }

 private:
  static void kill_members(const std::string& dir) {
    // cgroup v2 kills the whole group at once; v1 lists its members, read until none is left (a
    // process forked between the read and the kill is caught by the next read; pids.max bounds
    // how many there can be).
    if (write_file((dir + "/cgroup.kill").c_str(), "1")) return;
    for (int round = 0; round < 50; ++round) {
      std::ifstream procs(dir + "/cgroup.procs");
      bool any = false;
      for (pid_t member = 0; procs >> member;) {
        ::kill(member, SIGKILL);
        any = true;
      }
      if (!any) return;
    }
  }
  // Empty groups that upskill processes no longer alive left behind (killed before their
  // destructors ran; their runs died with them). A group with members is left alone: its owner
  // may be alive in another PID namespace, or the members a daemon a tool started on purpose.
  static void sweep_orphans(const std::vector<std::string>& bases) {
    for (const auto& base : bases) {
      std::error_code ec;
      for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
        const std::string name = entry.path().filename().string();
        pid_t owner = 0;
        if (!name.starts_with("upskill-") ||
            std::sscanf(name.c_str(), "upskill-%d-", &owner) != 1 || owner <= 0 ||
            ::kill(owner, 0) == 0 || errno != ESRCH)
          continue;
        ::rmdir(entry.path().c_str());  // fails (EBUSY) while it has members
      }
    }
  }

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
  bool killed_ = false;
};

// The device files a confined run may open: the data sources every program uses, the GPU's nodes
// (/dev/nvidia*, /dev/nvidia-caps/) and, when its reads are not confined (coding agents, `command`
// checks), terminals. Nothing else under /dev: no disks, loop or zram devices, no /dev/shm, no
// /dev/mem. Listed before fork (the child only opens them).
std::vector<std::string> devices(bool reads_confined) {
  std::vector<std::string> out;
  for (const char* name : {"null", "zero", "full", "random", "urandom"})
    out.push_back(std::string("/dev/") + name);
  if (!reads_confined)
    for (const char* name : {"tty", "ptmx", "pts"}) out.push_back(std::string("/dev/") + name);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev", ec))
    if (entry.path().filename().string().starts_with("nvidia")) out.push_back(entry.path());
  return out;
}

Result<Prepared> prepare(const Options& o) {
  Prepared p;
  p.workdir = o.workdir.string();
  p.writable.push_back(p.workdir);
  for (const auto& w : o.writable) p.writable.push_back(w.string());
  for (const auto& r : o.readable) p.readable.push_back(r.string());
  p.root = ::geteuid() == 0;
  p.parent = ::getpid();
  p.devices = devices(o.confine_reads);
  if (o.pass_fds.size() > 16)
    return fail(Error::usage("sandbox: at most 16 descriptors can be passed to a run"));
  p.pass_fds = o.pass_fds;
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

// What the parent does with the run's output as it arrives: keeps it (up to the limit) and counts
// it, and brings the deadline forward when the marker appears.
class OutputSink {
 public:
  OutputSink(const Options& o, RunResult& result, std::chrono::steady_clock::time_point start)
      : o_(o), result_(result), deadline_(start + o.limits.wall), marker_seen_(o.marker.empty()) {}

  std::chrono::steady_clock::time_point deadline() const { return deadline_; }

  void take(std::string_view data) {
    std::string& out = result_.output;
    result_.output_total += data.size();
    const std::size_t room = o_.limits.output_bytes - std::min(o_.limits.output_bytes, out.size());
    const std::size_t before = out.size();
    out.append(data.substr(0, std::min(room, data.size())));
    if (!marker_seen_ &&
        out.find(o_.marker, before - std::min(before, o_.marker.size())) != std::string::npos) {
      marker_seen_ = true;
      deadline_ = std::min(deadline_, std::chrono::steady_clock::now() + o_.marker_wall);
    }
  }

 private:
  const Options& o_;
  RunResult& result_;
  std::chrono::steady_clock::time_point deadline_;
  bool marker_seen_;
};

// The result of a run that has ended: the protections the child reported and how it ended; an
// Error when the program could not be started.
Result<RunResult> finish(RunResult result, const std::string& status_bytes, int status, bool root,
                         const std::string& program) {
  const bool reported = status_bytes.size() >= 3 && status_bytes[0] == 'F';
  if (const std::string after = reported ? status_bytes.substr(3) : status_bytes;
      !after.empty() && after[0] == '\xFF')
    return fail(Error::infrastructure("sandbox: cannot start " + program + ": " + after.substr(1)));
  if (reported) read_protections(status_bytes, root, result.protections);
  if (result.timed_out || result.stopped) {
    result.exit_code = -1;
    result.signal = SIGKILL;
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
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

std::optional<std::uint64_t> cpu_time_ns(pid_t pid) {
  const double tick_ns = 1e9 / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::uint64_t total = 0;
  bool any = false;
  std::vector<pid_t> todo{pid};
  // The run's processes: `pid` and its descendants, found through each thread's children list
  // (a fork bomb is bounded by the run's process limit).
  for (std::size_t i = 0; i < todo.size() && todo.size() < 100000; ++i) {
    const pid_t at = todo[i];
    clockid_t clock{};
    timespec ts{};
    if (clock_getcpuclockid(at, &clock) == 0 && clock_gettime(clock, &ts) == 0) {
      total += static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
               static_cast<std::uint64_t>(ts.tv_nsec);
      any = true;
    }
    // Children it has reaped: fields 16 and 17 of /proc/<pid>/stat, after the command's ')'.
    std::ifstream stat(fmt::format("/proc/{}/stat", at));
    std::string line;
    if (std::getline(stat, line)) {
      const auto close = line.rfind(')');
      std::istringstream fields(close == std::string::npos ? "" : line.substr(close + 2));
      std::string field;
      long long reaped = 0;
      for (int n = 3; fields >> field && n <= 17; ++n)
        if (n == 16 || n == 17) reaped += std::atoll(field.c_str());
      total += static_cast<std::uint64_t>(static_cast<double>(reaped) * tick_ns);
    }
    std::error_code ec;
    for (const auto& task :
         std::filesystem::directory_iterator(fmt::format("/proc/{}/task", at), ec)) {
      std::ifstream children(task.path() / "children");
      for (pid_t child = 0; children >> child;) todo.push_back(child);
    }
  }
  if (!any) return std::nullopt;
  return total;
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
  if (o.on_start) o.on_start(pid);
  // Written beside the output reader, so a program that prints before it reads cannot deadlock a
  // large input.
  std::atomic<bool> run_over{false};
  std::thread stdin_writer = write_stdin(in_pipe[1], o.stdin_data, run_over);

  RunResult result;
  result.protections.scrubbed_environment = true;
  OutputSink sink(o, result, start);
  std::string status_bytes;
  char buffer[65536];
  bool out_open = true, status_open = true, exited = false;
  int status = 0;
  std::optional<std::chrono::steady_clock::time_point> drain_until;
  while (out_open || status_open || !exited) {
    const auto now = std::chrono::steady_clock::now();
    const auto deadline = sink.deadline();
    if (!exited && now >= deadline) {
      result.timed_out = true;
      break;
    }
    if (!exited && o.stop && o.stop->load()) {
      result.stopped = true;
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
        sink.take(std::string_view(buffer, static_cast<std::size_t>(n)));
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
  // Nothing of the run may outlive it: kill the process group — with a PID namespace the
  // supervisor is in it, and its death kills the whole namespace (the kernel already did when the
  // program ended) — and the run's pids cgroup, which holds whatever left both. A run without
  // isolate_pids may leave a daemon on purpose (`hf jobs run`, `sbatch`): only its group dies.
  kill(-pid, SIGKILL);
  if (cgroup && o.isolate_pids) cgroup->kill_all();
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
  return finish(std::move(result), status_bytes, status, prepared.root, o.argv[0]);
}

Result<RunResult> run_shell(const std::string& command, const std::filesystem::path& workdir,
                            const Limits& limits) {
  Options o;
  o.workdir = workdir;
  o.argv = {"/bin/sh", "-c", command};
  o.limits = limits;
  // Its PATH holds system folders only, so the system and the workspace are all it needs to read:
  // not the user's home (keys, tokens), not the spec, not other runs' folders.
  o.confine_reads = true;
  return run(o);
}

}  // namespace upskill::sandbox
