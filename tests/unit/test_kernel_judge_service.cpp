// upskill's side of the kernel judge (src/kernel/judge_service.hpp), driven here as the judge
// drives it, against a stand-in worker: a Python process whose command line is the harness's
// (`…/harness.py worker`) holding a known buffer. The judge's own side is tested in
// tests/python/test_harness_judge.py; the whole of it in KernelJudge.*.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../../src/kernel/judge_service.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/temp_dir.hpp"

namespace upskill::kernel {
namespace {

namespace fs = std::filesystem;

// The stand-in worker: fills 1 MiB with a pattern, prints its address, waits for a line on stdin.
constexpr const char* kWorker = R"(import ctypes, sys
buf = ctypes.create_string_buffer(bytes((i * 7 + 3) % 251 for i in range(1 << 20)), 1 << 20)
print(ctypes.addressof(buf), flush=True)
sys.stdin.readline()
)";

std::uint8_t pattern(std::size_t i) {
  return static_cast<std::uint8_t>((i * 7 + 3) % 251);
}

struct StandIn {
  pid_t pid = -1;
  int to = -1;  // its stdin: a line ends it
  std::uint64_t address = 0;
  ~StandIn() { stop(); }
  void stop() {
    if (to >= 0) {
      (void)!::write(to, "\n", 1);
      ::close(to);
      to = -1;
    }
    if (pid > 0) ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
};

StandIn start_worker(const fs::path& script) {
  int in[2], out[2];
  StandIn w;
  if (::pipe(in) != 0 || ::pipe(out) != 0) return w;
  w.pid = ::fork();
  if (w.pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::close(in[1]);
    ::close(out[0]);
    ::execl("/usr/bin/python3", "python3", script.c_str(), "worker", "--link", "3",
            static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  w.to = in[1];
  std::string line;
  char c;
  while (::read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  ::close(out[0]);
  w.address = line.empty() ? 0 : std::stoull(line);
  return w;
}

// The judge's end of the socket, with upskill's side served on a thread.
struct Judge {
  int fd = -1, service = -1;
  std::atomic<pid_t> judge_pid{0};
  std::thread thread;
  Judge(pid_t candidate) {
    int pair[2];
    ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair);
    fd = pair[0];
    service = pair[1];
    thread = std::thread(detail::serve_judge, service, candidate, std::cref(judge_pid));
  }
  ~Judge() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
    if (thread.joinable()) thread.join();
    if (service >= 0) ::close(service);
    service = -1;
  }
  std::uint64_t answer() {
    unsigned char b[8];
    std::size_t got = 0;
    while (got < 8) {
      const ssize_t n = ::read(fd, b + got, 8 - got);
      if (n <= 0) return ~std::uint64_t{0};
      got += static_cast<std::size_t>(n);
    }
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
    return v;
  }
  void send(const std::string& bytes) {
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  std::uint64_t find(char who) {
    send(std::string("W") + who);
    return answer();
  }
  std::uint64_t map(int memfd, std::uint64_t size) {
    char m = 'M';
    iovec iov{&m, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &memfd, sizeof(int));
    EXPECT_EQ(::sendmsg(fd, &msg, 0), 1);
    send(le(size));
    return answer();
  }
  struct Range {
    std::uint64_t address, length, offset;
  };
  std::uint64_t read(char who, const std::vector<Range>& ranges) {
    std::string req = std::string("R") + who + le(ranges.size()).substr(0, 4);
    for (const Range& r : ranges) req += le(r.address) + le(r.length) + le(r.offset);
    send(req);
    return answer();
  }
  static std::string le(std::uint64_t v) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
    return s;
  }
};

struct Snapshot {
  int fd = -1;
  std::size_t size = 0;
  unsigned char* data = nullptr;
  explicit Snapshot(std::size_t n, bool seal = true) : size(n) {
    fd = ::memfd_create("test-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    (void)!::ftruncate(fd, static_cast<off_t>(n));
    if (seal) ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
    data =
        static_cast<unsigned char*>(::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  }
  ~Snapshot() {
    ::munmap(data, size);
    ::close(fd);
  }
};

class JudgeService : public ::testing::Test {
 protected:
  TempDir dir = *TempDir::create("judge-service");
  fs::path script;
  void SetUp() override {
    script = dir.path() / "harness.py";
    ASSERT_TRUE(files::write_atomic(script, kWorker));
  }
};

TEST_F(JudgeService, ReadsTheWorkersMemoryIntoTheSnapshotInAnyOrder) {
  StandIn w = start_worker(script);
  ASSERT_NE(w.address, 0u);
  Judge j(w.pid);
  ASSERT_EQ(j.find('c'), 0u);
  Snapshot snap(3 << 20);
  ASSERT_EQ(j.map(snap.fd, snap.size), 0u);
  // Three ranges, out of order, one of them empty; the last spans past 1 MiB of the snapshot.
  ASSERT_EQ(
      j.read('c',
             {{w.address + 4096, 1000, 2 << 20}, {w.address, 0, 0}, {w.address, 1 << 20, 100}}),
      0u);
  for (std::size_t i = 0; i < 1000; ++i) ASSERT_EQ(snap.data[(2 << 20) + i], pattern(4096 + i));
  for (std::size_t i = 0; i < (1u << 20); i += 4099) ASSERT_EQ(snap.data[100 + i], pattern(i));
  EXPECT_EQ(snap.data[0], 0);  // nothing outside the ranges is written
}

TEST_F(JudgeService, RefusesWhatIsOutsideTheSnapshotOrTheWorker) {
  StandIn w = start_worker(script);
  Judge j(w.pid);
  ASSERT_EQ(j.find('c'), 0u);
  Snapshot snap(1 << 20);
  ASSERT_EQ(j.read('c', {{w.address, 16, 0}}), 4u);  // no snapshot mapped yet
  ASSERT_EQ(j.map(snap.fd, snap.size), 0u);
  EXPECT_EQ(j.read('c', {{w.address, 16, (1 << 20) - 8}}), 4u);  // past the snapshot's end
  EXPECT_EQ(j.read('c', {{w.address, ~0ull, 16}}), 4u);          // a length that wraps
  EXPECT_EQ(j.read('c', {{8, 16, 0}}), 2u);                      // not mapped in the worker
  EXPECT_EQ(j.read('r', {{w.address, 16, 0}}), 3u);              // no reference worker found
  EXPECT_EQ(j.read('c', {{w.address, 16, 0}}), 0u);              // and it still serves
  // A memfd that could shrink under upskill's mapping, or is smaller than said, is refused.
  Snapshot loose(1 << 20, false);
  EXPECT_EQ(j.map(loose.fd, loose.size), 4u);
  EXPECT_EQ(j.map(snap.fd, snap.size * 2), 4u);
}

TEST_F(JudgeService, AWorkerThatIsGoneIsNotReadThroughItsPid) {
  StandIn w = start_worker(script);
  Judge j(w.pid);
  ASSERT_EQ(j.find('c'), 0u);
  Snapshot snap(1 << 20);
  ASSERT_EQ(j.map(snap.fd, snap.size), 0u);
  const std::uint64_t address = w.address;
  const pid_t pid = w.pid;
  w.stop();  // reaped: its pid may now be anyone's
  EXPECT_EQ(j.read('c', {{address, 16, 0}}), 3u);
  // Its pid given to another process of the same kind, with the same buffer at the same address
  // (as root: the next pid set through ns_last_pid; other processes may take it first, so tried
  // a few times). What lives at the pid now is not the worker that was found.
  if (::geteuid() != 0) GTEST_SKIP() << "setting the next pid needs root";
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (FILE* f = std::fopen("/proc/sys/kernel/ns_last_pid", "w")) {
      std::fprintf(f, "%d", pid - 1);
      std::fclose(f);
    }
    StandIn again = start_worker(script);
    if (again.pid != pid) continue;
    EXPECT_EQ(j.read('c', {{again.address, 16, 0}}), 3u);
    return;
  }
  GTEST_SKIP() << "the pid was taken by another process every time";
}

TEST_F(JudgeService, OnlyTheHarnessWorkerIsFound) {
  // A process of the run whose command line is not `…/harness.py worker` is not taken for it.
  ASSERT_TRUE(files::write_atomic(dir.path() / "other.py", kWorker));
  int in[2], out[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(out), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::execl("/usr/bin/python3", "python3", (dir.path() / "other.py").c_str(), "worker",
            static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  char c;
  while (::read(out[0], &c, 1) == 1 && c != '\n') {
  }
  {
    Judge j(pid);
    EXPECT_EQ(j.find('c'), 3u);
  }
  (void)!::write(in[1], "\n", 1);
  ::close(in[1]);
  ::close(out[0]);
  ::waitpid(pid, nullptr, 0);
}

TEST_F(JudgeService, AJudgeThatHasGoneEndsTheServiceNotUpskill) {
  // The judge asks and leaves before the answer: the answer meets a closed socket. Without
  // MSG_NOSIGNAL, SIGPIPE would end this process.
  struct sigaction old {};
  struct sigaction deflt {};
  deflt.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &deflt, &old);
  for (int i = 0; i < 20; ++i) {
    Judge j(::getpid());
    j.send("C");
    ::shutdown(j.fd, SHUT_RDWR);
    j.close();
  }
  ::sigaction(SIGPIPE, &old, nullptr);
  SUCCEED();
}

TEST_F(JudgeService, AnythingElseEndsTheService) {
  Judge j(::getpid());
  j.send("X");
  j.thread.join();  // the service ended
  ::close(j.service);
  j.service = -1;
  EXPECT_EQ(j.answer(), ~std::uint64_t{0});  // unanswered
}

}  // namespace
}  // namespace upskill::kernel
