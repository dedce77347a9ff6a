// Text traces: fast-agent's delimited history, markdown transcripts with role markers, and plain
// text (the whole file as the user's document).
#include "text_formats.hpp"

#include <fmt/format.h>

#include <regex>

#include "../reading/builder.hpp"
#include "../reading/records.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace::detail {

void parse_fast_agent_text(LineSource& lines, Trace& trace) {
  Builder b(trace);
  trace.format_version = "fast-agent (delimited)";
  Turn* current = nullptr;
  bool in_resource = false;
  std::string resource;
  std::string line;
  auto end_resource = [&] {
    if (!in_resource) return;
    in_resource = false;
    const Json r = Json::parse(resource, nullptr, false);
    std::string shown = "[resource]";
    if (r.is_object()) {
      const Json inner = r.value("resource", r);
      shown = fmt::format("[resource {}]\n{}", inner.value("uri", ""), inner.value("text", ""));
    }
    if (current) Builder::append(current->text, shown, kMaxText);
    resource.clear();
  };
  while (lines.next(line)) {
    ++trace.stats.lines;
    const std::string t = text::trim(line);
    if (t == "---USER" || t == "---ASSISTANT") {
      end_resource();
      current = &b.add_turn(t == "---USER" ? Role::user : Role::assistant);
      ++trace.stats.records;
      continue;
    }
    if (t == "---RESOURCE") {
      end_resource();
      in_resource = true;
      continue;
    }
    if (in_resource) {
      resource += line + "\n";
      continue;
    }
    if (!current) {
      if (!t.empty()) ++trace.stats.skipped["text before the first delimiter"];
      continue;
    }
    current->text += line + "\n";
  }
  end_resource();
  for (Turn& turn : trace.turns) {
    turn.text = bound_text(text::trim(turn.text), kMaxText);
    turn.meta = turn.role == Role::user && is_injected_user_text(turn.text);
  }
}

namespace {

// "## User", "**Assistant:**", "Human: ...", "### 🤖 Assistant" — the role a line announces,
// and the text after the marker on the same line.
std::optional<std::pair<Role, std::string>> role_marker(const std::string& line) {
  static const std::regex heading(
      R"(^#{1,6}\s*(?:[^\w\s]+\s*)?(User|Human|You|Me|Prompt|Assistant|AI|Claude|Codex|Model|Agent|Bot|GPT|System)\b\s*:?\s*(.*)$)",
      std::regex::icase);
  static const std::regex bold(
      R"(^\*\*(User|Human|You|Assistant|AI|Claude|Codex|Model|Agent|System)\s*:?\*\*\s*:?\s*(.*)$)",
      std::regex::icase);
  static const std::regex prefix(R"(^(User|Human|Assistant|AI|Claude|System):\s+(.*)$)");
  std::smatch m;
  if (!std::regex_match(line, m, heading) && !std::regex_match(line, m, bold) &&
      !std::regex_match(line, m, prefix))
    return std::nullopt;
  const std::string who = text::to_lower_ascii(m[1].str());
  Role role = Role::assistant;
  if (who == "user" || who == "human" || who == "you" || who == "me" || who == "prompt")
    role = Role::user;
  else if (who == "system")
    role = Role::system;
  return std::make_pair(role, m[2].str());
}

}  // namespace

bool has_role_marker(const std::string& line) {
  return role_marker(line).has_value();
}

void parse_markdown(LineSource& lines, Trace& trace) {
  Builder b(trace);
  Turn* current = nullptr;
  bool in_fence = false;
  bool aider = false;
  bool role_markers = false;
  std::string line;
  while (lines.next(line)) {
    ++trace.stats.lines;
    if (text::trim(line).starts_with("```")) in_fence = !in_fence;
    if (!in_fence) {
      if (auto marker = role_marker(line)) {
        role_markers = true;
        current = &b.add_turn(marker->first);
        current->meta = marker->first == Role::system;
        current->text = marker->second.empty() ? "" : marker->second + "\n";
        ++trace.stats.records;
        continue;
      }
      // aider's chat history: "#### " lines are the user's prompts (when no role markers are used).
      if (!role_markers && line.starts_with("#### ")) {
        aider = true;
        if (!current || current->role != Role::user) current = &b.add_turn(Role::user);
        current->text += line.substr(5) + "\n";
        ++trace.stats.records;
        continue;
      }
      if (aider && current && current->role == Role::user && !text::trim(line).empty()) {
        current = &b.add_turn(Role::assistant);
      }
    }
    if (!current) {
      // Text before the first marker: the document's preface (a title), not a user prompt.
      current = &b.add_turn(Role::user);
      current->meta = true;
    }
    current->text += line + "\n";
  }
  for (Turn& turn : trace.turns) turn.text = bound_text(text::trim(turn.text), kMaxText);
}

void parse_plain_text(LineSource& lines, Trace& trace) {
  Builder b(trace);
  std::string all;
  std::string line;
  while (lines.next(line)) {
    ++trace.stats.lines;
    all += line + "\n";
    // Bounded: a huge text keeps its head and tail.
    if (all.size() > 4 * kMaxText) all = bound_text(all, 2 * kMaxText);
  }
  const std::string text = bound_text(text::trim(all), 2 * kMaxText);
  if (text.empty()) return;
  b.add_turn(Role::user).text = text;
  trace.stats.records = 1;
}

}  // namespace upskill::trace::detail
