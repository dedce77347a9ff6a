#pragma once
// Errors a user can cause are values: an Error carries the exit code the CLI should end with and a
// message that names the file (and line) where that makes sense.
#include <expected>
#include <string>

namespace upskill {

// Exit codes of the command line; documented in --help and README.
enum class ExitCode : int {
  ok = 0,
  gate_failed = 1,     // a quality gate or a check failed
  usage = 2,           // bad flag, unreadable or invalid input file
  infrastructure = 3,  // could not run as asked: endpoint unreachable, toolchain missing, no GPU
                       // with --require-gpu, a case `check` could not run
  interrupted = 130,
};

struct SourceLocation {
  std::string file;
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based; 0 = unknown

  // "file:line:col", "file:line" or "file" depending on what is known.
  std::string to_string() const;
};

struct Error {
  ExitCode code = ExitCode::usage;
  std::string message;

  static Error usage(std::string message) { return {ExitCode::usage, std::move(message)}; }
  static Error infrastructure(std::string message) {
    return {ExitCode::infrastructure, std::move(message)};
  }
  // "file:line:col: message"
  static Error at(const SourceLocation& where, const std::string& message);
};

template <class T>
using Result = std::expected<T, Error>;

using Status = std::expected<void, Error>;

inline std::unexpected<Error> fail(Error e) {
  return std::unexpected<Error>(std::move(e));
}

}  // namespace upskill

// Propagation helpers for Result/Status-returning code.
#define UPSKILL_CONCAT_INNER(a, b) a##b
#define UPSKILL_CONCAT(a, b) UPSKILL_CONCAT_INNER(a, b)
#define UPSKILL_RETURN_IF_ERROR(expr)                                      \
  do {                                                                     \
    auto upskill_status_ = (expr);                                         \
    if (!upskill_status_) return ::upskill::fail(upskill_status_.error()); \
  } while (0)
#define UPSKILL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)       \
  auto tmp = (expr);                                        \
  if (!tmp) return ::upskill::fail(std::move(tmp).error()); \
  lhs = std::move(*tmp)
#define UPSKILL_ASSIGN_OR_RETURN(lhs, expr) \
  UPSKILL_ASSIGN_OR_RETURN_IMPL(UPSKILL_CONCAT(upskill_result_, __LINE__), lhs, expr)
