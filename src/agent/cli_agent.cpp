// Coding agents as students (see cli_agent.hpp).
#include "upskill/agent/cli_agent.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "upskill/core/enum_names.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/json_fields.hpp"
#include "upskill/core/text.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::agent {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kNetworkEnv{"HTTPS_PROXY",   "HTTP_PROXY",   "NO_PROXY",
                                           "https_proxy",   "http_proxy",   "no_proxy",
                                           "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS"};

std::map<std::string, CliAgent> defaults() {
  std::map<std::string, CliAgent> d;
  d["claude-code"] = {"claude-code",
                      "claude",
                      // The task on stdin: prompts of any size.
                      {"-p", "--output-format", "stream-json", "--verbose", "--permission-mode",
                       "bypassPermissions"},
                      {},
                      {},
                      // upskill main's default: Claude Code runs on its login, not on API keys.
                      {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK",
                       "CLAUDE_CODE_USE_VERTEX"},
                      {},
                      600,
                      ".claude/skills",
                      {".claude", ".claude.json", ".config/claude"},
                      CliOutput::claude,
                      "claude login"};
  d["codex"] = {"codex",
                "codex",
                // `-`: the task on stdin. Its own sandbox (bubblewrap) cannot mount inside
                // upskill's, which already confines its writes to the workspace (docs/agents.md):
                // its commands run in upskill's alone.
                {"exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access", "-"},
                {},
                {},
                {},
                {"OPENAI_API_KEY", "CODEX_API_KEY"},
                600,
                ".agents/skills",
                {".codex"},
                CliOutput::codex,
                "codex login"};
  d["gemini"] = {
      "gemini",
      "gemini",
      // The task on stdin (not a terminal: it answers it and exits).
      {"--output-format", "json", "--yolo"},
      {},
      // The trial's workspace is trusted: in an untrusted folder --yolo falls back to asking,
      // and nobody answers.
      {{"GEMINI_CLI_TRUST_WORKSPACE", "true"}},
      {},
      {"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_GENAI_USE_VERTEXAI"},
      600,
      ".gemini/skills",
      {".gemini"},
      CliOutput::gemini,
      "run `gemini` once to log in, or set GEMINI_API_KEY"};
  d["opencode"] = {
      "opencode",
      "opencode",
      // The task on stdin.
      {"run", "--format", "json"},
      {},
      {},
      {},
      {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY"},
      600,
      ".opencode/skills",
      {".local/share/opencode", ".local/state/opencode", ".config/opencode", ".cache/opencode"},
      CliOutput::opencode,
      "opencode auth login"};
  d["copilot"] = {"copilot",
                  "copilot",
                  // The task on stdin; JSON events on stdout.
                  {"--allow-all-tools", "--output-format", "json"},
                  {},
                  {},
                  {},
                  {"GH_TOKEN", "GITHUB_TOKEN", "COPILOT_GITHUB_TOKEN"},
                  600,
                  ".github/skills",
                  {".copilot", ".config/gh", ".cache/copilot"},
                  CliOutput::copilot,
                  "gh auth login"};
  d["kiro"] = {"kiro",
               "kiro-cli",
               {"chat", "--no-interactive", "--trust-all-tools", "{prompt}"},
               {},
               {},
               {},
               {},
               600,
               ".kiro/skills",
               {".kiro", ".local/share/kiro-cli"},
               CliOutput::text,
               "kiro-cli login"};
  return d;
}

std::optional<CliOutput> output_from_string(std::string_view s) {
  for (CliOutput o : {CliOutput::claude, CliOutput::codex, CliOutput::gemini, CliOutput::opencode,
                      CliOutput::copilot, CliOutput::text})
    if (to_string(o) == s) return o;
  return std::nullopt;
}

Result<std::vector<std::string>> string_list(const Json& v, const std::string& where) {
  std::vector<std::string> out;
  if (!v.is_array()) return fail(Error::usage(where + " must be a list of strings"));
  for (const auto& item : v) {
    if (!item.is_string()) return fail(Error::usage(where + " must be a list of strings"));
    out.push_back(item.get<std::string>());
  }
  return out;
}

// The config's `cli_providers.<name>` over the defaults, key by key.
Status apply_config(CliAgent& a, const Json& c, const std::string& name) {
  const std::string at = "cli_providers." + name;
  if (!c.is_object()) return fail(Error::usage(at + " must be a mapping"));
  for (const auto& [key, v] : c.items()) {
    const std::string where = at + "." + key;
    if (key == "command" || key == "skills_dir" || key == "login_hint" || key == "output") {
      if (!v.is_string() || v.get<std::string>().empty())
        return fail(Error::usage(where + " must be text"));
      const std::string s = v.get<std::string>();
      if (key == "command")
        a.command = s;
      else if (key == "skills_dir")
        a.skills_dir = s;
      else if (key == "login_hint")
        a.login_hint = s;
      else if (auto o = output_from_string(s))
        a.output = *o;
      else
        return fail(
            Error::usage(where + " must be claude, codex, gemini, opencode, copilot or text"));
    } else if (key == "args" || key == "argv" || key == "unset_env" || key == "pass_env" ||
               key == "state_paths") {
      UPSKILL_ASSIGN_OR_RETURN(auto list, string_list(v, where));
      (key == "args"        ? a.args
       : key == "argv"      ? a.argv
       : key == "unset_env" ? a.unset_env
       : key == "pass_env"  ? a.pass_env
                            : a.state_paths) = std::move(list);
    } else if (key == "model") {
      if (!v.is_string() || v.get<std::string>().empty())
        return fail(Error::usage(where + " must name an entry of models:"));
      a.model = v.get<std::string>();
    } else if (key == "as_user") {
      if (!v.is_boolean()) return fail(Error::usage(where + " must be true or false"));
      a.as_user = v.get<bool>();
    } else if (key == "timeout_seconds") {
      if (v.is_null())
        a.timeout_s.reset();
      else if (v.is_number() && v.get<double>() > 0)
        a.timeout_s = v.get<double>();
      else
        return fail(Error::usage(where + " must be a number of seconds or null"));
    } else if (key == "env") {
      if (!v.is_object()) return fail(Error::usage(where + " must be a mapping"));
      for (const auto& [k, value] : v.items()) {
        if (!value.is_string() && !value.is_number() && !value.is_boolean())
          return fail(Error::usage(where + "." + k + " must be text"));
        a.env[k] = value.is_string() ? value.get<std::string>() : value.dump();
      }
    } else {
      return fail(Error::usage(fmt::format(
          "{}: unknown key '{}' (command, args, argv, env, unset_env, pass_env, timeout_seconds, "
          "skills_dir, state_paths, output, login_hint, model, as_user)",
          at, key)));
    }
  }
  return {};
}

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// An agent's output is not ours to trust: every field is read leniently.
using lenient::integer_field;
using lenient::number_field;
using lenient::object_field;
using lenient::string_field;

bool has_object(const Json& j, const char* key) {
  const Json* f = lenient::field(j, key);
  return f && f->is_object();
}

bool mentions(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The JSON objects among an output's lines (other lines are the agent's chatter).
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

// Claude Code: stream-json lines (or one --output-format json object); the last `result` line
// has the answer, usage, cost and turns.
void read_claude(CliReading& r, std::string_view text) {
  for (const Json& j : json_lines(text)) {
    const std::string type = string_field(j, "type");
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
      r.usage.requests = 1;
      r.tokens_available = true;
    }
    r.cost_usd = number_field(j, "total_cost_usd");
    if (integer_field(j, "num_turns") > 0)
      r.turns = static_cast<int>(integer_field(j, "num_turns"));
  }
}

// Codex: exec --json events; the last agent_message is the answer, turn.completed has usage.
void read_codex(CliReading& r, std::string_view text) {
  for (const Json& j : json_lines(text)) {
    const std::string type = string_field(j, "type");
    if (type == "thread.started" && r.session_id.empty()) r.session_id = string_field(j, "thread_id");
    const Json& item = object_field(j, "item");
    if (type == "item.completed" && string_field(item, "type") == "agent_message")
      r.answer = string_field(item, "text");
    if (type == "turn.completed" && has_object(j, "usage")) {
      const Json& u = object_field(j, "usage");
      r.usage.input += integer_field(u, "input_tokens");
      r.usage.cached += integer_field(u, "cached_input_tokens");
      r.usage.output += integer_field(u, "output_tokens");
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
}

// Gemini CLI: one JSON object, {response, stats: {models: {M: {tokens}}, tools: {totalCalls,
// byName}}, error?}.
// Its stderr comes first in what upskill keeps (warnings, an error's stack trace with braces of its
// own): the object is the last '{' that parses to the last '}' — one that starts a line first (it
// prints the object indented, one key per line), then any; a few tries of each (every try parses
// to the end of the output).
Json gemini_object(std::string_view text) {
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
std::string gemini_error(const Json& error) {
  const std::string message = string_field(error, "message");
  const Json inner = Json::parse(message, nullptr, false);
  const Json& body = object_field(inner, "error");
  if (!string_field(body, "message").empty())
    return fmt::format("HTTP {}: {}", integer_field(body, "code"), string_field(body, "message"));
  return message.empty() ? text::excerpt(error.dump(), 200) : message;
}

void read_gemini(CliReading& r, std::string_view text) {
  const Json j = gemini_object(text);
  if (!j.is_object()) return;
  r.answer = string_field(j, "response");
  r.session_id = string_field(j, "session_id");
  if (has_object(j, "error"))
    r.error = "gemini reported an error: " + gemini_error(object_field(j, "error"));
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

// opencode: run --format json events; text parts make the answer, step_finish parts carry tokens
// and cost.
void read_opencode(CliReading& r, std::string_view text) {
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
}

// Copilot CLI: --output-format json events. assistant.message carries the text and the tool
// requests ({toolCallId, name, arguments}) of each model call; the last with text is the answer;
// `result` ends the run with its sessionId and exitCode. Its tokens are only in its session's
// events (read_copilot_usage).
void read_copilot(CliReading& r, std::string_view text) {
  for (const Json& j : json_lines(text)) {
    const std::string type = string_field(j, "type");
    const Json& data = object_field(j, "data");
    if (type == "assistant.message") {
      ++r.turns;
      if (!string_field(data, "model").empty()) r.model = string_field(data, "model");
      if (!text::trim(string_field(data, "content")).empty()) r.answer = string_field(data, "content");
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

// Copilot CLI's session events (<home>/.copilot/session-state/<id>/events.jsonl): one
// session.usage_record per model call ({usage: {inputTokens, outputTokens, cacheReadTokens,
// cacheWriteTokens}}).
void read_copilot_usage(CliReading& r, std::string_view events) {
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

// Tool calls from the transcript, by our trace reader (Claude Code, Codex and opencode streams).
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

}  // namespace

namespace {
constexpr enum_names::Table<CliOutput, 6> kOutputs{{{CliOutput::claude, "claude"},
                                                    {CliOutput::codex, "codex"},
                                                    {CliOutput::gemini, "gemini"},
                                                    {CliOutput::opencode, "opencode"},
                                                    {CliOutput::copilot, "copilot"},
                                                    {CliOutput::text, "text"}}};
}  // namespace

std::string_view to_string(CliOutput output) {
  return enum_names::name(kOutputs, output, "text");
}

const std::vector<std::string>& cli_agent_names() {
  static const std::vector<std::string> names{"claude-code", "codex",   "gemini",
                                              "opencode",    "copilot", "kiro"};
  return names;
}

Result<CliAgent> cli_agent(const std::string& name, const config::Config& config) {
  auto known = defaults();
  CliAgent a;
  if (auto it = known.find(name); it != known.end()) {
    a = it->second;
  } else if (!config.cli_providers.contains(name)) {
    return fail(Error::usage(fmt::format(
        "unknown coding agent 'cli.{}' (known: {}; add others under cli_providers in the config)",
        name, text::join(cli_agent_names(), ", "))));
  } else {
    a.name = name;
    a.command = name;
    a.argv = {"{prompt}"};
    a.skills_dir = ".agents/skills";
  }
  if (config.cli_providers.contains(name))
    UPSKILL_RETURN_IF_ERROR(apply_config(a, config.cli_providers[name], name));
  return a;
}

namespace {

// The server root an agent appends its own API path to (Claude Code: /v1/messages).
std::string without_v1(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.ends_with("/v1")) url.resize(url.size() - 3);
  return url;
}

void drop_unset(CliAgent& a, std::initializer_list<const char*> names) {
  for (const char* name : names) std::erase(a.unset_env, std::string(name));
}

// The variable an agent reads its key from when upskill chose the name (Codex, opencode).
constexpr const char* kAgentKeyVariable = "UPSKILL_AGENT_API_KEY";

}  // namespace

Status point_at_model(CliAgent& a, const llm::ResolvedModel& m, int retries) {
  const std::string key = m.api_key.reveal();
  const std::string url = m.base_url;
  switch (a.output) {
    case CliOutput::claude:
      a.env["ANTHROPIC_BASE_URL"] = without_v1(url);
      // Anthropic takes its API key as x-api-key; other servers (llama.cpp, vLLM, LiteLLM, a
      // gateway) the Bearer token Claude Code sends from ANTHROPIC_AUTH_TOKEN.
      a.secret_env[m.provider == "anthropic" ? "ANTHROPIC_API_KEY" : "ANTHROPIC_AUTH_TOKEN"] = key;
      drop_unset(a, {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"});
      a.args.insert(a.args.end(), {"--model", m.model});
      // Its background and sub-agent calls go to the same model, and nothing else leaves.
      for (const char* name : {"ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
                               "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
                               "CLAUDE_CODE_SUBAGENT_MODEL"})
        a.env[name] = m.model;
      a.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1";
      a.env["CLAUDE_CODE_MAX_RETRIES"] = std::to_string(retries);
      // Not CLAUDE_CODE_SUBPROCESS_ENV_SCRUB: it forces the default permission mode and runs
      // every command under bubblewrap, which cannot mount inside upskill's Landlock sandbox. Its
      // commands inherit the key; upskill removes it from everything it keeps (redact_secrets).
      break;
    case CliOutput::codex:
      // A provider of its own, speaking the Responses API (Codex no longer speaks chat).
      for (const std::string& setting :
           {std::string("model_provider=\"upskill\""),
            std::string("model_providers.upskill.name=\"upskill\""),
            fmt::format("model_providers.upskill.base_url=\"{}\"", url),
            fmt::format("model_providers.upskill.env_key=\"{}\"", kAgentKeyVariable),
            std::string("model_providers.upskill.wire_api=\"responses\""),
            fmt::format("model_providers.upskill.request_max_retries={}", retries),
            fmt::format("model_providers.upskill.stream_max_retries={}", retries)})
        a.args.insert(a.args.end(), {"-c", setting});
      a.args.insert(a.args.end(), {"-m", m.model});
      a.secret_env[kAgentKeyVariable] = key;
      break;
    case CliOutput::gemini:
      a.env["GOOGLE_GEMINI_BASE_URL"] = without_v1(url);
      a.secret_env["GEMINI_API_KEY"] = key;
      drop_unset(a, {"GEMINI_API_KEY"});
      a.args.insert(a.args.end(), {"-m", m.model});
      // A base URL alone selects its "gateway" sign-in, which its non-interactive mode refuses;
      // the API key sign-in honours the base URL too. No usage statistics leave.
      a.home_files[".gemini/settings.json"] =
          Json{{"security", {{"auth", {{"selectedType", "gemini-api-key"}}}}},
               {"privacy", {{"usageStatisticsEnabled", false}}},
               {"general", {{"disableAutoUpdate", true}, {"disableUpdateNag", true}}}}
              .dump(2);
      break;
    case CliOutput::opencode: {
      const Json provider = {
          {"npm", "@ai-sdk/openai-compatible"},
          {"name", m.name},
          {"options",
           {{"baseURL", url}, {"apiKey", fmt::format("{{env:{}}}", kAgentKeyVariable)}}},
          {"models", {{m.model, {{"name", m.model}}}}}};
      // Its title agent is a second call per session whose tokens its output never reports:
      // off, so that the tokens counted are all the tokens spent.
      a.env["OPENCODE_CONFIG_CONTENT"] = Json{{"provider", {{"upskill", provider}}},
                                              {"model", "upskill/" + m.model},
                                              {"agent", {{"title", {{"disable", true}}}}}}
                                             .dump();
      // Nothing but the model is reached: no model catalogue, no update check, and the plugin
      // package it installs into each config folder comes from npm's cache or not at all.
      a.env["OPENCODE_DISABLE_MODELS_FETCH"] = "1";
      a.env["OPENCODE_DISABLE_AUTOUPDATE"] = "1";
      a.env["npm_config_offline"] = "true";
      a.secret_env[kAgentKeyVariable] = key;
      a.args.insert(a.args.end(), {"-m", "upskill/" + m.model});
      break;
    }
    case CliOutput::copilot:
      // Its custom provider ("BYOK"): no GitHub sign-in is needed then.
      a.env["COPILOT_PROVIDER_BASE_URL"] = m.provider == "anthropic" ? without_v1(url) : url;
      a.env["COPILOT_PROVIDER_TYPE"] = m.provider == "anthropic" ? "anthropic" : "openai";
      a.env["COPILOT_MODEL"] = m.model;
      a.env["COPILOT_AUTO_UPDATE"] = "false";
      a.secret_env["COPILOT_PROVIDER_API_KEY"] = key;
      break;
    case CliOutput::text:
      return fail(Error::usage(fmt::format(
          "cli_providers.{}.model: upskill does not know how to point {} at a model; set its "
          "endpoint and key with env: and args: instead",
          a.name, a.command)));
  }
  a.pointed_at = m;
  return {};
}

CliReading read_cli_output(CliOutput output, std::string_view text) {
  CliReading r;
  switch (output) {
    case CliOutput::claude:
      read_claude(r, text);
      read_tool_calls(r, text, trace::Format::claude_stream);
      break;
    case CliOutput::codex:
      read_codex(r, text);
      read_tool_calls(r, text, trace::Format::codex_exec);
      break;
    case CliOutput::gemini:
      read_gemini(r, text);
      break;
    case CliOutput::opencode:
      read_opencode(r, text);
      read_tool_calls(r, text, trace::Format::opencode_run);
      break;
    case CliOutput::copilot:
      read_copilot(r, text);
      break;
    case CliOutput::text:
      r.answer = text::trim(text);
      r.turns = 1;
      break;
  }
  return r;
}

SkillUse skill_use(const CliReading& reading, const std::string& name) {
  SkillUse u;
  u.known = true;
  bool bare_activation = false;
  for (const auto& call : reading.tool_inputs) {
    // A bare "activate_skill" (Gemini's stats name the tool, not its input) says nothing about
    // which skill was activated.
    if (call == "activate_skill" || call == "Skill" || call == "skill") {
      bare_activation = true;
      continue;
    }
    // Claude Code's Skill, opencode's skill, Gemini CLI's activate_skill.
    const bool activation = call.starts_with("Skill ") || call.starts_with("skill ") ||
                            call.starts_with("activate_skill ");
    const std::string input = activation ? call.substr(call.find(' ') + 1) : std::string();
    const bool this_skill = mentions(input, "\"" + name + "\"") || input == name;
    if ((activation && this_skill) || mentions(call, name + "/SKILL.md")) {
      u.loaded = true;
      ++u.skill_reads;
    } else if (mentions(call, name + "/references/") || mentions(call, name + "/scripts/")) {
      ++u.reference_reads;
    }
  }
  // Only an activation of an unnamed skill: whether it was this one is not known.
  if (bare_activation && !u.loaded) u.known = false;
  return u;
}

Status install_skill_for(const CliAgent& agent, const skill::SkillBundle& skill,
                         const fs::path& workspace) {
  const fs::path dir = workspace / agent.skills_dir / skill.name();
  UPSKILL_RETURN_IF_ERROR(files::write_atomic(dir / "SKILL.md", skill.render_skill_md()));
  // Never the tests: kernel specs (specs/) and skill_meta.json are how the answer is judged.
  for (const auto& [path, file] : skill.files) {
    if (path.starts_with("specs/")) continue;
    UPSKILL_RETURN_IF_ERROR(files::write_atomic(dir / path, file.content));
    if (file.executable) fs::permissions(dir / path, fs::perms::owner_exec, fs::perm_options::add);
  }
  return {};
}

std::string inline_skill_prompt(const skill::SkillBundle& skill, const std::string& task) {
  return "Use the following skill to complete the task.\n\n" + skill.render_skill_md() +
         "\n---\n\n" + task;
}

namespace {

// The largest argument Linux passes (MAX_ARG_STRLEN), less room for the rest of the argument.
constexpr std::size_t kLargestArgument = 128 * 1024 - 256;

// The command line, with "{prompt}" replaced; the task goes to stdin when no argument holds it.
Result<std::vector<std::string>> agent_argv(const CliAgent& agent, const std::string& prompt,
                                            bool& on_stdin) {
  std::vector<std::string> argv{agent.command};
  on_stdin = true;
  for (const auto& a : agent.argv) {
    std::string arg = a;
    // Searched on after each replacement: a task that itself says "{prompt}" is left as it is.
    for (std::size_t at = arg.find("{prompt}"); at != std::string::npos;
         at = arg.find("{prompt}", at + prompt.size())) {
      arg.replace(at, 8, prompt);
      on_stdin = false;
    }
    if (arg.size() > kLargestArgument)
      return fail(Error::usage(fmt::format(
          "{}: the task is {} KiB, more than one command-line argument can hold (128 KiB); give "
          "cli_providers.{}.argv without {{prompt}} so that the task goes to its stdin",
          agent.name, prompt.size() / 1024, agent.name)));
    argv.push_back(std::move(arg));
  }
  argv.insert(argv.end(), agent.args.begin(), agent.args.end());
  return argv;
}

// Claude Code's record of a session: <home>/.claude/projects/<folder>/<session id>.jsonl.
std::string claude_session(const std::string& id, const fs::path& home) {
  if (id.empty() || id.find('/') != std::string::npos) return {};
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

// The Codex rollout of a thread: <home>/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl.
// Gemini CLI's session: <home>/.gemini/tmp/<project>/chats/session-<time>-<first 8 of the id>.jsonl,
// whose first line names the whole id.
std::string native_session(CliOutput output, const std::string& id, const fs::path& home) {
  if (id.empty() || id.find('/') != std::string::npos || id.size() < 8) return {};
  if (output == CliOutput::copilot) {
    // <home>/.copilot/session-state/<session id>/events.jsonl
    auto text = files::read_text(home / ".copilot/session-state" / id / "events.jsonl");
    return text ? *text : std::string();
  }
  const bool codex = output == CliOutput::codex;
  const fs::path root = home / (codex ? ".codex/sessions" : ".gemini/tmp");
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (it.depth() > 4) it.disable_recursion_pending();
    const std::string name = it->path().filename().string();
    if (!name.ends_with(".jsonl") || !it->is_regular_file(ec)) continue;
    const bool candidate = codex ? name.starts_with("rollout-") && name.ends_with(id + ".jsonl")
                                 : name.starts_with("session-") &&
                                       name.ends_with(id.substr(0, 8) + ".jsonl");
    if (!candidate) continue;
    auto text = files::read_text(it->path());
    if (!text) continue;
    if (!codex && text->substr(0, text->find('\n')).find(id) == std::string::npos) continue;
    return *text;
  }
  return {};
}

// The key an agent runs on reaches its commands (Claude Code's Bash tool inherits its
// environment): whatever it printed is kept only with the key replaced.
void redact_secrets(std::string& text, const CliAgent& agent) {
  for (const auto& [name, value] : agent.secret_env) {
    if (value.size() < 4) continue;  // too short to tell from ordinary text
    const std::string mark = "[" + name + " redacted]";
    for (std::size_t at = text.find(value); at != std::string::npos;
         at = text.find(value, at + mark.size()))
      text.replace(at, value.size(), mark);
  }
}

// What the agent left besides its output: its own session record (readable by `upskill trace`),
// the tokens and tool calls only that record holds (Copilot CLI, Gemini CLI), and the cost by the
// models entry's prices.
void read_agent_records(CliRun& run, const CliAgent& agent, const fs::path& home) {
  if (agent.output == CliOutput::claude)
    run.session = claude_session(run.reading.session_id, home);
  else if (agent.output == CliOutput::codex || agent.output == CliOutput::gemini ||
           agent.output == CliOutput::copilot)
    run.session = native_session(agent.output, run.reading.session_id, home);
  if (agent.output == CliOutput::copilot) read_copilot_usage(run.reading, run.session);
  redact_secrets(run.session, agent);
  if (agent.output == CliOutput::gemini && !run.session.empty()) {
    // Its printed statistics name the tools, its session record what each was given (which
    // skill activate_skill activated): the calls are read from the record.
    CliReading calls;
    read_tool_calls(calls, run.session, trace::Format::gemini);
    if (calls.tool_calls > 0) {
      run.reading.tool_calls = calls.tool_calls;
      run.reading.tool_call_map = std::move(calls.tool_call_map);
      run.reading.tool_inputs = std::move(calls.tool_inputs);
    }
  }
  if (agent.pointed_at) {
    // The agent's own estimate prices its default model; the models entry's prices, where it
    // has them, price what answered.
    if (const auto& prices = agent.pointed_at->options.prices;
        prices && prices->input && prices->output) {
      run.reading.cost_usd = llm::cost_of(run.reading.usage, agent.pointed_at->options);
      run.cost_source = "prices";
    }
  }
}

}  // namespace

CliRun run_cli_agent(const CliAgent& agent, const std::string& prompt, const fs::path& workspace,
                     const fs::path& scratch) {
  CliRun run;
  sandbox::Options o;
  o.workdir = workspace;
  bool on_stdin = true;
  auto argv = agent_argv(agent, prompt, on_stdin);
  if (!argv) {  // this task only: the agent's other trials still run
    run.failure = argv.error().message;
    return run;
  }
  o.argv = std::move(*argv);
  if (on_stdin) o.stdin_data = prompt;
  o.as_user = agent.as_user;
  // On its login, the agent keeps its state in the user's home; on a configured model it needs
  // none, and gets a home of its own for the trial (its session record is found there).
  const fs::path home = agent.pointed_at ? scratch / "home" : fs::path(env_or("HOME", "/root"));
  const fs::path tmp = scratch / "tmp";
  std::error_code ec;
  fs::create_directories(tmp, ec);
  if (agent.pointed_at) {
    fs::create_directories(home, ec);
    for (const auto& [path, content] : agent.home_files)
      if (auto written = files::write_atomic(home / path, content); !written) {
        run.not_started = true;
        run.failure = fmt::format("{}: cannot prepare its home: {}", agent.name,
                                  written.error().message);
        return run;
      }
  }
  // A clean environment: the user's PATH and HOME (the agent's login lives there), proxies and
  // certificates, the variables this agent needs, its own settings; never what unset_env names.
  o.env["PATH"] = env_or("PATH", "/usr/local/bin:/usr/bin:/bin");
  o.env["HOME"] = home.string();
  o.env["TMPDIR"] = tmp.string();
  std::vector<std::string> pass = kNetworkEnv;
  pass.insert(pass.end(), agent.pass_env.begin(), agent.pass_env.end());
  for (const auto& name : pass)
    if (const char* v = std::getenv(name.c_str())) o.env[name] = v;
  for (const auto& [k, v] : agent.env) o.env[k] = v;
  for (const auto& name : agent.unset_env) o.env.erase(name);
  for (const auto& [k, v] : agent.secret_env) o.env[k] = v;
  // It needs its model's servers; everything else is held.
  o.isolate_network = false;
  o.isolate_pids = true;
  o.confine_writes = true;
  o.writable.push_back(tmp);
  if (agent.pointed_at) o.writable.push_back(home);
  for (const auto& p : agent.state_paths)
    if (!agent.pointed_at && fs::exists(home / p, ec)) o.writable.push_back(home / p);
  o.limits.wall = agent.timeout_s
                      ? std::chrono::milliseconds(static_cast<long long>(*agent.timeout_s * 1000))
                      : std::chrono::hours(24 * 365);
  o.limits.cpu_seconds = 1 << 30;
  o.limits.address_space_mb = std::size_t(1) << 24;  // JavaScript engines reserve a lot of space
  o.limits.processes = 4096;
  o.limits.output_bytes = 64 << 20;
  const auto start = std::chrono::steady_clock::now();
  auto result = sandbox::run(o);
  run.latency_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!result) {
    run.not_started = true;
    const std::string why = result.error().message;
    run.failure =
        mentions(why, "not found") || mentions(why, "No such file")
            ? fmt::format("{}: '{}' not found on PATH ({})", agent.name, agent.command, why)
            : fmt::format("{}: cannot start: {}", agent.name, why);
    return run;
  }
  redact_secrets(result->output, agent);
  run.transcript = result->output;
  run.exit_code = result->exit_code;
  run.timed_out = result->timed_out;
  run.protections = result->protections;
  run.reading = read_cli_output(agent.output, result->output);
  read_agent_records(run, agent, home);
  const std::string tail = text::excerpt(
      text::trim(result->output.size() > 600 ? result->output.substr(result->output.size() - 600)
                                             : result->output),
      300);
  if (result->timed_out) {
    run.failure = fmt::format("{}: timed out after {:.0f} s and was stopped", agent.name,
                              agent.timeout_s.value_or(0));
  } else if (result->exit_code != 0 && run.reading.error) {
    // Its own last words, as it reported them (an API error, "Not logged in", …).
    run.failure = fmt::format("{}: exited with code {}: {}", agent.name, result->exit_code,
                              *run.reading.error);
    if (!agent.pointed_at) *run.failure += " — if it is not logged in: " + agent.login_hint;
  } else if (result->exit_code != 0) {
    run.failure = fmt::format(
        "{}: exited with code {}{} — if it is not logged in: {}: {}", agent.name, result->exit_code,
        result->signal ? fmt::format(" (signal {})", result->signal) : "", agent.login_hint, tail);
  } else if (run.reading.error) {
    run.failure = fmt::format("{}: {}", agent.name, *run.reading.error);
  } else if (text::trim(run.reading.answer).empty() && agent.output != CliOutput::text &&
             !run.reading.tokens_available) {
    run.failure = fmt::format("{}: printed nothing upskill could read as {} output: {}", agent.name,
                              to_string(agent.output), tail.empty() ? "(no output)" : tail);
  } else if (text::trim(run.reading.answer).empty() && agent.output == CliOutput::text) {
    run.failure = fmt::format("{}: printed nothing", agent.name);
  }
  return run;
}

}  // namespace upskill::agent
