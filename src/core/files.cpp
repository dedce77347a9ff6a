// File helpers: whole-file reads with clear errors, atomic writes (temp + rename) and tree copies
// (see files.hpp).
#include "upskill/core/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>

namespace upskill::files {

Result<std::string> read_text(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return fail(Error::usage(fmt::format("{}: no such file", path.string())));
  if (fs::is_directory(path, ec))
    return fail(Error::usage(fmt::format("{}: is a directory, expected a file", path.string())));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(
        Error::usage(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno))));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad())
    return fail(
        Error::usage(fmt::format("{}: read failed: {}", path.string(), std::strerror(errno))));
  return buffer.str();
}

namespace {

std::string random_suffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:016x}", rng());
}

Error os_error(const std::string& what, const fs::path& path) {
  return Error::usage(fmt::format("{}: {}: {}", path.string(), what, std::strerror(errno)));
}

// Writes all of `content` to `fd` (retrying short writes and interruptions); on failure closes
// `fd` and names `path`.
Status write_all(int fd, std::string_view content, const fs::path& path) {
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error e = os_error("write failed", path);
      ::close(fd);
      return fail(e);
    }
    written += static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace

namespace {
// ".NAME.tmp-<16 hex digits>": a temporary file of write_atomic's.
bool is_temporary(const std::string& name) {
  const auto at = name.rfind(".tmp-");
  if (name.size() < 2 || name.front() != '.' || at == std::string::npos || at == 0) return false;
  const std::string_view hex = std::string_view(name).substr(at + 5);
  return hex.size() == 16 && hex.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}
}  // namespace

std::size_t remove_temporaries(const fs::path& dir) {
  std::size_t removed = 0;
  std::error_code ec;
  std::vector<fs::path> found;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && is_temporary(it->path().filename().string()))
      found.push_back(it->path());
  for (const auto& f : found) removed += fs::remove(f, ec);
  return removed;
}

Status write_atomic(const fs::path& path, std::string_view content) {
  std::error_code ec;
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec)
    return fail(Error::usage(
        fmt::format("{}: cannot create directory: {}", parent.string(), ec.message())));
  const fs::path temp =
      parent / fmt::format(".{}.tmp-{}", path.filename().string(), random_suffix());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fail(os_error("cannot create temporary file", temp));
  if (auto w = write_all(fd, content, path); !w) {  // named for the file the user knows
    ::unlink(temp.c_str());
    return w;
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    Error e = os_error("flush failed", path);
    ::unlink(temp.c_str());
    return fail(e);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    Error e = os_error("cannot replace file", path);
    ::unlink(temp.c_str());
    return fail(e);
  }
  return {};
}

Result<LineAppender> LineAppender::open(const fs::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return fail(os_error("cannot open for appending", path));
  // A last line a power loss cut off is ended first, so that it costs only itself.
  struct stat st {};
  char last = '\n';
  const bool cut = ::fstat(fd, &st) == 0 && st.st_size > 0 &&
                   ::pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n';
  return LineAppender(path, fd, cut);
}

LineAppender::LineAppender(LineAppender&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), cut_(other.cut_) {}

LineAppender& LineAppender::operator=(LineAppender&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    cut_ = other.cut_;
  }
  return *this;
}

LineAppender::~LineAppender() {
  if (fd_ >= 0) ::close(fd_);
}

Status LineAppender::append(std::string_view line) {
  if (fd_ < 0) return fail(Error::usage(fmt::format("{}: no longer open", path_.string())));
  // Where the file ended, so that a line a full disk cut off can be taken back whole.
  struct stat before {};
  const bool sized = ::fstat(fd_, &before) == 0;
  Status written = cut_ ? write_all(fd_, "\n", path_) : Status{};
  if (written) written = write_all(fd_, line, path_);  // write_all closes fd_ when it fails
  if (written) {
    cut_ = false;
    return written;
  }
  fd_ = -1;
  // Reopen and cut the partial line off, so that every line stays whole; when that fails too, the
  // next append ends the partial line first.
  const int fd = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  if (fd >= 0) {
    fd_ = fd;
    cut_ = !(sized && ::ftruncate(fd_, before.st_size) == 0) || cut_;
  }
  return written;
}

Status LineAppender::sync() {
  if (fd_ < 0 || ::fsync(fd_) != 0) return fail(os_error("flush failed", path_));
  return {};
}

Status append_line(const fs::path& path, std::string_view text, bool sync) {
  UPSKILL_ASSIGN_OR_RETURN(LineAppender file, LineAppender::open(path));
  UPSKILL_RETURN_IF_ERROR(file.append(text));
  return sync ? file.sync() : Status{};
}

Result<CopyReport> copy_tree(const fs::path& from, const fs::path& to, const CopyOptions& options) {
  std::error_code ec;
  if (fs::exists(to, ec)) return fail(Error::usage(fmt::format("{}: already exists", to.string())));
  fs::create_directories(to, ec);
  if (ec)
    return fail(Error::usage(fmt::format("{}: cannot create: {}", to.string(), ec.message())));
  CopyReport report;
  fs::recursive_directory_iterator it(from, fs::directory_options::none, ec), end;
  if (ec)
    return fail(Error::usage(fmt::format("{}: cannot read: {}", from.string(), ec.message())));
  for (; it != end; it.increment(ec)) {
    if (ec)
      return fail(Error::usage(fmt::format("{}: cannot read: {}", from.string(), ec.message())));
    const fs::path rel = it->path().lexically_relative(from);
    if (options.skip && options.skip(rel)) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    const fs::path target = to / rel;
    if (it->is_symlink()) {
      report.skipped_symlinks.push_back(rel);
      continue;
    }
    if (it->is_directory()) {
      fs::create_directories(target, ec);
    } else if (it->is_regular_file()) {
      fs::copy_file(it->path(), target, fs::copy_options::none, ec);
      ++report.files;
    }
    if (ec)
      return fail(Error::usage(fmt::format("{}: cannot copy to {}: {}", it->path().string(),
                                           target.string(), ec.message())));
  }
  return report;
}

std::vector<fs::path> list_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    // lexically: fs::relative would follow a symlink out of the folder ("../../etc/hostname").
    if (it->is_regular_file(ec)) out.push_back(it->path().lexically_relative(dir));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> relative_path_problem(std::string_view path) {
  if (path.empty()) return "path must not be empty";
  if (path.front() == '/') return fmt::format("path '{}' must be relative to the workspace", path);
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (path.substr(start, slash - start) == "..")
      return fmt::format("path '{}' must stay inside the workspace (no '..')", path);
    start = slash + 1;
  }
  return std::nullopt;
}

Result<fs::path> resolve_inside(const fs::path& root, std::string_view relative) {
  if (auto problem = relative_path_problem(relative)) return fail(Error::usage(*problem));
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(root, ec);
  const fs::path target = fs::weakly_canonical(root / fs::path(relative), ec);
  const auto [end, _] = std::mismatch(base.begin(), base.end(), target.begin(), target.end());
  if (ec || end != base.end())
    return fail(Error::usage(fmt::format("'{}' leads outside the workspace", relative)));
  return target;
}

Result<fs::path> home_directory() {
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0')
    return fail(Error::usage("HOME is not set; cannot locate per-user directories"));
  return fs::path(home);
}

}  // namespace upskill::files
