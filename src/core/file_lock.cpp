// An exclusive lock on a file (see file_lock.hpp).
#include "upskill/core/file_lock.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "upskill/core/text.hpp"
#include "upskill/core/timefmt.hpp"

namespace upskill::files {

namespace {

// "pid 123 on host x since 2026-12-05T09:00:41": who holds the lock, for a refusal's message.
std::string holder_note() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
  return fmt::format("pid {} on host {} since {}", ::getpid(), host,
                     timefmt::iso8601(std::chrono::system_clock::now(), timefmt::Zone::local));
}

// What the holder wrote (its first line, at most 200 bytes), or "" when nothing can be read.
std::string read_holder(int fd) {
  char buf[201] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return {};
  std::string note(buf, static_cast<std::size_t>(n));
  return text::trim(note.substr(0, note.find('\n')));
}

}  // namespace

Result<FileLock> FileLock::try_acquire(const std::filesystem::path& path, std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(Error::usage(
        fmt::format("{}: cannot open the lock file: {}", path.string(), std::strerror(errno))));
  int rc;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    const std::string holder = err == EWOULDBLOCK ? read_holder(fd) : std::string();
    ::close(fd);
    if (err != EWOULDBLOCK)
      return fail(
          Error::usage(fmt::format("{}: cannot lock: {}", path.string(), std::strerror(err))));
    return fail(Error::usage(
        fmt::format("{} is in use by another upskill process{} (lock: {}); wait for it to finish",
                    what, holder.empty() ? "" : " (" + holder + ")", path.string())));
  }
  // Who holds it now; a failure to say so (a full disk) does not undo the lock.
  const std::string note = holder_note() + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, note.data(), note.size(), 0) < 0) {
    // The lock holds without the note.
  }
  return FileLock(fd);
}

std::optional<std::string> FileLock::holder(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // no lock file: nobody holds it
  std::optional<std::string> out;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) out = read_holder(fd);
  ::close(fd);  // a shared lock taken here goes with the descriptor
  return out;
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

FileLock::~FileLock() {
  release();
}

void FileLock::release() {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor drops the lock
  fd_ = -1;
}

}  // namespace upskill::files
