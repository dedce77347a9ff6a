// Parsing large traces in bounded memory (docs/PERFORMANCE.md, "Parsing large traces"): the texts a
// trace keeps stay within their budget with what the analysis reads intact, a file's superseded
// writes give their contents back, and the simdjson line decoding judges lines as nlohmann_json
// did (invalid UTF-8, a byte-order mark, integers beyond 64 bits, duplicate keys, trailing bytes).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "upskill/core/json.hpp"
#include "upskill/core/unicode.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace {
namespace {

// The texts the turns hold (text, thinking, tool results).
std::size_t held_text(const Trace& t) {
  std::size_t n = 0;
  for (const Turn& turn : t.turns) {
    n += turn.text.size() + turn.thinking.size();
    for (const ToolCall& c : turn.tool_calls) n += c.result.size();
  }
  return n;
}

// A Claude Code session written record by record.
struct Session {
  std::string text;
  int n = 0;

  void line(const Json& j) { text += j.dump() + "\n"; }
  void prompt(const std::string& words) {
    line({{"type", "user"},
          {"uuid", "p" + std::to_string(++n)},
          {"message", {{"role", "user"}, {"content", words}}}});
  }
  // An assistant message (thinking, text, one tool call; a line each) and the call's result.
  void call(const std::string& name, const Json& input, const std::string& result, bool error,
            const std::string& said) {
    const std::string k = std::to_string(++n);
    for (const Json& block :
         {Json{{"type", "thinking"}, {"thinking", "Thinking " + said}, {"signature", "sig"}},
          Json{{"type", "text"}, {"text", said}},
          Json{{"type", "tool_use"}, {"id", "t" + k}, {"name", name}, {"input", input}}})
      line({{"type", "assistant"},
            {"uuid", "a" + k + block["type"].get<std::string>()},
            {"message",
             {{"id", "m" + k}, {"role", "assistant"}, {"content", Json::array({block})}}}});
    line({{"type", "user"},
          {"uuid", "u" + k},
          {"message",
           {{"role", "user"},
            {"content", Json::array({{{"type", "tool_result"},
                                      {"tool_use_id", "t" + k},
                                      {"content", result},
                                      {"is_error", error}}})}}},
          {"toolUseResult", {{"stdout", result}, {"interrupted", false}}}});
  }
};

std::string filler(std::size_t bytes, int seed) {
  std::string s;
  while (s.size() < bytes) s += "word" + std::to_string(seed++ % 97) + " ";
  return s;
}

// 8,000 tool calls, each with 2 KB of text and of thinking and a 4 KB output: 64 MB of text, more
// than the budget.
TEST(TraceBounds, TextsStayWithinTheBudgetAndTheAnalysisIsUnchanged) {
  Session s;
  const std::string task = "Build the kernel. " + filler(3000, 1);
  s.prompt(task);
  const int calls = 8000;
  std::size_t commands = 0, failures = 0;
  std::map<std::string, int> last_write;
  for (int i = 0; i < calls; ++i) {
    if (i % 4 == 1) {
      const std::string path = "src/k" + std::to_string(i % 7) + ".cu";
      last_write[path] = i;
      s.call("Write",
             {{"file_path", "/w/" + path},
              {"content", "// version " + std::to_string(i) + "\n" + filler(3000, i)}},
             "File written", false, filler(2000, i));
      continue;
    }
    const bool fail = i % 10 == 3;
    ++commands;
    failures += fail ? 1 : 0;
    const std::string out = (fail ? "Exit code 2\nerror: step " : "step ") + std::to_string(i) +
                            "\n" + filler(4000, i) + "TAIL" + std::to_string(i);
    s.call("Bash", {{"command", "make step" + std::to_string(i)}}, out, fail, filler(2000, i));
  }
  Json cwd_record = {{"type", "system"}, {"cwd", "/w"}, {"uuid", "s0"}};
  auto t = parse_trace_text(cwd_record.dump() + "\n" + s.text, "big.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_GT(t->stats.shortened, 0u);
  EXPECT_LE(held_text(*t), std::size_t{48} << 20);
  ASSERT_FALSE(t->stats.notes.empty());
  EXPECT_NE(t->stats.notes[0].find("older turns are shortened"), std::string::npos);

  // What the analysis reads is intact: every command, its exit code, every failure.
  EXPECT_EQ(count(*t).tool_calls, static_cast<std::size_t>(calls));
  ASSERT_EQ(t->commands.size(), commands);
  std::size_t failed = 0;
  for (const CommandRun& r : t->commands) {
    failed += r.failed ? 1 : 0;
    if (r.failed) {
      EXPECT_EQ(r.exit_code, std::optional<int>(2)) << r.command;
    }
  }
  EXPECT_EQ(failed, failures);
  // The files end as their last writes.
  ASSERT_EQ(t->files.size(), last_write.size());
  for (const FileTouch& f : t->files) {
    ASSERT_TRUE(f.content) << f.path;
    EXPECT_TRUE(f.content->starts_with("// version " + std::to_string(last_write[f.path]) + "\n"))
        << f.path;
  }
  // The user's task and the latest turns are kept whole; older outputs keep head and tail.
  EXPECT_EQ(t->turns.front().text, task);
  const ToolCall& last = t->turns.back().tool_calls.back();
  EXPECT_EQ(last.result.size(), last.result_bytes);
  const ToolCall& first = t->turns[1].tool_calls.back();
  EXPECT_LT(first.result.size(), first.result_bytes);
  EXPECT_TRUE(first.result.starts_with("step 0\n"));
  EXPECT_TRUE(first.result.ends_with("TAIL0"));
}

// A Write that succeeds makes the earlier contents of its path unneeded: they are shortened, and
// the file still ends as the replay of all of them says. A failed write releases nothing.
TEST(TraceBounds, SupersededWritesGiveTheirContentsBack) {
  Session s;
  s.prompt("Write the kernel.");
  const std::string v1 = "v1 " + filler(50000, 1) + "\nOLD-LINE\n";
  const std::string v2 = "v2 " + filler(50000, 2) + "\nSECOND\n";
  s.call("Write", {{"file_path", "/w/k.cu"}, {"content", v1}}, "ok", false, "first");
  s.call("Edit", {{"file_path", "/w/k.cu"}, {"old_string", "OLD-LINE"}, {"new_string", "EDITED"}},
         "ok", false, "edit");
  s.call("Write", {{"file_path", "/w/k.cu"}, {"content", v2}}, "ok", false, "second");
  s.call("Write", {{"file_path", "/w/k.cu"}, {"content", "v3 never written\n"}},
         "Error writing file", true, "failed");
  s.call("Edit", {{"file_path", "/w/k.cu"}, {"old_string", "SECOND"}, {"new_string", "THIRD"}},
         "ok", false, "last edit");
  auto t = parse_trace_text(s.text, "writes.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->files.size(), 1u);
  const FileTouch& f = t->files[0];
  ASSERT_TRUE(f.content);
  std::string expected = v2;
  expected.replace(expected.find("SECOND"), 6, "THIRD");
  EXPECT_EQ(*f.content, expected);
  EXPECT_EQ(f.writes, 2);  // the failed write changed nothing
  EXPECT_EQ(f.edits, 2);
  const auto input_of = [&](std::size_t k) -> const Json& {
    std::size_t seen = 0;
    for (const Turn& turn : t->turns)
      for (const ToolCall& c : turn.tool_calls)
        if (seen++ == k) return c.input;
    ADD_FAILURE() << "no call " << k;
    static const Json none;
    return none;
  };
  EXPECT_LT(input_of(0)["content"].get<std::string>().size(), 1024u);  // superseded by call 2
  EXPECT_EQ(input_of(0)["file_path"], "/w/k.cu");
  EXPECT_EQ(input_of(2)["content"], v2);  // the replay still needs it
  EXPECT_EQ(input_of(3)["content"], "v3 never written\n");
}

// Past the first MBs the lines are read ahead on another thread: a bad line there and a cut-off
// last line are still counted and noted with their numbers, in order.
TEST(TraceBounds, LinesReadAheadAreNotedInOrder) {
  Session s;
  s.prompt("Go.");
  for (int i = 0; i < 3000; ++i)
    s.call("Bash", {{"command", "make " + std::to_string(i)}}, filler(3000, i), false, "ok");
  const int bad_line = 4 * 2500 + 2;  // a thinking line past 4 MB
  std::string text;
  int n = 0;
  for (std::size_t at = 0, end; (end = s.text.find('\n', at)) != std::string::npos; at = end + 1)
    text += ++n == bad_line ? std::string("{not json\n") : s.text.substr(at, end + 1 - at);
  ASSERT_GT(text.find("{not json"), std::size_t{4} << 20);
  text += R"({"type":"user","message":{"role":"user","content":"cut)";
  auto t = parse_trace_text(text, "ahead.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->stats.malformed, 1u);
  EXPECT_TRUE(t->stats.truncated_last_line);
  ASSERT_EQ(t->stats.notes.size(), 2u);
  EXPECT_EQ(t->stats.notes[0],
            fmt::format("ahead.jsonl:{}: not a JSON object (skipped)", bad_line));
  EXPECT_EQ(t->stats.notes[1],
            fmt::format("ahead.jsonl:{}: the last line is cut off (ignored)", n + 1));
  EXPECT_EQ(count(*t).tool_calls, 3000u);
}

std::size_t user_prompts(std::string_view text) {
  auto t = parse_trace_text(text, "lines.jsonl");
  EXPECT_TRUE(t) << t.error().message;
  return t ? count(*t).user_prompts : 0;
}

// Lines are judged as nlohmann_json judged them: simdjson's rejections are looked at again.
TEST(TraceBounds, LinesAreJudgedAsBefore) {
  const std::string ok = R"({"type":"user","uuid":"u1","message":{"role":"user","content":"Go."}})";
  // Invalid UTF-8: a malformed record with a note, never an abort.
  auto t = parse_trace_text(
      ok + "\n" + R"({"type":"user","uuid":"u2","message":{"role":"user","content":"bad )" +
          std::string("\xff\xfe") + R"("}})" + "\n" + ok + "\n",
      "utf8.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->stats.malformed, 1u);
  ASSERT_FALSE(t->stats.notes.empty());
  EXPECT_EQ(t->stats.notes[0], "utf8.jsonl:2: not a JSON object (skipped)");
  // A byte-order mark before a line, an integer beyond 64 bits: still records.
  EXPECT_EQ(user_prompts("\xEF\xBB\xBF" + ok + "\n" +
                         R"({"type":"user","uuid":"u3","n":123456789012345678901234567890,)"
                         R"("message":{"role":"user","content":"Then this."}})" +
                         "\n"),
            2u);
  // Duplicate keys: the last one counts.
  EXPECT_EQ(user_prompts(R"({"type":"assistant","type":"user","uuid":"u4",)"
                         R"("message":{"role":"user","content":"Mine."}})"
                         "\n" +
                         ok + "\n"),
            2u);
  // Anything after the object, or a control character inside a string: not a record.
  auto bad =
      parse_trace_text(ok + "\n" + ok + " x\n" + R"({"type":"user","message":{"content":"a)" +
                           "\t" + R"(b"}})" + "\n",
                       "bad.jsonl");
  ASSERT_TRUE(bad) << bad.error().message;
  EXPECT_EQ(bad->stats.malformed, 2u);
  EXPECT_EQ(count(*bad).user_prompts, 1u);
}

// Everything a parse kept of its turns, for comparing two parses.
std::string turns_of(const Trace& t) {
  std::string out;
  for (const Turn& turn : t.turns) {
    out += fmt::format("[{} {} {}|{}|{}]\n", static_cast<int>(turn.role), turn.meta, turn.sidechain,
                       turn.text, turn.thinking);
    for (const ToolCall& c : turn.tool_calls)
      out += fmt::format("  {} {} {} {} {}|{}\n", c.id, c.name, c.input.dump(), c.is_error,
                         c.exit_code.value_or(-999), c.result);
  }
  return out;
}

// A session is read the same whichever way its lines reach the reader: walked where simdjson
// parsed them inside the block read, assembled when they straddle two blocks (and with CRLF
// endings), or converted by nlohmann_json when only it accepts them (an integer beyond 64 bits in
// every record). The real Claude Code 2.1.328 session record.
TEST(TraceBounds, ASessionReadsTheSameWhicheverWayItsLinesArrive) {
  std::ifstream in(std::filesystem::path(UPSKILL_SOURCE_DIR) /
                   "tests/data/traces/claude-code-2.1.328-session.jsonl");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GT(lines.size(), 10u);
  std::string plain, straddling, converted;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    plain += lines[i] + "\n";
    // Fillers of a known skipped type and of sizes prime to the 256 KB block move every record
    // across the blocks' boundaries.
    straddling += Json{{"type", "summary"}, {"summary", std::string(70001 + 977 * i, 'f')}}.dump() +
                  "\r\n" + lines[i] + "\r\n";
    ASSERT_EQ(lines[i].front(), '{');
    converted += "{\"upskillBig\":123456789012345678901234567890," + lines[i].substr(1) + "\n";
  }
  auto a = parse_trace_text(plain, "session.jsonl");
  auto b = parse_trace_text(straddling, "session.jsonl");
  auto c = parse_trace_text(converted, "session.jsonl");
  ASSERT_TRUE(a && b && c);
  ASSERT_GT(a->turns.size(), 5u);
  EXPECT_EQ(turns_of(*b), turns_of(*a));
  EXPECT_EQ(turns_of(*c), turns_of(*a));
  EXPECT_EQ(b->stats.malformed + c->stats.malformed, 0u);
  EXPECT_EQ(b->usage.input, a->usage.input);
  EXPECT_EQ(c->usage.output, a->usage.output);
  EXPECT_EQ(c->format_version, a->format_version);
  EXPECT_EQ(b->files.size(), a->files.size());
  EXPECT_EQ(count(*c).failed_commands, count(*a).failed_commands);
}

// A JSON line far longer than any text a reader keeps (a 40 MB tool result, with escapes and
// multi-byte characters throughout) is cut while it is read: valid JSON still, the head and the
// tail of the string kept around a mark, every cut on a character boundary.
TEST(TraceBounds, AHugeLineIsCutAsItIsRead) {
  std::string piece;
  for (int i = 0; i < 1000; ++i) piece += "line \\\"quoted\\\" caf\u00c3\u00a9 \\u00e9 tab\\t\\n";
  std::string body;
  while (body.size() < (40u << 20)) body += piece;
  body = "HEAD" + body + "TAIL";
  const Json decoded_body = Json::parse("\"" + body + "\"");
  const std::string value = decoded_body.get<std::string>();
  const std::string line =
      R"({"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":")" +
      body + R"("}]}})";
  auto t = parse_trace_text(
      R"({"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"m","role":"assistant","model":"x","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cat log"}}]}})"
      "\n" +
          line + "\n",
      "big.jsonl", {});
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->stats.malformed, 0u);
  ASSERT_EQ(t->turns.size(), 1u);
  ASSERT_EQ(t->turns[0].tool_calls.size(), 1u);
  const std::string& result = t->turns[0].tool_calls[0].result;
  EXPECT_TRUE(result.starts_with("HEADline")) << result.substr(0, 100);
  EXPECT_TRUE(result.ends_with("TAIL")) << result.substr(result.size() - 100);
  EXPECT_TRUE(unicode::is_valid_utf8(result));
  EXPECT_NE(result.find("bytes omitted"), std::string::npos);
  // What was kept is the string's own head and tail.
  const std::size_t mark = result.find("\n[… ");
  ASSERT_NE(mark, std::string::npos);
  EXPECT_TRUE(value.starts_with(result.substr(0, mark)));
  const std::size_t after = result.rfind(" …]\n") + std::string(" …]\n").size();
  EXPECT_TRUE(value.ends_with(result.substr(after)));
}

}  // namespace
}  // namespace upskill::trace
