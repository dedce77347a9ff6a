// What upskill does for the kernel judge from outside the workers' namespaces: the candidate's CPU
// time and reads of a worker's memory (see judge_service.hpp).
#include "judge_service.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "upskill/core/sandbox.hpp"

namespace upskill::kernel::detail {

namespace {

enum Answer : std::uint64_t {
  kDone = 0,
  kUnreadable = 2,
  kNoWorker = 3,
  kBad = 4,
  kNotAllowed = 5
};

constexpr std::size_t kMaxRanges = 1 << 20;  // a segment has at most 1,000 calls' outputs

bool read_exactly(int fd, void* data, std::size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// MSG_NOSIGNAL: a judge that is gone ends the service, not upskill (SIGPIPE).
bool write_answer(int fd, std::uint64_t value) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));
  for (std::size_t at = 0; at < sizeof bytes;) {
    const ssize_t n = ::send(fd, bytes + at, sizeof bytes - at, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += static_cast<std::size_t>(n);
  }
  return true;
}

std::uint64_t little(const unsigned char* b, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}

// The command byte, with the descriptor an 'M' carries (-1 when none came).
bool read_command(int fd, char& command, int& passed) {
  passed = -1;
  iovec iov{&command, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n != 1) return false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int received = -1;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (passed < 0)
        passed = received;
      else
        ::close(received);  // one descriptor is all a request carries
    }
  }
  return true;
}

// The pids of a run's processes, shallowest first (its first process, then its children, …).
std::vector<pid_t> tree(pid_t root) {
  std::vector<pid_t> out{root};
  for (std::size_t i = 0; i < out.size() && out.size() < 100000; ++i) {
    std::error_code ec;
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(out[i]) + "/task", ec)) {
      std::ifstream children(task.path() / "children");
      for (pid_t child = 0; children >> child;) out.push_back(child);
    }
  }
  return out;
}

// When the process `pid` started (field 22 of /proc/<pid>/stat, after the command name, which is
// the text up to the last ')'), or 0. A pid is not reused while its process lives, so the same
// start time after a read means the read was of that process.
std::uint64_t start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), {});
  const std::size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) return 0;
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  return 0;
}

// The shallowest process of the run that is the harness's worker (`.../harness.py worker`, with
// `--reference` or without it, as `reference` says): a process it forks, deeper in the tree,
// cannot stand in for it, and the run's supervisor (a fork of upskill) does not match. Asked for
// ('W') before the worker has loaded any candidate code, when its command line is still the
// harness's own.
pid_t find_worker(pid_t root, bool reference) {
  if (root <= 0) return 0;
  for (const pid_t pid : tree(root)) {
    std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    const std::string args((std::istreambuf_iterator<char>(cmdline)), {});
    std::vector<std::string> argv;
    for (std::size_t at = 0; at < args.size();) {
      const std::size_t end = args.find('\0', at);
      argv.push_back(args.substr(at, end == std::string::npos ? std::string::npos : end - at));
      at = end == std::string::npos ? args.size() : end + 1;
    }
    bool harness = false;
    for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
      const std::string& a = argv[i];
      if (a.size() >= 10 && a.compare(a.size() - 10, 10, "harness.py") == 0 &&
          argv[i + 1] == "worker")
        harness = true;
    }
    const bool is_reference = std::find(argv.begin(), argv.end(), "--reference") != argv.end();
    if (harness && is_reference == reference) return pid;
  }
  return 0;
}

struct Snapshot {
  char* data = nullptr;
  std::size_t size = 0;
  ~Snapshot() { unmap(); }
  void unmap() {
    if (data) ::munmap(data, size);
    data = nullptr;
    size = 0;
  }
};

struct Range {
  std::uint64_t address, length, offset;
};

// A worker, pinned when it was found: its pid and its start time.
struct Worker {
  pid_t pid = 0;
  std::uint64_t started = 0;
  bool still_the_same() const { return pid > 0 && started != 0 && start_time(pid) == started; }
};

// 'R': the ranges of the worker's memory, read into the snapshot (offsets and lengths checked
// first). At most 1,024 ranges and 1 GiB a system call (IOV_MAX; the kernel stops one call at about
// 2 GiB); a short read goes on from where it stopped.
std::uint64_t pull(const Worker& worker, const std::vector<Range>& ranges, const Snapshot& snap) {
  if (worker.pid <= 0) return kNoWorker;
  for (const Range& r : ranges)
    if (r.offset > snap.size || r.length > snap.size - r.offset) return kBad;
  constexpr std::uint64_t kBatchBytes = std::uint64_t{1} << 30;
  std::size_t index = 0;
  std::uint64_t done = 0;  // bytes of ranges[index] already read
  while (index < ranges.size()) {
    std::vector<iovec> local, remote;
    std::uint64_t bytes = 0;
    for (std::size_t i = index; i < ranges.size() && local.size() < 1024 && bytes < kBatchBytes;
         ++i) {
      const Range& r = ranges[i];
      const std::uint64_t skip = i == index ? done : 0;
      const std::uint64_t length = std::min(r.length - skip, kBatchBytes - bytes);
      if (length == 0) continue;
      local.push_back({snap.data + r.offset + skip, length});
      remote.push_back({reinterpret_cast<void*>(r.address + skip), length});
      bytes += length;
    }
    if (local.empty()) break;  // only empty ranges were left
    const ssize_t n =
        ::process_vm_readv(worker.pid, local.data(), local.size(), remote.data(), remote.size(), 0);
    if (n < 0) {
      if (errno == EFAULT) return kUnreadable;
      if (errno == ESRCH) return kNoWorker;
      return kNotAllowed;  // EPERM (ptrace rules), ENOSYS (seccomp): this machine, not the worker
    }
    if (n == 0) return kUnreadable;
    // Advance past what was read.
    for (std::uint64_t left = static_cast<std::uint64_t>(n); left > 0 && index < ranges.size();) {
      const std::uint64_t rest = ranges[index].length - done;
      if (left < rest) {
        done += left;
        left = 0;
      } else {
        left -= rest;
        ++index;
        done = 0;
      }
    }
    while (index < ranges.size() && ranges[index].length == done) {
      ++index;
      done = 0;
    }
  }
  // The pid named the worker for the whole read only if the worker is still alive after it.
  return worker.still_the_same() ? kDone : kNoWorker;
}

}  // namespace

void serve_judge(int fd, pid_t candidate, const std::atomic<pid_t>& judge) {
  Snapshot snap;
  Worker candidate_worker, reference_worker;
  for (;;) {
    char command = 0;
    int passed = -1;
    if (!read_command(fd, command, passed)) break;
    if (command != 'M' && passed >= 0) {
      ::close(passed);
      passed = -1;
    }
    if (command == 'C') {
      if (!write_answer(fd, sandbox::cpu_time_ns(candidate).value_or(~std::uint64_t{0}))) break;
      continue;
    }
    if (command == 'M') {
      unsigned char size_bytes[8];
      const bool sized = read_exactly(fd, size_bytes, sizeof size_bytes);
      const std::uint64_t size = sized ? little(size_bytes, 8) : 0;
      snap.unmap();
      std::uint64_t answer = kBad;
      struct stat st {};
      // Only a memfd that cannot shrink (the judge seals it) and holds `size` bytes: a mapping
      // past its end would make every read fail as if the worker had named bad memory.
      if (passed >= 0 && size > 0 && ::fstat(passed, &st) == 0 &&
          static_cast<std::uint64_t>(st.st_size) >= size &&
          (::fcntl(passed, F_GET_SEALS) & F_SEAL_SHRINK) != 0) {
        void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, passed, 0);
        if (data != MAP_FAILED) {
          snap.data = static_cast<char*>(data);
          snap.size = size;
          answer = kDone;
        }
      }
      if (passed >= 0) ::close(passed);
      if (!sized || !write_answer(fd, answer)) break;
      continue;
    }
    if (command == 'W') {
      char who = 0;
      if (!read_exactly(fd, &who, 1) || (who != 'c' && who != 'r')) break;
      Worker& worker = who == 'c' ? candidate_worker : reference_worker;
      worker.pid = who == 'c' ? find_worker(candidate, false) : find_worker(judge.load(), true);
      worker.started = worker.pid > 0 ? start_time(worker.pid) : 0;
      if (!write_answer(fd, worker.still_the_same() ? kDone : kNoWorker)) break;
      continue;
    }
    if (command != 'R') break;  // not the judge's: nothing more is served
    unsigned char head[5];
    if (!read_exactly(fd, head, sizeof head)) break;
    const char who = static_cast<char>(head[0]);
    const std::uint64_t count = little(head + 1, 4);
    if (count > kMaxRanges || (who != 'c' && who != 'r')) break;
    std::vector<unsigned char> raw(count * 24);
    if (!raw.empty() && !read_exactly(fd, raw.data(), raw.size())) break;
    std::vector<Range> ranges(count);
    for (std::size_t i = 0; i < count; ++i)
      ranges[i] = {little(&raw[i * 24], 8), little(&raw[i * 24 + 8], 8),
                   little(&raw[i * 24 + 16], 8)};
    const Worker& worker = who == 'c' ? candidate_worker : reference_worker;
    const std::uint64_t answer = snap.data == nullptr ? kBad : pull(worker, ranges, snap);
    if (!write_answer(fd, answer)) break;
  }
}

}  // namespace upskill::kernel::detail
