// GitHub Copilot CLI as a student (docs/agents.md): `copilot --output-format json`, its skills in
// .github/skills, its session events in ~/.copilot/session-state.
#include <fmt/format.h>

#include "../adapter.hpp"
#include "../agent_output.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"

namespace upskill::agent::agents {

namespace {

namespace fs = std::filesystem;
using namespace output;

CliAgent settings() {
  return {
      .name = "copilot",
      .command = "copilot",
      // The task on stdin; JSON events on stdout.
      .argv = {"--allow-all-tools", "--output-format", "json"},
      .pass_env = {"GH_TOKEN", "GITHUB_TOKEN", "COPILOT_GITHUB_TOKEN"},
      .skills_dir = ".github/skills",
      .state_paths = {".copilot", ".config/gh", ".cache/copilot"},
      .output = "copilot",
      .login_hint = "gh auth login",
  };
}

// Its custom provider ("BYOK"): no GitHub sign-in is needed then.
Status point_at(CliAgent& a, const llm::ResolvedModel& m, int) {
  a.env["COPILOT_PROVIDER_BASE_URL"] =
      m.provider == "anthropic" ? without_v1(m.base_url) : m.base_url;
  a.env["COPILOT_PROVIDER_TYPE"] = m.provider == "anthropic" ? "anthropic" : "openai";
  a.env["COPILOT_MODEL"] = m.model;
  a.env["COPILOT_AUTO_UPDATE"] = "false";
  a.secret_env["COPILOT_PROVIDER_API_KEY"] = m.api_key.reveal();
  return {};
}

// --output-format json events. assistant.message carries the text and the tool requests
// ({toolCallId, name, arguments}) of each model call; the last with text is the answer; `result`
// ends the run with its sessionId and exitCode. Its tokens are only in its session's events
// (read_session).
void read_output(CliReading& r, std::string_view text) {
  for (const Json& j : json_lines(text)) {
    const std::string type = string_field(j, "type");
    const Json& data = object_field(j, "data");
    if (type == "assistant.message") {
      ++r.turns;
      if (!string_field(data, "model").empty()) r.model = string_field(data, "model");
      if (!text::trim(string_field(data, "content")).empty())
        r.answer = string_field(data, "content");
      const Json* requests = lenient::field(data, "toolRequests");
      if (requests && requests->is_array())
        for (const Json& call : *requests) {
          const std::string name = string_field(call, "name");
          if (name.empty()) continue;
          const Json* args = lenient::field(call, "arguments");
          ++r.tool_calls;
          ++r.tool_call_map[name];
          r.tool_inputs.push_back(name + " " + (args ? args->dump() : std::string("{}")));
        }
    }
    if (type == "result") {
      r.session_id = string_field(j, "sessionId");
      if (integer_field(j, "exitCode") != 0 && !r.error)
        r.error = fmt::format("copilot reported exit code {}", integer_field(j, "exitCode"));
    }
    if (type == "session.error" || type.ends_with(".error")) {
      const std::string message = string_field(data, "message");
      r.error = "copilot reported an error: " +
                (message.empty() ? text::excerpt(j.dump(), 200) : message);
    }
  }
}

// <home>/.copilot/session-state/<session id>/events.jsonl
std::string session_file(const std::string& id, const fs::path& home) {
  if (id.size() < 8) return {};
  auto text = files::read_text(home / ".copilot/session-state" / id / "events.jsonl");
  return text ? *text : std::string();
}

// One session.usage_record per model call ({usage: {inputTokens, outputTokens, cacheReadTokens,
// cacheWriteTokens}}).
void read_session(CliReading& r, std::string_view events) {
  llm::Usage u;
  bool any = false;
  for (const Json& j : json_lines(events)) {
    if (string_field(j, "type") != "session.usage_record") continue;
    const Json& usage = object_field(object_field(j, "data"), "usage");
    u.input += integer_field(usage, "inputTokens") + integer_field(usage, "cacheReadTokens") +
               integer_field(usage, "cacheWriteTokens");
    u.cached += integer_field(usage, "cacheReadTokens");
    u.output += integer_field(usage, "outputTokens");
    u.requests += 1;
    any = true;
  }
  if (!any) return;
  r.usage = u;
  r.tokens_available = true;
}

}  // namespace

extern constinit const Adapter copilot{
    .name = "copilot",
    .output = "copilot",
    .settings = settings,
    .point_at_model = point_at,
    .read_output = read_output,
    .session_file = session_file,
    .read_session = read_session,
    .user_skills_dir = ".copilot/skills",
};

}  // namespace upskill::agent::agents
