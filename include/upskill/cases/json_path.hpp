#pragma once
// The path language of the json_path check: a JSONPath subset ($, .name, ['name'], [index]) or a
// JSON pointer (/a/0/b). Parsed when a test file loads, so typos surface before any model runs.
#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "upskill/core/json.hpp"

namespace upskill::cases {

using JsonPathToken = std::variant<std::string, std::size_t>;

// The tokens of `path`, or a message saying what is wrong and where (character offset).
Result<std::vector<JsonPathToken>> parse_json_path(std::string_view path);

// The value at the path, or nullptr when any step is missing.
const Json* resolve_json_path(const Json& root, const std::vector<JsonPathToken>& tokens);

}  // namespace upskill::cases
