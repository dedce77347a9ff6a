#pragma once
// JSON documents with source positions. nlohmann_json validates and builds the value; a second,
// cheap pass records where every value and key starts, so schema errors found later can name the
// line and column in the user's file.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "upskill/core/error.hpp"
#include "upskill/core/text.hpp"

namespace upskill {

using Json = nlohmann::ordered_json;  // keeps key order, so files round-trip as written

class JsonSourceMap {
 public:
  JsonSourceMap() = default;
  // `text` must be valid JSON (parse it first).
  static JsonSourceMap build(std::string_view text);

  // Position of the value at a JSON pointer ("" is the root, "/cases/0/input"). Unknown pointers
  // fall back to the nearest known ancestor.
  text::LineColumn value(const std::string& pointer) const;
  // Position of the key naming the member at `pointer` (falls back to value()).
  text::LineColumn key(const std::string& pointer) const;

 private:
  std::unordered_map<std::string, text::LineColumn> values_;
  std::unordered_map<std::string, text::LineColumn> keys_;
  friend class JsonSourceScanner;
};

// A parsed document: the value, where it came from, and where each part of it is.
struct JsonDocument {
  Json value;
  std::string file;
  JsonSourceMap positions;

  SourceLocation at(const std::string& pointer) const;
  SourceLocation at_key(const std::string& pointer) const;
};

// Parses JSON text; a syntax error names file:line:col and what was wrong.
Result<JsonDocument> parse_json_document(std::string_view text, const std::string& file);

// JSON text with every lone surrogate escape ("\ud83d" not followed by a low surrogate, or a low
// one alone) replaced by "\ufffd", and how many were; nullopt when there is none. Such escapes are
// valid JSON (RFC 8259 allows them; Python's json.loads reads them) but name no character, so
// UTF-8 readers (simdjson, nlohmann_json) refuse the whole text: real traces have them where a
// string was cut inside an emoji.
struct RepairedJson {
  std::string text;
  std::size_t replaced = 0;
};
std::optional<RepairedJson> repair_lone_surrogates(std::string_view text);

// nlohmann_json's parse, discarded on failure, retried once with lone surrogate escapes replaced
// (repair_lone_surrogates); `replaced` counts them when the repaired text parsed.
Json parse_json_lenient(std::string_view text, std::size_t* replaced = nullptr);

// Appends one reference token to a JSON pointer, escaping '~' and '/'.
std::string json_pointer_append(const std::string& pointer, std::string_view token);
std::string json_pointer_append(const std::string& pointer, std::size_t index);

// "string", "number", "object", ... for messages.
std::string json_type_name(const Json& value);

}  // namespace upskill
