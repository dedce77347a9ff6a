#pragma once
// How report/ reads run logs (written by us, by upskill or by hand): every field leniently — one
// missing or of another type reads as absent — through the readers of core/lenient.hpp, and
// the few conversions the terminal, CSV and HTML renderers share.
#include <optional>
#include <string>
#include <utility>

#include "upskill/core/lenient.hpp"

namespace upskill::report::logs {

using lenient::array_field;
using lenient::bool_field;
using lenient::field;
using lenient::integer_field;
using lenient::number_field;
using lenient::object_field;
using lenient::string_field;

// A field as text: a string as it is, null or missing as nothing, anything else as its JSON.
inline std::string text_field(const Json& j, const char* key) {
  const Json* f = field(j, key);
  if (f == nullptr || f->is_null()) return {};
  return f->is_string() ? f->get<std::string>()
                        : f->dump(-1, ' ', false, Json::error_handler_t::replace);
}

// An "interval": [low, high] of two numbers, if `j` has one.
inline std::optional<std::pair<double, double>> interval_field(const Json& j) {
  const Json& i = array_field(j, "interval");
  if (i.size() < 2 || !i[0].is_number() || !i[1].is_number()) return std::nullopt;
  return std::pair{i[0].get<double>(), i[1].get<double>()};
}

}  // namespace upskill::report::logs
