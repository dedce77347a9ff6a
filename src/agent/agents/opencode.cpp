// opencode as a student (docs/agents.md): `opencode run --format json`, its skills in
// .opencode/skills.
#include <fmt/format.h>

#include "../adapter.hpp"
#include "../agent_output.hpp"
#include "upskill/core/text.hpp"

namespace upskill::agent::agents {

namespace {

using namespace output;

CliAgent settings() {
  return {
      .name = "opencode",
      .command = "opencode",
      // The task on stdin.
      .argv = {"run", "--format", "json"},
      .pass_env = {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY"},
      .skills_dir = ".opencode/skills",
      .state_paths = {".local/share/opencode", ".local/state/opencode", ".config/opencode",
                      ".cache/opencode"},
      .output = "opencode",
      .login_hint = "opencode auth login",
  };
}

Status point_at(CliAgent& a, const llm::ResolvedModel& m, int) {
  const Json provider = {
      {"npm", "@ai-sdk/openai-compatible"},
      {"name", m.name},
      {"options",
       {{"baseURL", m.base_url}, {"apiKey", fmt::format("{{env:{}}}", kAgentKeyVariable)}}},
      {"models", {{m.model, {{"name", m.model}}}}}};
  // Its title agent is a second call per session whose tokens its output never reports: off, so
  // that the tokens counted are all the tokens spent.
  a.env["OPENCODE_CONFIG_CONTENT"] = Json{
      {"provider", {{"upskill", provider}}},
      {"model", "upskill/" + m.model},
      {"agent",
       {{"title", {{"disable", true}}}}}}.dump();
  // Nothing but the model is reached: no model catalogue, no update check, and the plugin package
  // it installs into each config folder comes from npm's cache or not at all.
  a.env["OPENCODE_DISABLE_MODELS_FETCH"] = "1";
  a.env["OPENCODE_DISABLE_AUTOUPDATE"] = "1";
  a.env["npm_config_offline"] = "true";
  a.secret_env[kAgentKeyVariable] = m.api_key.reveal();
  a.args.insert(a.args.end(), {"-m", "upskill/" + m.model});
  return {};
}

// run --format json events; text parts make the answer, step_finish parts carry tokens and cost.
void read_output(CliReading& r, std::string_view text) {
  std::string last_step_text;
  for (const Json& j : json_lines(text)) {
    const std::string type = string_field(j, "type");
    const Json& part = object_field(j, "part");
    if (type == "step_start") last_step_text.clear();
    if (type == "text") last_step_text += string_field(part, "text");
    if (type == "step_finish") {
      if (!last_step_text.empty()) r.answer = last_step_text;
      ++r.turns;
      const Json& tk = object_field(part, "tokens");
      const Json& cache = object_field(tk, "cache");
      if (has_object(part, "tokens")) {
        r.usage.input += integer_field(tk, "input") + integer_field(cache, "read") +
                         integer_field(cache, "write");
        r.usage.cached += integer_field(cache, "read");
        r.usage.output += integer_field(tk, "output") + integer_field(tk, "reasoning");
        r.usage.reasoning += integer_field(tk, "reasoning");
        r.usage.requests += 1;
        r.tokens_available = true;
      }
      r.cost_usd += number_field(part, "cost");
    }
    if (type == "error") {
      // {error: {name, data: {message, statusCode}}}: its name and message, else the event.
      const Json& error = object_field(j, "error");
      const Json& data = object_field(error, "data");
      const std::string message = string_field(data, "message");
      const long long status = integer_field(data, "statusCode");
      r.error = "opencode reported an error: " +
                (message.empty() ? text::excerpt(j.dump(), 200)
                                 : string_field(error, "name") + ": " + message +
                                       (status ? fmt::format(" (HTTP {})", status) : ""));
    }
  }
  if (r.answer.empty()) r.answer = last_step_text;
  read_tool_calls(r, text, trace::Format::opencode_run);
}

}  // namespace

extern constinit const Adapter opencode{
    .name = "opencode",
    .output = "opencode",
    .settings = settings,
    .point_at_model = point_at,
    .read_output = read_output,
    .user_skills_dir = ".config/opencode/skills",
};

}  // namespace upskill::agent::agents
