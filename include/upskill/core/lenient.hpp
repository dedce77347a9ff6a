#pragma once
// Reading JSON nobody vouches for (run logs written by hand, a coding agent's output): a field
// that is missing, or of another type, reads as absent — the fallback — and never throws.
#include <string>

#include "upskill/core/json.hpp"

namespace upskill::lenient {

const Json* field(const Json& j, const char* key);  // nullptr unless `j` is an object with `key`
const Json& object_field(const Json& j, const char* key);  // an empty object unless one
const Json& array_field(const Json& j, const char* key);   // an empty array unless one
std::string string_field(const Json& j, const char* key, std::string fallback = {});
double number_field(const Json& j, const char* key, double fallback = 0);
long long integer_field(const Json& j, const char* key, long long fallback = 0);
bool bool_field(const Json& j, const char* key, bool fallback = false);

}  // namespace upskill::lenient
