// Reading a YAML mapping from one table of its keys: the values' types and the shared parsers
// (see yaml_keys.hpp).
#include "yaml_keys.hpp"

#include <cmath>
#include <limits>
#include <map>

#include "upskill/core/unicode.hpp"

namespace upskill::config::yaml_keys {

SourceLocation Value::where(const YAML::Node& node) const {
  const auto mark = node.Mark();
  if (mark.is_null()) return {in_.file, 0, 0};
  return {in_.file, mark.line + 1, mark.column + 1};
}

Error Value::error(const std::string& message) const {
  return Error::at(where(key_), in_.context.empty() ? message : in_.context + ": " + message);
}

Result<std::optional<std::string>> Value::string() const {
  if (value_.IsNull()) return std::optional<std::string>{};
  if (!value_.IsScalar()) return fail(error(fmt::format("'{}' must be a string", key())));
  const std::string& s = value_.Scalar();
  if (!unicode::is_valid_utf8(s)) return fail(error(fmt::format("'{}' is not UTF-8 text", key())));
  if (std::any_of(s.begin(), s.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }))
    return fail(error(fmt::format("'{}' must be one line, without control characters", key())));
  return std::optional<std::string>{s};
}

Result<std::vector<std::string>> Value::strings() const {
  std::vector<std::string> out;
  for (const auto& node : value_) {
    UPSKILL_ASSIGN_OR_RETURN(auto one, item(node).string());
    if (one) out.push_back(std::move(*one));
  }
  return out;
}

Result<double> Value::number() const {
  double out = 0;
  if (!value_.IsScalar() || !YAML::convert<double>::decode(value_, out) || !std::isfinite(out))
    return fail(error(fmt::format("'{}' must be a number", key())));
  return out;
}

Result<long long> Value::integer(long long min) const {
  long long out = 0;
  if (!value_.IsScalar() || !YAML::convert<long long>::decode(value_, out))
    return fail(error(fmt::format("'{}' must be a whole number", key())));
  if (out < min) return fail(error(fmt::format("'{}' must be at least {}", key(), min)));
  return out;
}

Result<bool> Value::boolean() const {
  bool out = false;
  if (!value_.IsScalar() || !YAML::convert<bool>::decode(value_, out))
    return fail(error(fmt::format("'{}' must be true or false", key())));
  return out;
}

namespace {

constexpr int kMostDepth = 64;
constexpr std::size_t kMostValues = 100000;

// A YAML value as JSON, counting what it visits: an alias that refers to itself, or aliases that
// multiply, would otherwise recurse without end or fill the memory.
struct JsonOf {
  const Value& at;
  std::size_t values = 0;

  Result<Json> operator()(const YAML::Node& node, int depth) {
    if (depth > kMostDepth || ++values > kMostValues)
      return fail(at.error(fmt::format(
          "'{}' nests deeper than {} or holds more than {} values (an alias that refers to "
          "itself, or aliases that multiply)",
          at.key(), kMostDepth, kMostValues)));
    switch (node.Type()) {
      case YAML::NodeType::Map:
        return mapping(node, depth);
      case YAML::NodeType::Sequence: {
        Json out = Json::array();
        for (const auto& item : node) {
          UPSKILL_ASSIGN_OR_RETURN(Json one, (*this)(item, depth + 1));
          out.push_back(std::move(one));
        }
        return out;
      }
      case YAML::NodeType::Scalar:
        return scalar(node);
      default:
        return Json(nullptr);
    }
  }

  Result<Json> mapping(const YAML::Node& node, int depth) {
    Json out = Json::object();
    for (const auto& kv : node) {
      if (!kv.first.IsScalar())
        return fail(at.error(fmt::format("'{}': a key must be a plain name", at.key())));
      UPSKILL_ASSIGN_OR_RETURN(Json one, (*this)(kv.second, depth + 1));
      out[kv.first.Scalar()] = std::move(one);
    }
    return out;
  }

  Result<Json> scalar(const YAML::Node& node) const {
    const std::string& s = node.Scalar();
    if (!unicode::is_valid_utf8(s))
      return fail(at.error(fmt::format("'{}' holds text that is not UTF-8", at.key())));
    if (node.Tag() == "!") return Json(s);  // quoted: always a string
    bool b;
    long long i;
    double d;
    if (YAML::convert<bool>::decode(node, b)) return Json(b);
    if (YAML::convert<long long>::decode(node, i)) return Json(i);
    if (YAML::convert<double>::decode(node, d) && std::isfinite(d)) return Json(d);
    return Json(s);
  }
};

}  // namespace

Result<Json> Value::json() const {
  return JsonOf{*this}(value_, 0);
}

Status check_keys(const Mapping& map) {
  std::map<std::string, int> seen;  // key → its line
  for (const auto& item : map.node) {
    const Value at(item.first, item.second, map);
    if (!item.first.IsScalar())
      return fail(Error::at(at.where(item.first),
                            (map.context.empty() ? "" : map.context + ": ") +
                                "a key must be a plain name, not a list or a mapping"));
    const std::string name = item.first.Scalar();
    const int line = at.where(item.first).line;
    if (auto [it, fresh] = seen.emplace(name, line); !fresh)
      return fail(
          at.error(fmt::format("'{}' is given twice (first on line {})", name, it->second)));
  }
  return {};
}

Result<std::optional<std::string>> optional_string(const Value& v) {
  return v.string();
}

std::function<Result<int>(const Value&)> whole(long long min, long long max) {
  return [min, max](const Value& v) -> Result<int> {
    UPSKILL_ASSIGN_OR_RETURN(long long n, v.integer(min));
    const long long most = std::min<long long>(max, std::numeric_limits<int>::max());
    if (n > most) return fail(v.error(fmt::format("'{}' must be at most {}", v.key(), most)));
    return static_cast<int>(n);
  };
}

std::function<Result<std::optional<int>>(const Value&)> optional_int(long long min, long long max) {
  return [read = whole(min, max)](const Value& v) -> Result<std::optional<int>> {
    if (v.node().IsNull()) return std::optional<int>{};
    UPSKILL_ASSIGN_OR_RETURN(int n, read(v));
    return std::optional<int>{n};
  };
}

std::function<Result<double>(const Value&)> number_between(double min, double max) {
  return [min, max](const Value& v) -> Result<double> {
    UPSKILL_ASSIGN_OR_RETURN(double d, v.number());
    if (!(d >= min && d <= max))
      return fail(v.error(fmt::format("'{}' must be between {} and {}", v.key(), min, max)));
    return d;
  };
}

Result<bool> boolean(const Value& v) {
  return v.boolean();
}

}  // namespace upskill::config::yaml_keys
