// Coding agents as students (see cli_agent.hpp).
#include "upskill/agent/cli_agent.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "adapter.hpp"
#include "agent_output.hpp"
#include "upskill/agent/key_proxy.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"

namespace upskill::agent {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kNetworkEnv{"HTTPS_PROXY",   "HTTP_PROXY",   "NO_PROXY",
                                           "https_proxy",   "http_proxy",   "no_proxy",
                                           "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS"};

// The outputs configured agents may name: each adapter's, and plain text last.
std::vector<std::string> output_names() {
  std::vector<std::string> names;
  for (const Adapter* a : adapters())
    if (a->output != "text") names.emplace_back(a->output);
  names.emplace_back("text");
  return names;
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
      else if (adapter_reading(s) || s == "text")
        a.output = s;
      else
        return fail(Error::usage(where + " must be one of " + text::join(output_names(), ", ")));
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

bool mentions(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

const Adapter* adapter_named(std::string_view name) {
  for (const Adapter* a : adapters())
    if (a->name == name) return a;
  return nullptr;
}

const Adapter* adapter_reading(std::string_view output) {
  for (const Adapter* a : adapters())
    if (a->output == output) return a;
  return nullptr;
}

const std::vector<std::string>& cli_agent_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Adapter* a : adapters()) n.emplace_back(a->name);
    return n;
  }();
  return names;
}

Result<CliAgent> cli_agent(const std::string& name, const config::Config& config) {
  CliAgent a;
  if (const Adapter* known = adapter_named(name)) {
    a = known->settings();
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

Status point_at_model(CliAgent& a, const llm::ResolvedModel& m, int retries) {
  const Adapter* adapter = adapter_reading(a.output);
  if (!adapter || !adapter->point_at_model)
    return fail(Error::usage(fmt::format(
        "cli_providers.{}.model: upskill does not know how to point {} at a model; set its "
        "endpoint and key with env: and args: instead",
        a.name, a.command)));
  auto before = std::make_shared<const CliAgent>(a);
  UPSKILL_RETURN_IF_ERROR(adapter->point_at_model(a, m, retries));
  a.pointed_at = m;
  a.before_pointing = std::move(before);
  a.pointed_retries = retries;
  return {};
}

CliReading read_cli_output(std::string_view output, std::string_view text) {
  CliReading r;
  if (const Adapter* adapter = adapter_reading(output))
    adapter->read_output(r, text);
  else
    output::read_text(r, text);
  return r;
}

namespace {

// The paths a tool call's text names: runs of characters a path holds, split at what a shell or
// JSON puts around one (quotes, spaces, operators, escapes), that hold a '/' or are a SKILL.md.
std::vector<std::string> named_paths(std::string_view call) {
  static constexpr std::string_view kStops = " \t\r\n\"'`;|&<>(){}[],=$\\";
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= call.size(); ++i) {
    if (i < call.size() && kStops.find(call[i]) == std::string_view::npos) continue;
    const std::string_view token = call.substr(start, i - start);
    if (token.find('/') != std::string_view::npos || token == "SKILL.md") out.emplace_back(token);
    start = i + 1;
  }
  return out;
}

// A path as the agent meant it: relative ones from its working folder, `.` and `..` resolved, and
// through symbolic links where it exists.
fs::path resolved(const std::string& named, const fs::path& workspace) {
  const fs::path p = fs::path(named).is_relative() ? workspace / named : fs::path(named);
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(p, ec);  // links first, then `..`, as the kernel does
  return ec ? p.lexically_normal() : real;
}

// The texts a tool call's input holds: each string of its JSON, decoded (a newline a newline, not
// `\n` glued to the next word), or the input itself when it is not JSON.
void texts_of(const Json& j, std::vector<std::string>& out) {
  if (j.is_string()) out.push_back(j.get<std::string>());
  if (j.is_array() || j.is_object())
    for (const auto& item : j) texts_of(item, out);
}
std::vector<std::string> input_texts(std::string_view input) {
  std::vector<std::string> out;
  const Json j = Json::parse(input, nullptr, false);
  if (j.is_discarded())
    out.emplace_back(input);
  else
    texts_of(j, out);
  return out;
}

// Whether `path` is strictly below `dir` (both resolved): a file in it, not the folder itself.
bool below(const fs::path& path, const fs::path& dir) {
  auto p = path.begin();
  for (auto d = dir.begin(); d != dir.end(); ++d, ++p)
    if (p == path.end() || *p != *d) return false;
  return p != path.end();
}

// A skill activation record naming `name` exactly: Claude Code's Skill {"skill": …} (or
// {"command": …}), Gemini CLI's activate_skill {"name": …}, opencode's skill {"name": …}.
bool activates(const std::string& input, const std::string& name) {
  const Json j = Json::parse(input, nullptr, false);
  if (j.is_string()) return j.get<std::string>() == name;
  if (!j.is_object()) return text::trim(input) == name;
  for (const char* key : {"skill", "name", "command"})
    if (lenient::string_field(j, key) == name) return true;
  return false;
}

}  // namespace

SkillUse skill_use(const CliReading& reading, const std::string& name, const fs::path& skill_dir,
                   const fs::path& workspace) {
  SkillUse u;
  u.known = true;
  bool bare_activation = false;
  // The installed folder resolved as every path a call names is, so the two compare.
  const fs::path home = resolved(skill_dir.string(), workspace);
  const fs::path skill_md = home / "SKILL.md";
  for (const auto& call : reading.tool_inputs) {
    // A tool named without its input (Gemini's stats without its session record) says nothing
    // about what it read or activated.
    if (call.find(' ') == std::string::npos) {
      bare_activation = true;
      continue;
    }
    const bool activation = call.starts_with("Skill ") || call.starts_with("skill ") ||
                            call.starts_with("activate_skill ");
    if (activation && activates(call.substr(call.find(' ') + 1), name)) {
      u.loaded = true;
      ++u.skill_reads;
      continue;
    }
    // A read of this skill's installed SKILL.md, by the path the call names resolved — never a
    // name that merely ends the same way (an agent's own built-in skill-creator/SKILL.md).
    bool read_skill = false, read_reference = false;
    for (const auto& text : input_texts(std::string_view(call).substr(call.find(' ') + 1)))
      for (const auto& named : named_paths(text)) {
        const fs::path p = resolved(named, workspace);
        if (p == skill_md) read_skill = true;
        if (below(p, home / "references") || below(p, home / "scripts")) read_reference = true;
      }
    if (read_skill) {
      u.loaded = true;
      ++u.skill_reads;
    }
    if (read_reference) ++u.reference_reads;
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
  const Adapter* adapter = adapter_reading(agent.output);
  // The id comes from the agent's output and names a file below its home: one name, no path.
  const std::string& id = run.reading.session_id;
  if (adapter && adapter->session_file && !id.empty() && id.find('/') == std::string::npos)
    run.session = adapter->session_file(id, home);
  redact_secrets(run.session, agent);
  if (adapter && adapter->read_session) adapter->read_session(run.reading, run.session);
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

// One run of the agent as its settings say (run_cli_agent has pointed it at the trial's proxy).
static CliRun run_as_set(const CliAgent& agent, const std::string& prompt,
                         const fs::path& workspace, const fs::path& scratch) {
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
        run.failure =
            fmt::format("{}: cannot prepare its home: {}", agent.name, written.error().message);
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
  } else if (text::trim(run.reading.answer).empty() && agent.output != "text" &&
             !run.reading.tokens_available) {
    run.failure = fmt::format("{}: printed nothing upskill could read as {} output: {}", agent.name,
                              agent.output, tail.empty() ? "(no output)" : tail);
  } else if (text::trim(run.reading.answer).empty() && agent.output == "text") {
    run.failure = fmt::format("{}: printed nothing", agent.name);
  }
  return run;
}

CliRun run_cli_agent(const CliAgent& agent, const std::string& prompt, const fs::path& workspace,
                     const fs::path& scratch) {
  // On its login the agent holds its own credentials; on a configured model it gets the trial's
  // proxy and token, pointed afresh from its settings before pointing, and never the key.
  if (!agent.pointed_at || !agent.before_pointing)
    return run_as_set(agent, prompt, workspace, scratch);
  CliRun run;
  auto proxy = KeyProxy::start(*agent.pointed_at);
  if (!proxy) {
    run.failure = fmt::format("{}: {}", agent.name, proxy.error().message);
    return run;
  }
  CliAgent through = *agent.before_pointing;
  // What it would pass on from upskill's environment for its own login (OPENAI_API_KEY, …) could
  // hold the configured model's key: on a configured model it needs none of it.
  through.pass_env.clear();
  if (auto pointed = point_at_model(through, (*proxy)->through(), agent.pointed_retries);
      !pointed) {
    run.failure = fmt::format("{}: {}", agent.name, pointed.error().message);
    return run;
  }
  through.pointed_at = agent.pointed_at;  // its prices and name: the configured model's
  run = run_as_set(through, prompt, workspace, scratch);
  // The key itself, should it reach anything kept some other way, is replaced too.
  for (std::string* kept : {&run.transcript, &run.session, &run.reading.answer})
    redact_secrets(*kept, agent);
  if (run.failure) redact_secrets(*run.failure, agent);
  // What the endpoint received, counted where it passed: every agent alike, whatever it reports.
  const int forwarded = (*proxy)->forwarded();
  proxy->reset();  // the trial is over: the token opens nothing from here on
  if (forwarded > 0) run.reading.usage.requests = forwarded;
  return run;
}

}  // namespace upskill::agent
