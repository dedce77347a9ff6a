// Format detection (docs/traces.md, "Detection", applied to the first 64 KB): the shape of the
// text — JSON lines, one JSON document, or text — is judged here, and the registry's rules
// (registry.cpp) decide the format.
#include "detect.hpp"

#include <sstream>

#include "../reading/records.hpp"
#include "registry.hpp"
#include "text_formats.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace {

namespace detail {

std::string_view skip_bom_and_space(std::string_view s) {
  if (s.starts_with("\xEF\xBB\xBF")) s.remove_prefix(3);
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\n' || s.front() == '\r' || s.front() == '\t'))
    s.remove_prefix(1);
  return s;
}

namespace {

// The message list of a JSON document, and what its messages show.
DocumentShape document_shape(const Json& doc) {
  DocumentShape shape;
  if (doc.is_array())
    shape.messages = &doc;
  else if (doc.is_object() && doc.contains("messages") && doc["messages"].is_array())
    shape.messages = &doc["messages"];
  if (!shape.messages) return shape;
  for (const auto& m : *shape.messages) {
    if (!m.is_object()) continue;
    if (!m.contains("role") && is_responses_item_type(str_field(m, "type")))
      shape.response_items = true;
    if ((m.contains("tool_calls") && m["tool_calls"].is_object()) || m.contains("tool_results") ||
        m.contains("channels"))
      shape.fast_agent_keys = true;
    if ((m.contains("tool_calls") && m["tool_calls"].is_array()) || m.contains("tool_call_id"))
      shape.openai_keys = true;
    if (m.contains("type") && m["type"] == "message") shape.response_items = true;
    const Json content = m.value("content", Json());
    if (content.is_string()) shape.string_content = true;
    if (content.is_array())
      for (const auto& block : content) {
        const std::string type = str_field(block, "type");
        if (type == "tool_use" || type == "tool_result" || type == "thinking")
          shape.anthropic_blocks = true;
        if (type == "input_text" || type == "output_text") shape.response_items = true;
        if (type == "text") shape.text_blocks = true;
      }
  }
  return shape;
}

bool is_export_marker(const std::string& line) {
  return line.starts_with("⏺ ") || line.starts_with("● ") ||
         (line.find("⎿") != std::string::npos && text::trim(line).starts_with("⎿"));
}

TextShape text_shape(std::string_view s) {
  TextShape shape;
  for (const std::string& line : text::split_lines(s)) {
    if (line.find("Claude Code") != std::string::npos && line.find("╭") != std::string::npos)
      shape.banner = true;
    if (is_export_marker(line)) ++shape.export_markers;
    const std::string t = text::trim(line);
    if (t == "---USER" || t == "---ASSISTANT") shape.delimited = true;
    if (has_role_marker(line)) shape.roles = true;
  }
  return shape;
}

}  // namespace

Detection detect_jsonl(const std::vector<Json>& records) {
  const auto rules = line_rules();
  const LineRule* best = nullptr;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const std::string type = str_field(records[i], "type");  // a "type" of another kind is none
    for (const LineRule& rule : rules)
      if (rule.claims(records[i], i, type)) {
        if (!best || rule.rank < best->rank) best = &rule;
        break;
      }
  }
  if (!best) return {Format::text, "JSON lines of an unknown kind (read as plain text)"};
  return {best->format, std::string(best->reason)};
}

Detection detect_one_object(const Json& object) {
  const Detection one = detect_jsonl({object});
  if (entry_of(one.format).one_object_is_a_record) return one;
  return detect_json_document(object);
}

Detection settle_document(const std::string& all, Detection tentative, Json& doc,
                          std::size_t* repaired) {
  doc = parse_json_lenient(all, repaired);
  if (!doc.is_discarded()) return detect_json_document(doc);
  std::vector<Json> records;
  std::istringstream lines(all);
  std::string line;
  while (records.size() < 20 && std::getline(lines, line)) {
    Json r = parse_json_lenient(line);
    if (!r.is_discarded() && r.is_object()) records.push_back(std::move(r));
  }
  return records.size() >= 2 ? detect_jsonl(records) : tentative;
}

}  // namespace detail

Detection detect_json_document(const Json& doc) {
  const detail::DocumentShape shape = detail::document_shape(doc);
  for (const detail::DocumentRule& rule : detail::document_rules())
    if (rule.matches(doc, shape)) return {rule.format, std::string(rule.reason)};
  return {Format::openai_chat, "a message list"};
}

Detection detect_format(std::string_view head, bool whole_file) {
  const std::string_view s = detail::skip_bom_and_space(head);
  if (s.empty()) return {Format::text, "empty"};
  if (s.front() == '[' || s.front() == '{') {
    // JSON lines when the first line is a whole object and more follows; bad lines in between
    // and a line cut at 64 KB are tolerated.
    std::vector<Json> records;
    std::size_t pos = 0;
    bool first_line = true, jsonl = false;
    while (pos < s.size() && records.size() < 20) {
      const std::size_t end = s.find('\n', pos);
      const bool last = end == std::string_view::npos;
      const std::string line = text::trim(s.substr(pos, last ? s.npos : end - pos));
      pos = last ? s.size() : end + 1;
      if (line.empty()) continue;
      Json r = parse_json_lenient(line);
      if (first_line) {
        first_line = false;
        if (r.is_discarded() || !r.is_object()) break;  // a document spread over lines
        jsonl = !last && text::trim(s.substr(pos)).size() > 0;
        if (!jsonl && !whole_file) jsonl = true;  // one object, then the rest past 64 KB
      }
      if (!r.is_discarded() && r.is_object()) records.push_back(std::move(r));
    }
    if (jsonl) {
      Detection d = detail::detect_jsonl(records);
      d.json_lines = true;
      return d;
    }
    if (records.size() == 1 && whole_file) return detail::detect_one_object(records.front());
    if (whole_file) {
      Json doc = parse_json_lenient(s);
      if (!doc.is_discarded()) return detect_json_document(doc);
    }
    return {Format::openai_chat, "a JSON document (kind decided once it is read whole)"};
  }
  const detail::TextShape shape = detail::text_shape(s);
  for (const detail::TextRule& rule : detail::text_rules())
    if (rule.matches(shape)) return {rule.format, std::string(rule.reason)};
  return {Format::text, "no known markers"};
}

}  // namespace upskill::trace
