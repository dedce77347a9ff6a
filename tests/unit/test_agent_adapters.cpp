// The coding-agent registry (src/agent/adapter.hpp): every adapter the build gathered from
// src/agent/agents/ has every part, and the agent's settings, its reader and its model pointing
// are the ones upskill uses for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "../../src/agent/adapter.hpp"
#include "../../src/agent/agent_output.hpp"
#include "upskill/agent/cli_agent.hpp"
#include "upskill/agent/skills_folders.hpp"
#include "upskill/config/config.hpp"
#include "upskill/core/files.hpp"

namespace upskill::agent {
namespace {

// Each file of src/agent/agents/ is one adapter in the registry, and each part is there: the
// settings that run it without questions (a command, arguments, a skills folder, its state below
// $HOME, a login hint), a reader of its output, and — unless it prints plain text, which tells
// upskill nothing more — how it is pointed at a model. Names are unique, and so are the structured
// outputs; any number of plain-text agents share "text", each read by the one plain-text reader.
TEST(AgentAdapters, EveryRegisteredAgentHasEveryPart) {
  const auto all = adapters();
  ASSERT_GE(all.size(), 6u);
  std::set<std::string_view> names, outputs;
  for (const Adapter* a : all) {
    SCOPED_TRACE(std::string(a->name));
    EXPECT_TRUE(names.insert(a->name).second) << "two adapters named " << a->name;
    if (a->output != "text")
      EXPECT_TRUE(outputs.insert(a->output).second) << "two adapters reading " << a->output;
    ASSERT_NE(a->settings, nullptr);
    ASSERT_NE(a->read_output, nullptr);
    const CliAgent s = a->settings();
    EXPECT_EQ(s.name, a->name);
    EXPECT_EQ(s.output, a->output);
    EXPECT_FALSE(s.command.empty());
    EXPECT_FALSE(s.argv.empty());
    EXPECT_FALSE(s.skills_dir.empty());
    EXPECT_FALSE(s.skills_dir.starts_with("/")) << "a skills folder is below the workspace";
    EXPECT_FALSE(s.state_paths.empty());
    EXPECT_FALSE(s.login_hint.empty());
    if (a->output != "text") {
      EXPECT_NE(a->point_at_model, nullptr) << "an agent with structured output can be pointed";
    } else {
      // Every configured plain-text agent is read through this adapter: what it does beyond
      // reading the text would silently apply to all of them.
      EXPECT_EQ(a->point_at_model, nullptr);
      EXPECT_EQ(a->session_file, nullptr);
      EXPECT_EQ(a->read_session, nullptr);
      EXPECT_EQ(a->read_output, &output::read_text);
    }
    // The registry is what the rest of upskill sees.
    EXPECT_EQ(adapter_named(a->name), a);
    if (a->output != "text") EXPECT_EQ(adapter_reading(a->output), a);
    auto agent = cli_agent(std::string(a->name), config::Config{});
    ASSERT_TRUE(agent) << agent.error().message;
    EXPECT_EQ(agent->command, s.command);
    EXPECT_EQ(agent->skills_dir, s.skills_dir);
  }
  EXPECT_EQ(cli_agent_names().size(), all.size());
}

// An agent without an adapter that points it at a model says so; one with one is pointed.
TEST(AgentAdapters, PointingFollowsTheAdapterOfTheOutput) {
  llm::ResolvedModel m;
  m.name = "local";
  m.model = "glm";
  m.provider = "openai";
  m.base_url = "http://127.0.0.1:9/v1";
  CliAgent text_agent;
  text_agent.name = text_agent.command = "mine";
  const Status refused = point_at_model(text_agent, m, 2);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("does not know how to point mine"), std::string::npos);
  // A configured agent that prints Codex's events is pointed as Codex is.
  CliAgent like_codex;
  like_codex.name = like_codex.command = "fork";
  like_codex.output = "codex";
  ASSERT_TRUE(point_at_model(like_codex, m, 2));
  EXPECT_TRUE(like_codex.pointed_at.has_value());
  EXPECT_NE(std::find(like_codex.args.begin(), like_codex.args.end(), "glm"),
            like_codex.args.end());
}

// One table says where each agent reads skills: `upskill install --agent` (by the agent's name or
// its shorter one) and a student's workspace use the same folders.
TEST(SkillsFolders, OneTableForInstallAndStudents) {
  const auto folders = [](const char* agent) {
    const SkillsFolder* f = skills_folder_of(agent);
    return f ? f->project + " " + f->user : std::string("(none)");
  };
  EXPECT_EQ(folders("claude"), ".claude/skills .claude/skills");
  EXPECT_EQ(folders("claude-code"), ".claude/skills .claude/skills");
  EXPECT_EQ(folders("codex"), ".agents/skills .agents/skills");
  EXPECT_EQ(folders("cursor"), ".cursor/skills .cursor/skills");
  EXPECT_EQ(folders("opencode"), ".opencode/skills .config/opencode/skills");
  EXPECT_EQ(folders("agents"), ".agents/skills .agents/skills");
  EXPECT_EQ(folders("gemini"), ".gemini/skills .gemini/skills");
  EXPECT_EQ(folders("copilot"), ".github/skills .copilot/skills");
  EXPECT_EQ(folders("kiro"), ".kiro/skills .kiro/skills");
  EXPECT_EQ(skills_folder_of("vim"), nullptr);
  EXPECT_TRUE(skills_folder_of("claude")->claude_code);
  EXPECT_FALSE(skills_folder_of("codex")->claude_code);
  for (const Adapter* a : adapters()) {
    const SkillsFolder* f = skills_folder_of(a->name);
    ASSERT_NE(f, nullptr) << a->name;
    EXPECT_EQ(f->project, a->settings().skills_dir) << a->name;
    EXPECT_FALSE(f->user.empty()) << a->name;
  }
  const auto names = skills_folder_agents();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
}

}  // namespace
}  // namespace upskill::agent

namespace upskill::agent {
namespace {

// Without the key proxy (an agent on its own login) the requests are what the agent's records
// show: Codex's rollout has a token_count per model response (5 in this recording, whose exec
// stream has one turn), Claude Code's stream an assistant message id per response.
TEST(AgentAdapters, RequestsAreModelResponsesNotTurns) {
  const Adapter* codex = adapter_named("codex");
  ASSERT_NE(codex, nullptr);
  ASSERT_NE(codex->read_session, nullptr);
  auto rollout = files::read_text(std::filesystem::path(UPSKILL_SOURCE_DIR) /
                                  "tests/data/traces/codex-0.171.0-rollout-patches.jsonl");
  ASSERT_TRUE(rollout);
  CliReading r;
  r.usage.requests = 1;  // the exec stream's one turn
  codex->read_session(r, *rollout);
  EXPECT_EQ(r.usage.requests, 5);
  const std::string stream =
      R"({"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"a"}]}})"
      "\n"
      R"({"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}})"
      "\n"
      R"({"type":"assistant","message":{"id":"msg_2","content":[{"type":"text","text":"b"}]}})"
      "\n"
      R"({"type":"result","subtype":"success","result":"b","usage":{"input_tokens":3,"output_tokens":2}})"
      "\n";
  EXPECT_EQ(read_cli_output("claude", stream).usage.requests, 2);
  // Codex's exec stream: reasoning read beside output, which already includes it.
  const auto exec = read_cli_output(
      "codex",
      R"({"type":"turn.completed","usage":{"input_tokens":9,"cached_input_tokens":0,"output_tokens":20,"reasoning_output_tokens":8}})");
  EXPECT_EQ(exec.usage.output, 20);
  EXPECT_EQ(exec.usage.reasoning, 8);
}

}  // namespace
}  // namespace upskill::agent
