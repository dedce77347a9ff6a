// The logger is the one piece of global state (docs/ARCHITECTURE.md) (see logging.hpp).
#include "upskill/core/logging.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <vector>

namespace upskill::logging {

Status configure(const Options& options) {
  std::vector<spdlog::sink_ptr> sinks;
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(
      options.color ? spdlog::color_mode::automatic : spdlog::color_mode::never);
  switch (options.verbosity) {
    case Verbosity::quiet:
      console->set_level(spdlog::level::warn);
      break;
    case Verbosity::normal:
      console->set_level(spdlog::level::info);
      break;
    case Verbosity::verbose:
      console->set_level(spdlog::level::debug);
      break;
  }
  console->set_pattern("%^%l%$: %v");
  sinks.push_back(console);
  if (options.log_file) {
    try {
      auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(*options.log_file, false);
      file->set_level(spdlog::level::debug);
      file->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %v");
      sinks.push_back(file);
    } catch (const spdlog::spdlog_ex& e) {
      return fail(Error::usage(*options.log_file + ": cannot open log file: " + e.what()));
    }
  }
  auto logger = std::make_shared<spdlog::logger>("upskill", sinks.begin(), sinks.end());
  logger->set_level(spdlog::level::debug);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  return {};
}

}  // namespace upskill::logging
