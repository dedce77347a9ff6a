// JSON documents with the line and column of every value, for messages that name them (see
// json.hpp).
#include "upskill/core/json.hpp"

#include <fmt/format.h>

namespace upskill {

std::string json_pointer_append(const std::string& pointer, std::string_view token) {
  std::string out = pointer + "/";
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out.push_back(c);
  }
  return out;
}

std::string json_pointer_append(const std::string& pointer, std::size_t index) {
  return pointer + "/" + std::to_string(index);
}

// Walks text that nlohmann has already accepted, so it can assume well-formed JSON.
class JsonSourceScanner {
 public:
  JsonSourceScanner(std::string_view text, JsonSourceMap& map) : text_(text), map_(map) {}

  void scan() {
    if (text_.starts_with("\xEF\xBB\xBF")) pos_ = 3;  // nlohmann skips a UTF-8 BOM too
    skip_ws();
    value("");
  }

 private:
  std::string_view text_;
  JsonSourceMap& map_;
  std::size_t pos_ = 0;
  text::LineColumn lc_{};

  void advance() {
    if (pos_ >= text_.size()) return;
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (c == '\n') {
      ++lc_.line;
      lc_.column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++lc_.column;
    }
    ++pos_;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < text_.size() &&
           (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      advance();
  }

  std::string string_token() {
    const std::size_t start = pos_;
    advance();  // opening quote
    while (pos_ < text_.size() && peek() != '"') {
      if (peek() == '\\') advance();
      advance();
    }
    advance();  // closing quote
    return std::string(text_.substr(start, pos_ - start));
  }

  void value(const std::string& pointer) {
    map_.values_[pointer] = lc_;
    const char c = peek();
    if (c == '{') {
      advance();
      skip_ws();
      while (pos_ < text_.size() && peek() != '}') {
        const text::LineColumn key_pos = lc_;
        const std::string raw = string_token();
        const std::string key = nlohmann::json::parse(raw).get<std::string>();
        const std::string child = json_pointer_append(pointer, key);
        map_.keys_[child] = key_pos;
        skip_ws();
        advance();  // ':'
        skip_ws();
        value(child);
        skip_ws();
        if (peek() == ',') {
          advance();
          skip_ws();
        }
      }
      advance();
    } else if (c == '[') {
      advance();
      skip_ws();
      std::size_t index = 0;
      while (pos_ < text_.size() && peek() != ']') {
        value(json_pointer_append(pointer, index++));
        skip_ws();
        if (peek() == ',') {
          advance();
          skip_ws();
        }
      }
      advance();
    } else if (c == '"') {
      string_token();
    } else {
      while (pos_ < text_.size() && peek() != ',' && peek() != '}' && peek() != ']' &&
             peek() != ' ' && peek() != '\n' && peek() != '\r' && peek() != '\t')
        advance();
    }
  }
};

JsonSourceMap JsonSourceMap::build(std::string_view text) {
  JsonSourceMap map;
  JsonSourceScanner(text, map).scan();
  return map;
}

text::LineColumn JsonSourceMap::value(const std::string& pointer) const {
  std::string p = pointer;
  while (true) {
    if (auto it = values_.find(p); it != values_.end()) return it->second;
    if (p.empty()) return {};
    p = p.substr(0, p.rfind('/'));
  }
}

text::LineColumn JsonSourceMap::key(const std::string& pointer) const {
  if (auto it = keys_.find(pointer); it != keys_.end()) return it->second;
  return value(pointer);
}

SourceLocation JsonDocument::at(const std::string& pointer) const {
  const auto lc = positions.value(pointer);
  return {file, lc.line, lc.column};
}

SourceLocation JsonDocument::at_key(const std::string& pointer) const {
  const auto lc = positions.key(pointer);
  return {file, lc.line, lc.column};
}

namespace {

// Where the text first nests deeper than `most` arrays and objects, if it does (outside strings).
std::optional<std::size_t> too_deep(std::string_view text, int most) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > most) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

constexpr int kMostDepth = 512;

}  // namespace

Result<JsonDocument> parse_json_document(std::string_view text, const std::string& file) {
  JsonDocument doc;
  doc.file = file;
  // Deeper than any file upskill reads, and deep enough to exhaust the stack of a recursive reader.
  if (auto at = too_deep(text, kMostDepth)) {
    const auto lc = text::line_column_at(text, *at);
    return fail(Error::at({file, lc.line, lc.column},
                          fmt::format("invalid JSON: nested deeper than {} levels", kMostDepth)));
  }
  try {
    doc.value = Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::out_of_range& e) {  // a number too large for a double: 1e309
    return fail(Error::at({file, 0, 0}, std::string("invalid JSON: ") + e.what()));
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based offset of the last character read.
    const std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    const auto lc = text::line_column_at(text, offset);
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: ".
    if (auto colon = what.find(": "); colon != std::string::npos && what.rfind("[json.", 0) == 0)
      what = what.substr(colon + 2);
    return fail(Error::at({file, lc.line, lc.column}, "invalid JSON: " + what));
  }
  doc.positions = JsonSourceMap::build(text);
  return doc;
}

std::string json_type_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::string:
      return "string";
    case Json::value_t::array:
      return "array";
    case Json::value_t::object:
      return "object";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "integer";
    case Json::value_t::number_float:
      return "number";
    default:
      return "value";
  }
}

}  // namespace upskill

namespace upskill {

namespace {

// The value of the four hex digits at `at`, or -1.
int hex4(std::string_view s, std::size_t at) {
  if (at + 4 > s.size()) return -1;
  int v = 0;
  for (std::size_t i = at; i < at + 4; ++i) {
    const char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= c - '0';
    else if (c >= 'a' && c <= 'f')
      v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      v |= c - 'A' + 10;
    else
      return -1;
  }
  return v;
}

}  // namespace

std::optional<RepairedJson> repair_lone_surrogates(std::string_view text) {
  if (text.find("\\u") == std::string_view::npos) return std::nullopt;
  RepairedJson out;
  out.text.reserve(text.size());
  bool in_string = false;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (!in_string) {
      in_string = c == '"';
      out.text.push_back(c);
      ++i;
      continue;
    }
    if (c == '"') {
      in_string = false;
      out.text.push_back(c);
      ++i;
      continue;
    }
    if (c != '\\' || i + 1 >= text.size()) {
      out.text.push_back(c);
      ++i;
      continue;
    }
    if (text[i + 1] != 'u') {  // any other escape, the backslash of a "\\" among them
      out.text.append(text.substr(i, 2));
      i += 2;
      continue;
    }
    const int unit = hex4(text, i + 2);
    const bool high = unit >= 0xD800 && unit <= 0xDBFF;
    const bool low = unit >= 0xDC00 && unit <= 0xDFFF;
    if (high && i + 7 < text.size() && text[i + 6] == '\\' && text[i + 7] == 'u') {
      const int next = hex4(text, i + 8);
      if (next >= 0xDC00 && next <= 0xDFFF) {  // a pair: one character
        out.text.append(text.substr(i, 12));
        i += 12;
        continue;
      }
    }
    if (high || low) {
      out.text.append("\\ufffd");
      ++out.replaced;
    } else {
      out.text.append(text.substr(i, 6));  // substr stops at the end
    }
    i += 6;
  }
  if (out.replaced == 0) return std::nullopt;
  return out;
}

Json parse_json_lenient(std::string_view text, std::size_t* replaced) {
  Json j = Json::parse(text, nullptr, false);
  if (!j.is_discarded()) return j;
  auto repaired = repair_lone_surrogates(text);
  if (!repaired) return j;
  Json again = Json::parse(repaired->text, nullptr, false);
  if (replaced && !again.is_discarded()) *replaced += repaired->replaced;
  return again;
}

}  // namespace upskill
