#pragma once
// The logger is the one piece of global state (docs/ARCHITECTURE.md). Front ends configure it once.
#include <optional>
#include <string>

#include "upskill/core/error.hpp"

namespace upskill::logging {

enum class Verbosity { quiet, normal, verbose };

struct Options {
  Verbosity verbosity = Verbosity::normal;
  std::optional<std::string> log_file;  // receives everything at debug level
  bool color = true;
};

// Installs the default spdlog logger: stderr at the verbosity's level (warnings and errors for
// quiet, info for normal, debug for verbose) plus an optional file sink.
Status configure(const Options& options);

}  // namespace upskill::logging
