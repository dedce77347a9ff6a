#pragma once
// An exclusive lock on a file, held by one process at a time: flock(2) on a descriptor opened
// close-on-exec. The kernel drops it when the holder releases it or ends in any way (kill -9
// included), so a crash never leaves a stale lock; on NFS Linux carries it as a byte-range lock,
// so processes on other machines see it too. The holder writes who it is into the file, so that
// a refusal can name it.
#include <filesystem>
#include <optional>
#include <string>

#include "upskill/core/error.hpp"

namespace upskill::files {

class FileLock {
 public:
  // Takes the lock on `path` (created when missing) without waiting. When another process holds
  // it: a usage error naming `what` and the holder ("pid 123 on host x since …").
  static Result<FileLock> try_acquire(const std::filesystem::path& path, std::string_view what);

  // Whether another process holds the lock on `path` now, without taking it or creating the file:
  // its note ("pid 123 on host x since …", or "" when it wrote none), else nullopt.
  static std::optional<std::string> holder(const std::filesystem::path& path);

  FileLock() = default;  // holds nothing
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

  bool held() const { return fd_ >= 0; }
  void release();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace upskill::files
