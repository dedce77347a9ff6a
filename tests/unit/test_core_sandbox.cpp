// core/sandbox: what an untrusted command can and cannot do — files, network, processes, limits.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <thread>

#include "support/temp_dir.hpp"
#include "upskill/core/sandbox.hpp"

namespace upskill::sandbox {
namespace {

using namespace std::chrono_literals;

Limits quick(std::chrono::milliseconds wall = 10s) {
  Limits l;
  l.wall = wall;
  return l;
}

// Whether a process whose command line contains `marker` ("sleep 37.25") is alive. The pattern puts
// the first character in brackets so that it does not match the shell running pgrep itself.
bool process_running(const std::string& marker) {
  const std::string pattern = "[" + marker.substr(0, 1) + "]" + marker.substr(1);
  const std::string cmd = "pgrep -f '" + pattern + "' > /dev/null";
  return std::system(cmd.c_str()) == 0;
}

// Options for a run in `dir` with `limits` and at most `processes` processes.
Options bounded(const testing::TempDir& dir, Limits limits, int processes) {
  Options o;
  o.workdir = dir.path();
  o.limits = limits;
  o.limits.processes = processes;
  return o;
}

TEST(Sandbox, RunsInItsWorkdirWithAScrubbedEnvironment) {
  testing::TempDir dir;
  setenv("UPSKILL_TEST_SECRET_KEY", "sk-must-not-leak", 1);
  auto r = run_shell("pwd; echo HOME=$HOME; env; echo err >&2; exit 3", dir.path(), quick());
  unsetenv("UPSKILL_TEST_SECRET_KEY");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->timed_out);
  EXPECT_NE(r->output.find(std::filesystem::canonical(dir.path()).string() + "\n"),
            std::string::npos)
      << r->output;
  EXPECT_NE(r->output.find("HOME=" + dir.path().string()), std::string::npos);
  EXPECT_EQ(r->output.find("sk-must-not-leak"), std::string::npos);
  EXPECT_NE(r->output.find("err"), std::string::npos);  // stderr is captured too
  EXPECT_TRUE(r->protections.scrubbed_environment);
  EXPECT_TRUE(r->protections.rlimits);
  EXPECT_TRUE(r->protections.own_process_group);
}

TEST(Sandbox, StdinAndExtraEnvironment) {
  testing::TempDir dir;
  Options o;
  o.workdir = dir.path();
  o.argv = {"sh", "-c", "read line; echo \"$line/$EXTRA\""};
  o.env = {{"EXTRA", "yes"}};
  o.stdin_data = "hello\n";
  auto r = run(o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->output, "hello/yes\n");
}

TEST(Sandbox, LargeStdinWhileTheProgramPrintsFirst) {
  // 4 MB in, the program prints 1 MB before it reads a byte: neither side may wait on the other.
  testing::TempDir dir;
  Options o;
  o.workdir = dir.path();
  o.argv = {"sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' x >/dev/stderr; wc -c"};
  o.limits = quick();
  o.limits.output_bytes = 2 << 20;
  o.stdin_data.assign(4 << 20, 'p');
  auto r = run(o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->output.substr(r->output.size() - 8), "4194304\n");
  // A program that never reads: the write ends, nothing hangs or dies of SIGPIPE.
  o.argv = {"true"};
  auto closed = run(o);
  ASSERT_TRUE(closed) << closed.error().message;
  EXPECT_EQ(closed->exit_code, 0);
}

TEST(Sandbox, ConcurrentRunsDoNotHoldEachOthersStdinOpen) {
  // Run A's program reads its stdin to the end. While upskill is still writing it, run B starts:
  // the process B forks (its PID namespace's outside relay lives as long as B) must not keep A's
  // stdin open, or A's program never sees the end of its input and waits as long as B runs.
  testing::TempDir dir;
  Options a;
  a.workdir = dir.path();
  a.argv = {"sh", "-c", "sleep 0.5; wc -c"};
  a.stdin_data.assign(1 << 20, 'p');  // more than a pipe holds: the writer waits for the reader
  a.limits = quick(20s);
  Options b;
  b.workdir = dir.path();
  b.argv = {"sleep", "3"};
  b.limits = quick(20s);
  std::optional<Result<RunResult>> ra;
  std::thread first([&] { ra.emplace(run(a)); });
  std::this_thread::sleep_for(150ms);
  std::thread second([&] { (void)run(b); });
  first.join();
  second.join();
  ASSERT_TRUE(*ra) << (*ra).error().message;
  EXPECT_EQ((*ra)->output, "1048576\n");
  EXPECT_LT((*ra)->elapsed, 2000ms) << "run A waited for run B to end";
}

TEST(Sandbox, DescriptorsTheCallerLeftOpenAreNotInherited) {
  // A file upskill (or whoever started it) left open without close-on-exec, on a descriptor number
  // a candidate would try: the run sees only its stdin and output.
  testing::TempDir dir;
  const auto secret = dir.write("spec/reference.txt", "the reference answer\n");
  const int fd = ::open(secret.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const int seven = ::dup2(fd, 7);
  ASSERT_EQ(seven, 7);
  Options o;
  o.workdir = dir.path();
  o.argv = {"sh", "-c", "cat <&7; ls /proc/self/fd | tr '\\n' ' '"};
  o.limits = quick();
  auto r = run(o);
  ::close(7);
  ::close(fd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->output.find("the reference answer"), std::string::npos) << r->output;
  // 0-2 and the descriptor ls opens to list the folder; nothing else.
  EXPECT_NE(r->output.find("0 1 2 3 "), std::string::npos) << r->output;
  EXPECT_EQ(r->output.find(" 4 "), std::string::npos) << r->output;
  EXPECT_EQ(r->output.find(" 7 "), std::string::npos) << r->output;
}

// Descriptors the caller passes become 3, 4, ... in order and are the only ones besides 0-2; the
// caller's copies can be closed as the run starts, so the program's end is held by it alone.
TEST(Sandbox, PassedDescriptorsArriveInOrderAndAloneBesideTheStandardOnes) {
  testing::TempDir dir;
  int first[2], second[2];
  ASSERT_EQ(::pipe2(first, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(second, O_CLOEXEC), 0);
  const int stray = ::dup(first[0]);  // left open without close-on-exec: must not be inherited
  Options o;
  o.workdir = dir.path();
  o.argv = {"sh", "-c", "echo one >&3; echo two >&4; ls /proc/self/fd | tr '\\n' ' '"};
  o.limits = quick();
  o.pass_fds = {first[1], second[1]};
  pid_t started = 0;
  o.on_start = [&](pid_t pid) {
    started = pid;
    ::close(first[1]);
    ::close(second[1]);
  };
  auto r = run(o);
  ::close(stray);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_GT(started, 0);
  char buffer[16] = {};
  EXPECT_EQ(::read(first[0], buffer, sizeof buffer), 4);
  EXPECT_EQ(std::string(buffer, 4), "one\n");
  EXPECT_EQ(::read(second[0], buffer, sizeof buffer), 4);
  EXPECT_EQ(std::string(buffer, 4), "two\n");
  // Its ends were held by the program alone: both pipes are at their end now.
  EXPECT_EQ(::read(first[0], buffer, sizeof buffer), 0);
  EXPECT_EQ(::read(second[0], buffer, sizeof buffer), 0);
  ::close(first[0]);
  ::close(second[0]);
  EXPECT_NE(r->output.find("0 1 2 3 4 5 "), std::string::npos) << r->output;  // 5: ls's own
  EXPECT_EQ(r->output.find(" 6 "), std::string::npos) << r->output;
}

TEST(Sandbox, AStopAskedForEndsTheRunAndEverythingInIt) {
  testing::TempDir dir;
  std::atomic<bool> stop{false};
  Options o = bounded(dir, quick(30s), 64);
  o.argv = {"sh", "-c", "sleep 42.25 & sleep 42.25"};  // a mark no other test's process has
  o.stop = &stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(300ms);
    stop = true;
  });
  const auto start = std::chrono::steady_clock::now();
  auto r = run(o);
  stopper.join();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->stopped);
  EXPECT_FALSE(r->timed_out);
  EXPECT_FALSE(r->ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  bool left = true;
  for (int i = 0; i < 50 && left; ++i) {
    std::this_thread::sleep_for(100ms);
    left = process_running("sleep 42.25");
  }
  EXPECT_FALSE(left);
}

// The CPU time of a run's processes by the kernel's accounting, read from outside: a child that
// was busy and has been reaped counts as well as the program itself.
TEST(Sandbox, CpuTimeOfARunCountsItsProcessesAndTheirReapedChildren) {
  testing::TempDir dir;
  Options o = bounded(dir, quick(30s), 64);
  o.confine_reads = false;
  o.argv = {"/usr/bin/python3", "-c",
            "import subprocess, sys, time\n"
            "busy = 'import time\\nt = time.process_time()\\n"
            "while time.process_time() - t < 0.6: pass'\n"
            "subprocess.run([sys.executable, '-c', busy])\n"
            "t = time.process_time()\n"
            "while time.process_time() - t < 0.4: pass\n"
            "print('busy done', flush=True)\n"
            "time.sleep(20)\n"};
  std::atomic<pid_t> pid{0};
  o.on_start = [&](pid_t p) { pid = p; };
  std::atomic<bool> stop{false};
  o.stop = &stop;
  std::optional<std::uint64_t> idle, busy;
  std::thread reader([&] {
    while (pid == 0) std::this_thread::sleep_for(10ms);
    idle = cpu_time_ns(pid);
    std::this_thread::sleep_for(3500ms);  // both busy parts are over, the program sleeps
    busy = cpu_time_ns(pid);
    stop = true;
  });
  auto r = run(o);
  reader.join();
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_NE(r->output.find("busy done"), std::string::npos) << r->output;
  ASSERT_TRUE(idle.has_value());
  ASSERT_TRUE(busy.has_value());
  EXPECT_LT(*idle, 500'000'000ULL);
  EXPECT_GE(*busy, 900'000'000ULL) << *busy;  // 0.6 s in the reaped child, 0.4 s in itself
  EXPECT_LT(*busy, 3'000'000'000ULL) << *busy;
  EXPECT_FALSE(cpu_time_ns(pid).has_value());  // the run has ended
}

TEST(Sandbox, AsUserRunsRootAsAnOrdinaryUser) {
  testing::TempDir dir;
  Options o;
  o.workdir = dir.path();
  o.argv = {"sh", "-c", "id -u; id -g; touch made-here && echo wrote"};
  o.limits = quick();
  o.as_user = true;
  auto r = run(o);
  ASSERT_TRUE(r) << r.error().message;
  const std::string want_id =
      ::geteuid() == 0 ? std::to_string(kAsUserId) : std::to_string(::geteuid());
  EXPECT_EQ(r->output.substr(0, r->output.find('\n')), want_id) << r->output;
  EXPECT_NE(r->output.find("wrote"), std::string::npos)
      << r->output;  // its workspace stays its own
  EXPECT_TRUE(r->protections.unprivileged) << r->protections.summary();
  EXPECT_TRUE(r->protections.missing(o).empty()) << r->protections.summary();
  EXPECT_TRUE(std::filesystem::exists(dir / "made-here"));
  // Without as_user, root stays root (and says so).
  if (::geteuid() == 0) {
    o.as_user = false;
    auto root = run(o);
    ASSERT_TRUE(root);
    EXPECT_EQ(root->output.substr(0, 2), "0\n");
    EXPECT_FALSE(root->protections.unprivileged);
  }
}

TEST(Sandbox, TimeoutKillsTheWholeGroup) {
  testing::TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  auto r = run_shell("sleep 37.25 & sleep 36.5; echo never", dir.path(), quick(300ms));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(r->output.find("never"), std::string::npos);
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(process_running("sleep 37.25"));
  EXPECT_FALSE(process_running("sleep 36.5"));
}

TEST(Sandbox, NoDescendantOutlivesTheRun) {
  testing::TempDir dir;
  // A background child that also leaves the process group.
  auto r = run_shell("setsid sleep 38.75 > /dev/null 2>&1 & echo started", dir.path(), quick(5s));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0);
  std::this_thread::sleep_for(200ms);
  if (r->protections.pid_namespace) {
    EXPECT_FALSE(process_running("sleep 38.75"));
  } else {
    GTEST_SKIP() << "no PID namespace here: " << r->protections.summary();
  }
}

// Inside a PID namespace Linux drops default-action signals sent to its PID 1 from within: were the
// command PID 1, its own alarm or `kill $$` would do nothing (an import check's alarm never fired).
TEST(Sandbox, SignalsReachTheProgramAsAnywhere) {
  testing::TempDir dir;
  for (const std::string sig : {"TERM", "ALRM"}) {
    const auto start = std::chrono::steady_clock::now();
    auto r = run_shell("kill -" + sig + " $$; sleep 3; echo survived", dir.path(), quick());
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->output.find("survived"), std::string::npos) << sig << ": " << r->output;
    EXPECT_EQ(r->signal, sig == "TERM" ? SIGTERM : SIGALRM) << r->protections.summary();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  }
}

// A fork bomb, a child that ignores SIGTERM, a stopped child and one that left the process group
// and session: the run still ends at its wall time, and none of them is left.
TEST(Sandbox, AHostileTreeEndsAtItsWallTimeAndNothingIsLeft) {
  testing::TempDir dir;
  Options o = bounded(dir, quick(2s), 64);
  o.argv = {"bash", "-c",
            "trap '' TERM HUP INT; : hostile-tree-41\n"
            "sleep 39.5 & kill -STOP $!\n"
            "setsid sleep 39.25 > /dev/null 2>&1 &\n"
            "bomb() { bomb | bomb & }; bomb\n"
            "exec sleep 39.75"};
  const auto start = std::chrono::steady_clock::now();
  auto r = run(o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
  bool left = true;
  for (int i = 0; i < 50 && left; ++i) {
    std::this_thread::sleep_for(100ms);
    left = process_running("hostile-tree-41") || process_running("sleep 39.5") ||
           process_running("sleep 39.25") || process_running("sleep 39.75");
  }
  if (!r->protections.pid_namespace && !r->protections.pids_cgroup)
    GTEST_SKIP() << "neither a PID namespace nor a pids cgroup here: " << r->protections.summary();
  EXPECT_FALSE(left) << "a process of the run outlived it";
}

// The import check waits (loading Python and torch while sources compile) before its bounded part:
// from the line that says the part begins, the run has only that part's time left.
TEST(Sandbox, TheMarkerLineStartsTheBoundedPart) {
  testing::TempDir dir;
  Options o;
  o.workdir = dir.path();
  o.limits = quick(30s);
  o.marker = "UPSKILL-GO\n";
  o.marker_wall = 500ms;
  o.argv = {"sh", "-c", "sleep 0.3; echo UPSKILL-GO; sleep 20"};
  const auto start = std::chrono::steady_clock::now();
  auto r = run(o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  // Not printed: the wall time alone, however long the program waits.
  o.argv = {"sh", "-c", "sleep 1; echo done"};
  r = run(o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->ok()) << r->output;
}

// A tool run without a PID namespace may leave a daemon on purpose (`hf jobs run` supervises its
// job in the background, `sbatch` hands over to Slurm): ending the run, even as root in a pids
// cgroup of its own, does not kill it.
TEST(Sandbox, ARunWithoutAPidNamespaceMayLeaveADaemon) {
  testing::TempDir dir;
  Options o;
  o.workdir = dir.path();
  o.limits = quick();
  o.isolate_pids = false;
  o.argv = {"sh", "-c",
            "setsid sleep 41.75 > /dev/null 2>&1 < /dev/null & sleep 0.2; echo started"};
  auto r = run(o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->ok()) << r->output;
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(process_running("sleep 41.75")) << r->protections.summary();
  (void)std::system("pkill -f 'sleep 41[.]75'");
}

// upskill killed outright (SIGKILL: no destructor runs) takes the run with it.
TEST(Sandbox, NothingOutlivesAKilledUpskill) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    testing::TempDir dir;
    (void)run_shell("sleep 40.25; echo never", dir.path(), quick(60s));
    _exit(0);
  }
  bool started = false;
  for (int i = 0; i < 100 && !started; ++i) {
    std::this_thread::sleep_for(50ms);
    started = process_running("sleep 40.25");
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(started);
  bool left = true;
  for (int i = 0; i < 60 && left; ++i) {
    std::this_thread::sleep_for(50ms);
    left = process_running("sleep 40.25");
  }
  EXPECT_FALSE(left) << "the run outlived the process that started it";
}

// Of /dev, a run reaches only the devices a program needs: not another program's shared memory,
// not a raw block device (root owns /dev/loop*: without Landlock, file permissions alone would let
// a root run open it even without capabilities).
TEST(Sandbox, DeviceFilesOtherThanTheFewNeededAreOutOfReach) {
  testing::TempDir dir;
  const std::string shm = fmt::format("/dev/shm/upskill-sandbox-test-{}", ::getpid());
  if (!(std::ofstream(shm) << "shared secret\n")) GTEST_SKIP() << "no /dev/shm here";
  Options o;
  o.workdir = dir.path();
  o.limits = quick();
  const std::string probe =
      "cat " + shm + "; (echo overwritten > " + shm + ")" +
      "; for d in /dev/loop0 /dev/zram0 /dev/sda /dev/vda; do test -e $d && (: >> $d) && "
      "echo OPENED-$d; done; echo discarded > /dev/null && head -c 4 /dev/urandom | wc -c";
  o.argv = {"sh", "-c", probe};
  for (const bool reads : {false, true}) {
    o.confine_reads = reads;
    auto r = run(o);
    ASSERT_TRUE(r) << r.error().message;
    if (!r->protections.writes_confined) {
      ::unlink(shm.c_str());
      GTEST_SKIP() << "no Landlock: " << r->protections.summary();
    }
    EXPECT_EQ(r->output.find("OPENED-"), std::string::npos) << r->output;
    EXPECT_NE(r->output.find("4\n"), std::string::npos) << "reads=" << reads << ": " << r->output;
    if (reads) EXPECT_EQ(r->output.find("shared secret"), std::string::npos) << r->output;
    std::ifstream after(shm);
    std::string text((std::istreambuf_iterator<char>(after)), {});
    EXPECT_EQ(text, "shared secret\n") << "reads=" << reads;
  }
  ::unlink(shm.c_str());
}

TEST(Sandbox, NoNetwork) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  testing::TempDir dir;
  Options o;
  o.workdir = dir.path();
  o.argv = {"bash", "-c",
            "echo hi > /dev/tcp/127.0.0.1/" + std::to_string(port) + " && echo connected"};
  o.limits = quick();
  auto isolated = run(o);
  ASSERT_TRUE(isolated);
  o.isolate_network = false;
  auto open = run(o);
  ASSERT_TRUE(open);
  close(listener);
  EXPECT_NE(open->output.find("connected"), std::string::npos)
      << open->output;  // the test itself can fail
  if (!isolated->protections.network_namespace) GTEST_SKIP() << isolated->protections.summary();
  EXPECT_EQ(isolated->output.find("connected"), std::string::npos) << isolated->output;
  EXPECT_NE(isolated->exit_code, 0);
}

// A loopback listener a sandboxed command will try to reach; counts the connections it got.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(fd_, 8);
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() { close(fd_); }
  int port() const { return port_; }
  int accepted() {
    int n = 0;
    for (int c; (c = accept(fd_, nullptr, nullptr)) >= 0; ++n) close(c);
    return n;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(Sandbox, ReadsAreConfinedToTheSystemAndItsOwnFolders) {
  testing::TempDir dir, outside;
  std::ofstream(outside.path() / "answer-key.py") << "def reference(): return 42\n";
  std::ofstream(dir.path() / "mine.txt") << "mine\n";
  Options o;
  o.workdir = dir.path();
  o.confine_reads = true;
  o.argv = {"/bin/sh", "-c",
            "cat mine.txt; cat " + (outside.path() / "answer-key.py").string() +
                " && echo READ-''OUTSIDE; ls /proc | grep -c '^[0-9]' ; cat /proc/2/cmdline; echo; "
                "test -r /usr/bin/env && echo SYSTEM-OK"};
  o.limits = quick();
  auto r = run(o);
  ASSERT_TRUE(r) << r.error().message;
  // The same command unconfined reads the file: the test can fail.
  o.confine_reads = false;
  auto open = run(o);
  ASSERT_TRUE(open);
  EXPECT_NE(open->output.find("READ-OUTSIDE"), std::string::npos) << open->output;
  if (!r->protections.reads_confined) GTEST_SKIP() << "no Landlock: " << r->protections.summary();
  EXPECT_TRUE(r->protections.writes_confined);
  EXPECT_NE(r->output.find("mine"), std::string::npos) << r->output;
  EXPECT_EQ(r->output.find("READ-OUTSIDE"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("Permission denied"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("SYSTEM-OK"), std::string::npos) << r->output;
  if (r->protections.own_proc) {
    // Its own /proc: PID 2 is the command itself (PID 1 is the sandbox's supervisor).
    EXPECT_NE(r->output.find("/bin/sh"), std::string::npos) << r->output;
  }
}

// CUDA names the threads it starts (cuInit writes /proc/<pid>/task/<tid>/comm) and fails with error
// 304 when it cannot: a run with confined writes may rename its own threads, and only its own.
TEST(Sandbox, ARunNamesItsOwnThreadsButNoOtherProcess) {
  testing::TempDir dir;
  Options o;
  o.workdir = dir.path();
  o.confine_reads = true;
  o.argv = {"/usr/bin/python3", "-c", R"(
import subprocess, threading
def name(path, label):
    try:
        with open(path, "w") as f:
            f.write("renamed")
        print(label, "WROTE")
    except OSError as e:
        print(label, "REFUSED", e.errno)
worker = threading.Thread(target=lambda: name(
    f"/proc/self/task/{threading.get_native_id()}/comm", "thread"))
worker.start()
worker.join()
name("/proc/self/comm", "process")
other = subprocess.Popen(["sleep", "5"])
name(f"/proc/{other.pid}/comm", "other")
other.kill()
)"};
  o.limits = quick();
  auto r = run(o);
  ASSERT_TRUE(r) << r.error().message;
  if (!r->protections.writes_confined) GTEST_SKIP() << "no Landlock: " << r->protections.summary();
  EXPECT_NE(r->output.find("thread WROTE"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("process WROTE"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("other REFUSED 13"), std::string::npos) << r->output;
}

TEST(Sandbox, CapabilitiesAreDropped) {
  testing::TempDir dir;
  auto r = run_shell("grep -E '^Cap(Prm|Eff|Bnd)' /proc/self/status", dir.path(), quick());
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->protections.no_capabilities) << r->protections.summary();
  for (const char* set :
       {"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000"})
    EXPECT_NE(r->output.find(set), std::string::npos) << set << "\n" << r->output;
}

TEST(Sandbox, ProcessCountBindsEvenForRoot) {
  testing::TempDir dir;
  Options o = bounded(dir, quick(20s), 20);
  // A fork bomb that counts how many processes it got before fork failed.
  o.argv = {"/usr/bin/python3", "-c",
            "import os, time\n"
            "n = 0\n"
            "for _ in range(200):\n"
            "    try:\n"
            "        pid = os.fork()\n"
            "    except OSError:\n"
            "        break\n"
            "    if pid == 0:\n"
            "        time.sleep(3)\n"
            "        os._exit(0)\n"
            "    n += 1\n"
            "print('forked', n)\n"};
  auto r = run(o);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->protections.nproc_limit) << r->protections.summary();
  const auto at = r->output.find("forked ");
  ASSERT_NE(at, std::string::npos) << r->output;
  EXPECT_LT(std::stoi(r->output.substr(at + 7)), 20) << r->output;
  if (geteuid() == 0) EXPECT_TRUE(r->protections.pids_cgroup) << r->protections.summary();
}

// The same isolation for an ordinary user: the run is made by a child that became `nobody`.
TEST(Sandbox, UnprivilegedRunsGetTheSameIsolation) {
  if (geteuid() != 0) GTEST_SKIP() << "the test needs root to become another user";
  testing::TempDir dir;
  ::chmod(dir.path().c_str(), 0777);
  Listener listener;
  const std::string flag = (dir.path() / "daemon-alive").string();
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(90);
    Options o;
    o.workdir = dir.path();
    o.confine_reads = true;
    o.limits = quick();
    // A connection to the listener, and a daemon that would mark the flag after the run.
    o.argv = {"bash", "-c",
              "(setsid bash -c 'sleep 1.5; touch " + flag +
                  "' > /dev/null 2>&1 &); echo hi > /dev/tcp/127.0.0.1/" +
                  std::to_string(listener.port()) + " && echo connected; echo done"};
    auto r = run(o);
    std::string report = r ? r->protections.summary() + "\n" + r->output : r.error().message;
    (void)!write(pipe_fds[1], report.data(), report.size());
    _exit(!r                                  ? 91
          : !r->protections.user_namespace    ? 92
          : !r->protections.network_namespace ? 93
          : !r->protections.pid_namespace     ? 94
          : !r->protections.nproc_limit       ? 95
          : !r->protections.reads_confined    ? 96
                                              : 0);
  }
  close(pipe_fds[1]);
  std::string report;
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) report.append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << report;
  EXPECT_NE(report.find("done"), std::string::npos) << report;
  EXPECT_EQ(report.find("connected"), std::string::npos) << report;
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(listener.accepted(), 0);
  EXPECT_FALSE(std::filesystem::exists(flag)) << "a daemon outlived the run";
}

TEST(Sandbox, FileSizeAndOutputLimits) {
  testing::TempDir dir;
  Limits l = quick();
  l.file_size_mb = 1;
  auto big = run_shell("head -c 3000000 /dev/zero > big.bin", dir.path(), l);
  ASSERT_TRUE(big);
  EXPECT_FALSE(big->ok());
  EXPECT_LE(std::filesystem::file_size(dir / "big.bin"), 1u << 20);
  Limits o = quick();
  o.output_bytes = 1000;
  auto chatty = run_shell("head -c 300000 /dev/zero | tr '\\0' a", dir.path(), o);
  ASSERT_TRUE(chatty);
  EXPECT_EQ(chatty->output.size(), 1000u);
  EXPECT_EQ(chatty->output_total, 300000u);
}

TEST(Sandbox, StartFailuresAreErrors) {
  testing::TempDir dir;
  Options o;
  o.workdir = dir.path();
  o.argv = {"definitely-not-a-command-xyz"};
  auto r = run(o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ExitCode::infrastructure);
  EXPECT_NE(r.error().message.find("cannot start definitely-not-a-command-xyz"), std::string::npos);
  o.workdir = dir / "missing";
  EXPECT_FALSE(run(o));
  o.argv.clear();
  EXPECT_FALSE(run(o));
}

TEST(Sandbox, ProtectionsSummaryNamesEachOne) {
  Protections p;
  p.network_namespace = true;
  const std::string s = p.summary();
  EXPECT_NE(s.find("no network: yes"), std::string::npos);
  EXPECT_NE(s.find("own PID namespace: no"), std::string::npos);
}

}  // namespace
}  // namespace upskill::sandbox
