// Gemini CLI as a student (docs/agents.md): `gemini --output-format json`, its skills in
// .gemini/skills, its session in ~/.gemini/tmp.
#include <fmt/format.h>

#include <algorithm>

#include "../adapter.hpp"
#include "../agent_output.hpp"
#include "upskill/core/text.hpp"

namespace upskill::agent::agents {

namespace {

namespace fs = std::filesystem;
using namespace output;

CliAgent settings() {
  return {
      .name = "gemini",
      .command = "gemini",
      // The task on stdin (not a terminal: it answers it and exits).
      .argv = {"--output-format", "json", "--yolo"},
      // The trial's workspace is trusted: in an untrusted folder --yolo falls back to asking, and
      // nobody answers.
      .env = {{"GEMINI_CLI_TRUST_WORKSPACE", "true"}},
      .pass_env = {"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT",
                   "GOOGLE_GENAI_USE_VERTEXAI"},
      .skills_dir = ".gemini/skills",
      .state_paths = {".gemini"},
      .output = "gemini",
      .login_hint = "run `gemini` once to log in, or set GEMINI_API_KEY",
  };
}

Status point_at(CliAgent& a, const llm::ResolvedModel& m, int) {
  a.env["GOOGLE_GEMINI_BASE_URL"] = without_v1(m.base_url);
  a.secret_env["GEMINI_API_KEY"] = m.api_key.reveal();
  drop_unset(a, {"GEMINI_API_KEY"});
  a.args.insert(a.args.end(), {"-m", m.model});
  // A base URL alone selects its "gateway" sign-in, which its non-interactive mode refuses; the
  // API key sign-in honours the base URL too. No usage statistics leave.
  a.home_files[".gemini/settings.json"] =
      Json{{"security", {{"auth", {{"selectedType", "gemini-api-key"}}}}},
           {"privacy", {{"usageStatisticsEnabled", false}}},
           {"general", {{"disableAutoUpdate", true}, {"disableUpdateNag", true}}}}
          .dump(2);
  return {};
}

// One JSON object, {response, stats: {models: {M: {tokens}}, tools: {totalCalls, byName}},
// error?}. Its stderr comes first in what upskill keeps (warnings, an error's stack trace with
// braces of its own): the object is the last '{' that parses to the last '}' — one that starts a
// line first (it prints the object indented, one key per line), then any; a few tries of each
// (every try parses to the end of the output).
Json printed_object(std::string_view text) {
  const std::size_t close = text.rfind('}');
  if (close == std::string_view::npos) return Json();
  for (const bool line_start : {true, false}) {
    int tries = 0;
    for (std::size_t open = text.rfind('{', close); open != std::string_view::npos && tries < 64;
         open = open == 0 ? std::string_view::npos : text.rfind('{', open - 1)) {
      if (line_start && open > 0 && text[open - 1] != '\n') continue;
      ++tries;
      Json j = Json::parse(text.substr(open, close - open + 1), nullptr, false);
      if (!j.is_discarded() && j.is_object()) return j;
    }
  }
  return Json();
}

// An API error's message is the server's error body as text: its own message, and the status.
std::string error_of(const Json& error) {
  const std::string message = string_field(error, "message");
  const Json inner = Json::parse(message, nullptr, false);
  const Json& body = object_field(inner, "error");
  if (!string_field(body, "message").empty())
    return fmt::format("HTTP {}: {}", integer_field(body, "code"), string_field(body, "message"));
  return message.empty() ? text::excerpt(error.dump(), 200) : message;
}

void read_output(CliReading& r, std::string_view text) {
  const Json j = printed_object(text);
  if (!j.is_object()) return;
  r.answer = string_field(j, "response");
  r.session_id = string_field(j, "session_id");
  if (has_object(j, "error"))
    r.error = "gemini reported an error: " + error_of(object_field(j, "error"));
  const Json& stats = object_field(j, "stats");
  for (const auto& [model, m] : object_field(stats, "models").items()) {
    r.model = model;
    const Json& tk = object_field(m, "tokens");
    r.usage.input += integer_field(tk, "prompt");
    r.usage.output += integer_field(tk, "candidates") + integer_field(tk, "thoughts");
    r.usage.cached += integer_field(tk, "cached");
    r.usage.reasoning += integer_field(tk, "thoughts");
    r.usage.requests +=
        static_cast<int>(std::max(1LL, integer_field(object_field(m, "api"), "totalRequests")));
    r.tokens_available = r.tokens_available || has_object(m, "tokens");
  }
  const Json& by_name = object_field(object_field(stats, "tools"), "byName");
  for (const auto& [name, t2] : by_name.items()) {
    const int count = static_cast<int>(
        std::clamp(t2.is_object() ? integer_field(t2, "count") : 1LL, 0LL, 100000LL));
    r.tool_call_map[name] += count;
    r.tool_calls += count;
    for (int i = 0; i < count; ++i) r.tool_inputs.push_back(name);
  }
}

// <home>/.gemini/tmp/<project>/chats/session-<time>-<first 8 of the id>.jsonl, whose first line
// names the whole id.
std::string session_file(const std::string& id, const fs::path& home) {
  if (id.size() < 8) return {};  // its file is named by the id's first 8 characters
  return first_session(
      home / ".gemini/tmp",
      [&](const std::string& name) {
        return name.starts_with("session-") && name.ends_with(id.substr(0, 8) + ".jsonl");
      },
      [&](const std::string& text) {
        return text.substr(0, text.find('\n')).find(id) != std::string::npos;
      });
}

// Its printed statistics name the tools, its session record what each was given (which skill
// activate_skill activated): the calls are read from the record.
void read_session(CliReading& r, std::string_view session) {
  if (session.empty()) return;
  CliReading calls;
  read_tool_calls(calls, session, trace::Format::gemini);
  if (calls.tool_calls == 0) return;
  r.tool_calls = calls.tool_calls;
  r.tool_call_map = std::move(calls.tool_call_map);
  r.tool_inputs = std::move(calls.tool_inputs);
}

}  // namespace

extern constinit const Adapter gemini{
    .name = "gemini",
    .output = "gemini",
    .settings = settings,
    .point_at_model = point_at,
    .read_output = read_output,
    .session_file = session_file,
    .read_session = read_session,
    .user_skills_dir = ".gemini/skills",
};

}  // namespace upskill::agent::agents
