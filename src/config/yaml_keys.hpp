#pragma once
// Reading a YAML mapping from one table of its keys (docs/ARCHITECTURE.md, config): each key with
// the member it fills, the parser of its value and what it means. The table is the only list of a
// mapping's keys — what is known, how each is read, what docs/configuration.md must describe — so
// no key is spelled twice and no unmatched key falls through to another member.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "upskill/config/config.hpp"

namespace upskill::config::yaml_keys {

// The mapping being read: where it is, what messages call it, and where warnings go.
struct Mapping {
  const YAML::Node& node;
  std::string file;
  std::string context;  // "model 'x'", "slurm": the prefix of messages ("" at the top)
  std::vector<std::string>& warnings;
};

// One value of a mapping, as a parser sees it: its key and value, and the mapping it is in.
class Value {
 public:
  Value(const YAML::Node& key, const YAML::Node& value, const Mapping& in)
      : key_(key), value_(value), in_(in) {}

  const YAML::Node& node() const { return value_; }
  const YAML::Node& key_node() const { return key_; }
  std::string key() const { return key_.as<std::string>(); }
  const Mapping& mapping() const { return in_; }
  // Whether the mapping also sets `key` (to something other than null).
  bool sibling_set(const std::string& key) const {
    return in_.node[key] && !in_.node[key].IsNull();
  }
  SourceLocation where(const YAML::Node& node) const;
  // "file:line:col: context: message", at the key.
  Error error(const std::string& message) const;

  // The value read as each type; a wrong type names the key and what it must be.
  // null: nullopt. Errors: not a scalar, not UTF-8, or holding a control character (a line break
  // in a header or an #SBATCH line would start another).
  Result<std::optional<std::string>> string() const;
  Result<std::vector<std::string>> strings() const;  // a sequence of string(); nulls left out
  Result<double> number() const;                     // finite: NaN and infinities are refused
  Result<long long> integer(long long min) const;
  Result<bool> boolean() const;
  // A mapping, list or scalar as JSON (free-form settings passed on as they are): scalars typed as
  // YAML reads them, quoted ones strings. Errors: a key that is not a plain scalar, nesting deeper
  // than 64, more than 100,000 values (aliases that expand without end), text not UTF-8.
  Result<Json> json() const;
  Value item(const YAML::Node& node) const { return {key_, node, in_}; }

 private:
  const YAML::Node& key_;
  const YAML::Node& value_;
  const Mapping& in_;
};

template <class Target>
struct Key {
  std::string_view name;
  std::function<Status(Target&, const Value&)> read;
  std::string_view doc;  // what it means: docs/configuration.md describes every key (tested)
};

// The mapping's keys are plain scalars, each given once. Errors name the key's line and column.
Status check_keys(const Mapping& map);

// Reads the mapping into `target` by `keys`. A key the table does not list is a warning (upskill
// and fast-agent files carry keys of their own), never read into anything.
template <class Target>
Status read_mapping(const Mapping& map, const std::vector<Key<Target>>& keys, Target& target) {
  UPSKILL_RETURN_IF_ERROR(check_keys(map));
  for (const auto& item : map.node) {
    const std::string name = item.first.as<std::string>();
    const Value value(item.first, item.second, map);
    const auto rule = std::find_if(keys.begin(), keys.end(),
                                   [&](const Key<Target>& k) { return k.name == name; });
    if (rule == keys.end()) {
      map.warnings.push_back(fmt::format("{}: {}unknown key '{}' is ignored",
                                         value.where(item.first).to_string(),
                                         map.context.empty() ? "" : map.context + ": ", name));
      continue;
    }
    UPSKILL_RETURN_IF_ERROR(rule->read(target, value));
  }
  return {};
}

// A rule filling `member` with what `parse` makes of the value (a Result of something the member
// takes: its type, or for an optional member its value type).
template <class Target, class Member, class Parse>
std::function<Status(Target&, const Value&)> into(Member Target::*member, Parse parse) {
  return [member, parse](Target& target, const Value& v) -> Status {
    auto read = parse(v);
    if (!read) return fail(std::move(read).error());
    target.*member = std::move(*read);
    return {};
  };
}

// Parsers shared by the tables.
Result<std::optional<std::string>> optional_string(const Value& v);
// A whole number from `min` to `max` (optional_int: null leaves it unset).
std::function<Result<std::optional<int>>(const Value&)> optional_int(long long min, long long max);
std::function<Result<int>(const Value&)> whole(long long min, long long max);
std::function<Result<double>(const Value&)> number_between(double min, double max);
Result<bool> boolean(const Value& v);

}  // namespace upskill::config::yaml_keys
