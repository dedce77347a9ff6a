#pragma once
// A private temporary folder (mode 0700, under $TMPDIR or /tmp) that is removed with everything in
// it when the owner goes out of scope. The one way upskill makes scratch space: workspaces of
// trials, copies of a user's workspace for `check`, the validator's staging folder, the trace's
// solution during screening, kernel build folders.
#include <filesystem>
#include <string_view>

#include "upskill/core/error.hpp"

namespace upskill {

class TempDir {
 public:
  // Creates "<tmp>/<prefix>-XXXXXX". The error names the folder it could not create.
  static Result<TempDir> create(std::string_view prefix);

  TempDir() = default;  // empty: owns nothing
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const std::filesystem::path& path() const { return path_; }
  bool empty() const { return path_.empty(); }
  // Stops owning the folder (it is kept on disk) and returns its path.
  std::filesystem::path release();

 private:
  explicit TempDir(std::filesystem::path path) : path_(std::move(path)) {}
  void remove();
  std::filesystem::path path_;
};

}  // namespace upskill
