#pragma once
// Reading one JSON object against a schema: allowed keys, typed fields, and errors that name the
// file, line, column and the thing being read ("case 3 ('rmsnorm-cpu')").
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "upskill/core/json.hpp"

namespace upskill {

class JsonObjectReader {
 public:
  JsonObjectReader(const JsonDocument& doc, std::string pointer, std::string context);

  const Json& value() const { return value_; }
  const std::string& pointer() const { return pointer_; }
  const std::string& context() const { return context_; }
  std::string child(std::string_view key) const { return json_pointer_append(pointer_, key); }

  // The value must be an object; `what` names it in the message ("a test case").
  Status expect_object(std::string_view what) const;
  // Any key not in `allowed` is an error located at that key.
  Status reject_unknown_keys(const std::vector<std::string>& allowed) const;
  // Present and not null.
  bool has(std::string_view key) const;

  Result<std::string> required_string(std::string_view key) const;
  Result<std::optional<std::string>> optional_string(std::string_view key) const;
  Result<std::optional<double>> optional_number(std::string_view key) const;
  Result<std::optional<long long>> optional_integer(std::string_view key) const;
  Result<std::optional<bool>> optional_bool(std::string_view key) const;
  // A list of strings; with `allow_single`, a lone string counts as a list of one.
  Result<std::vector<std::string>> string_list(std::string_view key, bool allow_single) const;

  Error error_at(std::string_view key, std::string_view message) const;  // at the key's value
  Error error_at_key(std::string_view key, std::string_view message) const;
  Error error(std::string_view message) const;  // at this object

 private:
  const JsonDocument& doc_;
  std::string pointer_;
  std::string context_;
  const Json& value_;
  Error located(const SourceLocation& where, std::string_view message) const;
  template <class T>
  Result<std::optional<T>> optional_of(std::string_view key, bool (Json::*is)() const noexcept,
                                       std::string_view expected) const;
};

}  // namespace upskill
