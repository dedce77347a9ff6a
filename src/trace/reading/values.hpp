#pragma once
// Internal to the trace module: read-only views of one decoded JSON value, so that a reader can be
// written once and walk either a line simdjson parsed in place (DomValue: nothing is converted or
// copied until the reader keeps it) or a Json (JsonValue: a line too long for simdjson's parser,
// or one only nlohmann_json accepts; see json_lines.hpp). Fields are read leniently, as
// records.hpp's str_field and flag_field read them: a value of another type reads as absent, and
// of duplicate keys the last counts, as nlohmann's parser keeps it.
#include <simdjson.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>

#include "builder.hpp"
#include "upskill/core/json.hpp"

namespace upskill::trace::detail {

// A number as a whole number: integers as they are, other numbers truncated (0 when out of
// range), anything else 0.
inline long long whole_number(double v) {
  return std::isfinite(v) && std::fabs(v) < 9.2e18 ? static_cast<long long>(v) : 0;
}

// Json of a simdjson element, the whole of it (json_lines.cpp).
Json to_json(simdjson::dom::element e);

class DomValue {
 public:
  DomValue() = default;
  explicit DomValue(simdjson::dom::element e) : e_(e), present_(true) {}

  bool is_object() const { return present_ && e_.type() == Type::OBJECT; }
  bool is_array() const { return present_ && e_.type() == Type::ARRAY; }
  bool is_string() const { return present_ && e_.type() == Type::STRING; }
  bool is_bool() const { return present_ && e_.type() == Type::BOOL; }
  bool is_integer() const {
    return present_ && (e_.type() == Type::INT64 || e_.type() == Type::UINT64);
  }
  bool is_number() const { return is_integer() || (present_ && e_.type() == Type::DOUBLE); }

  // The member `key` (the last of duplicates); absent unless this is an object that has it.
  DomValue operator[](std::string_view key) const {
    DomValue found;
    if (!is_object()) return found;
    simdjson::dom::object members;
    if (e_.get(members) != simdjson::SUCCESS) return found;
    for (simdjson::dom::key_value_pair kv : members)
      if (kv.key == key) found = DomValue(kv.value);
    return found;
  }
  bool present() const { return present_; }
  bool has(std::string_view key) const { return (*this)[key].present_; }
  // The string, or "" for any other value.
  std::string_view str() const {
    return is_string() ? e_.get_string().value_unsafe() : std::string_view();
  }
  // True only for true.
  bool flag() const { return present_ && e_.type() == Type::BOOL && e_.get_bool().value_unsafe(); }
  long long number() const {
    if (!present_) return 0;
    switch (e_.type()) {
      case Type::INT64:
        return e_.get_int64().value_unsafe();
      case Type::UINT64:
        return static_cast<long long>(e_.get_uint64().value_unsafe());
      case Type::DOUBLE:
        return whole_number(e_.get_double().value_unsafe());
      default:
        return 0;
    }
  }
  // f(DomValue) for each item of an array (nothing for any other value).
  template <class F>
  void each(F&& f) const {
    simdjson::dom::array items;
    if (!is_array() || e_.get(items) != simdjson::SUCCESS) return;
    for (simdjson::dom::element v : items) f(DomValue(v));
  }
  Json json() const { return present_ ? to_json(e_) : Json(); }

 private:
  using Type = simdjson::dom::element_type;
  simdjson::dom::element e_;
  bool present_ = false;
};

class JsonValue {
 public:
  JsonValue() = default;
  explicit JsonValue(const Json& j) : j_(&j) {}

  bool is_object() const { return j_ && j_->is_object(); }
  bool is_array() const { return j_ && j_->is_array(); }
  bool is_string() const { return j_ && j_->is_string(); }
  bool is_bool() const { return j_ && j_->is_boolean(); }
  bool is_integer() const { return j_ && j_->is_number_integer(); }
  bool is_number() const { return j_ && j_->is_number(); }

  JsonValue operator[](std::string_view key) const {
    if (!is_object()) return {};
    const auto it = j_->find(key);
    return it != j_->end() ? JsonValue(*it) : JsonValue();
  }
  bool present() const { return j_ != nullptr; }
  bool has(std::string_view key) const { return (*this)[key].j_ != nullptr; }
  std::string_view str() const {
    return is_string() ? std::string_view(j_->get_ref<const std::string&>()) : std::string_view();
  }
  bool flag() const { return j_ && j_->is_boolean() && j_->get<bool>(); }
  long long number() const {
    if (is_integer()) return j_->get<long long>();
    return is_number() ? whole_number(j_->get<double>()) : 0;
  }
  template <class F>
  void each(F&& f) const {
    if (!is_array()) return;
    for (const Json& v : *j_) f(JsonValue(v));
  }
  Json json() const { return j_ ? *j_ : Json(); }

 private:
  const Json* j_ = nullptr;
};

// The text of a content value: a string, or an array of strings and blocks with text (an image
// as "[image]", a block's own content read the same way), parts a blank line apart.
template <class V>
std::string content_text_of(const V& content) {
  if (content.is_string()) return std::string(content.str());
  std::string out;
  content.each([&](const V& block) {
    if (block.is_string()) {
      Builder::append(out, block.str(), ~std::size_t{0});
      return;
    }
    if (!block.is_object()) return;
    const std::string_view type = block["type"].str();
    if (const V text = block["text"]; text.is_string()) {
      Builder::append(out, text.str(), ~std::size_t{0});
    } else if (type == "image" || type == "input_image" || type == "image_url") {
      Builder::append(out, "[image]", ~std::size_t{0});
    } else if (block.has("content")) {
      Builder::append(out, content_text_of(block["content"]), ~std::size_t{0});
    }
  });
  return out;
}

}  // namespace upskill::trace::detail
