// A private temporary folder (mode 0700, under $TMPDIR or /tmp) that is removed with everything in
// it when the owner goes out of scope (see temp_dir.hpp).
#include "upskill/core/temp_dir.hpp"

#include <fmt/format.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace upskill {

namespace fs = std::filesystem;

Result<TempDir> TempDir::create(std::string_view prefix) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / fmt::format("{}-XXXXXX", prefix)).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return fail(Error::infrastructure(
        fmt::format("cannot create a temporary folder {}: {}", pattern, std::strerror(errno))));
  return TempDir(fs::path(pattern));
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) {
  other.path_.clear();
}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

TempDir::~TempDir() {
  remove();
}

fs::path TempDir::release() {
  fs::path kept = std::move(path_);
  path_.clear();
  return kept;
}

void TempDir::remove() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
  path_.clear();
}

}  // namespace upskill
