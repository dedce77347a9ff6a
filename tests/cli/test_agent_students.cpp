// Coding agents as students, with stand-in agents written for the tests that speak each CLI's
// machine-readable output (tests/data/fake-agents/fake_agent.py): the skill installed where each
// agent looks (or inlined), answers, tokens and cost read back, whether the agent loaded the skill,
// transcripts in the run logs, and the failures — a missing program, a login error, a hang, a write
// outside the workspace.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "support/cli_run.hpp"
#include "support/report_page.hpp"
#include "support/temp_dir.hpp"
#include "upskill/agent/cli_agent.hpp"
#include "upskill/core/json.hpp"

namespace upskill {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::read_file;
using testing::shell_quote;
using testing::TempDir;

const fs::path kFake = fs::path(UPSKILL_SOURCE_DIR) / "tests/data/fake-agents/fake_agent.py";

class AgentStudents : public ::testing::Test {
 protected:
  TempDir tmp;
  void SetUp() override {
    tmp.write("greeter/SKILL.md",
              "---\nname: greeter\ndescription: Greets people in the house style. Use when asked "
              "to greet someone in the house style.\n---\nAnswer with the house greeting: "
              "AHOY-42\n");
    tmp.write("greeter/references/style.md", "# Style\n");
    tmp.write("greeter/specs/secret_spec.py", "# the tests' own file\n");
    tmp.write("tests.json", R"({"cases": [
      {"id": "greet", "input": "Please greet the new hire in the house style.",
       "expected": {"contains": ["AHOY-42"]},
       "verifiers": [{"type": "file_exists", "path": "answer.txt"}]},
      {"id": "capital", "input": "What is the capital of France? Reply hello.",
       "expected": {"contains": ["hello"]}}]})");
    const std::string fake = shell_quote(kFake.string());
    std::string yaml = "retry_delay_s: 0.01\ncli_providers:\n";
    auto agent = [&](const std::string& name, const std::string& argv, const std::string& extra) {
      yaml += "  " + name + ":\n    command: " + fake + "\n    argv: " + argv + "\n" + extra;
    };
    agent("claude-code", "[claude, -p, '{prompt}', --output-format, stream-json]", "");
    agent("codex", "[codex, exec, --json, '{prompt}']", "");
    agent("gemini", "[gemini, -p, '{prompt}', --output-format, json]", "");
    agent("opencode", "[opencode, run, --format, json, '{prompt}']", "");
    // The stand-in of a plain-text agent (the real Copilot CLI prints JSON events: RealAgents).
    agent("copilot", "[text, -p, '{prompt}']", "    output: text\n");
    agent("login-broken", "[claude, -p, '{prompt}']",
          "    output: claude\n    env: {FAKE_MODE: login}\n    login_hint: fake login\n");
    agent("hanging", "[claude, -p, '{prompt}']",
          "    output: claude\n    env: {FAKE_MODE: hang}\n    timeout_seconds: 2\n");
    agent("escaping", "[claude, -p, '{prompt}']",
          "    output: claude\n    env: {FAKE_MODE: escape}\n    skills_dir: .claude/skills\n");
    agent("garbage", "[claude, -p, '{prompt}']",
          "    output: claude\n    env: {FAKE_MODE: garbage}\n");
    yaml += "  missing:\n    command: /nonexistent/agent\n    output: claude\n";
    tmp.write("upskill.config.yaml", yaml);
    fs::create_directories(tmp / "home");
  }
  CliRun eval(std::vector<std::string> args) {
    std::vector<std::string> all{"eval", "greeter", "-t", "tests.json"};
    all.insert(all.end(), args.begin(), args.end());
    return testing::run_cli(
        tmp.path(),
        "env -u GITHUB_STEP_SUMMARY -u UPSKILL_CONFIG HOME=" + shell_quote((tmp / "home").string()),
        UPSKILL_BINARY, all, tmp.path());
  }
};

TEST_F(AgentStudents, EachAgentsOutputIsReadAndSkillLoadingIsSeen) {
  const CliRun r =
      eval({"-m", "cli.claude-code", "-m", "cli.codex", "-m", "cli.gemini", "-m", "cli.opencode",
            "-m", "cli.copilot", "--baseline", "--json", "out.json", "-j", "4"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const Json out = Json::parse(read_file(tmp / "out.json"));
  struct Want {
    const char* model;
    long long input, output;
    bool tool_calls_shown;
    bool names_the_skill = true;  // the output says which skill was activated
  };
  // Gemini's --output-format json counts activate_skill calls by name only: which skill it
  // activated is not known, so that trial is not counted either way.
  const std::vector<Want> wants{{"cli.claude-code", 150, 20, true},
                                {"cli.codex", 200, 30, true},
                                {"cli.gemini", 300, 60, true, false},
                                {"cli.opencode", 150, 30, true},
                                {"cli.copilot", 0, 0, false}};
  ASSERT_EQ(out["models"].size(), wants.size());
  for (std::size_t m = 0; m < wants.size(); ++m) {
    SCOPED_TRACE(wants[m].model);
    const Json& model = out["models"][m];
    EXPECT_EQ(model["name"], wants[m].model);
    const Json& with = model["arms"]["with_skill"];
    const Json& base = model["arms"]["baseline"];
    EXPECT_EQ(with["pass_rate"], 1.0);  // the skill's greeting, and answer.txt in the workspace
    EXPECT_EQ(base["pass_rate"], 0.5);  // only the question that needs no skill
    EXPECT_EQ(with["tokens"]["input_tokens"], 2 * wants[m].input);
    EXPECT_EQ(with["tokens"]["output_tokens"], 2 * wants[m].output);
    if (wants[m].tool_calls_shown && !wants[m].names_the_skill) {
      // Its stats name its tools without their inputs: a trial that called any (write_file, or
      // a bare activate_skill) may have read the skill, so neither is known.
      EXPECT_EQ(with["skill_use"]["trials_known"], 0);
      EXPECT_EQ(with["skill_use"]["loaded"], 0);
      EXPECT_EQ(base["skill_use"]["loaded"], 0);
    } else if (wants[m].tool_calls_shown) {
      // Loaded only where the description matched the task; never without the skill installed.
      EXPECT_EQ(with["skill_use"]["trials_known"], 2);
      EXPECT_EQ(with["skill_use"]["loaded"], 1);
      EXPECT_EQ(base["skill_use"]["loaded"], 0);
      const Json& cases = model["cases"];
      EXPECT_EQ(cases[0]["arms"]["with_skill"]["skill_loaded"]["loaded"], 1);
      EXPECT_EQ(cases[1]["arms"]["with_skill"]["skill_loaded"]["loaded"], 0);
    } else {
      EXPECT_EQ(with["skill_use"]["trials_known"], 0);  // a text-only agent shows no tool calls
    }
  }
  EXPECT_NE(r.out.find("agent (with skill): loaded the skill in 1/2 trials"), std::string::npos)
      << r.out;
  // The run logs keep each transcript and say when tokens were not reported.
  fs::path batch;
  for (const auto& entry : fs::directory_iterator(tmp / "runs")) batch = entry.path();
  const std::string claude = read_file(batch / "transcripts/model1-with_skill-run1-case1.log");
  EXPECT_NE(claude.find("\"type\": \"result\""), std::string::npos) << claude.substr(0, 300);
  const Json copilot_run = Json::parse(read_file(batch / "run_10/run_result.json"));
  EXPECT_TRUE(copilot_run["cases"][0].value("tokens_unavailable", false)) << copilot_run.dump();

  // The report to read the work in: every trial, filterable, with the prompt, the answer, the
  // agent's transcript and every check; one offline file.
  const CliRun html = testing::run_cli(tmp.path(), "env -u UPSKILL_CONFIG", UPSKILL_BINARY,
                                       {"runs", "--html", "report.html"}, tmp.path());
  ASSERT_EQ(html.code, 0) << html.err;
  const std::string page = read_file(tmp / "report.html");
  const Json data = testing::report_page_data(page);
  ASSERT_EQ(data["batches"].size(), 1u);
  const Json& b = data["batches"][0];
  const auto model = [&](const Json& t) { return b["models"][t["m"].get<std::size_t>()]; };
  const auto id = [&](const Json& t) { return b["cases"][t["c"].get<std::size_t>()]["id"]; };
  bool claude_passed = false, loaded = false, not_loaded = false, unavailable = false,
       transcript = false, answer = false, reason = false;
  for (const auto& t : b["trials"]) {
    claude_passed = claude_passed || (model(t) == "cli.claude-code" && id(t) == "greet" &&
                                      t["a"] == 1 && t["o"] == "passed");
    loaded = loaded || t.value("ld", false);
    not_loaded = not_loaded || (t.contains("ld") && !t.value("ld", true));
    unavailable = unavailable || t.value("tu", false);
    transcript = transcript || t.value("tr", "").find("\"type\": \"result\"") != std::string::npos;
    answer = answer || t.value("ans", "").find("Here you go: AHOY-42") != std::string::npos;
    reason = reason || t.value("why", "").find("missing \"AHOY-42\"") != std::string::npos;
  }
  EXPECT_TRUE(claude_passed && loaded && not_loaded && unavailable && transcript && answer &&
              reason)
      << claude_passed << loaded << not_loaded << unavailable << transcript << answer << reason;
  EXPECT_EQ(b["cases"][0]["p"], "Please greet the new hire in the house style.");
  EXPECT_NE(page.find("<input id=\"q\" type=\"search\""), std::string::npos);
  EXPECT_EQ(page.find("src=\"http"), std::string::npos);  // nothing fetched from the network
}

TEST_F(AgentStudents, InlinedSkillsAreInThePromptNotInTheWorkspace) {
  const CliRun r =
      eval({"-m", "cli.claude-code", "--skill-delivery", "inline", "--json", "o.json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const Json out = Json::parse(read_file(tmp / "o.json"));
  const Json& with = out["models"][0]["arms"]["with_skill"];
  EXPECT_EQ(out["models"][0]["cases"][0]["arms"]["with_skill"]["passes"], 1);
  EXPECT_EQ(with["skill_use"]["loaded"], 0);  // nothing to load: it was in the prompt
}

TEST_F(AgentStudents, TheSkillIsInstalledWithoutTheTestsFiles) {
  agent::CliAgent a;
  a.skills_dir = ".claude/skills";
  auto bundle = skill::SkillBundle::load(tmp / "greeter");
  ASSERT_TRUE(bundle) << bundle.error().message;
  ASSERT_TRUE(agent::install_skill_for(a, *bundle, tmp / "ws"));
  EXPECT_TRUE(fs::exists(tmp / "ws/.claude/skills/greeter/SKILL.md"));
  EXPECT_TRUE(fs::exists(tmp / "ws/.claude/skills/greeter/references/style.md"));
  EXPECT_FALSE(fs::exists(tmp / "ws/.claude/skills/greeter/specs"));
  EXPECT_FALSE(fs::exists(tmp / "ws/.claude/skills/greeter/skill_meta.json"));
}

TEST_F(AgentStudents, FailuresAreErrorsWithTheAgentsWordsNeverPasses) {
  const CliRun login = eval({"-m", "cli.login-broken", "--no-baseline", "--no-log-runs"});
  EXPECT_EQ(login.code, 3) << login.out << login.err;
  EXPECT_NE(login.err.find("exited with code 1 — if it is not logged in: fake login"),
            std::string::npos)
      << login.err;
  EXPECT_NE(login.err.find("Please run /login"), std::string::npos) << login.err;

  const auto start = std::chrono::steady_clock::now();
  const CliRun hang = eval({"-m", "cli.hanging", "--no-baseline", "--no-log-runs"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(hang.code, 3);
  EXPECT_NE(hang.err.find("timed out after 2 s"), std::string::npos) << hang.err;

  const CliRun garbage = eval({"-m", "cli.garbage", "--no-baseline", "--no-log-runs"});
  EXPECT_EQ(garbage.code, 3);
  EXPECT_NE(garbage.err.find("printed nothing upskill could read as claude output"),
            std::string::npos)
      << garbage.err;

  const CliRun missing = eval({"-m", "cli.missing", "--no-log-runs", "-j", "1"});
  EXPECT_EQ(missing.code, 3);
  EXPECT_NE(missing.err.find("4 trial(s) (3 not sent after it)"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("not found on PATH"), std::string::npos) << missing.err;

  const CliRun unknown = eval({"-m", "cli.nobody"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown coding agent 'cli.nobody'"), std::string::npos)
      << unknown.err;
}

TEST_F(AgentStudents, WritesOutsideTheWorkspaceAreRefused) {
  const CliRun r = eval({"-m", "cli.escaping", "--no-baseline", "--no-log-runs"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(tmp / "home/escaped.txt"));
}

// The task goes into the arguments as one argument, untouched: no shell, and a task that itself
// says {prompt} is not expanded again.
TEST(AgentRun, TheTaskIsOneArgumentAsWritten) {
  TempDir tmp;
  agent::CliAgent echo;
  echo.name = "echo";
  echo.command = "/bin/echo";
  echo.argv = {"[{prompt}]"};
  echo.output = "text";
  std::filesystem::create_directories(tmp / "ws");
  const std::string task = "say {prompt} and $(touch pwned) `id`; twice";
  const auto run = agent::run_cli_agent(echo, task, tmp / "ws", tmp.path());
  ASSERT_FALSE(run.failure) << *run.failure;
  EXPECT_EQ(run.reading.answer, "[" + task + "]");
  EXPECT_FALSE(fs::exists(tmp / "ws/pwned"));
}

// The readers on their own: each format's answer, usage and tool calls.
TEST(AgentRun, ATaskOfAnySizeGoesToStdinAndAnArgumentThatCannotHoldItIsRefused) {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "ws");
  agent::CliAgent counter;
  counter.name = "counter";
  counter.command = "/usr/bin/wc";
  counter.argv = {"-c"};  // no {prompt}: the task is its stdin
  counter.output = "text";
  const std::string task(300 * 1024, 'x');
  auto run = agent::run_cli_agent(counter, task, tmp / "ws", tmp.path());
  ASSERT_FALSE(run.failure) << *run.failure;
  EXPECT_EQ(run.reading.answer, std::to_string(task.size()));
  counter.argv = {"{prompt}"};
  run = agent::run_cli_agent(counter, task, tmp / "ws", tmp.path());
  ASSERT_TRUE(run.failure);
  EXPECT_NE(run.failure->find("without {prompt}"), std::string::npos) << *run.failure;
}

TEST(AgentRun, AsUserTheAgentIsNotRootAndTheKeyIsKeptOutOfItsOutput) {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "ws");
  agent::CliAgent shell;
  shell.name = "shell";
  shell.command = "/bin/sh";
  shell.argv = {"-c", "id -u; echo \"key=$THE_KEY\""};
  shell.output = "text";
  shell.secret_env["THE_KEY"] = "sk-canary-31415";
  const auto run = agent::run_cli_agent(shell, "", tmp / "ws", tmp.path());
  ASSERT_FALSE(run.failure) << *run.failure;
  EXPECT_NE(run.reading.answer.substr(0, 2), "0\n") << run.reading.answer;
  EXPECT_TRUE(run.protections.unprivileged);
  EXPECT_EQ(run.transcript.find("sk-canary-31415"), std::string::npos) << run.transcript;
  EXPECT_NE(run.transcript.find("key=[THE_KEY redacted]"), std::string::npos) << run.transcript;
}

TEST(AgentModel, EachAgentIsPointedThroughWhatItReads) {
  llm::ResolvedModel m;
  m.name = "glm-local";
  m.provider = "generic";
  m.base_url = "http://127.0.0.1:8080/v1";
  m.model = "glm-4.6";
  m.api_key = llm::Secret("sk-local");
  config::Config cfg;
  auto pointed = [&](const std::string& name) {
    auto a = agent::cli_agent(name, cfg);
    EXPECT_TRUE(a);
    EXPECT_TRUE(agent::point_at_model(*a, m, 2)) << name;
    return *a;
  };
  const auto claude = pointed("claude-code");
  EXPECT_EQ(claude.env.at("ANTHROPIC_BASE_URL"), "http://127.0.0.1:8080");
  EXPECT_EQ(claude.secret_env.at("ANTHROPIC_AUTH_TOKEN"), "sk-local");
  EXPECT_EQ(claude.env.count("ANTHROPIC_AUTH_TOKEN"), 0u);  // never in the settings upskill shows
  EXPECT_EQ(std::count(claude.unset_env.begin(), claude.unset_env.end(), "ANTHROPIC_AUTH_TOKEN"),
            0);
  EXPECT_NE(std::find(claude.args.begin(), claude.args.end(), "glm-4.6"), claude.args.end());
  EXPECT_EQ(claude.env.at("CLAUDE_CODE_MAX_RETRIES"), "2");
  const auto codex = pointed("codex");
  std::string joined;
  for (const auto& a : codex.args) joined += a + " ";
  EXPECT_NE(joined.find("model_providers.upskill.base_url=\"http://127.0.0.1:8080/v1\""),
            std::string::npos)
      << joined;
  EXPECT_NE(joined.find("wire_api=\"responses\""), std::string::npos);
  EXPECT_EQ(codex.secret_env.at("UPSKILL_AGENT_API_KEY"), "sk-local");
  EXPECT_EQ(joined.find("sk-local"), std::string::npos);  // the key is never an argument
  const auto gemini = pointed("gemini");
  EXPECT_EQ(gemini.env.at("GOOGLE_GEMINI_BASE_URL"), "http://127.0.0.1:8080");
  EXPECT_EQ(gemini.secret_env.at("GEMINI_API_KEY"), "sk-local");
  // Its settings select the API-key sign-in (a base URL alone selects one its print mode
  // refuses); the key is not in them.
  const Json settings = Json::parse(gemini.home_files.at(".gemini/settings.json"));
  EXPECT_EQ(settings["security"]["auth"]["selectedType"], "gemini-api-key");
  EXPECT_EQ(gemini.home_files.at(".gemini/settings.json").find("sk-local"), std::string::npos);
  EXPECT_EQ(gemini.env.at("GEMINI_CLI_TRUST_WORKSPACE"), "true");
  const auto opencode = pointed("opencode");
  const Json oc = Json::parse(opencode.env.at("OPENCODE_CONFIG_CONTENT"));
  EXPECT_EQ(oc["model"], "upskill/glm-4.6");
  EXPECT_EQ(oc["provider"]["upskill"]["options"]["apiKey"], "{env:UPSKILL_AGENT_API_KEY}");
  m.provider = "anthropic";
  EXPECT_EQ(pointed("claude-code").secret_env.count("ANTHROPIC_API_KEY"), 1u);
  m.provider = "generic";
  const auto copilot = pointed("copilot");
  EXPECT_EQ(copilot.env.at("COPILOT_PROVIDER_BASE_URL"), "http://127.0.0.1:8080/v1");
  EXPECT_EQ(copilot.env.at("COPILOT_PROVIDER_TYPE"), "openai");
  EXPECT_EQ(copilot.env.at("COPILOT_MODEL"), "glm-4.6");
  EXPECT_EQ(copilot.secret_env.at("COPILOT_PROVIDER_API_KEY"), "sk-local");
  // An agent upskill knows no setting of: a usage error that says what to do instead.
  auto kiro = agent::cli_agent("kiro", cfg);
  ASSERT_TRUE(kiro);
  const auto refused = agent::point_at_model(*kiro, m, 2);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("env: and args:"), std::string::npos);
}

TEST(AgentOutput, LoadedMeansThisSkillByNameOrPath) {
  const fs::path ws = "/w";
  const auto use = [&](std::vector<std::string> calls, const std::string& name,
                       const std::string& skills_dir = ".claude/skills") {
    agent::CliReading r;
    r.tool_inputs = std::move(calls);
    return agent::skill_use(r, name, ws / skills_dir / name, ws);
  };
  EXPECT_FALSE(use({"Skill {\"skill\":\"greeter-extended\"}"}, "greeter").loaded);
  EXPECT_TRUE(use({"Skill {\"skill\":\"greeter\"}"}, "greeter").loaded);
  EXPECT_TRUE(use({"activate_skill {\"name\":\"greeter\"}"}, "greeter").loaded);
  EXPECT_TRUE(use({"skill {\"name\":\"greeter\"}"}, "greeter").loaded);  // opencode
  EXPECT_FALSE(use({"skill {\"name\":\"other\"}"}, "greeter").loaded);
  EXPECT_FALSE(use({"Skill {\"skill\":\"x\",\"args\":\"greeter\"}"}, "greeter").loaded);
  EXPECT_TRUE(
      use({"Read {\"file_path\":\"/w/.claude/skills/greeter/SKILL.md\"}"}, "greeter").loaded);
  // Gemini's stats name the tool only: which skill, or what it read, is not known.
  const auto bare = use({"activate_skill"}, "greeter");
  EXPECT_FALSE(bare.known);
  EXPECT_FALSE(bare.loaded);
  EXPECT_FALSE(use({"read_file", "run_shell_command"}, "greeter").known);
  // From a red-team pass over docs/agents.md: a path at the start of a line of a multi-line
  // command is read (the JSON's strings are decoded before they are split), a listing of the
  // references folder reads no reference, a call that reads SKILL.md and a reference counts both.
  const auto multi = use({R"(Bash {"command":"cd /tmp
/w/.claude/skills/greeter/SKILL.md"})",
                          R"(Bash {"command":"set -e
.claude/skills/greeter/scripts/run.sh in"})"},
                         "greeter");
  EXPECT_TRUE(multi.loaded);
  EXPECT_EQ(multi.reference_reads, 1);
  EXPECT_EQ(use({R"(Bash {"command":"ls .claude/skills/greeter/references"})"}, "greeter")
                .reference_reads,
            0);
  const auto both = use(
      {R"(Bash {"command":"cat .claude/skills/greeter/SKILL.md .claude/skills/greeter/references/a.md"})"},
      "greeter");
  EXPECT_TRUE(both.loaded);
  EXPECT_EQ(both.reference_reads, 1);
}

// "Loaded" is this skill's installed file, by the path each agent's call names resolved from its
// working folder: a skill named like the end of an agent's built-in one (Codex lists
// .codex/skills/.system/skill-creator in every run), or like the start of another installed
// skill, is not loaded by reading that one.
TEST(AgentOutput, LoadedIsThisSkillsFileNotANameThatEndsTheSame) {
  const fs::path ws = "/w";
  struct Agent {
    std::string skills_dir;
    std::string read_builtin, read_longer, read_this, read_reference;
  };
  const std::vector<Agent> agents{
      // Claude Code: Read with an absolute path.
      {".claude/skills", "Read {\"file_path\":\"/root/.claude/skills/skill-creator/SKILL.md\"}",
       "Read {\"file_path\":\"/w/.claude/skills/creator-pro/SKILL.md\"}",
       "Read {\"file_path\":\"/w/.claude/skills/creator/SKILL.md\"}",
       "Read {\"file_path\":\"/w/.claude/skills/creator/references/a.md\"}"},
      // Codex: a shell command, relative to its working folder.
      {".agents/skills",
       "exec_command {\"cmd\":\"cat /root/.codex/skills/.system/skill-creator/SKILL.md\"}",
       "exec_command {\"cmd\":\"sed -n 1,80p .agents/skills/creator-pro/SKILL.md\"}",
       "exec_command {\"cmd\":\"sed -n 1,80p .agents/skills/creator/SKILL.md\"}",
       "exec_command {\"cmd\":\"cat ./.agents/skills/creator/scripts/run.sh\"}"},
      // Gemini CLI: read_file with an absolute path.
      {".gemini/skills",
       "read_file {\"absolute_path\":\"/root/.gemini/skills/skill-creator/SKILL.md\"}",
       "read_file {\"absolute_path\":\"/w/.gemini/skills/creator-pro/SKILL.md\"}",
       "read_file {\"absolute_path\":\"/w/.gemini/skills/creator/SKILL.md\"}",
       "read_file {\"absolute_path\":\"/w/.gemini/skills/creator/references/b.md\"}"},
      // opencode: read with a path relative to the project.
      {".opencode/skills",
       "read {\"filePath\":\"/root/.config/opencode/skills/skill-creator/SKILL.md\"}",
       "read {\"filePath\":\".opencode/skills/creator-pro/SKILL.md\"}",
       "read {\"filePath\":\".opencode/skills/creator/SKILL.md\"}",
       "read {\"filePath\":\".opencode/skills/creator/references/c.md\"}"},
      // Copilot CLI: view, and a path that wanders out and back.
      {".github/skills", "view {\"path\":\"/root/.copilot/skills/skill-creator/SKILL.md\"}",
       "view {\"path\":\"/w/.github/skills/creator-pro/SKILL.md\"}",
       "view {\"path\":\"/w/src/../.github/skills/creator/SKILL.md\"}",
       "view {\"path\":\"/w/.github/skills/creator/references/d.md\"}"},
  };
  for (const auto& a : agents) {
    SCOPED_TRACE(a.skills_dir);
    const fs::path dir = ws / a.skills_dir / "creator";
    agent::CliReading r;
    r.tool_inputs = {a.read_builtin, a.read_longer};
    EXPECT_FALSE(agent::skill_use(r, "creator", dir, ws).loaded);
    r.tool_inputs.push_back(a.read_reference);
    auto only_reference = agent::skill_use(r, "creator", dir, ws);
    EXPECT_FALSE(only_reference.loaded);
    EXPECT_EQ(only_reference.reference_reads, 1);
    r.tool_inputs.push_back(a.read_this);
    EXPECT_TRUE(agent::skill_use(r, "creator", dir, ws).loaded);
    // A skill named like the start of another installed one: reading the other is not this.
    agent::CliReading longer;
    longer.tool_inputs = {a.read_longer};
    EXPECT_FALSE(agent::skill_use(longer, "creator", dir, ws).loaded);
    EXPECT_TRUE(
        agent::skill_use(longer, "creator-pro", ws / a.skills_dir / "creator-pro", ws).loaded);
  }
}

TEST(AgentOutput, ReadersTakeWhatEachFormatReports) {
  auto claude = agent::read_cli_output(
      "claude",
      R"({"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":9,"result":"","usage":{"input_tokens":5,"output_tokens":1}})");
  EXPECT_TRUE(claude.error);
  EXPECT_EQ(claude.turns, 9);
  auto codex = agent::read_cli_output("codex",
                                      "{\"type\":\"turn.failed\",\"error\":{\"message\":\"usage "
                                      "limit\"}}\nnot json\n");
  ASSERT_TRUE(codex.error);
  EXPECT_NE(codex.error->find("usage limit"), std::string::npos);
  auto gemini = agent::read_cli_output("gemini", R"(noise {"error": {"message": "quota"}} )");
  ASSERT_TRUE(gemini.error);
  // As Gemini CLI 0.61.0 ends a refused run: its stderr (a stack trace with braces) before the
  // object; the server's error body inside the message.
  const auto refused = agent::read_cli_output(
      "gemini",
      "Error when talking to Gemini API _ApiError: {\"error\":{\"code\":401}}\n    at "
      "throwErrorIfNotOK (chunk.js:1:2) {\n  status: 401\n}\n{\n  \"session_id\": \"d03d\",\n  "
      "\"error\": {\n    \"type\": \"Error\",\n    \"message\": "
      "\"{\\\"error\\\":{\\\"code\\\":401,\\\"message\\\":\\\"bad key\\\"}}\",\n    \"code\": "
      "401\n  "
      "}\n}");
  ASSERT_TRUE(refused.error);
  EXPECT_EQ(*refused.error, "gemini reported an error: HTTP 401: bad key");
  EXPECT_EQ(refused.session_id, "d03d");
  // Output with no object but many lines that open one and never close it: a few tries, not one
  // parse of the rest of the output per line.
  std::string noise;
  for (int i = 0; i < 20000; ++i) noise += "{\"k\": [\n";
  noise += "}\n";
  const auto started = std::chrono::steady_clock::now();
  const auto none = agent::read_cli_output("gemini", noise);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  EXPECT_TRUE(none.answer.empty());
  EXPECT_FALSE(none.tokens_available);
  auto text = agent::read_cli_output("text", "  just text \n");
  EXPECT_EQ(text.answer, "just text");
  EXPECT_FALSE(text.tokens_available);
  // Truncated or hostile output never throws.
  for (auto o : {"claude", "codex", "gemini", "opencode", "copilot", "text"})
    for (const char* s :
         {"", "{", "{\"type\":\"result\",\"usage\":7}", "[1,2]",
          "{\"type\":\"step_finish\",\"part\":{\"tokens\":\"x\"}}", "{\"stats\":{\"models\":[1]}}"})
      (void)agent::read_cli_output(o, s);
}

}  // namespace
}  // namespace upskill
