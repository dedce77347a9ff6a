// One JSON object read against a schema, errors naming file, line and column (see
// json_fields.hpp).
#include "upskill/core/json_fields.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace upskill {

namespace {
const Json& value_at(const Json& root, const std::string& pointer) {
  static const Json kNull;
  try {
    return root.at(Json::json_pointer(pointer));
  } catch (const nlohmann::json::exception&) {
    return kNull;
  }
}
}  // namespace

JsonObjectReader::JsonObjectReader(const JsonDocument& doc, std::string pointer,
                                   std::string context)
    : doc_(doc),
      pointer_(std::move(pointer)),
      context_(std::move(context)),
      value_(value_at(doc.value, pointer_)) {}

Error JsonObjectReader::located(const SourceLocation& where, std::string_view message) const {
  if (context_.empty()) return Error::at(where, std::string(message));
  return Error::at(where, fmt::format("{}: {}", context_, message));
}

Error JsonObjectReader::error_at(std::string_view key, std::string_view message) const {
  return located(doc_.at(child(key)), message);
}
Error JsonObjectReader::error_at_key(std::string_view key, std::string_view message) const {
  return located(doc_.at_key(child(key)), message);
}
Error JsonObjectReader::error(std::string_view message) const {
  return located(doc_.at(pointer_), message);
}

Status JsonObjectReader::expect_object(std::string_view what) const {
  if (value_.is_object()) return {};
  return fail(
      error(fmt::format("expected {} (a JSON object), found {}", what, json_type_name(value_))));
}

Status JsonObjectReader::reject_unknown_keys(const std::vector<std::string>& allowed) const {
  for (const auto& [key, _] : value_.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::vector<std::string> sorted = allowed;
      std::sort(sorted.begin(), sorted.end());
      std::string list;
      for (const auto& a : sorted) list += (list.empty() ? "" : ", ") + a;
      return fail(error_at_key(key, fmt::format("unknown key '{}' (allowed: {})", key, list)));
    }
  }
  return {};
}

bool JsonObjectReader::has(std::string_view key) const {
  auto it = value_.find(std::string(key));
  return it != value_.end() && !it->is_null();
}

Result<std::string> JsonObjectReader::required_string(std::string_view key) const {
  auto it = value_.find(std::string(key));
  if (it == value_.end()) return fail(error(fmt::format("missing required key '{}'", key)));
  if (!it->is_string())
    return fail(
        error_at(key, fmt::format("'{}' must be a string, found {}", key, json_type_name(*it))));
  return it->get<std::string>();
}

template <class T>
Result<std::optional<T>> JsonObjectReader::optional_of(std::string_view key,
                                                       bool (Json::*is)() const noexcept,
                                                       std::string_view expected) const {
  if (!has(key)) return std::optional<T>{};
  const Json& v = value_.at(std::string(key));
  if (!(v.*is)())
    return fail(
        error_at(key, fmt::format("'{}' must be {}, found {}", key, expected, json_type_name(v))));
  return std::optional<T>{v.get<T>()};
}

Result<std::optional<std::string>> JsonObjectReader::optional_string(std::string_view key) const {
  return optional_of<std::string>(key, &Json::is_string, "a string");
}
Result<std::optional<double>> JsonObjectReader::optional_number(std::string_view key) const {
  return optional_of<double>(key, &Json::is_number, "a number");
}
Result<std::optional<long long>> JsonObjectReader::optional_integer(std::string_view key) const {
  return optional_of<long long>(key, &Json::is_number_integer, "an integer");
}
Result<std::optional<bool>> JsonObjectReader::optional_bool(std::string_view key) const {
  return optional_of<bool>(key, &Json::is_boolean, "true or false");
}

Result<std::vector<std::string>> JsonObjectReader::string_list(std::string_view key,
                                                               bool allow_single) const {
  std::vector<std::string> out;
  if (!has(key)) return out;
  const Json& v = value_.at(std::string(key));
  if (allow_single && v.is_string()) {
    out.push_back(v.get<std::string>());
    return out;
  }
  if (!v.is_array())
    return fail(error_at(key, fmt::format("'{}' must be {}a list of strings, found {}", key,
                                          allow_single ? "a string or " : "", json_type_name(v))));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      return fail(located(
          doc_.at(json_pointer_append(child(key), i)),
          fmt::format("'{}[{}]' must be a string, found {}", key, i, json_type_name(v[i]))));
    out.push_back(v[i].get<std::string>());
  }
  return out;
}
}  // namespace upskill
