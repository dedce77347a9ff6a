#pragma once
// Internal to the trace module: format detection (detect.cpp) by the registry's rules — from the
// first 64 KB (detect_format and detect_json_document in upskill/trace/trace.hpp), from one
// object, and settled once a document's whole text is read.
#include <string>
#include <string_view>
#include <vector>

#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

// The text after a UTF-8 byte-order mark and leading white space.
std::string_view skip_bom_and_space(std::string_view s);

// JSON lines, judged by their first records.
Detection detect_jsonl(const std::vector<Json>& records);
// A single object: one record of a line format whose one object is a record, else a document.
Detection detect_one_object(const Json& object);
// A document format detected from the head, decided with the whole text: the kind of the JSON
// value — or JSON lines whose first line was longer than the head, judged on their first whole
// lines. `doc` receives the parsed value (discarded when the text is not one JSON value).
// `repaired` counts lone surrogate escapes read as U+FFFD (parse_json_lenient).
Detection settle_document(const std::string& all, Detection tentative, Json& doc,
                          std::size_t* repaired = nullptr);

}  // namespace upskill::trace::detail
