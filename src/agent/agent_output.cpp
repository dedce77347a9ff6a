// What the coding-agent adapters share (see agent_output.hpp).
#include "agent_output.hpp"

#include <algorithm>

#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"

namespace upskill::agent::output {

namespace fs = std::filesystem;

bool has_object(const Json& j, const char* key) {
  const Json* f = lenient::field(j, key);
  return f && f->is_object();
}

std::vector<Json> json_lines(std::string_view text) {
  std::vector<Json> out;
  for (const auto& line : text::split_lines(std::string(text))) {
    const std::string t = text::trim(line);
    if (!t.starts_with("{")) continue;
    try {
      Json j = Json::parse(t);
      if (j.is_object()) out.push_back(std::move(j));
    } catch (const nlohmann::json::exception&) {
    }
  }
  return out;
}

void read_tool_calls(CliReading& r, std::string_view text, trace::Format format) {
  trace::ParseOptions options;
  options.format = format;
  options.subagents = false;
  auto parsed = trace::parse_trace_text(text, "agent transcript", options);
  if (!parsed) return;
  int turns = 0;
  for (const auto& turn : parsed->turns) {
    if (turn.role != trace::Role::assistant) continue;
    ++turns;
    for (const auto& call : turn.tool_calls) {
      ++r.tool_calls;
      ++r.tool_call_map[call.name];
      r.tool_inputs.push_back(
          call.name + " " +
          (call.input.is_string() ? call.input.get<std::string>() : call.input.dump()));
    }
  }
  if (r.turns == 0) r.turns = turns;
  if (r.model.empty() && !parsed->models.empty()) r.model = parsed->models.front();
}

void read_text(CliReading& r, std::string_view text) {
  r.answer = text::trim(text);
  r.turns = 1;
}

std::string without_v1(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.ends_with("/v1")) url.resize(url.size() - 3);
  return url;
}

void drop_unset(CliAgent& a, std::initializer_list<const char*> names) {
  for (const char* name : names) std::erase(a.unset_env, std::string(name));
}

std::string first_session(const fs::path& root,
                          const std::function<bool(const std::string& name)>& candidate,
                          const std::function<bool(const std::string& text)>& accept) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (it.depth() > 4) it.disable_recursion_pending();
    const std::string name = it->path().filename().string();
    if (!name.ends_with(".jsonl") || !it->is_regular_file(ec) || !candidate(name)) continue;
    auto text = files::read_text(it->path());
    if (text && accept(*text)) return *text;
  }
  return {};
}

}  // namespace upskill::agent::output
