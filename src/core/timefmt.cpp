// Wall-clock timestamps as text, the one place a time point becomes a string (see timefmt.hpp).
#include "upskill/core/timefmt.hpp"

#include <ctime>

namespace upskill::timefmt {

std::string format(std::chrono::system_clock::time_point when, Zone zone,
                   std::string_view strftime_pattern) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm parts{};
  if (zone == Zone::utc)
    gmtime_r(&t, &parts);
  else
    localtime_r(&t, &parts);
  const std::string pattern(strftime_pattern);
  char buffer[256];
  const std::size_t n = std::strftime(buffer, sizeof buffer, pattern.c_str(), &parts);
  return std::string(buffer, n);
}

std::string iso8601(std::chrono::system_clock::time_point when, Zone zone) {
  return format(when, zone, zone == Zone::utc ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%dT%H:%M:%S");
}

}  // namespace upskill::timefmt
