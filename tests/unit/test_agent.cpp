// agent/: the student's tool loop in a workspace (tools, turn limits, the sandboxed run tool) and
// coding agents as students (their settings, output readers and skill-loading test).
#include <gtest/gtest.h>

#include "scripted_server.hpp"
#include "support/temp_dir.hpp"
#include "upskill/agent/agent.hpp"

namespace upskill::agent {
namespace {

llm::ToolCall call(const std::string& name, Json args) {
  return {"id", name, args.dump()};
}

TEST(AgentTools, WorkInsideTheWorkspaceOnly) {
  testing::TempDir ws;
  AgentOptions options;
  auto [wrote, e1] = execute_tool(call("write_file", {{"path", "src/a.cu"}, {"content", "kernel"}}),
                                  ws.path(), options);
  EXPECT_FALSE(e1) << wrote;
  EXPECT_EQ(testing::read_file(ws / "src/a.cu"), "kernel");
  auto [read, e2] = execute_tool(call("read_file", {{"path", "src/a.cu"}}), ws.path(), options);
  EXPECT_FALSE(e2);
  EXPECT_EQ(read, "kernel");
  auto [listed, e3] = execute_tool(call("list_files", Json::object()), ws.path(), options);
  EXPECT_FALSE(e3);
  EXPECT_EQ(listed, "src/a.cu");
  for (const auto& bad :
       {call("write_file", {{"path", "../escape"}, {"content", "x"}}),
        call("write_file", {{"path", "/etc/x"}, {"content", "x"}}),
        call("read_file", {{"path", "missing"}}), call("write_file", {{"path", 3}}),
        llm::ToolCall{"id", "read_file", "not json"}, call("run", {{"command", "true"}}),
        call("delete_everything", Json::object())}) {
    auto [text, is_error] = execute_tool(bad, ws.path(), options);
    EXPECT_TRUE(is_error) << bad.name << " " << bad.arguments;
    EXPECT_EQ(text.rfind("error: ", 0), 0u) << text;
  }
  std::filesystem::create_symlink("/etc", ws / "link");
  auto [through_link, e4] =
      execute_tool(call("read_file", {{"path", "link/hostname"}}), ws.path(), options);
  EXPECT_TRUE(e4) << through_link;
}

TEST(AgentTools, RunIsSandboxedAndOnlyWhenAllowed) {
  testing::TempDir ws;
  AgentOptions options;
  options.allow_run = true;
  auto [out, is_error] = execute_tool(
      call("run", {{"command", "echo hi > f.txt; cat f.txt; exit 2"}}), ws.path(), options);
  EXPECT_TRUE(is_error);  // a failing command is reported as a tool error
  EXPECT_NE(out.find("exit code 2"), std::string::npos) << out;
  EXPECT_NE(out.find("hi"), std::string::npos);
  EXPECT_EQ(agent_tools(false).size(), 3u);
  EXPECT_EQ(agent_tools(true).size(), 4u);
}

TEST(AgentLoop, ToolCallsThenAnAnswerWithCounts) {
  testing::ScriptedServer server(Json::parse(R"({"rules": [
    {"match": {"turn": 1}, "reply": {"tool_calls": [
        {"id": "c1", "name": "write_file", "arguments": {"path": "out.txt", "content": "MAGIC"}},
        {"id": "c2", "name": "read_file", "arguments": {"path": "nope.txt"}}],
      "usage": {"prompt_tokens": 50, "completion_tokens": 10}}},
    {"match": {"turn": 2}, "reply": {"content": "done", "usage": {"prompt_tokens": 80, "completion_tokens": 2}}}]})"));
  server.start();
  llm::CurlTransport transport;
  llm::ChatClient client(transport);
  llm::ResolvedModel model;
  model.name = "agent-student";
  model.base_url = server.base_url();
  model.model = "m";
  testing::TempDir ws;
  AgentOutcome outcome =
      run_agent(client, model, {llm::Message::user("write MAGIC to out.txt")}, ws.path(), {}, {});
  ASSERT_FALSE(outcome.failure) << outcome.failure->message;
  EXPECT_EQ(outcome.final_text, "done");
  EXPECT_EQ(outcome.stats.turns, 2);
  EXPECT_EQ(outcome.stats.tool_calls, 2);
  EXPECT_EQ(outcome.stats.tool_errors, 1);
  EXPECT_EQ(outcome.stats.call_map.at("write_file"), 1);
  EXPECT_EQ(outcome.stats.error_map.at("read_file"), 1);
  EXPECT_EQ(outcome.usage.input, 130);
  EXPECT_EQ(outcome.usage.output, 12);
  EXPECT_EQ(testing::read_file(ws / "out.txt"), "MAGIC");
  // The second request carried the tool results back.
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  const Json& messages = requests[1].json["messages"];
  EXPECT_EQ(messages[1]["tool_calls"].size(), 2u);
  EXPECT_EQ(messages[2]["role"], "tool");
  EXPECT_EQ(messages[3]["content"], "error: nope.txt does not exist");
  EXPECT_EQ(requests[0].json["tools"].size(), 3u);
}

TEST(AgentLoop, StopsAtTheTurnLimit) {
  testing::ScriptedServer server(Json::parse(R"({"rules": [{"reply": {"content": "again",
      "tool_calls": [{"name": "list_files", "arguments": {}}]}}]})"));
  server.start();
  llm::CurlTransport transport;
  llm::ChatClient client(transport);
  llm::ResolvedModel model;
  model.name = "loop";
  model.base_url = server.base_url();
  model.model = "m";
  testing::TempDir ws;
  AgentOptions options;
  options.max_turns = 3;
  AgentOutcome outcome =
      run_agent(client, model, {llm::Message::user("go")}, ws.path(), options, {});
  EXPECT_TRUE(outcome.hit_turn_limit);
  EXPECT_EQ(outcome.stats.turns, 3);
  EXPECT_EQ(server.request_count(), 3u);
}

}  // namespace
}  // namespace upskill::agent
