// Reading JSON nobody vouches for: absent or mistyped fields read as the fallback (see
// lenient.hpp).
#include "upskill/core/lenient.hpp"

namespace upskill::lenient {

const Json* field(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

const Json& object_field(const Json& j, const char* key) {
  static const Json empty = Json::object();
  const Json* f = field(j, key);
  return f && f->is_object() ? *f : empty;
}

const Json& array_field(const Json& j, const char* key) {
  static const Json empty = Json::array();
  const Json* f = field(j, key);
  return f && f->is_array() ? *f : empty;
}

std::string string_field(const Json& j, const char* key, std::string fallback) {
  const Json* f = field(j, key);
  return f && f->is_string() ? f->get<std::string>() : fallback;
}

double number_field(const Json& j, const char* key, double fallback) {
  const Json* f = field(j, key);
  return f && f->is_number() ? f->get<double>() : fallback;
}

long long integer_field(const Json& j, const char* key, long long fallback) {
  const Json* f = field(j, key);
  return f && f->is_number() ? f->get<long long>() : fallback;
}

bool bool_field(const Json& j, const char* key, bool fallback) {
  const Json* f = field(j, key);
  return f && f->is_boolean() ? f->get<bool>() : fallback;
}

}  // namespace upskill::lenient
