#pragma once
// YAML read the way strictyaml (used by the reference validator skills-ref) reads it: every scalar
// is a string (`123`, `true`, `null` and an empty value included), and flow style, tags, anchors,
// aliases and duplicate keys are errors. Built on yaml-cpp's event parser.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "upskill/core/error.hpp"

namespace upskill::skill {

struct StrictYamlValue {
  enum class Kind { string, mapping, sequence };
  Kind kind = Kind::string;
  std::string text;                                          // string
  std::vector<std::pair<std::string, StrictYamlValue>> map;  // mapping, in file order
  std::vector<StrictYamlValue> list;                         // sequence

  bool is_string() const { return kind == Kind::string; }
  bool is_mapping() const { return kind == Kind::mapping; }
  const StrictYamlValue* find(std::string_view key) const;
};

// Parses one YAML document. `line_offset` is added to reported line numbers (the document's first
// line in the enclosing file, minus one). An empty document gives std::nullopt.
Result<std::optional<StrictYamlValue>> parse_strict_yaml(std::string_view text,
                                                         int line_offset = 0);

}  // namespace upskill::skill
