// Codex's code mode: the tool calls a script of the `exec` tool makes, read from its text
// (docs/traces.md, "Codex").
#include "codex_code_mode.hpp"

#include <cctype>
#include <optional>

#include "upskill/core/text.hpp"

namespace upskill::trace::detail {

namespace {

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

std::size_t skip_spaces(std::string_view s, std::size_t at) {
  while (at < s.size() && std::isspace(static_cast<unsigned char>(s[at]))) ++at;
  return at;
}

// The index just past the string literal that starts at `at` ('"', '\'' or '`'), or npos when it
// does not end.
std::size_t string_end(std::string_view s, std::size_t at) {
  const char quote = s[at];
  for (std::size_t i = at + 1; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == quote) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// The index just past the bracketed value that starts at `at` ('{', '[' or '('), its strings
// skipped, or npos.
std::size_t bracket_end(std::string_view s, std::size_t at) {
  std::size_t depth = 0;
  for (std::size_t i = at; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"' || c == '\'' || c == '`') {
      const std::size_t end = string_end(s, i);
      if (end == std::string_view::npos) return end;
      i = end - 1;
    } else if (c == '{' || c == '[' || c == '(') {
      ++depth;
    } else if (c == '}' || c == ']' || c == ')') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// A string literal's value: a double-quoted one read as JSON, a template literal with nothing
// computed in it (`${…}`) with its escapes undone; nullopt for anything else.
std::optional<std::string> literal_value(std::string_view s, std::size_t at) {
  if (at >= s.size()) return std::nullopt;
  const std::size_t end = s[at] == '"' || s[at] == '`' ? string_end(s, at) : std::string_view::npos;
  if (end == std::string_view::npos) return std::nullopt;
  const std::string_view literal = s.substr(at, end - at);
  if (s[at] == '"') {
    const Json value = Json::parse(literal, nullptr, false);
    if (value.is_string()) return value.get<std::string>();
    return std::nullopt;
  }
  if (literal.find("${") != std::string_view::npos) return std::nullopt;
  std::string out;
  for (std::size_t i = 1; i + 1 < literal.size(); ++i) {
    if (literal[i] == '\\' && i + 2 < literal.size()) {
      const char c = literal[++i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    } else {
      out += literal[i];
    }
  }
  return out;
}

// The value a name was given in the script (`const patch = "…"`), when it was a literal.
std::optional<std::string> assigned_value(std::string_view script, std::string_view name) {
  for (std::string_view keyword : {"const ", "let ", "var "}) {
    const std::string decl = std::string(keyword) + std::string(name);
    for (std::size_t at = script.find(decl); at != std::string_view::npos;
         at = script.find(decl, at + 1)) {
      std::size_t i = at + decl.size();
      if (i < script.size() && is_ident_char(script[i])) continue;  // `patchText`, not `patch`
      i = skip_spaces(script, i);
      if (i >= script.size() || script[i] != '=') continue;
      if (auto value = literal_value(script, skip_spaces(script, i + 1))) return value;
    }
  }
  return std::nullopt;
}

// A JavaScript object literal written out (keys bare or quoted, strings in any quotes, trailing
// commas) as JSON; nullopt when it computes anything (a spread, a variable, a call).
std::optional<std::string> object_as_json(std::string_view s) {
  std::string out;
  bool key_next = false;  // after '{' or ',' inside an object: a bare word there is a key
  std::vector<char> open;
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '"' || c == '\'' || c == '`') {
      const std::size_t end = string_end(s, i);
      if (end == std::string_view::npos) return std::nullopt;
      if (c == '"') {
        out += s.substr(i, end - i);
      } else {
        if (c == '`' && s.substr(i, end - i).find("${") != std::string_view::npos)
          return std::nullopt;
        std::string value;
        for (std::size_t k = i + 1; k + 1 < end; ++k) {
          if (s[k] == '\\' && k + 2 < end) {
            const char e = s[++k];
            value += e == 'n' ? '\n' : e == 't' ? '\t' : e;
          } else {
            value += s[k];
          }
        }
        out += Json(value).dump();
      }
      i = end;
      key_next = false;
      continue;
    }
    if (is_ident_char(c) && !(c >= '0' && c <= '9') && c != '-') {
      std::size_t end = i;
      while (end < s.size() && is_ident_char(s[end])) ++end;
      const std::string_view word = s.substr(i, end - i);
      if (key_next) {
        out += Json(std::string(word)).dump();
      } else if (word == "true" || word == "false" || word == "null") {
        out += word;
      } else {
        return std::nullopt;  // a variable: computed
      }
      i = end;
      key_next = false;
      continue;
    }
    if (c == '.') return std::nullopt;  // a spread
    if (c == '{' || c == '[') open.push_back(c);
    if (c == '}' || c == ']') {
      if (open.empty()) return std::nullopt;
      open.pop_back();
      while (!out.empty() && out.back() == ',') out.pop_back();  // a trailing comma
    }
    key_next = c == '{' || (c == ',' && !open.empty() && open.back() == '{');
    out += c;
    ++i;
  }
  return out;
}

// One call's argument: an object written out as JSON, a string literal, or a name given one.
std::optional<Json> argument(std::string_view script, std::size_t at) {
  at = skip_spaces(script, at);
  if (at >= script.size()) return std::nullopt;
  if (script[at] == '{') {
    const std::size_t end = bracket_end(script, at);
    if (end == std::string_view::npos) return std::nullopt;
    const std::optional<std::string> json = object_as_json(script.substr(at, end - at));
    if (!json) return std::nullopt;
    Json value = Json::parse(*json, nullptr, false);
    if (value.is_object()) return value;
    return std::nullopt;
  }
  if (auto value = literal_value(script, at)) return Json(*value);
  std::size_t end = at;
  while (end < script.size() && is_ident_char(script[end])) ++end;
  if (end == at) return std::nullopt;
  if (auto value = assigned_value(script, script.substr(at, end - at))) return Json(*value);
  return std::nullopt;
}

}  // namespace

std::vector<ScriptCall> code_mode_calls(std::string_view script) {
  std::vector<ScriptCall> calls;
  static constexpr std::string_view kTools = "tools.";
  for (std::size_t at = script.find(kTools); at != std::string_view::npos;
       at = script.find(kTools, at + 1)) {
    if (at > 0 && is_ident_char(script[at - 1])) continue;  // `mytools.x(`
    std::size_t end = at + kTools.size();
    while (end < script.size() && is_ident_char(script[end])) ++end;
    const std::size_t open = skip_spaces(script, end);
    if (end == at + kTools.size() || open >= script.size() || script[open] != '(') continue;
    if (auto input = argument(script, open + 1))
      calls.push_back({std::string(script.substr(at + kTools.size(), end - at - kTools.size())),
                       std::move(*input)});
  }
  return calls;
}

ScriptOutput code_mode_output(std::string_view output) {
  ScriptOutput out;
  std::string_view rest = output;
  const std::string_view first = rest.substr(0, rest.find('\n'));
  if (!first.starts_with("Script ")) {
    out.text = std::string(output);
    return out;
  }
  out.failed = first.starts_with("Script failed");
  // The frame: its status line, "Wall time …", then "Output:".
  for (int line = 0; line < 3 && !rest.empty(); ++line) {
    const std::string_view l = rest.substr(0, rest.find('\n'));
    if (line > 0 && !l.starts_with("Wall time") && l != "Output:") break;
    rest.remove_prefix(std::min(rest.size(), l.size() + 1));
  }
  static constexpr std::string_view kError = "Script error:\n";
  if (rest.starts_with(kError)) rest.remove_prefix(kError.size());
  out.text = std::string(rest);
  return out;
}

}  // namespace upskill::trace::detail
