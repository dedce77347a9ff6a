// Codex as a student (docs/agents.md): `codex exec --json`, its skills in .agents/skills, its
// rollout in ~/.codex/sessions.
#include <fmt/format.h>

#include "../adapter.hpp"
#include "../agent_output.hpp"
#include "upskill/core/text.hpp"

namespace upskill::agent::agents {

namespace {

namespace fs = std::filesystem;
using namespace output;

CliAgent settings() {
  return {
      .name = "codex",
      .command = "codex",
      // `-`: the task on stdin. Its own sandbox (bubblewrap) cannot mount inside upskill's, which
      // already confines its writes to the workspace (docs/agents.md): its commands run in
      // upskill's alone.
      .argv = {"exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access", "-"},
      .pass_env = {"OPENAI_API_KEY", "CODEX_API_KEY"},
      .skills_dir = ".agents/skills",
      .state_paths = {".codex"},
      .output = "codex",
      .login_hint = "codex login",
  };
}

// A provider of its own, speaking the Responses API (Codex no longer speaks chat).
Status point_at(CliAgent& a, const llm::ResolvedModel& m, int retries) {
  for (const std::string& setting :
       {std::string("model_provider=\"upskill\""),
        std::string("model_providers.upskill.name=\"upskill\""),
        fmt::format("model_providers.upskill.base_url=\"{}\"", m.base_url),
        fmt::format("model_providers.upskill.env_key=\"{}\"", kAgentKeyVariable),
        std::string("model_providers.upskill.wire_api=\"responses\""),
        fmt::format("model_providers.upskill.request_max_retries={}", retries),
        fmt::format("model_providers.upskill.stream_max_retries={}", retries)})
    a.args.insert(a.args.end(), {"-c", setting});
  a.args.insert(a.args.end(), {"-m", m.model});
  a.secret_env[kAgentKeyVariable] = m.api_key.reveal();
  return {};
}

// exec --json events; the last agent_message is the answer, turn.completed has usage.
void read_output(CliReading& r, std::string_view text) {
  for (const Json& j : json_lines(text)) {
    const std::string type = string_field(j, "type");
    if (type == "thread.started" && r.session_id.empty())
      r.session_id = string_field(j, "thread_id");
    const Json& item = object_field(j, "item");
    if (type == "item.completed" && string_field(item, "type") == "agent_message")
      r.answer = string_field(item, "text");
    if (type == "turn.completed" && has_object(j, "usage")) {
      const Json& u = object_field(j, "usage");
      r.usage.input += integer_field(u, "input_tokens");
      r.usage.cached += integer_field(u, "cached_input_tokens");
      r.usage.output += integer_field(u, "output_tokens");  // reasoning included, as OpenAI counts
      r.usage.reasoning += integer_field(u, "reasoning_output_tokens");
      // A turn may take several model requests: the session record counts them (read_session);
      // a turn each is the least it took, when no record is found.
      r.usage.requests += 1;
      r.tokens_available = true;
      ++r.turns;
    }
    if (type == "turn.failed" || type == "error") {
      const std::string message = !string_field(object_field(j, "error"), "message").empty()
                                      ? string_field(object_field(j, "error"), "message")
                                      : string_field(j, "message");
      r.error =
          "codex reported an error: " + (message.empty() ? text::excerpt(j.dump(), 200) : message);
    }
  }
  read_tool_calls(r, text, trace::Format::codex_exec);
}

// <home>/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl
std::string session_file(const std::string& id, const fs::path& home) {
  if (id.size() < 8) return {};
  return first_session(
      home / ".codex/sessions",
      [&](const std::string& name) {
        return name.starts_with("rollout-") && name.ends_with(id + ".jsonl");
      },
      [](const std::string&) { return true; });
}

// The rollout has a token_count event with usage after each model response: the requests the
// endpoint answered, which the exec stream's turns undercount.
void read_session(CliReading& r, std::string_view session) {
  int responses = 0;
  for (const Json& j : json_lines(session)) {
    const Json& payload = object_field(j, "payload");
    if (string_field(j, "type") == "event_msg" && string_field(payload, "type") == "token_count" &&
        has_object(object_field(payload, "info"), "last_token_usage"))
      ++responses;
  }
  if (responses > 0) r.usage.requests = responses;
}

}  // namespace

extern constinit const Adapter codex{
    .name = "codex",
    .output = "codex",
    .settings = settings,
    .point_at_model = point_at,
    .read_output = read_output,
    .session_file = session_file,
    .read_session = read_session,
    .user_skills_dir = ".agents/skills",
};

}  // namespace upskill::agent::agents
