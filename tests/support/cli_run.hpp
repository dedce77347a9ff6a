#pragma once
// Running the upskill binary from a test: shell quoting and the captured result.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace upskill::testing {

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

// Runs `binary args...` in `cwd` after `env_words` (e.g. "env -u X Y=1"); stdout and stderr are
// captured through files in `scratch`.
inline CliRun run_cli(const std::filesystem::path& cwd, const std::string& env_words,
                      const std::string& binary, const std::vector<std::string>& args,
                      const std::filesystem::path& scratch) {
  std::string cmd =
      "cd " + shell_quote(cwd.string()) + " && " + env_words + " " + shell_quote(binary);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote((scratch / ".out").string()) + " 2>" +
         shell_quote((scratch / ".err").string());
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(scratch / ".out"),
          read_file(scratch / ".err")};
}

}  // namespace upskill::testing
