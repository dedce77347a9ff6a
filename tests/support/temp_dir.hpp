#pragma once
// A temporary directory removed at scope exit (the library's upskill::TempDir), with helpers to lay
// out files.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "upskill/core/temp_dir.hpp"

namespace upskill::testing {

class TempDir {
 public:
  TempDir() {
    auto made = upskill::TempDir::create("upskill-test");
    if (!made) std::abort();
    dir_ = std::move(*made);
  }

  const std::filesystem::path& path() const { return dir_.path(); }
  std::filesystem::path operator/(const std::string& rel) const { return path() / rel; }

  std::filesystem::path write(const std::string& rel, const std::string& content) const {
    const auto target = path() / rel;
    std::filesystem::create_directories(target.parent_path());
    std::ofstream(target, std::ios::binary) << content;
    return target;
  }

 private:
  upskill::TempDir dir_;
};

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace upskill::testing
