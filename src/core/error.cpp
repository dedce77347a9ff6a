// Errors as values: an exit code and a message naming the file and line (see error.hpp).
#include "upskill/core/error.hpp"

#include <fmt/format.h>

namespace upskill {

std::string SourceLocation::to_string() const {
  if (line <= 0) return file;
  if (column <= 0) return fmt::format("{}:{}", file, line);
  return fmt::format("{}:{}:{}", file, line, column);
}

Error Error::at(const SourceLocation& where, const std::string& message) {
  if (where.file.empty()) return usage(message);
  return usage(fmt::format("{}: {}", where.to_string(), message));
}

}  // namespace upskill
