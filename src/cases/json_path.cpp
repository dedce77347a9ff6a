// The path language of the json_path check: a JSONPath subset ($, .name, ['name'], [index]) or a
// JSON pointer (/a/0/b) (see json_path.hpp).
#include "upskill/cases/json_path.hpp"

#include <fmt/format.h>

#include <cctype>

namespace upskill::cases {

namespace {

Result<std::vector<JsonPathToken>> parse_pointer(std::string_view path) {
  std::vector<JsonPathToken> tokens;
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    std::string token;
    for (std::size_t i = start; i < slash; ++i) {
      if (path[i] == '~') {
        if (i + 1 >= slash || (path[i + 1] != '0' && path[i + 1] != '1'))
          return fail(
              Error::usage(fmt::format("invalid JSON pointer '{}': '~' must be followed by 0 or 1 "
                                       "(character {})",
                                       path, i + 1)));
        token.push_back(path[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        token.push_back(path[i]);
      }
    }
    tokens.emplace_back(std::move(token));
    start = slash + 1;
  }
  return tokens;
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
         (static_cast<unsigned char>(c) & 0x80);
}

}  // namespace

Result<std::vector<JsonPathToken>> parse_json_path(std::string_view path) {
  if (path.empty()) return fail(Error::usage("empty path"));
  if (path.front() == '/') return parse_pointer(path);
  std::vector<JsonPathToken> tokens;
  std::size_t i = 0;
  auto bad = [&](std::string_view what) {
    return fail(
        Error::usage(fmt::format("invalid path '{}': {} at character {}", path, what, i + 1)));
  };
  if (path[0] == '$') ++i;
  bool first = true;
  while (i < path.size()) {
    const char c = path[i];
    if (c == '.' || (first && i == 0 && is_identifier_char(c))) {
      if (c == '.') ++i;
      const std::size_t start = i;
      while (i < path.size() && is_identifier_char(path[i])) ++i;
      if (i == start) return bad("expected a member name");
      tokens.emplace_back(std::string(path.substr(start, i - start)));
    } else if (c == '[') {
      ++i;
      if (i < path.size() && (path[i] == '\'' || path[i] == '"')) {
        const char quote = path[i++];
        const std::size_t start = i;
        while (i < path.size() && path[i] != quote) ++i;
        if (i >= path.size()) return bad("unterminated quoted name");
        tokens.emplace_back(std::string(path.substr(start, i - start)));
        ++i;
      } else {
        const std::size_t start = i;
        while (i < path.size() && std::isdigit(static_cast<unsigned char>(path[i]))) ++i;
        if (i == start) return bad("expected an index or a quoted name");
        tokens.emplace_back(
            static_cast<std::size_t>(std::stoull(std::string(path.substr(start, i - start)))));
      }
      if (i >= path.size() || path[i] != ']') return bad("expected ']'");
      ++i;
    } else {
      return bad(fmt::format("unexpected '{}'", c));
    }
    first = false;
  }
  return tokens;
}

const Json* resolve_json_path(const Json& root, const std::vector<JsonPathToken>& tokens) {
  const Json* current = &root;
  for (const auto& token : tokens) {
    if (const auto* name = std::get_if<std::string>(&token)) {
      if (current->is_object()) {
        auto it = current->find(*name);
        if (it == current->end()) return nullptr;
        current = &*it;
      } else if (current->is_array() && !name->empty() &&
                 name->find_first_not_of("0123456789") == std::string::npos) {
        // JSON pointer tokens are strings; a numeric one indexes an array.
        const std::size_t index = std::stoull(*name);
        if (index >= current->size()) return nullptr;
        current = &(*current)[index];
      } else {
        return nullptr;
      }
    } else {
      const std::size_t index = std::get<std::size_t>(token);
      if (!current->is_array() || index >= current->size()) return nullptr;
      current = &(*current)[index];
    }
  }
  return current;
}

}  // namespace upskill::cases
