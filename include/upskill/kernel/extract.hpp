#pragma once
// The kernel pipeline's first stage: the files of a kernel project, from an answer's fenced code
// blocks (with path hints) or from an agent's workspace. Paths are never guessed silently: blocks
// without a path, conflicting hints, duplicates and paths that leave the project are reported.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "upskill/core/error.hpp"

namespace upskill::kernel {

struct ExtractedFile {
  std::string path;  // relative, '/'-separated
  std::string content;
  std::string language;  // the block's info-string language ("" from a workspace)
  int line = 0;          // the opening fence's line in the answer (0 from a workspace)
  std::string
      hint;  // where the path came from: info string, file comment, preceding line, workspace
};

struct ExtractProblem {
  int line = 0;
  std::string message;
};

struct Extraction {
  std::vector<ExtractedFile> files;  // in answer order; a path given twice keeps the later block
  std::vector<ExtractProblem> problems;  // conflicts, duplicates, unsafe paths, unclosed blocks
  std::vector<int> unnamed_blocks;       // lines of code blocks that name no file
};

// Files from fenced code blocks (``` or ~~~). A block's path comes from, in order of precedence:
//   the info string   ```cpp title="torch-ext/torch_binding.cpp"   ```toml build.toml
//   ```cuda:k/a.cu a file comment    // file: k/a.cu   # path: build.toml   or a first-line comment
//   that is just a path the line before   **`k/a.cu`**   File: k/a.cu   ### k/a.cu
// When two sources disagree the higher one is used and the conflict reported.
Extraction extract_files(std::string_view answer);

// Files of a workspace (an agent's answer), skipping caches and build output; at most `max_bytes`.
Result<Extraction> extract_workspace(const std::filesystem::path& dir,
                                     std::size_t max_bytes = 32u << 20);

// Whether a token looks like a file path: no spaces, and a '/' or an extension.
bool looks_like_path(std::string_view token);

}  // namespace upskill::kernel
