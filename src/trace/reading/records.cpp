// Reading one record of a trace (see records.hpp): lenient fields, malformed records counted and
// noted, tool arguments and content decoded, inputs bounded.
#include "records.hpp"

#include <fmt/format.h>

#include "builder.hpp"
#include "upskill/core/text.hpp"
#include "values.hpp"

namespace upskill::trace::detail {

std::string str_field(const Json& object, const char* key) {
  if (!object.is_object()) return {};
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool flag_field(const Json& object, const char* key) {
  if (!object.is_object()) return false;
  const auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

void record_failed(Trace& trace, const std::string& where, const char* what) {
  ++trace.stats.malformed;
  // nlohmann's messages start with "[json.exception.type_error.302] "; the rest says what it is.
  std::string reason = what;
  if (reason.starts_with("[json.exception.")) {
    const auto end = reason.find("] ");
    if (end != std::string::npos) reason = reason.substr(end + 2);
  }
  trace.stats.note(fmt::format("{}: a field of an unexpected type or shape ({}); record skipped",
                               where, reason));
}

bool count_record(const std::string& name, const DecodedLine& line, Trace& trace) {
  ++trace.stats.lines;
  if (line.repaired && line.is_record) {
    trace.stats.repaired_surrogates += line.repaired;
    trace.stats.note(
        fmt::format("{}:{}: {} lone surrogate escape(s) (a string cut inside a "
                    "character) read as U+FFFD",
                    name, line.line, line.repaired));
  }
  if (line.is_record) return true;
  if (line.cut_off) {
    trace.stats.truncated_last_line = true;
    trace.stats.note(fmt::format("{}:{}: the last line is cut off (ignored)", name, line.line));
  } else {
    ++trace.stats.malformed;
    trace.stats.note(fmt::format("{}:{}: not a JSON object (skipped)", name, line.line));
  }
  return false;
}

bool read_record(const LineSource& lines, const std::string& line, Trace& trace, Json& record) {
  if (line.find_first_not_of(" \t\r\n") == std::string::npos) return false;
  DecodedLine d;
  d.line = lines.line_number();
  d.is_record = decode_record(line, d.record, &d.repaired);
  d.cut_off = !d.is_record && lines.at_end() && !lines.last_line_complete();
  const bool ok = count_record(lines.name(), d, trace);
  record = std::move(d.record);
  return ok;
}

Json gather_records(LineSource& lines, Trace& trace) {
  Json out = Json::array();
  std::string line;
  while (lines.next(line)) {
    Json rec;
    if (read_record(lines, line, trace, rec)) out.push_back(bound_input(std::move(rec)));
  }
  return out;
}

bool is_message(const Json& m, std::size_t index, Trace& trace) {
  if (m.is_object() && m.contains("role")) return true;
  ++trace.stats.malformed;
  trace.stats.note(fmt::format("messages[{}]: not a message object (skipped)", index));
  return false;
}

Json decode_arguments(const Json& arguments) {
  if (!arguments.is_string()) return arguments;
  const std::string& s = arguments.get_ref<const std::string&>();
  Json parsed = parse_json_lenient(s);
  if (parsed.is_discarded()) return arguments;
  return parsed;
}

std::string content_text(const Json& content) {
  return content_text_of(JsonValue(content));
}

Json bound_input(Json input) {
  if (input.is_string()) {
    if (input.get_ref<const std::string&>().size() > kMaxFileInput)
      input = bound_text(input.get<std::string>(), kMaxFileInput);
    return input;
  }
  if (input.is_object() || input.is_array())
    for (auto& v : input) v = bound_input(std::move(v));
  return input;
}

bool is_injected_user_text(std::string_view text) {
  const std::string t = text::trim(text);
  for (const char* prefix : {"<environment_context>",
                             "<session_context>",
                             "<user_instructions>",
                             "# AGENTS.md instructions",
                             "<permissions instructions>",
                             "<turn_aborted>",
                             "<user_shell_command>",
                             "<local-command-stdout>",
                             "<local-command-stderr>",
                             "<bash-input>",
                             "<bash-stdout>",
                             "<bash-stderr>",  // Claude Code's bash mode ("! cmd")
                             "<command-name>",
                             "<command-message>",
                             "<system-reminder>",
                             "<task-notification>",
                             "<ide_selection>",
                             "<ide_opened_file>",
                             "<ide_diagnostics>",
                             "Caveat: The messages below were generated",
                             "[Request interrupted by user"})
    if (t.starts_with(prefix)) return true;
  return false;
}

}  // namespace upskill::trace::detail
