#pragma once
// Internal to the trace module: the format registry (registry.cpp) — for each format its name, the
// reader that reads it, and the rules that detect it (docs/traces.md, "Detection"); detect.cpp
// runs the rules. A format is added here and nowhere else.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "../reading/line_source.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

// A format's entry. It has one reader: line by line, or the whole text as one JSON document (JSON
// lines of such a format are gathered into an array first).
struct FormatEntry {
  Format format;
  std::string_view name;
  void (*read_lines)(LineSource& lines, Trace& trace) = nullptr;
  void (*read_document)(const Json& doc, Trace& trace) = nullptr;
  // A file holding one JSON object of this format is one record of it, not a document.
  bool one_object_is_a_record = false;
  // Its files are shown as fenced blocks in the text, not as tool calls (the analysis reads them
  // from there).
  bool files_as_text = false;
};
// The entries, in the order of Format::index().
std::span<const FormatEntry> format_entries();
const FormatEntry& entry_of(Format format);

// JSON lines: each record is claimed by the first rule, in this order, that claims it; the file is
// then read in the format of the claiming rule with the lowest rank.
struct LineRule {
  Format format;
  int rank;
  std::string_view reason;
  // `type` is the record's "type" when it is a string, else "".
  bool (*claims)(const Json& record, std::size_t index, const std::string& type);
};
std::span<const LineRule> line_rules();

// What a JSON document's message list shows (detect.cpp gathers it once for every rule).
struct DocumentShape {
  const Json* messages = nullptr;  // the list: the document itself or its "messages"
  bool anthropic_blocks = false, fast_agent_keys = false, openai_keys = false,
       response_items = false, text_blocks = false, string_content = false;
};
// JSON documents: the first rule that matches decides.
struct DocumentRule {
  Format format;
  std::string_view reason;
  bool (*matches)(const Json& doc, const DocumentShape& shape);
};
std::span<const DocumentRule> document_rules();

// What the first 64 KB of a text show.
struct TextShape {
  bool banner = false;     // the Claude Code banner
  int export_markers = 0;  // lines starting with ⏺ / ● or a ⎿ result
  bool delimited = false;  // ---USER / ---ASSISTANT
  bool roles = false;      // markdown role markers
};
// Text: the first rule that matches decides.
struct TextRule {
  Format format;
  std::string_view reason;
  bool (*matches)(const TextShape& shape);
};
std::span<const TextRule> text_rules();

// Responses API item types (a JSONL record or a message-list entry of one of these is an item).
bool is_responses_item_type(const std::string& type);

}  // namespace upskill::trace::detail
