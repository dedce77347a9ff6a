// What a command's outcome is, read on the real Claude Code 2.1.328 session
// (tests/data/traces/manifest.json) changed in one place each: a pipeline whose last command's
// "exit 1" is its answer, a program that was not found and the one that ran instead, a command
// the session ended before answering.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "../../src/trace/formats/codex_code_mode.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/json.hpp"
#include "upskill/core/text.hpp"
#include "upskill/trace/digest.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace {
namespace {

const std::filesystem::path kTraces =
    std::filesystem::path(UPSKILL_SOURCE_DIR) / "tests/data/traces";

std::string session() {
  return *files::read_text(kTraces / "claude-code-2.1.328-session.jsonl");
}

// Records of the forms the programs' own sources write, for the cases no recording here holds.

// A Claude Code session's user record (its text, or blocks), with `extra` fields.
std::string claude_user(int n, const Json& content, const Json& extra = Json::object()) {
  Json r = {{"type", "user"},
            {"uuid", fmt::format("u{}", n)},
            {"sessionId", "s"},
            {"timestamp", "2026-01-01T00:00:00Z"},
            {"message", {{"role", "user"}, {"content", content}}}};
  r.update(extra);
  return r.dump() + "\n";
}

// A Claude Code assistant record of one content block.
std::string claude_reply(int n, const Json& block) {
  return Json{{"type", "assistant"},
              {"uuid", fmt::format("a{}", n)},
              {"sessionId", "s"},
              {"message",
               {{"id", fmt::format("m{}", n)},
                {"role", "assistant"},
                {"content", Json::array({block})}}}}
             .dump() +
         "\n";
}

std::string claude_text(int n, const std::string& text) {
  return claude_reply(n, {{"type", "text"}, {"text", text}});
}

std::string claude_tool_use(int n, const std::string& id, const std::string& name,
                            const Json& input) {
  return claude_reply(n, {{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", input}});
}

// A tool's result, with the record's toolUseResult.
std::string claude_result(int n, const std::string& id, const std::string& content,
                          const Json& tool_use_result) {
  return claude_user(
      n, Json::array({{{"type", "tool_result"}, {"tool_use_id", id}, {"content", content}}}),
      {{"toolUseResult", tool_use_result}});
}

// A Codex rollout's first line (the real recording's session_meta), and a response item.
std::string codex_rollout_head() {
  return text::split_lines(*files::read_text(kTraces / "codex-0.171.0-rollout-patches.jsonl"))[0] +
         "\n";
}

std::string codex_item(const Json& payload) {
  return Json{{"timestamp", "2026-07-10T16:45:21.972Z"},
              {"type", "response_item"},
              {"payload", payload}}
             .dump() +
         "\n";
}

// What the user typed, in order: the user turns that are not injected text.
std::vector<std::string> prompts_of(const Trace& t) {
  std::vector<std::string> prompts;
  for (const Turn& turn : t.turns)
    if (turn.role == Role::user && !turn.meta) prompts.push_back(turn.text);
  return prompts;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  std::size_t n = 0;
  for (std::size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size(), ++n)
    s.replace(at, from.size(), to);
  EXPECT_GT(n, 0u) << from;
  return s;
}

const std::string kFailure =
    "Exit code 2\\nls: cannot access 'rmsnorm.cu': No such file or directory";

TEST(CommandOutcome, APipelineThatEndsInAGrepFindingNothingAnswered) {
  std::string text = replace_all(session(), "\"command\":\"ls rmsnorm.cu\"",
                                 "\"command\":\"ls | grep rmsnorm.cu\"");
  text = replace_all(text, kFailure, "Exit code 1");
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->commands.size(), 2u);
  EXPECT_EQ(t->commands[0].command, "ls | grep rmsnorm.cu");
  EXPECT_FALSE(t->commands[0].failed);  // as `grep rmsnorm.cu f` exiting 1 is
  EXPECT_EQ(count(*t).failed_commands, 0u);
  // A pipeline whose last command is not one that answers with 1 still failed.
  text = replace_all(session(), "\"command\":\"ls rmsnorm.cu\"",
                     "\"command\":\"grep -q x notes.txt | ls rmsnorm.cu\"");
  text = replace_all(text, kFailure, "Exit code 1");
  auto u = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->commands[0].failed);
}

TEST(CommandOutcome, AProgramNotFoundIsFixedByTheOneThatRanOnTheSameArguments) {
  std::string text =
      replace_all(session(), "\"command\":\"ls rmsnorm.cu\"", "\"command\":\"python check.py\"");
  text = replace_all(text, kFailure, "Exit code 127\\n/bin/sh: 1: python: not found");
  text = replace_all(text, "\"command\":\"ls kernel.cu && rm notes.txt\"",
                     "\"command\":\"python3 check.py\"");
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->fixes.size(), 1u);
  ASSERT_TRUE(t->fixes[0].fixed_by);
  EXPECT_EQ(t->commands[*t->fixes[0].fixed_by].command, "python3 check.py");
  EXPECT_EQ(make_digest(*t).text.find("never fixed"), std::string::npos);
}

TEST(CommandOutcome, ACommandWithoutAResultIsNotShownAsSucceeded) {
  // The session cut before the last command's result (its tool_result record dropped).
  std::string text, line;
  std::istringstream in(session());
  while (std::getline(in, line))
    if (line.find("\"tool_use_id\":\"toolu_7\"") == std::string::npos) text += line + "\n";
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->commands.size(), 2u);
  EXPECT_FALSE(t->commands[1].answered);
  EXPECT_FALSE(t->commands[1].failed);
  const std::string digest = make_digest(*t).text;
  EXPECT_NE(digest.find("- ? `ls kernel.cu && rm notes.txt` (no result recorded)"),
            std::string::npos)
      << digest;
  EXPECT_EQ(digest.find("- ✓ `ls kernel.cu && rm notes.txt`"), std::string::npos) << digest;
  // A command never answered fixes nothing: the failed ls stays unfixed.
  ASSERT_EQ(t->fixes.size(), 1u);
  EXPECT_FALSE(t->fixes[0].fixed_by);
  EXPECT_TRUE(t->commands[0].answered);
}

// Every fence the digest prints is closed, and a message that starts with one starts on a line of
// its own: on the real session with one message starting with a fenced block and another whose
// block never closes (a message cut inside it reads the same).
TEST(DigestFences, AMessagesBlocksNeverSwallowTheRestOfTheDigest) {
  std::string text = replace_all(session(), "\"text\":\"Switching the capabilities list.",
                                 "\"text\":\"```toml\\ncuda-capabilities = [\\\"9.0\\\"]\\n```\\n"
                                 "Switching the capabilities list.");
  text =
      replace_all(text, "\"text\":\"That line is not there; checking the sources instead.",
                  "\"text\":\"That line is not there:\\n~~~~\\nls rmsnorm.cu\\n```\\nnot a close");
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  const std::string digest = make_digest(*t).text;
  std::istringstream lines(digest);
  std::string open;
  int blocks = 0;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_FALSE(line.starts_with("**Agent") && line.find("```") != std::string::npos) << line;
    const bool fence = line.starts_with("```") || line.starts_with("~~~");
    if (!fence) continue;
    const std::string mark = line.substr(0, line.find_first_not_of(line[0]));
    if (open.empty()) {
      open = mark;
      ++blocks;
    } else if (mark[0] == open[0] && mark.size() >= open.size()) {
      open.clear();
    }
  }
  EXPECT_TRUE(open.empty()) << "a block left open:\n" << digest;
  EXPECT_GE(blocks, 2) << digest;
  // What follows the messages is outside any block: the commands section is a heading.
  EXPECT_NE(digest.find("\n## Commands run"), std::string::npos) << digest;
}

// An error's output keeps its shape in the digest: a traceback's indentation and its caret line,
// spaces inside a line; and an output holding a fence of its own stays inside the digest's block.
TEST(ErrorShape, AnErrorsOutputKeepsItsIndentationAndItsOwnFences) {
  const std::string traceback =
      "Exit code 1\\nTraceback (most recent call last):\\n  File \\\"check.py\\\", line 3, in "
      "<module>\\n    main(  x,  y )\\n    ^^^^^^^^^^^^^^\\nValueError: bad  value\\n```\\nnot "
      "a fence of the digest\\n```";
  const std::string text = replace_all(session(), kFailure, traceback);
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(count(*t).failed_commands, 1u);
  const std::string digest = make_digest(*t).text;
  EXPECT_NE(digest.find("\n  File \"check.py\", line 3, in <module>\n    main(  x,  y )\n"
                        "    ^^^^^^^^^^^^^^\nValueError: bad  value\n"),
            std::string::npos)
      << digest;
  // The block around it is fenced with four backticks, so its own ``` lines stay inside it.
  EXPECT_NE(digest.find("````\nExit code 1\n"), std::string::npos) << digest;
  EXPECT_NE(digest.find("a fence of the digest\n```\n````\n"), std::string::npos) << digest;
}

// Cuts fall between lines, however small a text's share: on the real session with its kernel source
// grown to 4,000 lines and a digest of 1,500 tokens (under 5 % of the file), every mark of an
// omission stands on a line of its own; a prompt of one long line is cut between words.
TEST(DigestCuts, ALargeFileIsCutBetweenLinesAndAOneLinePromptBetweenWords) {
  std::string body;
  for (int i = 0; i < 4000; ++i)
    body += "  out[blockIdx.x * cols + c] = in[c] * scale_" + std::to_string(i) + ";\\n";
  std::string text = replace_all(session(), "  atomicAdd(&total, sum);\\n", body);
  std::string words;
  for (int i = 0; i < 3000; ++i) words += "word" + std::to_string(i) + " ";
  text = replace_all(text, "Write the rmsnorm kernel and its build config",
                     "Write the rmsnorm kernel and its build config " + words + "the end");
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  const std::string digest = make_digest(*t, {1500}).text;
  int line_marks = 0;
  for (std::size_t at = 0; (at = digest.find("[… ", at)) != std::string::npos; ++at) {
    const std::size_t end = digest.find("…]", at);
    ASSERT_NE(end, std::string::npos);
    const std::string mark = digest.substr(at, end + 4 - at);
    if (mark.find("line(s)") != std::string::npos) {
      ++line_marks;
      EXPECT_TRUE(at == 0 || digest[at - 1] == '\n') << digest.substr(at > 80 ? at - 80 : 0, 200);
      EXPECT_EQ(digest[end + 4], '\n') << digest.substr(at, 200);
    } else if (mark.find("bytes omitted") != std::string::npos) {
      // Only the one-line prompt is cut inside its line: between two whole words.
      EXPECT_EQ(digest[at - 1], ' ') << digest.substr(at > 80 ? at - 80 : 0, 200);
      EXPECT_EQ(digest.substr(end + 4, 5), " word") << digest.substr(at, 200);
    }
  }
  EXPECT_GE(line_marks, 1) << digest;
}

const FileTouch* file(const Trace& t, const std::string& path) {
  for (const auto& f : t.files)
    if (f.path == path) return &f;
  return nullptr;
}

// A folder moved away with mv, or removed with rm -r, takes the files the trace wrote in it along:
// on the real session with its notes written into scratch/ and its last command changed.
TEST(ShellMoves, AFolderMovedOrRemovedTakesItsFilesAlong) {
  std::string base =
      replace_all(session(), "\"file_path\":\"notes.txt\"", "\"file_path\":\"scratch/notes.txt\"");
  const std::string moved_text =
      replace_all(base, "ls kernel.cu && rm notes.txt", "ls kernel.cu && mv scratch archive");
  auto moved = parse_trace_text(moved_text, "session.jsonl");
  ASSERT_TRUE(moved) << moved.error().message;
  const FileTouch* gone = file(*moved, "scratch/notes.txt");
  ASSERT_NE(gone, nullptr);
  EXPECT_TRUE(gone->deleted);
  const FileTouch* there = file(*moved, "archive/notes.txt");
  ASSERT_NE(there, nullptr);
  EXPECT_FALSE(there->deleted);
  ASSERT_TRUE(there->content);
  EXPECT_EQ(*there->content, "scratch notes\nto delete\n");
  // Into a folder the trace wrote into (or named with a trailing /): under its own name.
  auto into = parse_trace_text(
      replace_all(base, "ls kernel.cu && rm notes.txt", "mv kernel.cu scratch/"), "s.jsonl");
  ASSERT_TRUE(into);
  ASSERT_NE(file(*into, "scratch/kernel.cu"), nullptr);
  EXPECT_TRUE(file(*into, "kernel.cu")->deleted);
  // rm -r of the folder deletes what the trace wrote in it.
  auto removed = parse_trace_text(
      replace_all(base, "ls kernel.cu && rm notes.txt", "ls kernel.cu && rm -rf scratch"),
      "s.jsonl");
  ASSERT_TRUE(removed);
  EXPECT_TRUE(file(*removed, "scratch/notes.txt")->deleted);
  EXPECT_FALSE(file(*removed, "kernel.cu")->deleted);
}

// Two agent_message items of a `codex exec --json` run are two messages, each in its place: on the
// real Codex 0.171.0 stream with a message added before its first change.
TEST(CodexExecMessages, TwoMessagesAroundTheWorkStayTwo) {
  std::string text = *files::read_text(kTraces / "codex-0.171.0-exec-patches.jsonl");
  text = replace_all(text, "{\"type\":\"turn.started\"}\n",
                     "{\"type\":\"turn.started\"}\n{\"type\":\"item.completed\",\"item\":{\"id\":"
                     "\"item_m\",\"type\":\"agent_message\",\"text\":\"I'll add hello.txt.\"}}\n");
  auto t = parse_trace_text(text, "exec.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(count(*t).assistant_messages, 2u);
  std::vector<std::string> said;
  for (const auto& turn : t->turns)
    if (turn.role == Role::assistant && !turn.text.empty()) said.push_back(turn.text);
  ASSERT_EQ(said.size(), 2u);
  EXPECT_EQ(said[0], "I'll add hello.txt.");
  EXPECT_EQ(said[1], "Done.");
  // The work between them belongs to the first.
  EXPECT_FALSE(t->turns.front().tool_calls.empty());
}

// codex exec's collab_tool_call items (the run's calls to its other agents; their fields as
// codex-rs/exec/src/exec_events.rs serialises them, no recording of one made here): each is a
// tool call named by its tool, with the prompt it sent and each reached agent's state and last
// message as its result; an agent that errored or was not found makes it a failure the digest
// shows. Before, each was an unknown record type and left out.
TEST(CodexCollab, CallsToOtherAgentsAreToolCallsWithWhatTheAgentsAnswered) {
  std::string text = *files::read_text(kTraces / "codex-0.171.0-exec-patches.jsonl");
  const std::string collab =
      "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_c1\",\"type\":\"collab_tool_call\","
      "\"tool\":\"spawn_agent\",\"sender_thread_id\":\"t0\",\"receiver_thread_ids\":[\"t1\"],"
      "\"prompt\":\"Review hello.txt for typos\",\"agents_states\":{\"t1\":{\"status\":"
      "\"pending_init\",\"message\":null}},\"status\":\"completed\"}}\n"
      "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_c2\",\"type\":\"collab_tool_call\","
      "\"tool\":\"wait\",\"sender_thread_id\":\"t0\",\"receiver_thread_ids\":[\"t1\"],"
      "\"prompt\":null,\"agents_states\":{\"t1\":{\"status\":\"completed\",\"message\":"
      "\"No typos: hello.txt reads hello.\"}},\"status\":\"completed\"}}\n"
      "{\"type\":\"item.completed\",\"item\":{\"id\":\"item_c3\",\"type\":\"collab_tool_call\","
      "\"tool\":\"send_input\",\"sender_thread_id\":\"t0\",\"receiver_thread_ids\":[\"t9\"],"
      "\"prompt\":\"Check old.txt too\",\"agents_states\":{\"t9\":{\"status\":\"not_found\","
      "\"message\":null}},\"status\":\"failed\"}}\n";
  text = replace_all(text, "{\"type\":\"turn.completed\"", collab + "{\"type\":\"turn.completed\"");
  auto t = parse_trace_text(text, "exec.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_TRUE(t->stats.unknown_types.empty()) << Json(t->stats.unknown_types).dump();
  EXPECT_EQ(t->tool_counts["spawn_agent"], 1);
  EXPECT_EQ(t->tool_counts["wait"], 1);
  EXPECT_EQ(t->tool_counts["send_input"], 1);
  const ToolCall* wait = nullptr;
  const ToolCall* send = nullptr;
  for (const auto& turn : t->turns)
    for (const auto& call : turn.tool_calls) {
      if (call.name == "wait") wait = &call;
      if (call.name == "send_input") send = &call;
    }
  ASSERT_TRUE(wait && send);
  EXPECT_EQ(wait->result, "t1: completed\nNo typos: hello.txt reads hello.\n");
  EXPECT_FALSE(wait->is_error);
  EXPECT_TRUE(send->is_error);
  EXPECT_EQ(send->input["prompt"], "Check old.txt too");
  const std::string digest = make_digest(*t).text;
  EXPECT_NE(digest.find("send_input"), std::string::npos) << digest;
  EXPECT_NE(digest.find("t9: not_found"), std::string::npos) << digest;
  // What the waited-for agent found is among what was said, not only a call's name.
  EXPECT_NE(digest.find("**Subagent report (turn"), std::string::npos) << digest;
  EXPECT_NE(digest.find("No typos: hello.txt reads hello."), std::string::npos) << digest;
}

// A subagent's report (a Claude Code Agent or Task call's result) is what it found; the digest
// quotes it among what was said, named by what it was asked, and keeps the agent's own last
// message as the last. A failed delegation is a failure, not a report.
TEST(SubagentReports, ADelegatedAgentsReportIsQuoted) {
  const std::string text =
      claude_user(1, "Find why the kernel is slow.") +
      claude_tool_use(2, "t1", "Agent",
                      {{"description", "Profile the kernel"}, {"prompt", "Profile it."}}) +
      claude_result(3, "t1", "The inner loop reloads A from global memory on every k.",
                    Json::object()) +
      claude_tool_use(4, "t2", "Task", {{"description", "Broken one"}}) +
      claude_user(5, Json::array({{{"type", "tool_result"},
                                   {"tool_use_id", "t2"},
                                   {"content", "Agent type not found"},
                                   {"is_error", true}}})) +
      claude_text(6, "Tiled A in shared memory.");
  auto t = parse_trace_text(text, "s.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  const std::string digest = make_digest(*t).text;
  const auto report = digest.find("**Subagent report: Profile the kernel (turn");
  ASSERT_NE(report, std::string::npos) << digest;
  const auto quoted = digest.find("The inner loop reloads A from global memory on every k.");
  EXPECT_EQ(quoted, digest.find(":** ", report) + 4) << digest;
  EXPECT_LT(report, digest.find("**Agent (turn"));
  EXPECT_NE(digest.find(", last):** Tiled A in shared memory."), std::string::npos) << digest;
  EXPECT_EQ(digest.find("**Subagent report: Broken one"), std::string::npos) << digest;
}

// The real session with its fixing edit moved to a source file it never wrote (the fix a
// one-character-class change, as in the session issue 47 names).
std::string regex_fix_session() {
  return replace_all(
      session(),
      "\"file_path\":\"build.toml\",\"old_string\":\"src = [\\\"rmsnorm.cu\\\"]\",\"new_string\":"
      "\"src = [\\\"kernel.cu\\\"]\"",
      "\"file_path\":\"src/parse.py\",\"old_string\":\"WORD = re.compile(r'[a-z]+')\","
      "\"new_string\":\"WORD = re.compile(r'[a-z0-9_]+')\"");
}

// An edit of a file the trace never showed whole is in the digest as its hunk — where the record
// does not carry the file the edit started from (toolUseResult.originalFile: releases and
// producers that do not record it).
TEST(UnknownFileEdits, AnEditOfAFileNeverShownWholeIsShownAsItsHunk) {
  const std::string text =
      replace_all(regex_fix_session(), "\"originalFile\":", "\"notRecorded\":");
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  const std::string digest = make_digest(*t).text;
  const auto at = digest.find("- src/parse.py: edited, but the trace never showed the whole file");
  ASSERT_NE(at, std::string::npos) << digest;
  EXPECT_NE(digest.find("```diff\n- WORD = re.compile(r'[a-z]+')\n+ WORD = "
                        "re.compile(r'[a-z0-9_]+')\n```",
                        at),
            std::string::npos)
      << digest;
}

// Where Claude Code recorded the whole file an edit started from (toolUseResult.originalFile),
// the file is known from there on: its final contents, not a hunk.
TEST(UnknownFileEdits, TheFileAnEditStartedFromIsTheFile) {
  const std::string parse_py = "import re\\n\\nWORD = re.compile(r'[a-z]+')\\n";
  std::string text = regex_fix_session();
  // That Edit's record: its originalFile is src/parse.py as it was.
  const std::size_t edit = text.find("\"filePath\":\"build.toml\",\"oldString\":\"src");
  ASSERT_NE(edit, std::string::npos);
  const std::size_t from = text.find("\"originalFile\":\"", edit);
  const std::size_t to = text.find("\",\"", from + 16);
  text.replace(from, to - from, "\"originalFile\":\"" + parse_py);
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  const auto parse = std::find_if(t->files.begin(), t->files.end(),
                                  [](const FileTouch& f) { return f.path == "src/parse.py"; });
  ASSERT_NE(parse, t->files.end());
  EXPECT_EQ(parse->content,
            std::optional<std::string>("import re\n\nWORD = re.compile(r'[a-z0-9_]+')\n"));
  EXPECT_TRUE(parse->hunks.empty());
}

// Claude Code's PowerShell tool (Windows) runs commands like Bash: a failure through one is fixed
// by the same program through the other (a real 2.1 export fixed failing Bash calls this way).
TEST(ShellTools, PowerShellRunsCommands) {
  const std::string text = replace_all(session(), "\"id\":\"toolu_7\",\"name\":\"Bash\"",
                                       "\"id\":\"toolu_7\",\"name\":\"PowerShell\"");
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->commands.size(), 2u);
  EXPECT_EQ(t->commands[1].command, "ls kernel.cu && rm notes.txt");
  ASSERT_EQ(t->fixes.size(), 1u);
  EXPECT_EQ(t->fixes[0].fixed_by, std::optional<std::size_t>(1));
}

// Output a terminal would have drawn reaches the teacher as text: NULs between the characters of
// UTF-16 output (a real Codex session's Windows command printed so), ANSI colours and carriage
// returns do not.
TEST(DigestText, ControlCharactersAndEscapesAreNotPassedOn) {
  const std::string text =
      replace_all(session(), "ls: cannot access",
                  "\\u001b[31mls\\u001b[0m: c\\u0000a\\u0000n\\u0000n\\u0000o\\u0000t\\u0000 "
                  "access\\r");
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  const std::string digest = make_digest(*t).text;
  EXPECT_NE(digest.find("ls: cannot access\n"), std::string::npos) << digest;
  for (const char c : digest)
    EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t')
        << static_cast<int>(c);
}

// What the agent changed in files the trace never showed whole shares the digest's budget like a
// file's contents: within a small budget the digest keeps to it, within a large one every hunk is
// whole (before, each side of every hunk was cut to 300 tokens whatever the room, and none of it
// counted: a 3,000-token digest of a real session came out at 7,776).
TEST(UnknownFileEdits, HunksShareTheBudget) {
  Trace t;
  t.turns.push_back(Turn{});
  t.turns.back().role = Role::user;
  t.turns.back().text = "Port the parser.";
  for (int f = 0; f < 30; ++f) {
    FileTouch file;
    file.path = fmt::format("src/part{}.py", f);
    file.unknown_reason = "edited, but the trace never showed the whole file";
    file.edits = 20;
    for (int h = 0; h < 20; ++h) {
      std::string old_text, new_text;
      for (int l = 0; l < 40; ++l) {
        old_text += fmt::format("    value_{}_{}_{} = compute(alpha, beta)\n", f, h, l);
        new_text += fmt::format("    value_{}_{}_{} = compute(alpha, beta, gamma)\n", f, h, l);
      }
      file.hunks.emplace_back(old_text, new_text);
    }
    t.files.push_back(std::move(file));
  }
  const TraceDigest small = make_digest(t, {3000});
  EXPECT_LE(small.tokens, 3000u);
  Trace few = t;
  few.files.resize(2);
  few.files[0].hunks.resize(3);
  few.files[1].hunks.resize(3);
  const std::string large = make_digest(few, {48000}).text;
  EXPECT_EQ(large.find("omitted"), std::string::npos) << large;
  EXPECT_NE(large.find("+     value_1_2_39 = compute(alpha, beta, gamma)\n"), std::string::npos);
}

// A slash command typed with arguments is the user's request as typed (a real session's whole task
// was "/orchestrator create TODO app by Next.js", and the digest's task was a later aside); one
// Claude Code ran itself (it answers with <local-command-stdout>) and one without arguments ask
// the model nothing.
TEST(SlashCommands, ACommandWithArgumentsIsTheRequest) {
  const std::string text =
      claude_user(1,
                  "<command-message>orchestrator is running…</command-message>\n<command-name>"
                  "/orchestrator</command-name>\n<command-args>create a TODO app</command-args>") +
      claude_user(2, "Plan the work, then build it.", {{"isMeta", true}}) +
      claude_text(3, "Planning the TODO app.") +
      claude_user(4,
                  "<command-name>/model</command-name>\n<command-message>model</command-message>\n"
                  "<command-args>sonnet</command-args>") +
      claude_user(5, "<local-command-stdout>Set model to sonnet</local-command-stdout>") +
      claude_user(6, "<command-name>/clear</command-name>\n<command-args></command-args>") +
      claude_user(7, "Now add a dark theme.") + claude_text(8, "Adding it.");
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(prompts_of(*t),
            (std::vector<std::string>{"/orchestrator create a TODO app", "Now add a dark theme."}));
  EXPECT_NE(make_digest(*t).text.find("**Task (turn 1/"), std::string::npos);
}

// Codex's code mode (0.144 on, as real rollouts show): the model's tool calls are JavaScript run
// by one `exec` tool — `tools.exec_command({...})`, `tools.apply_patch(patch)` with `const patch =
// "…"` — and its output is framed ("Script completed\nWall time …\nOutput:\n…", "Script failed"
// with "Script error:" and the thrown message). Each call in a script is a call of its own: the
// commands and patches are there as in any rollout (before, a real session of 88 commands and 46
// patches read as none).
TEST(CodexCodeMode, ScriptsAreTheCommandsAndPatchesTheyRun) {
  auto exec = [&](const std::string& id, const std::string& script) {
    return codex_item({{"type", "custom_tool_call"},
                       {"status", "completed"},
                       {"call_id", id},
                       {"name", "exec"},
                       {"input", script}});
  };
  auto output = [&](const std::string& id, const Json& out) {
    return codex_item({{"type", "custom_tool_call_output"}, {"call_id", id}, {"output", out}});
  };
  const std::string text =
      codex_rollout_head() +
      codex_item(
          {{"type", "message"},
           {"role", "user"},
           {"content", Json::array({{{"type", "input_text"}, {"text", "Make the tests pass"}}})}}) +
      exec("c1",
           "const patch = \"*** Begin Patch\\n*** Add File: src/cache.py\\n+def get(k):\\n+    "
           "return None\\n*** End Patch\\n\";\ntext(await tools.apply_patch(patch));") +
      output("c1",
             "Script completed\nWall time 0.1 seconds\nOutput:\nSuccess. Updated the "
             "following files:\nA src/cache.py\n") +
      exec("c2",
           "const r = await tools.exec_command({\"cmd\":\"python -m pytest -q\",\"workdir\":\"/w\","
           "\"yield_time_ms\":10000});\ntext(JSON.stringify(r));") +
      output("c2", Json::array({{{"type", "input_text"},
                                 {"text", "Script completed\nWall time 0.8 seconds\nOutput:\n"}},
                                {{"type", "input_text"},
                                 {"text",
                                  "{\"output\":\"E   assert None == 1\\n1 failed\","
                                  "\"exit_code\":1}"}}})) +
      exec("c3",
           "const patch = `*** Begin Patch\n*** Update File: src/cache.py\n@@\n-    return "
           "None\n+    return 1\n*** End Patch\n`;\nconst r = await tools.apply_patch(patch);\n"
           "text(r);\nconst t = await tools.exec_command({\"cmd\":\"python -m pytest -q\"});\n"
           "text(t.output);") +
      output("c3", "Script completed\nWall time 1.2 seconds\nOutput:\nSuccess.\n1 passed\n") +
      exec("c4",
           "const r = await tools.apply_patch(\"*** Begin Patch\\n*** Update File: "
           "src/none.py\\n@@\\n-x\\n+y\\n*** End Patch\\n\");") +
      output("c4", Json::array({{{"type", "input_text"},
                                 {"text", "Script failed\nWall time 0.0 seconds\nOutput:\n"}},
                                {{"type", "input_text"},
                                 {"text",
                                  "Script error:\napply_patch verification failed: "
                                  "Failed to find expected lines in src/none.py:\nx"}}}));
  auto t = parse_trace_text(text, "rollout.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->tool_counts["exec"], 0);
  EXPECT_EQ(t->tool_counts["exec_command"], 2);
  EXPECT_EQ(t->tool_counts["apply_patch"], 3);
  ASSERT_EQ(t->commands.size(), 2u);
  EXPECT_EQ(t->commands[0].command, "python -m pytest -q");
  EXPECT_TRUE(t->commands[0].failed);
  EXPECT_EQ(t->commands[0].exit_code, std::optional<int>(1));
  EXPECT_FALSE(t->commands[1].failed);
  ASSERT_EQ(t->fixes.size(), 1u);
  EXPECT_EQ(t->fixes[0].fixed_by, std::optional<std::size_t>(1));
  EXPECT_EQ(t->fixes[0].files_changed, std::vector<std::string>{"src/cache.py"});
  const auto cache = std::find_if(t->files.begin(), t->files.end(),
                                  [](const FileTouch& f) { return f.path == "src/cache.py"; });
  ASSERT_NE(cache, t->files.end());
  EXPECT_EQ(cache->content, std::optional<std::string>("def get(k):\n    return 1\n"));
  const std::string digest = make_digest(*t).text;
  EXPECT_NE(digest.find("Failed to find expected lines in src/none.py"), std::string::npos)
      << digest;
  EXPECT_EQ(digest.find("Script failed"), std::string::npos) << digest;
}

// Every prefix of a script, and every byte of it changed to each of the characters the reader
// scans for, reads without throwing: a script is model-written text.
TEST(CodexCodeMode, AnyScriptReadsWithoutThrowing) {
  const std::string script =
      "const patch = `*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n`;\n"
      "const r = await tools.exec_command({\"cmd\":\"ls \\\"a b\\\"\",\"n\":[1,{\"k\":\"}\"}]});\n"
      "text(await tools.apply_patch(patch)); tools.write_stdin({\"chars\":\"'\"});\n"
      "let q = \"*** Begin Patch\\n\"; tools.apply_patch(q)";
  std::size_t calls = 0;
  for (std::size_t n = 0; n <= script.size(); ++n)
    calls += detail::code_mode_calls(script.substr(0, n)).size();
  EXPECT_GT(calls, 0u);
  for (std::size_t i = 0; i < script.size(); ++i)
    for (const char c : std::string("\"'`{}()[]\\=$ ")) {
      std::string changed = script;
      changed[i] = c;
      EXPECT_NO_THROW(detail::code_mode_calls(changed));
    }
  EXPECT_EQ(detail::code_mode_calls(script).size(), 4u);
  const detail::ScriptOutput out = detail::code_mode_output("Script failed");
  EXPECT_TRUE(out.failed);
}

// Commands that did not succeed though their record does not say "failed" (the forms as each
// producer's source writes them; the real recordings here, changed to those forms):
// - Gemini CLI: a command killed by a signal ("Signal: SIGKILL", no exit code) or cancelled for
//   its timeout;
// - Copilot CLI releases without shellExecution: "success" true and the output ending
//   "<exited with exit code 2>";
// - codex exec: a command the user declined ("status":"declined"), which never ran.
TEST(CommandOutcome, StoppedDeclinedAndExitedInTextAreFailures) {
  auto commands = [](const std::string& text, const std::string& name) {
    auto t = parse_trace_text(text, name);
    EXPECT_TRUE(t) << t.error().message;
    return t ? t->commands : std::vector<CommandRun>{};
  };
  const std::string gemini = *files::read_text(kTraces / "gemini-cli-0.61.0-session.jsonl");
  auto killed = commands(replace_all(gemini, "Output: AHOY-42\\nProcess Group PGID: 15258",
                                     "Output: AHOY-42\\nSignal: SIGKILL\\nProcess Group PGID: 1"),
                         "session.jsonl");
  ASSERT_EQ(killed.size(), 2u);
  EXPECT_TRUE(killed[1].failed);
  auto timed_out = commands(
      replace_all(gemini, "Output: AHOY-42\\nProcess Group PGID: 15258",
                  "Command was automatically cancelled because it exceeded the timeout of 5.0 "
                  "minutes without output."),
      "session.jsonl");
  ASSERT_EQ(timed_out.size(), 2u);
  EXPECT_TRUE(timed_out[1].failed);
  // Versions that always print the line say "(none)" or "0" (a real session's every command).
  for (const std::string none_said : {"(none)", "0"}) {
    auto none = commands(replace_all(gemini, "Output: AHOY-42\\nProcess Group PGID: 15258",
                                     "Output: AHOY-42\\nExit Code: 0\\nSignal: " + none_said +
                                         "\\nProcess Group PGID: 1"),
                         "session.jsonl");
    ASSERT_EQ(none.size(), 2u);
    EXPECT_FALSE(none[1].failed) << none_said;
  }
  auto numbered = commands(replace_all(gemini, "Output: AHOY-42\\nProcess Group PGID: 15258",
                                       "Output: AHOY-42\\nSignal: 9\\nProcess Group PGID: 1"),
                           "session.jsonl");
  ASSERT_EQ(numbered.size(), 2u);
  EXPECT_TRUE(numbered[1].failed);

  std::string copilot = *files::read_text(kTraces / "copilot-cli-1.0.102-events.jsonl");
  copilot = replace_all(copilot, "AHOY-42\\n<shellId: 2 completed with exit code 0>",
                        "AHOY-42\\n<exited with exit code 2>");
  // As those releases wrote it: no shellExecution object.
  const std::string shell = "\"shellExecution\":";
  for (std::size_t at = copilot.find(shell); at != std::string::npos; at = copilot.find(shell)) {
    const std::size_t end = copilot.find('}', at);
    copilot.erase(at, end + 1 - at + (copilot[end + 1] == ',' ? 1 : 0));
  }
  auto exited = commands(copilot, "events.jsonl");
  ASSERT_FALSE(exited.empty());
  EXPECT_TRUE(exited.back().failed);
  EXPECT_EQ(exited.back().exit_code, std::optional<int>(2));

  const std::string codex =
      replace_all(*files::read_text(kTraces / "codex-0.171.0-exec-error.jsonl"),
                  "\"aggregated_output\":\"started\\n\",\"exit_code\":0,\"status\":\"completed\"",
                  "\"aggregated_output\":\"\",\"exit_code\":null,\"status\":\"declined\"");
  auto declined = commands(codex, "exec.jsonl");
  ASSERT_EQ(declined.size(), 1u);
  EXPECT_TRUE(declined[0].failed);
}

// A patch updating a file the trace never showed whole is in the digest as its hunks (context and
// removed lines, then context and added lines), as an edit of such a file is: on the real Codex
// rollout, with its deletion of old.txt made an update of it.
TEST(UnknownFileEdits, APatchOfAFileNeverShownWholeIsShownAsItsHunks) {
  const std::string text =
      replace_all(*files::read_text(kTraces / "codex-0.171.0-rollout-patches.jsonl"),
                  "Delete File: old.txt\\\\n",
                  "Update File: old.txt\\\\n@@ def main\\\\n-    return 1\\\\n+    return 0\\\\n");
  auto t = parse_trace_text(text, "rollout.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  const auto old = std::find_if(t->files.begin(), t->files.end(),
                                [](const FileTouch& f) { return f.path == "old.txt"; });
  ASSERT_NE(old, t->files.end());
  EXPECT_FALSE(old->content);
  ASSERT_EQ(old->hunks.size(), 1u);
  EXPECT_EQ(old->hunks[0],
            (std::pair<std::string, std::string>("    return 1\n", "    return 0\n")));
  const std::string digest = make_digest(*t).text;
  EXPECT_NE(digest.find("-     return 1\n+     return 0\n"), std::string::npos) << digest;
}

// A session on Windows (a real opencode export's paths, `C:\Users\…\cap\economy.md`, made one file
// with the same file patched as `economy.md`): paths under its working directory are relative,
// whichever separator and drive case the agent wrote; the real opencode export, moved to a
// Windows folder, reads the same.
TEST(WindowsPaths, PathsUnderAWindowsFolderAreRelative) {
  const std::string text = *files::read_text(kTraces / "opencode-1.18.33-export.json");
  std::string windows = replace_all(text, "/tmp/rec/ows/", "C:\\\\Users\\\\me\\\\ows\\\\");
  windows = replace_all(windows, "/tmp/rec/ows", "C:\\\\Users\\\\me\\\\ows");
  auto unix_trace = parse_trace_text(text, "export.json");
  auto win_trace = parse_trace_text(windows, "export.json");
  ASSERT_TRUE(unix_trace && win_trace);
  ASSERT_EQ(win_trace->files.size(), unix_trace->files.size());
  for (std::size_t i = 0; i < win_trace->files.size(); ++i) {
    EXPECT_EQ(win_trace->files[i].path, unix_trace->files[i].path);
    EXPECT_EQ(win_trace->files[i].content, unix_trace->files[i].content);
  }
}

// A line cut for its length is cut between words, and a cut inside text written without spaces
// does not split a Latin word in it ("這個bot"): the prompt's and the error output's cuts.
TEST(DigestCuts, LongLinesAreCutBetweenWords) {
  std::string words;
  for (int i = 0; i < 400; ++i) words += "alphabets ";
  std::string cjk;
  for (int i = 0; i < 300; ++i) cjk += "這個bot是否能查到";
  std::string text = replace_all(session(), "ls: cannot access", "ls: " + words + "cannot access");
  text = replace_all(text, "Write the rmsnorm kernel and its build config", cjk);
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  const std::string digest = make_digest(*t, {3000}).text;
  std::size_t cuts = 0;
  for (const std::string& line : text::split_lines(digest)) {
    for (std::size_t at = line.find("alphabets"); at != std::string::npos;
         at = line.find("alphabets", at + 1)) {
      const std::string rest = line.substr(at);
      EXPECT_TRUE(rest.starts_with("alphabets ") || rest == "alphabets…" ||
                  rest.starts_with("alphabets[") || rest == "alphabets")
          << rest;
    }
    if (line.ends_with("…")) ++cuts;
    for (std::size_t at = line.find("omitted …]"); at != std::string::npos;
         at = line.find("omitted …]", at + 1)) {
      ++cuts;
      const std::string after = line.substr(at + std::string("omitted …]").size());
      EXPECT_FALSE(after.starts_with(" ot") || after.starts_with(" t") || after.starts_with("ot"))
          << line;
    }
    if (line.ends_with("…") && line.find("alphabets") != std::string::npos) {
      const std::string before = text::trim(line.substr(0, line.size() - std::string("…").size()));
      EXPECT_TRUE(before.ends_with("alphabets")) << line;
    }
  }
  EXPECT_GT(cuts, 0u) << digest;
}

// What Claude Code adds to a session in the user's name is not a request (each seen in a real
// session): a <task-notification> of a background task, the IDE's selection sent with what was
// typed (the typed words are the prompt), a compaction's summary (isCompactSummary).
TEST(InjectedText, NotificationsSelectionsAndSummariesAreNotPrompts) {
  const std::string text =
      claude_user(1, Json::array({{{"type", "text"},
                                   {"text",
                                    "<ide_selection>The user selected lines 1-90 of plan.md: "
                                    "## One-liner …</ide_selection>"}},
                                  {{"type", "text"}, {"text", "help me apply for the grant"}}})) +
      claude_text(2, "ok") +
      claude_user(3,
                  "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n"
                  "</task-notification>") +
      claude_text(4, "ok") +
      claude_user(5, "This session is being continued from a previous conversation. Summary: …",
                  {{"isCompactSummary", true}}) +
      claude_text(6, "ok") + claude_user(7, "Now the cover letter.") + claude_text(8, "ok");
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(prompts_of(*t),
            (std::vector<std::string>{"help me apply for the grant", "Now the cover letter."}));
  // The compaction's summary is no prompt, but what it says of the task is in the goals.
  const std::string digest = make_digest(*t).text;
  EXPECT_NE(digest.find("**Summary of the conversation before it was compacted (turn 5/8)"),
            std::string::npos)
      << digest;
  EXPECT_NE(digest.find("This session is being continued from a previous conversation."),
            std::string::npos);
}

// A call's object written as JavaScript (bare keys, single quotes, a trailing comma) is read; one
// that computes anything (a spread of another object, a variable) is not guessed at.
TEST(CodexCodeMode, ObjectsWrittenAsJavaScriptAreRead) {
  const auto calls = detail::code_mode_calls(
      "await tools.exec_command({cmd:'ls -la \\'x\\'', yield_time_ms: 1000, tty: false,});\n"
      "await tools.exec_command({...common, cmd: \"make\"});\n"
      "await tools.exec_command({cmd: dir + \"/x\"});");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "exec_command");
  EXPECT_EQ(calls[0].input, (Json{{"cmd", "ls -la 'x'"}, {"yield_time_ms", 1000}, {"tty", false}}));
}

// An agent's (or user's) markdown headings do not read as sections of the digest (real agents end
// with "## Summary", "## Test Plan"): escaped outside code blocks, left alone inside them.
TEST(DigestText, HeadingsInMessagesAreNotSections) {
  const std::string text = replace_all(
      session(), "Done: build.toml now builds kernel.cu for sm_80 and sm_90",
      "## Summary\\n\\n```python\\n# a comment\\n```\\n### Done: build.toml now builds kernel.cu "
      "for sm_80 and sm_90");
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  const std::string digest = make_digest(*t).text;
  EXPECT_NE(digest.find("\\## Summary\n"), std::string::npos) << digest;
  EXPECT_NE(digest.find("\n\\### Done: build.toml"), std::string::npos) << digest;
  EXPECT_NE(digest.find("\n# a comment\n"), std::string::npos) << digest;
  for (const std::string& line : text::split_lines(digest))
    EXPECT_FALSE(line.starts_with("## Summary") || line.starts_with("### Done")) << line;
}

// opencode: a message the user stopped (MessageAbortedError, as a real session shows three times
// before going on) is noted, not "the run failed"; any other error of a message still is.
TEST(CommandOutcome, AnAbortedOpencodeMessageIsNotARunFailure) {
  const std::string text = *files::read_text(kTraces / "opencode-1.18.33-export.json");
  const std::string role = "\"role\": \"assistant\"";
  ASSERT_NE(text.find(role), std::string::npos);
  for (const std::string name : {"MessageAbortedError", "APIError"}) {
    std::string changed = text;
    changed.replace(
        changed.find(role), role.size(),
        role + ", \"error\": {\"name\": \"" + name + "\", \"data\": {\"message\": \"stopped\"}}");
    auto t = parse_trace_text(changed, "export.json");
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->run_errors.empty(), name == "MessageAbortedError") << name;
    EXPECT_FALSE(t->stats.notes.empty());
  }
}

// Codex's unified exec: a command still running when its call returned ("Process running with
// session ID 57") has no outcome until a write_stdin to that session says how it exited; then it
// is that exit — a failure here (before, `cargo test` exiting 101 read as a success).
TEST(CodexUnifiedExec, ACommandsOutcomeComesFromItsSession) {
  auto call = [&](const std::string& id, const std::string& name, const Json& args) {
    return codex_item(
        {{"type", "function_call"}, {"name", name}, {"arguments", args.dump()}, {"call_id", id}});
  };
  auto output = [&](const std::string& id, const std::string& out) {
    return codex_item({{"type", "function_call_output"}, {"call_id", id}, {"output", out}});
  };
  const std::string text =
      codex_rollout_head() + call("c1", "exec_command", {{"cmd", "cargo test --workspace"}}) +
      output("c1",
             "Chunk ID: a1\nWall time: 10.0 seconds\nProcess running with session ID 57\n"
             "Output:\n   Compiling core\n") +
      call("c2", "exec_command", {{"cmd", "sleep 100"}}) +
      output("c2",
             "Chunk ID: a2\nWall time: 10.0 seconds\nProcess running with session ID 58\n"
             "Output:\n") +
      call("c3", "write_stdin", {{"session_id", 57}, {"chars", ""}}) +
      output("c3",
             "Chunk ID: a3\nWall time: 41.3 seconds\nProcess exited with code 101\n"
             "Output:\ntest db::migrate ... FAILED\n");
  auto t = parse_trace_text(text, "rollout.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->commands.size(), 2u);
  EXPECT_EQ(t->commands[0].command, "cargo test --workspace");
  EXPECT_TRUE(t->commands[0].failed);
  EXPECT_EQ(t->commands[0].exit_code, std::optional<int>(101));
  EXPECT_FALSE(t->commands[1].failed);  // still running when the session ends: no outcome
  EXPECT_FALSE(t->commands[1].answered);
  EXPECT_NE(make_digest(*t).text.find("test db::migrate ... FAILED"), std::string::npos);
}

// Claude Code's background commands (the forms its 2.1 releases write): Bash with
// run_in_background answers "Command running in background with ID: …" (toolUseResult's
// backgroundTaskId) — no outcome yet — and a later TaskOutput reporting <status>failed</status>
// and <exit_code>1</exit_code> is its outcome (before, the failing `npm test` read as a success).
TEST(ClaudeBackgroundTasks, ACommandsOutcomeComesFromItsTask) {
  const std::string text =
      claude_user(0, "Make the tests pass") +
      claude_tool_use(1, "t1", "Bash", {{"command", "npm test"}, {"run_in_background", true}}) +
      claude_result(2, "t1", "Command running in background with ID: b7k2x9.",
                    {{"stdout", ""},
                     {"stderr", ""},
                     {"interrupted", false},
                     {"backgroundTaskId", "b7k2x9"}}) +
      claude_tool_use(3, "t2", "TaskOutput", {{"task_id", "b7k2x9"}, {"block", true}}) +
      claude_result(4, "t2",
                    "<retrieval_status>success</retrieval_status>\n\n<task_id>b7k2x9</task_id>\n\n"
                    "<status>failed</status>\n\n<exit_code>1</exit_code>\n\n<output>\nFAIL "
                    "src/sum.test.js\n  expected 3, got 4\n</output>",
                    Json::object()) +
      claude_tool_use(5, "t3", "Bash", {{"command", "npm test"}}) +
      claude_result(6, "t3", "PASS src/sum.test.js", {{"stdout", "PASS"}, {"interrupted", false}});
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->commands.size(), 2u);
  EXPECT_TRUE(t->commands[0].failed);
  EXPECT_EQ(t->commands[0].exit_code, std::optional<int>(1));
  ASSERT_EQ(t->fixes.size(), 1u);
  EXPECT_EQ(t->fixes[0].fixed_by, std::optional<std::size_t>(1));
  EXPECT_NE(make_digest(*t).text.find("expected 3, got 4"), std::string::npos);
}

// Gemini CLI's /compress (its session appends {"$set": {"messages": [snapshot, ack]}}, as its
// recording service writes): the work before it stays — it happened — and the <state_snapshot>
// is the compaction's summary, not a prompt (before, the whole session before it was gone and the
// snapshot was the task).
TEST(GeminiCompress, TheWorkBeforeASnapshotStays) {
  const std::string text = *files::read_text(kTraces / "gemini-cli-0.61.0-session.jsonl");
  auto before = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(before) << before.error().message;
  const Json set = {
      {"$set",
       {{"messages",
         Json::array({{{"id", "snap"},
                       {"type", "user"},
                       {"content",
                        "<state_snapshot>\n  <overall_goal>Greet the new hire</overall_goal>"
                        "\n</state_snapshot>"}},
                      {{"id", "ack"}, {"type", "gemini"}, {"content", "Got it."}}})}}}};
  auto after = parse_trace_text(text + set.dump() + "\n", "session.jsonl");
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(after->commands.size(), before->commands.size());
  EXPECT_EQ(after->files.size(), before->files.size());
  const auto snapshot = std::find_if(after->turns.begin(), after->turns.end(),
                                     [](const Turn& t) { return t.compaction_summary; });
  ASSERT_NE(snapshot, after->turns.end());
  EXPECT_TRUE(snapshot->meta);
  const std::string digest = make_digest(*after).text;
  EXPECT_NE(digest.find("**Task (turn 2/9):**\nGreet the new hire"), std::string::npos) << digest;
  EXPECT_NE(digest.find("<overall_goal>Greet the new hire</overall_goal>"), std::string::npos);
}

// codex exec's file_change names its files: a failed one is headed with them, and is retried only
// by a change of the same files (before, "file_change() failed", "fixed" by an unrelated add).
TEST(CodexExecChanges, AFailedChangeNamesItsFiles) {
  const std::string text = replace_all(
      *files::read_text(kTraces / "codex-0.171.0-exec-patches.jsonl"),
      "\"changes\":[{\"path\":\"/tmp/cx/xws/hello.txt\",\"kind\":\"update\"},{\"path\":\"/tmp/cx/"
      "xws/old.txt\",\"kind\":\"delete\"}],\"status\":\"completed\"",
      "\"changes\":[{\"path\":\"/tmp/cx/xws/hello.txt\",\"kind\":\"update\"},{\"path\":\"/tmp/cx/"
      "xws/old.txt\",\"kind\":\"delete\"}],\"status\":\"failed\"");
  auto t = parse_trace_text(text, "exec.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  const std::string digest = make_digest(*t).text;
  EXPECT_NE(digest.find("### ✗ file_change(/tmp/cx/xws/hello.txt, /tmp/cx/xws/old.txt) failed"),
            std::string::npos)
      << digest;
  EXPECT_NE(digest.find("Not retried: no later file_change of the same target succeeded."),
            std::string::npos)
      << digest;
}

// A script that runs two commands gives one output, the last's: how the first ended is not told
// apart, so it has no outcome (not a success it was never shown to have).
TEST(CodexCodeMode, AnEarlierCommandOfAScriptHasNoOutcome) {
  const std::string text =
      codex_rollout_head() +
      codex_item({{"type", "custom_tool_call"},
                  {"call_id", "c1"},
                  {"name", "exec"},
                  {"input",
                   "await tools.exec_command({cmd: 'make'}); const r = await "
                   "tools.exec_command({cmd: 'make test'}); text(r.output);"}}) +
      codex_item({{"type", "custom_tool_call_output"},
                  {"call_id", "c1"},
                  {"output", "Script completed\nWall time 2.0 seconds\nOutput:\nall passed\n"}});
  auto t = parse_trace_text(text, "rollout.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->commands.size(), 2u);
  EXPECT_FALSE(t->commands[0].answered);
  EXPECT_FALSE(t->commands[0].failed);
  EXPECT_TRUE(t->commands[1].answered);
  EXPECT_FALSE(t->commands[1].failed);
}

}  // namespace
}  // namespace upskill::trace
