// The real coding-agent CLIs as students: the pinned programs of scripts/agent-clis.versions
// (installed by scripts/install-agent-clis.sh) driven through `upskill eval` against the scripted
// server on loopback, which requires a key. Claude Code, Codex, Gemini CLI, opencode and Copilot
// CLI, each pointed by cli_providers.<agent>.model at a models: entry: the skill listed, loaded, a
// file written, a command that fails, the fix, the answer — pass counts, tokens, loaded counts
// exact in both arms; its own session record kept and readable by `upskill trace`; the key in no
// output; as root and as an ordinary user; a wrong key in each agent's own words; hanging and
// missing.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "support/cli_run.hpp"
#include "support/scripted_server.hpp"
#include "support/temp_dir.hpp"
#include "upskill/core/json.hpp"

namespace upskill {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::read_file;
using testing::ScriptedServer;
using testing::shell_quote;
using testing::TempDir;

const fs::path kClis = UPSKILL_AGENT_CLIS_BIN;
constexpr const char* kKey = "canary-key-5f1e9a77";
constexpr const char* kDescription = "Greets people in the house style";

Json tool_reply(const std::string& id, const std::string& name, Json input, int in, int out) {
  return {{"content", ""},
          {"tool_calls", Json::array({{{"id", id}, {"name", name}, {"arguments", input}}})},
          {"usage", {{"prompt_tokens", in}, {"completion_tokens", out}}}};
}

// One real agent: how its tools are called in the scenario and what its records look like.
struct AgentCase {
  std::string name;     // cli_providers key and `-m cli.<name>`
  std::string program;  // below kClis
  std::string load_tool;
  Json load_input;  // the call that loads the skill (its Skill tool, a read of SKILL.md, …)
  std::string write_tool;
  Json write_input;  // writes answer.txt
  std::string shell_tool;
  std::string shell_key;  // the shell tool's command argument
  std::string load_mark;  // in the transcript or session when the skill was loaded
  bool keeps_session =
      true;  // writes a session record upskill keeps (else its stream is the record)
  // The server's reasoning tokens reach what the agent reports (Anthropic's wire has no count).
  bool reports_reasoning = true;
};

AgentCase claude_code() {
  return {"claude-code",
          "claude",
          "Skill",
          {{"skill", "greeter"}},
          "Write",
          {{"file_path", "answer.txt"}, {"content", "AHOY-42\n"}},
          "Bash",
          "command",
          "\"name\":\"Skill\"",
          true,
          false};
}

AgentCase codex() {
  // Codex has no skill tool: it reads SKILL.md with its shell, and writes files with it too.
  return {"codex",           "codex",
          "exec_command",    {{"cmd", "cat .agents/skills/greeter/SKILL.md"}},
          "exec_command",    {{"cmd", "printf 'AHOY-42\\n' > answer.txt"}},
          "exec_command",    "cmd",
          "greeter/SKILL.md"};
}

AgentCase gemini() {
  return {"gemini",
          "gemini",
          "activate_skill",
          {{"name", "greeter"}},
          "write_file",
          {{"file_path", "answer.txt"}, {"content", "AHOY-42\n"}},
          "run_shell_command",
          "command",
          "\"activate_skill\""};
}

AgentCase opencode() {
  // Its write tool wants an absolute path, which the scenario cannot know: it writes with bash.
  // Its sessions live in a database; its printed event stream is the record upskill reads.
  return {"opencode",
          "opencode",
          "skill",
          {{"name", "greeter"}},
          "bash",
          {{"command", "printf 'AHOY-42\\n' > answer.txt"}, {"description", "Write the answer"}},
          "bash",
          "command",
          "\"tool\":\"skill\"",
          false};
}

AgentCase copilot() {
  return {"copilot",
          "copilot",
          "skill",
          {{"skill", "greeter"}},
          "bash",
          {{"command", "printf 'AHOY-42\\n' > answer.txt"}, {"description", "Write the answer"}},
          "bash",
          "command",
          "\"name\":\"skill\"",
          true,
          false};  // its session's usage records carry no reasoning count
}

// The scenario. With the skill listed (its description in the request) and the greeting asked for:
// load the skill, write answer.txt, run a command that fails (a typo), fix it, answer. Everything
// else — the baseline, the other case — gets one plain answer.
Json scenario(const AgentCase& a) {
  const Json greet = {{"any_message", "greet the new hire"}, {"request", kDescription}};
  auto step = [&](int results) {
    Json m = greet;
    m["results"] = results;
    return m;
  };
  auto shell = [&](const std::string& command) {
    Json input = {{a.shell_key, command}};
    if (a.shell_key == "command") input["description"] = "Show the answer";
    return input;
  };
  Json rules = Json::array();
  rules.push_back({{"name", "load"},
                   {"match", step(0)},
                   {"reply", tool_reply("call_1", a.load_tool, a.load_input, 100, 7)}});
  rules.push_back({{"name", "write"},
                   {"match", step(1)},
                   {"reply", tool_reply("call_2", a.write_tool, a.write_input, 110, 8)}});
  rules.push_back({{"name", "fail"},
                   {"match", step(2)},
                   {"reply", tool_reply("call_3", a.shell_tool, shell("cat answr.txt"), 120, 9)}});
  // The fix also prints the environment its commands get: the key is removed from what upskill
  // keeps of it.
  rules.push_back({{"name", "fix"},
                   {"match", step(3)},
                   {"reply", tool_reply("call_4", a.shell_tool, shell("cat answer.txt; env | sort"),
                                        130, 10)}});
  rules.push_back(
      {{"name", "answer"},
       {"match", step(4)},
       {"reply",
        {{"content", "AHOY-42, and welcome aboard!"},
         {"usage",
          {{"prompt_tokens", 140}, {"completion_tokens", 11}, {"reasoning_tokens", 4}}}}}});
  rules.push_back(
      {{"name", "plain"},
       {"reply",
        {{"content", "hello there"},
         {"usage", {{"prompt_tokens", 50}, {"completion_tokens", 3}, {"reasoning_tokens", 1}}}}}});
  return {{"require_key", kKey}, {"rules", rules}};
}

class RealAgents : public ::testing::Test {
 protected:
  TempDir tmp;
  TempDir scratch;  // TMPDIR of the runs
  std::unique_ptr<ScriptedServer> server;
  AgentCase agent = claude_code();

  void SetUp() override {
    for (const char* program : {"claude", "codex", "gemini", "opencode", "copilot"})
      ASSERT_TRUE(fs::exists(kClis / program))
          << kClis << ": the agent CLIs are not installed; run scripts/install-agent-clis.sh";
    // An ordinary user must reach everything below (the as-user test runs upskill as nobody).
    fs::permissions(tmp.path(), fs::perms::all);
    tmp.write("greeter/SKILL.md",
              std::string("---\nname: greeter\ndescription: ") + kDescription +
                  ". Use when asked to greet someone in the house style.\n---\nAnswer with the "
                  "house greeting: AHOY-42. Write it to answer.txt first.\n");
    tmp.write("tests.json", R"({"cases": [
      {"id": "greet", "input": "Please greet the new hire in the house style.",
       "expected": {"contains": ["AHOY-42"]},
       "verifiers": [{"type": "file_exists", "path": "answer.txt"}]},
      {"id": "capital", "input": "What is the capital of France? Reply hello.",
       "expected": {"contains": ["hello"]}}]})");
    fs::create_directories(tmp / "home");
    start_server();
  }

  // The agent the test drives (Claude Code unless it says otherwise).
  void use(AgentCase a) {
    agent = std::move(a);
    if (server) server->stop();
    start_server();
  }

  void start_server() {
    server = std::make_unique<ScriptedServer>(scenario(agent));
    ASSERT_GT(server->start(), 0);
    write_config(server->base_url());
  }

  void write_config(const std::string& base_url, const std::string& command = "",
                    int timeout_s = 120) {
    tmp.write("upskill.config.yaml",
              "retry_delay_s: 0.01\n"
              "retries: 1\n"
              "models:\n"
              "  glm-local:\n"
              "    provider: generic\n"
              "    base_url: " +
                  base_url +
                  "\n"
                  "    model: glm-4.6\n"
                  "    api_key_env: GLM_LOCAL_KEY\n"
                  "    prices: {input: 1.0, output: 2.0}\n"
                  "cli_providers:\n"
                  "  " +
                  agent.name +
                  ":\n"
                  "    command: " +
                  (command.empty() ? (kClis / agent.program).string() : command) +
                  "\n"
                  "    model: glm-local\n"
                  "    timeout_seconds: " +
                  std::to_string(timeout_s) + "\n");
    // Everything below the folder, for the ordinary user too.
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(tmp.path()))
      fs::permissions(e.path(), fs::perms::all, ec);
  }

  CliRun eval(const std::string& as = "", const std::string& key = kKey, std::string student = "") {
    if (student.empty()) student = "cli." + agent.name;
    // The run's own temporary folder: the system's may not be writable by an ordinary user (CI's
    // is not).
    fs::permissions(scratch.path(), fs::perms::all);
    const std::string env = as +
                            " env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG -u ANTHROPIC_API_KEY "
                            "-u ANTHROPIC_AUTH_TOKEN GLM_LOCAL_KEY=" +
                            key + " HOME=" + shell_quote((tmp / "home").string()) +
                            " TMPDIR=" + shell_quote(scratch.path().string());
    return testing::run_cli(
        tmp.path(), env, UPSKILL_BINARY,
        {"eval", "greeter", "-t", "tests.json", "-m", student, "--json", "out.json", "-j", "2"},
        tmp.path());
  }

  fs::path batch() const {
    fs::path b;
    for (const auto& entry : fs::directory_iterator(tmp / "runs")) b = entry.path();
    return b;
  }

  // No file upskill wrote, nor what it printed, holds the key.
  void expect_no_key(const CliRun& r) {
    EXPECT_EQ(r.out.find(kKey), std::string::npos);
    EXPECT_EQ(r.err.find(kKey), std::string::npos);
    for (const auto& e : fs::recursive_directory_iterator(tmp.path())) {
      if (!e.is_regular_file() || e.path() == tmp / "upskill.config.yaml") continue;
      EXPECT_EQ(read_file(e.path()).find(kKey), std::string::npos) << e.path();
    }
  }

  void expect_exact_scenario(const CliRun& r) {
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const Json out = Json::parse(read_file(tmp / "out.json"));
    const Json& model = out["models"][0];
    const Json& with = model["arms"]["with_skill"];
    const Json& base = model["arms"]["baseline"];
    EXPECT_EQ(with["pass_rate"], 1.0) << model.dump(1);
    EXPECT_EQ(base["pass_rate"], 0.5);
    // Tokens: exactly what the scripted server sent. With the skill: the five steps of the
    // greeting and one plain answer; without: two plain answers.
    EXPECT_EQ(with["tokens"]["input_tokens"], 100 + 110 + 120 + 130 + 140 + 50);
    EXPECT_EQ(with["tokens"]["output_tokens"], 7 + 8 + 9 + 10 + 11 + 3);
    EXPECT_EQ(base["tokens"]["input_tokens"], 100);
    EXPECT_EQ(base["tokens"]["output_tokens"], 6);
    EXPECT_EQ(with["skill_use"]["trials_known"], 2);
    EXPECT_EQ(with["skill_use"]["loaded"], 1);
    EXPECT_EQ(base["skill_use"]["loaded"], 0);
    EXPECT_EQ(model["cases"][0]["arms"]["with_skill"]["skill_loaded"]["loaded"], 1);
    // Every request reached the server with the key and the configured model id.
    const auto requests = server->requests();
    EXPECT_EQ(requests.size(), 5u + 3u);
    for (const auto& q : requests) {
      SCOPED_TRACE(q.body.substr(0, 200) + " … " +
                   q.body.substr(q.body.size() - std::min<std::size_t>(q.body.size(), 1500)));
      EXPECT_FALSE(q.rule.empty()) << q.path;  // none refused (401) or unmatched
      // Gemini names the model in the path.
      EXPECT_TRUE(q.json.value("model", "") == "glm-4.6" ||
                  q.path.find("/models/glm-4.6:") != std::string::npos)
          << q.path;
    }
    // The agent's environment (the fix step printed it, and its output went to the model) held
    // the trial's token, never the key; once the trial ended the token opens neither the proxy
    // nor the endpoint.
    std::string token;
    std::set<int> ports;
    for (const auto& q : requests) {
      EXPECT_EQ(q.body.find(kKey), std::string::npos) << "the key reached the agent's process";
      if (const auto at = q.body.find("upskill-trial-"); at != std::string::npos && token.empty())
        token = q.body.substr(at, 14 + 48);
      for (auto at = q.body.find("127.0.0.1:"); at != std::string::npos;
           at = q.body.find("127.0.0.1:", at + 1))
        if (const int port = std::atoi(q.body.c_str() + at + 10); port != server->port())
          ports.insert(port);
    }
    // Copilot CLI keeps its provider key out of its commands' environment: no token shows there.
    if (agent.name == "copilot") {
      EXPECT_TRUE(token.empty());
      token = "upskill-trial-" + std::string(48, '0');
    }
    ASSERT_EQ(token.size(), 62u) << "the agent's environment shows the trial's token";
    // Where the environment names the proxy (all but Codex, which is given it with -c): stopped.
    for (int port : ports) {
      const std::string probe = fmt::format(
          "curl -s -o /dev/null -w '%{{http_code}}' -H 'Authorization: Bearer {}' -H 'x-api-key: "
          "{}' -d '{{}}' http://127.0.0.1:{}/v1/chat/completions",
          token, token, port);
      EXPECT_EQ(testing::run_cli(tmp.path(), "env", "sh", {"-c", probe}, tmp.path()).out, "000")
          << "the proxy still answers after the trial (port " << port << ")";
    }
    const std::string direct = fmt::format(
        "curl -s -o /dev/null -w '%{{http_code}}' -H 'Authorization: Bearer {}' -H 'x-api-key: "
        "{}' -H 'content-type: application/json' -d '{{\"model\":\"glm-4.6\"}}' "
        "{}/chat/completions",
        token, token, server->base_url());
    EXPECT_EQ(testing::run_cli(tmp.path(), "env", "sh", {"-c", direct}, tmp.path()).out, "401");
    // The run logs: the transcript, the agent's own session record, the cost from the prices.
    const fs::path b = batch();
    const std::string transcript = read_file(b / "transcripts/model1-with_skill-run1-case1.log");
    const fs::path session = agent.keeps_session
                                 ? b / "transcripts/model1-with_skill-run1-case1.session.jsonl"
                                 : b / "transcripts/model1-with_skill-run1-case1.log";
    ASSERT_TRUE(fs::exists(session)) << transcript.substr(0, 2000);
    // Gemini CLI prints only its statistics: the calls and their output are in its session.
    const std::string record = transcript + read_file(session);
    EXPECT_NE(record.find(agent.load_mark), std::string::npos) << record.substr(0, 400);
    EXPECT_NE(record.find("No such file or directory"), std::string::npos)  // the failure
        << record.substr(0, 4000);
    EXPECT_NE(read_file(session).find("answr.txt"), std::string::npos);
    bool priced = false;
    long long requested = 0, reasoning = 0;
    std::istringstream trials(read_file(b / "trials.jsonl"));
    for (std::string line; std::getline(trials, line);) {
      const Json t = Json::parse(line);
      if (t.value("cost_source", "") == "prices") priced = true;
      requested += t["tokens"].value("requests", 0LL);
      reasoning += t["tokens"].value("reasoning_tokens", 0LL);
    }
    EXPECT_TRUE(priced);
    // Every model request the server answered is counted, and the reasoning it reported (4 + 1
    // with the skill, 1 + 1 without) where the agent's wire carries it (Anthropic's does not).
    EXPECT_EQ(requested, static_cast<long long>(requests.size()));
    EXPECT_EQ(reasoning, agent.reports_reasoning ? 4 + 1 + 1 + 1 : 0);
    // `upskill trace` reads the session record: the failed command and its fix are in it.
    const CliRun trace = testing::run_cli(tmp.path(), "env", UPSKILL_BINARY,
                                          {"trace", session.string()}, tmp.path());
    EXPECT_EQ(trace.code, 0) << trace.err;
    EXPECT_NE(trace.out.find("answr.txt"), std::string::npos) << trace.out.substr(0, 2000);
    expect_no_key(r);
  }
};

TEST_F(RealAgents, ClaudeCodeOnAConfiguredModelAsRoot) {
  const CliRun r = eval();
  expect_exact_scenario(r);
}

TEST_F(RealAgents, CodexOnAConfiguredModelAsRoot) {
  use(codex());
  expect_exact_scenario(eval());
}

TEST_F(RealAgents, CodexOnAConfiguredModelAsAnOrdinaryUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "the suite already runs as an ordinary user";
  use(codex());
  expect_exact_scenario(eval("setpriv --reuid=65534 --regid=65534 --clear-groups"));
}

TEST_F(RealAgents, GeminiCliOnAConfiguredModelAsRoot) {
  use(gemini());
  expect_exact_scenario(eval());
}

TEST_F(RealAgents, GeminiCliOnAConfiguredModelAsAnOrdinaryUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "the suite already runs as an ordinary user";
  use(gemini());
  expect_exact_scenario(eval("setpriv --reuid=65534 --regid=65534 --clear-groups"));
}

TEST_F(RealAgents, OpencodeOnAConfiguredModelAsRoot) {
  use(opencode());
  expect_exact_scenario(eval());
}

TEST_F(RealAgents, OpencodeOnAConfiguredModelAsAnOrdinaryUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "the suite already runs as an ordinary user";
  use(opencode());
  expect_exact_scenario(eval("setpriv --reuid=65534 --regid=65534 --clear-groups"));
}

TEST_F(RealAgents, CopilotCliOnAConfiguredModelAsRoot) {
  use(copilot());
  expect_exact_scenario(eval());
}

TEST_F(RealAgents, CopilotCliOnAConfiguredModelAsAnOrdinaryUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "the suite already runs as an ordinary user";
  use(copilot());
  expect_exact_scenario(eval("setpriv --reuid=65534 --regid=65534 --clear-groups"));
}

TEST_F(RealAgents, TheCommandLineFormPointsTheAgentToo) {
  // cli.claude-code@glm-local without model: in the config; an unknown entry is a usage error.
  std::string config = read_file(tmp / "upskill.config.yaml");
  config.erase(config.find("    model: glm-local\n"), std::string("    model: glm-local\n").size());
  tmp.write("upskill.config.yaml", config);
  const CliRun r = eval("", kKey, "cli.claude-code@glm-local");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(Json::parse(read_file(tmp / "out.json"))["models"][0]["name"],
            "cli.claude-code@glm-local");
  EXPECT_EQ(server->requests().size(), 8u);
  for (const auto& q : server->requests()) EXPECT_EQ(q.json.value("model", ""), "glm-4.6");
  const CliRun unknown = eval("", kKey, "cli.claude-code@no-such-entry");
  EXPECT_EQ(unknown.code, 2) << unknown.out << unknown.err;
  EXPECT_NE(unknown.err.find("no-such-entry"), std::string::npos) << unknown.err;
  expect_no_key(r);
}

TEST_F(RealAgents, ClaudeCodeOnAConfiguredModelAsAnOrdinaryUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "the suite already runs as an ordinary user";
  const CliRun r = eval("setpriv --reuid=65534 --regid=65534 --clear-groups");
  expect_exact_scenario(r);
}

TEST_F(RealAgents, ClaudeCodeWithAWrongKeySaysWhyInItsOwnWords) {
  const CliRun r = eval("", "not-the-key");
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  // Every trial an error; the cause is the agent's own last words.
  const Json out = Json::parse(read_file(tmp / "out.json"));
  EXPECT_EQ(out["models"][0]["arms"]["with_skill"]["errors"], 2) << out.dump(1).substr(0, 3000);
  EXPECT_NE(r.out.find("claude-code: exited with code 1: claude reported an error: Failed to "
                       "authenticate"),
            std::string::npos)
      << r.out;
  ASSERT_FALSE(server->requests().empty());  // the agent did reach the server
  for (const auto& q : server->requests()) EXPECT_TRUE(q.rule.empty());  // all refused
  expect_no_key(r);
}

// Refused by the model's server, each agent's trials are errors whose cause is what the agent
// itself said about it.
TEST_F(RealAgents, EveryAgentWithAWrongKeySaysWhyInItsOwnWords) {
  for (const AgentCase& a : {codex(), gemini(), opencode()}) {
    SCOPED_TRACE(a.name);
    use(a);
    const CliRun r = eval("", "not-the-key");
    EXPECT_EQ(r.code, 3) << r.out << r.err;
    const Json out = Json::parse(read_file(tmp / "out.json"));
    EXPECT_EQ(out["models"][0]["arms"]["with_skill"]["errors"], 2) << out.dump(1).substr(0, 3000);
    const std::string words =
        a.name == "codex"    ? "codex: exited with code 1: codex reported an error: "
                               "unexpected status 401 Unauthorized: scripted failure 401"
        : a.name == "gemini" ? "gemini: exited with code 145: gemini reported an error: HTTP "
                               "401: scripted failure 401"
                             : "opencode: exited with code 1: opencode reported an error: "
                               "APIError: scripted failure 401 (HTTP 401)";
    EXPECT_NE(r.out.find(words), std::string::npos) << r.out;
    ASSERT_FALSE(server->requests().empty());  // the agent did reach the server
    for (const auto& q : server->requests()) EXPECT_TRUE(q.rule.empty());  // all refused
    expect_no_key(r);
  }
}

TEST_F(RealAgents, ClaudeCodeHangingOrMissingIsAnErrorThatSaysSo) {
  // The model never answers in time: the agent is stopped at its limit.
  server->stop();
  Json slow = scenario(agent);
  slow["delay_ms"] = 6000;
  server = std::make_unique<ScriptedServer>(slow);
  ASSERT_GT(server->start(), 0);
  write_config(server->base_url(), "", 2);
  CliRun r = eval();
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("claude-code: timed out after 2 s and was stopped"), std::string::npos)
      << r.out;
  // The program is not there.
  write_config(server->base_url(), (tmp / "no-such-claude").string());
  r = eval();
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("not found"), std::string::npos) << r.out;
  server->stop();  // the slow replies end with the server
}

}  // namespace
}  // namespace upskill
