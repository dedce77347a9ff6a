#pragma once
// Wall-clock timestamps as text: the one place upskill turns a time point into a string (batch
// ids, run-log timestamps, skill metadata).
#include <chrono>
#include <string>
#include <string_view>

namespace upskill::timefmt {

enum class Zone { utc, local };

// `when` formatted with a strftime pattern in UTC or in the machine's local time zone.
std::string format(std::chrono::system_clock::time_point when, Zone zone,
                   std::string_view strftime_pattern);

// ISO 8601 to the second: "2026-12-03T13:46:06Z" in UTC, "2026-12-03T14:46:06" in local time.
std::string iso8601(std::chrono::system_clock::time_point when, Zone zone);

}  // namespace upskill::timefmt
