// Claude Code as a student (docs/agents.md): `claude -p` with stream-json output, its skills in
// .claude/skills, its session record in ~/.claude/projects.
#include <fmt/format.h>

#include <algorithm>
#include <set>

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
      .name = "claude-code",
      .command = "claude",
      // The task on stdin: prompts of any size.
      .argv = {"-p", "--output-format", "stream-json", "--verbose", "--permission-mode",
               "bypassPermissions"},
      // upskill main's default: Claude Code runs on its login, not on API keys.
      .unset_env = {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK",
                    "CLAUDE_CODE_USE_VERTEX"},
      .skills_dir = ".claude/skills",
      .state_paths = {".claude", ".claude.json", ".config/claude"},
      .output = "claude",
      .login_hint = "claude login",
  };
}

Status point_at(CliAgent& a, const llm::ResolvedModel& m, int retries) {
  a.env["ANTHROPIC_BASE_URL"] = without_v1(m.base_url);
  // Anthropic takes its API key as x-api-key; other servers (llama.cpp, vLLM, LiteLLM, a gateway)
  // the Bearer token Claude Code sends from ANTHROPIC_AUTH_TOKEN.
  a.secret_env[m.provider == "anthropic" ? "ANTHROPIC_API_KEY" : "ANTHROPIC_AUTH_TOKEN"] =
      m.api_key.reveal();
  drop_unset(a, {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"});
  a.args.insert(a.args.end(), {"--model", m.model});
  // Its background and sub-agent calls go to the same model, and nothing else leaves.
  for (const char* name :
       {"ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
        "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"})
    a.env[name] = m.model;
  a.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1";
  a.env["CLAUDE_CODE_MAX_RETRIES"] = std::to_string(retries);
  // Not CLAUDE_CODE_SUBPROCESS_ENV_SCRUB: it forces the default permission mode and runs every
  // command under bubblewrap, which cannot mount inside upskill's Landlock sandbox. Its commands
  // inherit the key; upskill removes it from everything it keeps (cli_agent.cpp, redact_secrets).
  return {};
}

// stream-json lines (or one --output-format json object); the last `result` line has the answer,
// usage, cost and turns.
void read_output(CliReading& r, std::string_view text) {
  // Each model response is one assistant message id, however many lines its blocks take (a
  // sub-agent's included): the requests the endpoint answered.
  std::set<std::string> responses;
  for (const Json& j : json_lines(text)) {
    const std::string type = string_field(j, "type");
    if (type == "assistant") {
      const std::string id = string_field(object_field(j, "message"), "id");
      if (!id.empty()) responses.insert(id);
    }
    if (type == "system" && !string_field(j, "model").empty()) r.model = string_field(j, "model");
    if (type == "system" && r.session_id.empty()) r.session_id = string_field(j, "session_id");
    const Json* result = lenient::field(j, "result");
    if (type != "result" && !(result && result->is_string())) continue;
    r.answer = string_field(j, "result");
    const std::string subtype = string_field(j, "subtype");
    if (lenient::bool_field(j, "is_error") || (!subtype.empty() && subtype != "success"))
      r.error = fmt::format("claude reported {}: {}",
                            subtype.empty() || subtype == "success" ? "an error" : subtype,
                            text::excerpt(r.answer, 200));
    if (has_object(j, "usage")) {
      const Json& u = object_field(j, "usage");
      r.usage.input = integer_field(u, "input_tokens") +
                      integer_field(u, "cache_read_input_tokens") +
                      integer_field(u, "cache_creation_input_tokens");
      r.usage.cached = integer_field(u, "cache_read_input_tokens");
      r.usage.output = integer_field(u, "output_tokens");
      r.usage.requests = std::max<int>(1, static_cast<int>(responses.size()));
      r.tokens_available = true;
    }
    r.cost_usd = number_field(j, "total_cost_usd");
    if (integer_field(j, "num_turns") > 0)
      r.turns = static_cast<int>(integer_field(j, "num_turns"));
  }
  read_tool_calls(r, text, trace::Format::claude_stream);
}

// <home>/.claude/projects/<folder>/<session id>.jsonl
std::string session_file(const std::string& id, const fs::path& home) {
  std::error_code ec;
  for (fs::directory_iterator it(home / ".claude/projects", ec), end; !ec && it != end;
       it.increment(ec)) {
    const fs::path file = it->path() / (id + ".jsonl");
    if (fs::is_regular_file(file, ec)) {
      auto text = files::read_text(file);
      return text ? *text : std::string();
    }
  }
  return {};
}

}  // namespace

extern constinit const Adapter claude_code{
    .name = "claude-code",
    .output = "claude",
    .settings = settings,
    .point_at_model = point_at,
    .read_output = read_output,
    .session_file = session_file,
    .user_skills_dir = ".claude/skills",
    .install_name = "claude",
    .claude_code_skills = true,
};

}  // namespace upskill::agent::agents
