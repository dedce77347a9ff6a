// Trace parsing: every format's example against an independent count of the session it renders
// (examples/traces/make_examples.py: 2 user prompts, 9 writes, 4 edits, 5 commands of which 2 fail
// and are fixed, 9 files ending as kernels/rmsnorm), each parser's edge cases, detection, patches,
// bounded memory and the digest.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "support/long_trace.hpp"
#include "support/temp_dir.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/trace/digest.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const fs::path kExamples = fs::path(UPSKILL_SOURCE_DIR) / "examples" / "traces";

std::string kernel_file(const std::string& rel) {
  return *files::read_text(fs::path(UPSKILL_SOURCE_DIR) / "kernels" / "rmsnorm" / rel);
}

const FileTouch* file_named(const Trace& t, const std::string& path) {
  for (const auto& f : t.files)
    if (f.path == path) return &f;
  return nullptr;
}

Trace parse_ok(std::string_view text, const ParseOptions& options = {}) {
  auto t = parse_trace_text(text, "test", options);
  EXPECT_TRUE(t.has_value()) << (t ? "" : t.error().message);
  return t ? *t : Trace{};
}

struct Example {
  std::string file;
  Format format;
  std::size_t tool_calls;
  bool contents;  // final file contents recoverable
};

class Examples : public ::testing::TestWithParam<Example> {};

TEST_P(Examples, CountsMatchTheSessionTheyRender) {
  const Example& e = GetParam();
  auto t = parse_trace_file(kExamples / e.file);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, e.format) << t->detected_by;
  const TraceCounts c = count(*t);
  EXPECT_EQ(c.user_prompts, 2u);
  EXPECT_EQ(c.tool_calls, e.tool_calls);
  if (e.tool_calls > 0) {
    EXPECT_EQ(c.commands, 5u);
    EXPECT_EQ(c.failed_commands, 2u);
    ASSERT_EQ(t->fixes.size(), 2u);
    for (const auto& fix : t->fixes) EXPECT_TRUE(fix.fixed_by.has_value());
    EXPECT_EQ(t->fixes[0].files_changed, std::vector<std::string>{"build.toml"});
    EXPECT_EQ(t->fixes[1].files_changed, std::vector<std::string>{"rmsnorm_cpu/rmsnorm_cpu.cpp"});
  }
  EXPECT_EQ(c.files, 9u);
  EXPECT_EQ(t->stats.malformed, 0u);
  if (e.contents) {
    // Writes, then Edit / apply_patch / str_replace applied in order: exactly kernels/rmsnorm.
    for (const char* rel : {"build.toml", "rmsnorm_cpu/rmsnorm_cpu.cpp", "rmsnorm_cuda/rmsnorm.cu",
                            "torch-ext/rmsnorm/__init__.py"}) {
      const FileTouch* f = file_named(*t, rel);
      ASSERT_NE(f, nullptr) << rel;
      ASSERT_TRUE(f->content) << rel << ": " << f->unknown_reason;
      EXPECT_EQ(*f->content, kernel_file(rel)) << rel;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, Examples,
    ::testing::Values(Example{"claude-code/rmsnorm-session.jsonl", Format::claude_jsonl, 19, true},
                      Example{"codex-rollout.jsonl", Format::codex_rollout, 18, true},
                      Example{"openai-chat.json", Format::openai_chat, 18, true},
                      Example{"responses.json", Format::responses, 18, true},
                      Example{"anthropic-messages.json", Format::anthropic, 18, true},
                      Example{"fast-agent-history.json", Format::fast_agent_json, 18, true},
                      Example{"claude-export.txt", Format::claude_export, 18, false},
                      Example{"fast-agent-history.txt", Format::fast_agent_text, 0, false},
                      Example{"transcript.md", Format::markdown, 0, false}),
    [](const auto& info) {
      std::string n = info.param.file.substr(info.param.file.rfind('/') + 1);
      for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

TEST(ClaudeSession, SubagentsUsageModelsAndVersion) {
  auto t = parse_trace_file(kExamples / "claude-code" / "rmsnorm-session.jsonl");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->format_version, "Claude Code 2.0.31");
  EXPECT_EQ(t->cwd, "/home/dev/rmsnorm");
  ASSERT_EQ(t->subagent_files.size(), 1u);
  EXPECT_EQ(count(*t).sidechain_turns, 3u);
  EXPECT_EQ(t->tool_counts.at("Grep"), 1);
  EXPECT_EQ(t->models,
            (std::vector<std::string>{"claude-sonnet-4-5-20250929", "claude-haiku-4-5"}));
  // Usage is counted once per message id, though each message spans two lines.
  EXPECT_TRUE(t->usage.reported);
  EXPECT_EQ(t->usage.output, 22 * 300 + 40 + 60);  // 22 messages of the main session
  auto without = parse_trace_file(kExamples / "claude-code" / "rmsnorm-session.jsonl",
                                  ParseOptions{std::nullopt, false});
  ASSERT_TRUE(without);
  EXPECT_TRUE(without->subagent_files.empty());
  EXPECT_EQ(count(*without).sidechain_turns, 0u);
}

TEST(ClaudeSession, MergesLinesDropsDuplicatesAndSurvivesBadLines) {
  const std::string text =
      R"({"type":"user","uuid":"u1","sessionId":"s","cwd":"/w","message":{"role":"user","content":"fix the build"}}
{"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"m1","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"hmm"}],"usage":{"input_tokens":10,"output_tokens":1}}}
{"type":"assistant","uuid":"a2","sessionId":"s","message":{"id":"m1","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"make"}}],"usage":{"input_tokens":10,"output_tokens":7}}}
{"type":"assistant","uuid":"a2","sessionId":"s","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"make"}}]}}
this line is not JSON
{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Exit code 2\nmake: *** [all] Error 2","is_error":true}]},"toolUseResult":{"stdout":"","stderr":"x","interrupted":false}}
{"type":"user","uuid":"u3","sessionId":"s","isMeta":true,"message":{"role":"user","content":"<command-name>/clear</command-name>"}}
{"type":"brand-new-record","uuid":"z1"}
{"type":"summary","summary":"s","leafUuid":"u1"}
{"type":"assistant","uuid":"a3","sessionId":"s","message":{"id":"m2","role":"assis)";
  const Trace t = parse_ok(text);
  EXPECT_EQ(t.format, Format::claude_jsonl);
  ASSERT_EQ(t.turns.size(), 3u);  // prompt, one merged assistant message, injected command
  EXPECT_EQ(t.turns[1].thinking, "hmm");
  ASSERT_EQ(t.turns[1].tool_calls.size(), 1u);
  const ToolCall& call = t.turns[1].tool_calls[0];
  EXPECT_TRUE(call.is_error);
  ASSERT_TRUE(call.exit_code);
  EXPECT_EQ(*call.exit_code, 2);
  EXPECT_TRUE(t.turns[2].meta);
  EXPECT_EQ(count(t).user_prompts, 1u);
  EXPECT_EQ(t.stats.duplicates, 1u);
  EXPECT_EQ(t.stats.malformed, 1u);
  EXPECT_TRUE(t.stats.truncated_last_line);
  EXPECT_EQ(t.stats.unknown_types.at("brand-new-record"), 1u);
  EXPECT_EQ(t.stats.skipped.at("summary"), 1u);
  EXPECT_EQ(t.usage.output, 7);  // the larger of the two lines of m1
  EXPECT_EQ(t.commands.size(), 1u);
  EXPECT_TRUE(t.commands[0].failed);
  ASSERT_EQ(t.fixes.size(), 1u);
  EXPECT_FALSE(t.fixes[0].fixed_by);
}

TEST(ClaudeSession, StreamJsonIsReadToo) {
  const std::string text =
      R"({"type":"system","subtype":"init","model":"claude-sonnet-4-5","cwd":"/w","claude_code_version":"2.0.1"}
{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":5,"output_tokens":2}}}
{"type":"result","subtype":"success","result":"Done.","session_id":"x","usage":{"input_tokens":5,"output_tokens":2}}
)";
  const Trace t = parse_ok(text);
  EXPECT_EQ(t.format, Format::claude_stream);
  EXPECT_EQ(t.format_version, "Claude Code 2.0.1");
  ASSERT_EQ(t.turns.size(), 1u);
  EXPECT_EQ(t.turns[0].text, "Done.");
  EXPECT_EQ(t.models, std::vector<std::string>{"claude-sonnet-4-5"});
}

// Real exports put U+00A0 after "⎿" and inside previews; they read as the spaces they stand for, so
// errors and Write previews are recognised. "Search" with a path pattern is a Glob.
TEST(ClaudeExport, NonBreakingSpacesErrorsAndSearchAsGlob) {
  const std::string nbsp = "\u00a0";
  const std::string text =
      "> build it\n\n"
      "⏺ Write(build.toml)\n"
      "  ⎿" +
      nbsp +
      " Wrote 2 lines to build.toml\n"
      "     1" +
      nbsp +
      "[general]\n"
      "     2" +
      nbsp +
      "name = \"x\"\n\n"
      "⏺ Write(/root/x.py)\n"
      "  ⎿" +
      nbsp +
      " Error writing file\n\n"
      "⏺ Search(pattern: \"**/*.cu\", path: \"kernels\")\n"
      "  ⎿" +
      nbsp +
      " Found 2 files\n\n"
      "⏺ Search(pattern: \"rms_norm\\(\")\n"
      "  ⎿" +
      nbsp + " Found 1 file\n";
  ParseOptions o;
  o.format = Format::claude_export;
  auto t = parse_trace_text(text, "export.txt", o);
  ASSERT_TRUE(t) << t.error().message;
  std::vector<const ToolCall*> calls;
  for (const auto& turn : t->turns)
    for (const auto& c : turn.tool_calls) calls.push_back(&c);
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0]->input.value("content", ""), "[general]\nname = \"x\"\n");
  EXPECT_FALSE(calls[0]->is_error);
  EXPECT_TRUE(calls[1]->is_error);
  EXPECT_EQ(calls[1]->result, "Error writing file");
  EXPECT_EQ(calls[2]->name, "Glob");
  EXPECT_EQ(calls[2]->input, (Json{{"pattern", "**/*.cu"}, {"path", "kernels"}}));
  EXPECT_EQ(calls[3]->name, "Grep");
  EXPECT_EQ(calls[3]->input["pattern"], "rms_norm\\(");
}

TEST(ClaudeExport, GlyphsWrappedArgumentsElisionAndWritePreviews) {
  const std::string text = R"(╭──────────────────────────╮
│ ✻ Welcome to Claude Code! │
╰──────────────────────────╯

❯ write a tiny header
  and build it

● I'll write it.

● Write(src/a.h)
  ⎿  Wrote 2 lines to src/a.h
      1 #pragma once
      2 int f();

● Write(src/big.cpp)
  ⎿  Wrote 40 lines to src/big.cpp
      1 int main() {
     … +39 lines (ctrl+o to expand)

● Bash(cmake --build build &&
      ctest)
  ⎿  Error: Exit code 2
     ninja: build stopped
     … +12 lines (ctrl+r to expand)

✻ Thinking…

● Bash(cmake --build build)
  ⎿  [2/2] Linking CXX executable app
)";
  const Trace t = parse_ok(text);
  EXPECT_EQ(t.format, Format::claude_export);
  ASSERT_GE(t.turns.size(), 2u);
  EXPECT_EQ(t.turns[0].text, "write a tiny header\nand build it");
  const FileTouch* header = file_named(t, "src/a.h");
  ASSERT_NE(header, nullptr);
  ASSERT_TRUE(header->content);
  EXPECT_EQ(*header->content, "#pragma once\nint f();\n");
  const FileTouch* big = file_named(t, "src/big.cpp");
  ASSERT_NE(big, nullptr);
  EXPECT_FALSE(big->content);  // elided in the export
  ASSERT_EQ(t.commands.size(), 2u);
  EXPECT_EQ(t.commands[0].command, "cmake --build build &&\n      ctest");
  EXPECT_TRUE(t.commands[0].failed);
  EXPECT_EQ(*t.commands[0].exit_code, 2);
  EXPECT_FALSE(t.commands[1].failed);
  ASSERT_EQ(t.fixes.size(), 1u);
  EXPECT_TRUE(t.fixes[0].fixed_by);
  bool elided = false;
  for (const auto& turn : t.turns)
    for (const auto& c : turn.tool_calls) elided = elided || c.result_truncated_in_trace;
  EXPECT_TRUE(elided);
}

TEST(Codex, EventsOnlyLegacyRolloutExitCodesAndPatches) {
  // A rollout with only event messages: the conversation comes from them.
  const std::string events =
      R"({"timestamp":"t","type":"session_meta","payload":{"id":"x","cwd":"/w","cli_version":"0.30.0"}}
{"timestamp":"t","type":"event_msg","payload":{"type":"user_message","message":"hello"}}
{"timestamp":"t","type":"event_msg","payload":{"type":"agent_reasoning","text":"thinking"}}
{"timestamp":"t","type":"event_msg","payload":{"type":"agent_message","message":"hi"}}
)";
  Trace t = parse_ok(events);
  EXPECT_EQ(t.format, Format::codex_rollout);
  ASSERT_EQ(t.turns.size(), 2u);
  EXPECT_EQ(t.turns[1].text, "hi");
  EXPECT_EQ(t.turns[1].thinking, "thinking");

  // Legacy: a flat header, then unwrapped items; exec_command_end carries the exit code.
  const std::string legacy =
      R"({"id":"abc","timestamp":"t","instructions":null}
{"type":"message","role":"user","content":[{"type":"input_text","text":"run it"}]}
{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"pytest -q\"]}","call_id":"c1"}
{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"1 failed\",\"metadata\":{\"exit_code\":1}}"}
{"type":"custom_tool_call","name":"apply_patch","call_id":"c2","input":"*** Begin Patch\n*** Add File: a.py\n+x = 1\n+y = 2\n*** End Patch\n"}
{"type":"custom_tool_call_output","call_id":"c2","output":"Success."}
{"type":"custom_tool_call","name":"apply_patch","call_id":"c3","input":"*** Begin Patch\n*** Update File: a.py\n@@\n x = 1\n-y = 2\n+y = 3\n*** Move to: b.py\n*** End Patch\n"}
)";
  t = parse_ok(legacy);
  EXPECT_EQ(t.format_version, "codex (legacy rollout)");
  ASSERT_EQ(t.commands.size(), 1u);
  EXPECT_EQ(t.commands[0].command, "pytest -q");
  EXPECT_TRUE(t.commands[0].failed);
  const FileTouch* moved = file_named(t, "b.py");
  ASSERT_NE(moved, nullptr);
  ASSERT_TRUE(moved->content);
  EXPECT_EQ(*moved->content, "x = 1\ny = 3\n");
  EXPECT_TRUE(file_named(t, "a.py")->deleted);
}

TEST(Patch, AddUpdateDeleteAndMissingContext) {
  auto p = parse_patch(
      "*** Begin Patch\n*** Add File: n.txt\n+new\n*** Delete File: old.txt\n*** Update File: "
      "u.txt\n@@ def f\n-a\n+b\n*** End Patch");
  ASSERT_TRUE(p);
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ((*p)[1].op, PatchFile::Op::remove);
  auto ok = apply_patch_update("x\na\ny\n", (*p)[2]);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, "x\nb\ny\n");
  auto missing = apply_patch_update("nothing here\n", (*p)[2]);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("u.txt"), std::string::npos);
  EXPECT_FALSE(parse_patch("not a patch"));
  EXPECT_FALSE(parse_patch("*** Begin Patch\nstray\n*** End Patch"));
}

TEST(Messages, OpenAiLegacyFunctionCallsAnthropicSystemAndShareGpt) {
  Trace t = parse_ok(
      R"([{"role":"user","content":"go"},{"role":"assistant","content":null,"function_call":{"name":"bash","arguments":"{\"command\":\"ls\"}"}},{"role":"function","name":"bash","content":"Error: ls: cannot access"},{"role":"robot","content":"?"}])");
  EXPECT_EQ(t.format, Format::openai_chat);
  ASSERT_EQ(t.commands.size(), 1u);
  EXPECT_TRUE(t.commands[0].failed);
  EXPECT_EQ(t.stats.unknown_types.at("role robot"), 1u);

  t = parse_ok(
      R"({"model":"claude-x","system":"be brief","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"hello"}]}]})",
      ParseOptions{Format::anthropic, true});
  ASSERT_EQ(t.turns.size(), 3u);
  EXPECT_TRUE(t.turns[0].meta);
  EXPECT_EQ(t.turns[2].thinking, "t");

  t = parse_ok(R"({"conversations":[{"from":"human","value":"q"},{"from":"gpt","value":"a"}]})");
  EXPECT_EQ(t.format, Format::openai_chat);
  ASSERT_EQ(t.turns.size(), 2u);
  EXPECT_EQ(t.turns[1].text, "a");
}

TEST(TextFormats, MarkdownMarkersAiderAndFencedFiles) {
  Trace t = parse_ok(
      "# Notes\n\n**User:** make a config\n\n**Assistant:** Here it "
      "is.\n\n`conf/app.toml`\n```toml\n"
      "a = 1\n```\n\nHuman: thanks\n");
  EXPECT_EQ(t.format, Format::markdown);
  EXPECT_EQ(count(t).user_prompts, 2u);  // the title is not a prompt
  const FileTouch* f = file_named(t, "conf/app.toml");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->content, "a = 1\n");

  t = parse_ok("#### add a test\n\nI added tests/test_x.py.\n\n#### now run it\n\nDone.\n",
               ParseOptions{Format::markdown, true});
  EXPECT_EQ(count(t).user_prompts, 2u);
  EXPECT_EQ(count(t).assistant_messages, 2u);

  t = parse_ok(
      "---USER\nhello\n---ASSISTANT\nhi\n---RESOURCE\n{\"resource\":{\"uri\":\"file:///x\","
      "\"text\":\"body\"}}\n");
  EXPECT_EQ(t.format, Format::fast_agent_text);
  ASSERT_EQ(t.turns.size(), 2u);
  EXPECT_NE(t.turns[1].text.find("[resource file:///x]"), std::string::npos);

  t = parse_ok("just some notes\nabout a kernel\n");
  EXPECT_EQ(t.format, Format::text);
  EXPECT_EQ(t.turns.size(), 1u);
}

TEST(Detection, RulesInOrder) {
  EXPECT_EQ(
      detect_format("{\"type\":\"session_meta\",\"payload\":{}}\n{\"type\":\"x\"}\n", false).format,
      Format::codex_rollout);
  EXPECT_EQ(
      detect_format("{\"type\":\"user\",\"uuid\":\"1\"}\n{\"type\":\"assistant\",\"uuid\":\"2\"}"
                    "\n{\"type\":\"assist",
                    false)
          .format,
      Format::claude_jsonl);
  EXPECT_EQ(detect_format("{\"type\":\"function_call\"}\n{\"type\":\"message\"}\n", false).format,
            Format::codex_rollout);
  EXPECT_EQ(
      detect_format("{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\"}\n", false)
          .format,
      Format::openai_chat);
  EXPECT_EQ(
      detect_format("{\"type\":\"thread.started\"}\n{\"type\":\"turn.started\"}\n", false).format,
      Format::codex_exec);
  EXPECT_EQ(detect_format("[{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":"
                          "\"input_text\",\"text\":\"a\"}]}]",
                          true)
                .format,
            Format::responses);
  EXPECT_EQ(detect_format("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                          "\"text\":\"a\"}]}]}",
                          true)
                .format,
            Format::fast_agent_json);
  EXPECT_EQ(
      detect_format("{\"sessionId\":\"a\",\"projectHash\":\"b\",\"messages\":[]}", true).format,
      Format::gemini);
  EXPECT_EQ(detect_format("⏺ hi\n  ⎿  ok\n", true).format, Format::claude_export);
  EXPECT_EQ(detect_format("## Assistant\nhi\n", true).format, Format::markdown);
  EXPECT_EQ(detect_format("", true).format, Format::text);
}

TEST(Errors, NothingReadableNamesTheFile) {
  TempDir tmp;
  auto r = parse_trace_text(
      "{\"type\":\"user\",\"uuid\":\"1\"}\n{\"type\":\"user\",\"uuid\":\"2\"}\n", "bad.jsonl");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("bad.jsonl: nothing readable"), std::string::npos);
  EXPECT_FALSE(parse_trace_file(tmp.path()));
  EXPECT_FALSE(parse_trace_file(tmp / "missing.jsonl"));
  auto broken = parse_trace_text("[{\"role\":\"user\", ", "doc.json",
                                 ParseOptions{Format::openai_chat, true});
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("doc.json:1"), std::string::npos);
}

TEST(Detection, JsonLinesWhoseFirstLineIsLongerThanTheHead) {
  TempDir tmp;
  const std::string paste(100 * 1024, 'p');  // a huge first prompt
  const fs::path path = tmp.write(
      "s.jsonl",
      R"({"type":"user","uuid":"1","sessionId":"s","message":{"role":"user","content":")" + paste +
          R"("}}
{"type":"assistant","uuid":"2","sessionId":"s","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"ok"}]}}
)");
  auto t = parse_trace_file(path);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, Format::claude_jsonl) << t->detected_by;
  EXPECT_EQ(count(*t).user_prompts, 1u);
  EXPECT_EQ(count(*t).assistant_messages, 1u);
}

TEST(Bounds, HugeToolResultsAreKeptHeadAndTail) {
  TempDir tmp;
  const fs::path path = tmp / "big.jsonl";
  {
    std::ofstream out(path);
    const std::string output(200 * 1024, 'x');
    for (int i = 0; i < 100; ++i) {
      out << R"({"type":"assistant","uuid":"a)" << i << R"(","message":{"id":"m)" << i
          << R"(","role":"assistant","content":[{"type":"tool_use","id":"t)" << i
          << R"(","name":"Bash","input":{"command":"cat log"}}]}})"
          << "\n";
      out << R"({"type":"user","uuid":"u)" << i
          << R"(","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t)" << i
          << R"(","content":"BEGIN)" << output << R"(END"}]}})"
          << "\n";
    }
  }
  auto t = parse_trace_file(path);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_GT(t->bytes, 19u << 20);
  ASSERT_EQ(t->commands.size(), 100u);
  const ToolCall& c = t->turns.back().tool_calls.back();
  EXPECT_EQ(c.result_bytes, 200u * 1024 + 8);
  EXPECT_LT(c.result.size(), 17u * 1024);
  EXPECT_TRUE(c.result.starts_with("BEGIN"));
  EXPECT_TRUE(c.result.ends_with("END"));
}

TEST(Digest, FitsTheBudgetAndKeepsTheEnd) {
  const Trace t = parse_ok(testing::long_claude_session(300));
  ASSERT_EQ(t.format, Format::claude_jsonl);
  for (std::size_t budget : {4000u, 12000u, 48000u}) {
    const TraceDigest d = make_digest(t, {budget});
    EXPECT_LE(d.tokens, budget) << budget;
    EXPECT_NE(d.text.find("Build the fused kernel project."), std::string::npos);
    EXPECT_NE(d.text.find("cuda-capabilities = [\"9.0\"]  # FINAL-CONFIG"), std::string::npos)
        << budget;
    EXPECT_NE(d.text.find("LAST-ERROR unknown field"), std::string::npos) << budget;
    EXPECT_NE(d.text.find("Fixed: `kernel-builder build`"), std::string::npos) << budget;
    EXPECT_NE(d.text.find("omitted"), std::string::npos);  // cuts are marked, not silent
  }
  // The final build.toml comes before the 300 sources in importance.
  const TraceDigest small = make_digest(t, {4000});
  EXPECT_LT(small.text.find("### build.toml"), small.text.size());
}

TEST(Digest, RedactsSecrets) {
  std::size_t n = 0;
  const std::string out = redact_secrets(
      "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz123456\ncurl -H 'Authorization: "
      "Bearer abcdefghijklmnopqrstuvwx' hf_abcdefghijklmnopqrstuvwxyz1234 HF_TOKEN: \"mysecret\"",
      &n);
  EXPECT_EQ(out.find("abcdefghijklmnopqrstuvwxyz123456"), std::string::npos);
  EXPECT_EQ(out.find("hf_abcdefghijklmnopqrstuvwxyz1234"), std::string::npos);
  EXPECT_EQ(out.find("mysecret"), std::string::npos);
  EXPECT_NE(out.find("Bearer [REDACTED]"), std::string::npos);
  EXPECT_GE(n, 4u);
  // Each rule runs only when its literal is there; every kind still goes.
  const std::string kinds = redact_secrets(
      "ghp_abcdefghijklmnopqrstuvwxyz0123456789 gh_not github_pat_abcdefghijklmnopqrstuvwxyz_0123 "
      "AKIAABCDEFGHIJKLMNOP xoxb-1234567890-abc DB_PASSWORD=hunter2hunter2",
      &n);
  EXPECT_EQ(kinds, "[REDACTED] gh_not [REDACTED] [REDACTED] [REDACTED] DB_PASSWORD=[REDACTED]");
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(redact_secrets("nothing to see here", &n), "nothing to see here");
  EXPECT_EQ(n, 0u);
  // A name that says "token" is also given URLs, paths and numbers: those are kept, a URL's
  // credentials are not.
  EXPECT_EQ(redact_secrets("TOKEN_URL=https://auth.example.com/oauth/token MAX_TOKENS=100000 "
                           "HF_TOKEN_PATH=/run/secrets/hf API_TOKEN=abc.def.ghi123",
                           &n),
            "TOKEN_URL=https://auth.example.com/oauth/token MAX_TOKENS=100000 "
            "HF_TOKEN_PATH=/run/secrets/hf API_TOKEN=[REDACTED]");
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(redact_secrets("DB_PASSWORD_URL=postgres://admin:hunter2@db/x", &n),
            "DB_PASSWORD_URL=[REDACTED]");
}

// An exit code too large for an int still marks the command failed; it never aborts the analysis.
TEST(Analysis, HugeExitCodeIsAFailureNotACrash) {
  const std::string text =
      R"({"type":"assistant","uuid":"a1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"make"}}]}})"
      "\n"
      R"({"type":"user","uuid":"u1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Exit code 99999999999999999999\nboom"}]}})"
      "\n";
  auto t = parse_trace_text(text, "huge.jsonl", {});
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->commands.size(), 1u);
  EXPECT_TRUE(t->commands[0].failed);
  EXPECT_EQ(t->commands[0].exit_code, std::numeric_limits<int>::max());
}

// The exit code a result says, when the trace gives none: on a line of its own (after blank space,
// or "Error:") within the first 400 bytes, in any of the ways agents print it.
TEST(Analysis, ExitCodesSaidInAResult) {
  const std::vector<std::pair<std::string, std::optional<int>>> cases = {
      {"Exit code 2\nmake: *** [all] Error 2", 2},
      {"Exit code: 3", 3},
      {"exit code:\t4\n", 4},
      {"output\n  Process exited with code 5", 5},
      {"building\nError: exit status 6", 6},
      {"Error:   Exit code -1", -1},
      {"\n\n   exit code 0\nfine", 0},
      {"Exit code 99999999999999999999", std::numeric_limits<int>::max()},
      {"Exit code -99999999999999999999", std::numeric_limits<int>::min()},
      {"the Exit code 2 was seen", std::nullopt},     // not at the start of a line
      {"Exit code: none", std::nullopt},              // no digits
      {"Exit code - 3", std::nullopt},                // a sign apart from its digits
      {"Process exited with code: 7", std::nullopt},  // no colon in that phrase
      {"EXIT CODE 8", std::nullopt},
      {std::string(400, 'x') + "\nExit code 9", std::nullopt},  // past the first 400 bytes
      {"", std::nullopt},
  };
  for (const auto& [result, expected] : cases) {
    const std::string text =
        R"({"type":"assistant","uuid":"a1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"make"}}]}})"
        "\n" +
        Json{{"type", "user"},
             {"uuid", "u1"},
             {"message",
              {{"role", "user"},
               {"content",
                Json::array(
                    {{{"type", "tool_result"}, {"tool_use_id", "t1"}, {"content", result}}})}}}}
            .dump() +
        "\n";
    auto t = parse_trace_text(text, "codes.jsonl", {});
    ASSERT_TRUE(t) << t.error().message;
    ASSERT_EQ(t->commands.size(), 1u) << result;
    EXPECT_EQ(t->commands[0].exit_code, expected) << result;
    EXPECT_EQ(t->commands[0].failed, expected.value_or(0) != 0) << result;
  }
}

TEST(Summary, JsonHasTheCounts) {
  auto t = parse_trace_file(kExamples / "codex-rollout.jsonl");
  ASSERT_TRUE(t);
  const Json j = summary_json(*t);
  EXPECT_EQ(j["schema"], "upskill.trace/1");
  EXPECT_EQ(j["counts"]["failed_commands"], 2);
  EXPECT_EQ(j["tools"]["apply_patch"], 13);
  EXPECT_EQ(j["files"].size(), 9u);
  EXPECT_EQ(j["usage"]["reasoning"], 4400);
}

// `codex exec --json` (written for the tests from the event names Codex documents): commands with
// exit codes, reasoning, MCP calls, usage per turn; started items are mirrors of completed ones.
TEST(CodexExec, EventsBecomeTurnsCallsAndUsage) {
  auto t = parse_trace_file(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/codex-exec.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, Format::codex_exec);
  EXPECT_EQ(t->format_version, "codex exec --json");
  ASSERT_EQ(t->turns.size(), 1u);
  const Turn& turn = t->turns[0];
  EXPECT_NE(turn.thinking.find("Looking at the build"), std::string::npos);
  EXPECT_EQ(turn.text, "The build works: capabilities go per kernel as cuda-capabilities.");
  ASSERT_EQ(turn.tool_calls.size(), 6u);
  EXPECT_EQ(turn.tool_calls[0].input["command"], "bash -lc ls");
  EXPECT_EQ(turn.tool_calls[0].exit_code, 0);
  EXPECT_TRUE(turn.tool_calls[1].is_error);
  EXPECT_EQ(turn.tool_calls[1].exit_code, 1);
  EXPECT_EQ(turn.tool_calls[2].name, "file_change");
  EXPECT_EQ(turn.tool_calls[4].name, "mcp__docs__search");
  EXPECT_EQ(turn.tool_calls[4].result, "per kernel");
  EXPECT_EQ(t->usage.input, 24763);
  EXPECT_EQ(t->usage.cache_read, 24448);
  EXPECT_EQ(t->usage.output, 122);
  EXPECT_EQ(t->stats.duplicates, 1u);  // item.started of item_1
  const TraceCounts c = count(*t);
  EXPECT_EQ(c.commands, 3u);
  EXPECT_EQ(c.failed_commands, 1u);
}

// A session the real Gemini CLI 0.61.0 wrote (JSON lines: a header, each message appended as it
// changes, $set updates), driven by the scripted server: activate_skill, write_file, a command
// that fails (its status "success", its "Exit Code: 1" in the output), the fix, the answer.
TEST(GeminiCli, RealSessionLinesReplayIntoOneConversation) {
  const fs::path file =
      fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/gemini-cli-0.61.0-session.jsonl";
  auto t = parse_trace_file(file);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, Format::gemini);
  // Each message once, though most were written twice (before and after their tool calls).
  std::vector<std::string> names;
  for (const auto& turn : t->turns)
    for (const auto& c : turn.tool_calls) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"activate_skill", "write_file", "run_shell_command",
                                             "run_shell_command"}));
  EXPECT_EQ(t->turns.back().text, "AHOY-42, welcome aboard!");
  EXPECT_EQ(t->usage.input, 100 + 110 + 120 + 130 + 140);
  EXPECT_EQ(t->usage.output, 7 + 8 + 9 + 10 + 11);
  const TraceCounts c = count(*t);
  // One prompt: the session context Gemini CLI injects is not the user's, and the function
  // responses it records as user messages are the calls' results.
  EXPECT_EQ(c.user_prompts, 1u);
  EXPECT_EQ(c.commands, 2u);
  EXPECT_EQ(c.failed_commands, 1u);
  EXPECT_EQ(c.files, 1u);
  EXPECT_NE(make_digest(*t).text.find("Greet the new hire"), std::string::npos);
  bool thought = false;
  for (const auto& turn : t->turns)
    thought = thought || turn.thinking.find("check it") != std::string::npos;
  EXPECT_TRUE(thought);
  EXPECT_EQ(t->stats.malformed, 0u);

  // $rewindTo drops that message and every later one (the user undid them); $set with messages
  // is the history the model goes on with (after /compress, a snapshot in place of what it
  // summarises): what happened stays, the list's new messages follow.
  std::string text = files::read_text(file).value();
  std::string last_user_id;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const Json r = Json::parse(line);
    if (r.value("type", "") == "user" && r.contains("id")) last_user_id = r["id"];
  }
  auto rewound =
      parse_trace_text(text + Json{{"$rewindTo", last_user_id}}.dump() + "\n", "session.jsonl", {});
  ASSERT_TRUE(rewound) << rewound.error().message;
  EXPECT_EQ(rewound->turns.size(), t->turns.size() - 1);  // the answer (the result was no turn)
  auto replaced = parse_trace_text(
      text +
          Json{{"$set",
                {{"messages",
                  Json::array({{{"id", "x"}, {"type", "user"}, {"content", "Start again."}}})}}}}
              .dump() +
          "\n",
      "session.jsonl", {});
  ASSERT_TRUE(replaced) << replaced.error().message;
  ASSERT_EQ(replaced->turns.size(), t->turns.size() + 1);
  EXPECT_EQ(replaced->turns.back().text, "Start again.");
  EXPECT_EQ(replaced->commands.size(), t->commands.size());
}

// The real Codex 0.171.0, driven by the scripted server through its shell (exec_command): a patch
// adding hello.txt as `apply_patch <<'PATCH' … PATCH`, a patch whose context is not in the file
// ("apply_patch verification failed", no exit code), a patch updating hello.txt and deleting
// old.txt, `cat hello.txt`. Its rollout and its `exec --json` stream of the same session.
TEST(CodexReal, ShellPatchesReplayAndARefusedPatchIsAFailure) {
  const fs::path dir = fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces";
  auto t = parse_trace_file(dir / "codex-0.171.0-rollout-patches.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, Format::codex_rollout);
  EXPECT_EQ(t->format_version, "codex_cli 0.171.0");
  EXPECT_TRUE(t->stats.unknown_types.empty()) << t->stats.unknown_types.begin()->first;
  const TraceCounts c = count(*t);
  EXPECT_EQ(c.commands, 4u);
  EXPECT_EQ(c.failed_commands, 1u);  // the refused patch
  ASSERT_EQ(t->fixes.size(), 1u);
  EXPECT_TRUE(t->fixes[0].fixed_by.has_value());
  std::map<std::string, const FileTouch*> files;
  for (const auto& f : t->files) files[f.path] = &f;
  ASSERT_TRUE(files.contains("hello.txt"));
  EXPECT_EQ(files["hello.txt"]->content, std::optional<std::string>("hello\nthere\n"));
  ASSERT_TRUE(files.contains("old.txt"));
  EXPECT_TRUE(files["old.txt"]->deleted);
  EXPECT_EQ(t->usage.input, 606);
  EXPECT_EQ(t->usage.output, 22);

  // The exec stream names the files each applied patch changed (the refused one is not there),
  // not their contents.
  auto e = parse_trace_file(dir / "codex-0.171.0-exec-patches.jsonl");
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->format, Format::codex_exec);
  ASSERT_EQ(e->files.size(), 2u);
  EXPECT_EQ(e->files[0].path, "/tmp/cx/xws/hello.txt");
  EXPECT_FALSE(e->files[0].content.has_value());
  EXPECT_NE(e->files[0].unknown_reason.find("not their contents"), std::string::npos);
  EXPECT_EQ(e->files[0].writes, 1);
  EXPECT_EQ(e->files[0].edits, 1);
  EXPECT_TRUE(e->files[1].deleted);
}

// rg, grep, diff and test answer with exit status 1 ("nothing found", "they differ", "false"):
// not a failure, and so not an error that a later command "fixed"; 2 is still one.
TEST(Analysis, ExitOneOfASearchIsAnAnswerNotAFailure) {
  const std::string text =
      R"({"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"rg -n TODO src","aggregated_output":"","exit_code":1,"status":"failed"}})"
      "\n"
      R"({"type":"item.completed","item":{"id":"i2","type":"command_execution","command":"cd src && grep -r fused .","aggregated_output":"","exit_code":1,"status":"failed"}})"
      "\n"
      R"({"type":"item.completed","item":{"id":"i3","type":"command_execution","command":"grep -r fused missing/","aggregated_output":"grep: missing/: No such file or directory","exit_code":2,"status":"failed"}})"
      "\n"
      R"({"type":"item.completed","item":{"id":"i4","type":"command_execution","command":"make","aggregated_output":"","exit_code":1,"status":"failed"}})"
      "\n"
      R"({"type":"item.completed","item":{"id":"i5","type":"command_execution","command":"make","aggregated_output":"ok","exit_code":0,"status":"completed"}})"
      "\n";
  auto t = parse_trace_text(text, "exec.jsonl", {});
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->commands.size(), 5u);
  EXPECT_FALSE(t->commands[0].failed);
  EXPECT_FALSE(t->commands[1].failed);
  EXPECT_TRUE(t->commands[2].failed);
  EXPECT_TRUE(t->commands[3].failed);
  ASSERT_EQ(t->fixes.size(), 2u);  // grep on a missing folder (never fixed), make (fixed)
  EXPECT_TRUE(t->fixes[1].fixed_by.has_value());
}

// A /export the real Claude Code 2.1.328 wrote (interactive, under tmux, driven by the scripted
// server): a Write shown with numbered lines, a collapsed failed search, an Update shown as
// "Added 1 line, removed 1 line" with the text right after each +/- mark and every line padded to
// the terminal's width. The file ends as the agent left it in its workspace.
TEST(ClaudeExport, RealExportOf2_1ReplaysItsUpdate) {
  const fs::path file =
      fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/claude-code-2.1.328-export.txt";
  auto t = parse_trace_file(file);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, Format::claude_export);
  EXPECT_EQ(t->format_version, "Claude Code 2.1.328");
  EXPECT_EQ(t->tool_counts.at("Write"), 1);
  EXPECT_EQ(t->tool_counts.at("Edit"), 1);
  // "Searched for 1 pattern · 1 failed (ctrl+o to expand)": the collapsed search, and its failure.
  EXPECT_EQ(t->tool_counts.at("Searched"), 1);
  EXPECT_EQ(count(*t).refused_calls, 1u);
  const std::string digest = make_digest(*t).text;
  EXPECT_NE(digest.find("collapsed: what it ran and any retry are not shown"), std::string::npos)
      << digest;
  EXPECT_EQ(digest.find("Not retried"), std::string::npos) << digest;
  ASSERT_EQ(t->files.size(), 1u);
  EXPECT_EQ(t->files[0].path, "build.toml");
  EXPECT_EQ(t->files[0].content, std::optional<std::string>(
                                     "[general]\nname = \"rmsnorm\"\n\n[kernel.rmsnorm]\nsrc = "
                                     "[\"rmsnorm.cu\"]\ncuda-capabilities = [\"8.0\", \"9.0\"]\n"));
  // Any line of it missing: read, never thrown.
  const std::string text = files::read_text(file).value();
  const std::vector<std::string> lines = text::split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string damaged;
    for (std::size_t j = 0; j < lines.size(); ++j)
      if (j != i) damaged += lines[j] + "\n";
    EXPECT_NO_THROW((void)parse_trace_text(damaged, "export.txt", {})) << i;
  }
}

// A /export the real Claude Code 2.0.0 wrote (tests/data/traces/scenarios/claude-export-2.0.json):
// Write previews without line numbers and without their blank lines ("Wrote 7 lines" for six lines
// and a final newline), one cut short ("… +6 lines"), code lines the terminal wrapped at 100
// columns, a refused edit ("Error editing file"), a failing `ls` without an exit code, an Update
// shown as "Updated build.toml with 1 addition and 1 removal", and a file removed with `rm`.
TEST(ClaudeExport, RealExportOf2_0ReplaysPlainPreviewsDiffsAndRemovals) {
  const fs::path file =
      fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/claude-code-2.0.0-export.txt";
  auto t = parse_trace_file(file);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, Format::claude_export);
  EXPECT_EQ(t->format_version, "Claude Code 2.0.0");
  EXPECT_EQ(t->tool_counts.at("Write"), 3);
  EXPECT_EQ(t->tool_counts.at("Edit"), 2);
  EXPECT_EQ(t->tool_counts.at("Bash"), 2);
  ASSERT_EQ(t->files.size(), 3u);
  const FileTouch* config = file_named(*t, "build.toml");
  const FileTouch* notes = file_named(*t, "notes.txt");
  const FileTouch* source = file_named(*t, "kernel.cu");
  ASSERT_TRUE(config && notes && source);
  // The blank line the preview left out is placed by the Update's diff, which shows it: the file
  // is known line by line, as the agent left it.
  EXPECT_EQ(config->content, std::optional<std::string>(
                                 "[general]\nname = \"rmsnorm\"\n\n[kernel.rmsnorm]\nsrc = "
                                 "[\"kernel.cu\"]\ncuda-capabilities = [\"8.0\", \"9.0\"]\n"));
  EXPECT_TRUE(notes->deleted);
  // Cut short: what the export shows, its wrapped lines whole again, and what it does not.
  const FileTouch& kernel = *source;
  EXPECT_FALSE(kernel.content);
  EXPECT_NE(kernel.shown.find("__global__ void rms_norm_kernel(float* __restrict__ out, const "
                              "float* __restrict__ in, const float* __restrict__ weight, int "
                              "cols, float eps) {\n"),
            std::string::npos)
      << kernel.shown;
  EXPECT_NE(kernel.shown.find("  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += "
                              "in[blockIdx.x * cols + c] * in[blockIdx.x * cols + c];\n"),
            std::string::npos)
      << kernel.shown;
  EXPECT_NE(kernel.shown.find("  atomicAdd(&total, sum);\n"), std::string::npos);
  EXPECT_NE(kernel.missing.find("blank lines"), std::string::npos) << kernel.missing;
  // The refused edit and the failing ls are failures; the ls is fixed by the config's edit.
  std::size_t refused = 0;
  for (const Turn& turn : t->turns)
    for (const ToolCall& call : turn.tool_calls)
      refused += call.name == "Edit" && call.is_error ? 1 : 0;
  EXPECT_EQ(refused, 1u);
  ASSERT_EQ(t->commands.size(), 2u);
  EXPECT_TRUE(t->commands[0].failed);
  EXPECT_EQ(t->commands[0].command, "ls rmsnorm.cu");
  EXPECT_FALSE(t->commands[1].failed);
  ASSERT_EQ(t->fixes.size(), 1u);
  EXPECT_TRUE(t->fixes[0].fixed_by.has_value());
  EXPECT_EQ(t->turns.back().text,
            "Done: build.toml now builds kernel.cu for sm_80 and sm_90, and the scratch notes are "
            "gone; this sentence is long enough that the terminal must wrap it at least once.");
}

// The same session through the real Claude Code 2.1.328: the session record it kept has every
// turn, the failure and its fix, the files as the agent left them (notes.txt removed); its /export
// wraps numbered preview lines by characters inside the result's box ("const f" / "loat*"), says
// "Couldn't edit file", and collapses the shell calls ("Listed 1 directory · 1 failed", "Ran 1
// shell command"), so what they ran — the rm too — is not in it.
TEST(ClaudeExport, RealSessionOf2_1AndItsExport) {
  const std::string config =
      "[general]\nname = \"rmsnorm\"\n\n[kernel.rmsnorm]\nsrc = [\"kernel.cu\"]"
      "\ncuda-capabilities = [\"8.0\", \"9.0\"]\n";
  const fs::path dir = fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces";
  auto session = parse_trace_file(dir / "claude-code-2.1.328-session.jsonl");
  ASSERT_TRUE(session) << session.error().message;
  EXPECT_EQ(session->format, Format::claude_jsonl);
  const TraceCounts c = count(*session);
  EXPECT_EQ(c.user_prompts, 1u);
  EXPECT_EQ(c.assistant_messages, 8u);
  EXPECT_EQ(c.commands, 2u);
  EXPECT_EQ(c.failed_commands, 1u);
  EXPECT_EQ(session->usage.input, 1080);
  EXPECT_EQ(session->usage.output, 84);
  EXPECT_TRUE(session->stats.unknown_types.empty());  // 2.1's request-log records are known
  ASSERT_EQ(session->files.size(), 3u);
  const FileTouch* kept_config = file_named(*session, "build.toml");
  const FileTouch* kept_source = file_named(*session, "kernel.cu");
  const FileTouch* kept_notes = file_named(*session, "notes.txt");
  ASSERT_TRUE(kept_config && kept_source && kept_notes && kept_source->content);
  EXPECT_EQ(kept_config->content, std::optional<std::string>(config));
  EXPECT_EQ(kept_source->content->size(), 662u);
  EXPECT_TRUE(kept_notes->deleted);
  ASSERT_EQ(session->fixes.size(), 1u);
  EXPECT_EQ(session->fixes[0].files_changed, (std::vector<std::string>{"build.toml", "notes.txt"}));

  auto exported = parse_trace_file(dir / "claude-code-2.1.328-export-edits.txt");
  ASSERT_TRUE(exported) << exported.error().message;
  const FileTouch* shown_config = file_named(*exported, "build.toml");
  const FileTouch* shown_source = file_named(*exported, "kernel.cu");
  ASSERT_TRUE(shown_config && shown_source);
  EXPECT_EQ(shown_config->content, std::optional<std::string>(config));
  EXPECT_NE(shown_source->shown.find(
                "__global__ void rms_norm_kernel(float* __restrict__ out, const float* "
                "__restrict__ in, const float* __restrict__ weight, int cols, float eps) {\n  "
                "float sum = 0.f;\n  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += "
                "in[blockIdx.x * cols + c] * in[blockIdx.x * cols + c];\n"),
            std::string::npos)
      << shown_source->shown;
  std::size_t refused = 0, collapsed_failures = 0;
  for (const Turn& turn : exported->turns)
    for (const ToolCall& call : turn.tool_calls) {
      refused += call.name == "Edit" && call.is_error ? 1 : 0;
      collapsed_failures += call.name == "Listed" && call.is_error ? 1 : 0;
    }
  EXPECT_EQ(refused, 1u);
  EXPECT_EQ(collapsed_failures, 1u);
  EXPECT_EQ(exported->tool_counts.at("Bash"), 1);
}

// Two separate code lines of a plain preview are not joined, however wide the first: the
// terminal's word wrap leaves the space it broke at at the end of the row, and this row has none.
TEST(ClaudeExport, PlainPreviewLinesWithoutATrailingSpaceStaySeparate) {
  const std::string wide(44, 'x');  // the row is 95 columns of a 100-column export
  const std::string text =
      "● Write(a.py)\n"
      "  ⎿  Wrote 3 lines to a.py\n"
      "     pipe = Pipeline.from_pretrained(\"" +
      wide +
      "\").to(\"cuda\")\n"
      "     pipe.unet.set_attn_processor(Processor())\n"
      "● Done.\n" +
      std::string(100, '-') + "\n" + std::string(99, '-') + "\n" + std::string(98, '-') + "\n";
  auto t = parse_trace_text(text, "export.txt", ParseOptions{Format::claude_export});
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->files.size(), 1u);
  EXPECT_EQ(
      t->files[0].content,
      std::optional<std::string>("pipe = Pipeline.from_pretrained(\"" + wide +
                                 "\").to(\"cuda\")\npipe.unet.set_attn_processor(Processor())\n"));
}

// What the real Claude Code 2.1.328 prints with -p --output-format stream-json: its lines carry a
// uuid as session records do, but `session_id`, not `sessionId` — a stream, not a session log.
TEST(ClaudeStream, RealStreamIsNotTakenForASessionLog) {
  auto t = parse_trace_file(fs::path(UPSKILL_SOURCE_DIR) /
                            "tests/data/traces/claude-code-2.1.328-stream.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, Format::claude_stream) << t->detected_by;
  ASSERT_FALSE(t->turns.empty());
  EXPECT_EQ(t->turns.back().text, "hello there");
  EXPECT_EQ(t->models, std::vector<std::string>{"glm-4.6"});
}

// The session events the real Copilot CLI 1.0.102 kept (~/.copilot/session-state/<id>/
// events.jsonl), driven by the scripted server: its skill tool, bash writing the answer, a command
// that fails (exit 1), the fix, the answer; per-call usage records.
TEST(CopilotCli, RealSessionEventsReadAsAConversation) {
  auto t = parse_trace_file(fs::path(UPSKILL_SOURCE_DIR) /
                            "tests/data/traces/copilot-cli-1.0.102-events.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, Format::copilot_events);
  EXPECT_EQ(t->format_version, "Copilot CLI 1.0.102");
  EXPECT_EQ(t->cwd, "/tmp/cx/pws");
  ASSERT_FALSE(t->turns.empty());
  EXPECT_EQ(t->turns[0].role, Role::user);
  EXPECT_EQ(t->turns[0].text, "Greet the new hire\n");
  EXPECT_EQ(t->turns.back().text, "AHOY-42, welcome aboard!");
  EXPECT_EQ(t->usage.input, 600);
  EXPECT_EQ(t->usage.output, 45);
  EXPECT_EQ(t->tool_counts.at("skill"), 1);
  EXPECT_EQ(t->tool_counts.at("bash"), 3);
  const TraceCounts c = count(*t);
  EXPECT_EQ(c.commands, 3u);
  EXPECT_EQ(c.failed_commands, 1u);
  ASSERT_EQ(t->fixes.size(), 1u);
  EXPECT_TRUE(t->fixes[0].fixed_by.has_value());
  EXPECT_EQ(t->stats.malformed, 0u);
}

// A Gemini CLI session (written for the tests from the documented session layout): prompts,
// thoughts, tool calls with results and status, per-message tokens summed; info lines skipped.
TEST(GeminiCli, SessionMessagesToolCallsAndTokens) {
  auto t = parse_trace_file(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/gemini-session.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, Format::gemini);
  ASSERT_EQ(t->turns.size(), 4u);
  EXPECT_EQ(t->turns[0].role, Role::user);
  EXPECT_EQ(t->turns[0].text, "Fix the kernel-builder build: capabilities are rejected.");
  EXPECT_EQ(t->turns[1].thinking, "Checking the build: Run the build to see the error.");
  ASSERT_EQ(t->turns[1].tool_calls.size(), 1u);
  const ToolCall& build = t->turns[1].tool_calls[0];
  EXPECT_EQ(build.name, "run_shell_command");
  EXPECT_TRUE(build.is_error);
  EXPECT_NE(build.result.find("unknown field"), std::string::npos);
  EXPECT_EQ(t->turns[3].text, "Fixed: the key is cuda-capabilities, per kernel.");
  EXPECT_EQ(t->models, std::vector<std::string>{"gemini-2.5-pro"});
  EXPECT_EQ(t->usage.input, 9120 + 9800 + 10050);
  EXPECT_EQ(t->usage.cache_read, 4096 + 8192 + 8192);
  EXPECT_EQ(t->usage.output, 64 + 120 + 30 + 210);  // thoughts included, as OpenAI counts them
  EXPECT_EQ(t->usage.reasoning, 210);
  EXPECT_EQ(t->stats.skipped.at("info"), 1u);
  const TraceCounts c = count(*t);
  EXPECT_EQ(c.commands, 1u);
  EXPECT_EQ(c.failed_commands, 1u);
  EXPECT_EQ(c.files, 2u);  // build.toml edited, README.md written
  bool readme = false;
  for (const auto& f : t->files)
    readme =
        readme || (f.path == "README.md" && f.content == std::optional<std::string>("# rmsnorm\n"));
  EXPECT_TRUE(readme);
}

// The final contents of `path` among the trace's files ("" when absent or unknown).
std::string final_contents(const Trace& t, const std::string& path) {
  for (const auto& f : t.files)
    if (f.path == path) return f.content.value_or("");
  return "";
}

const std::string kRmsNormFixed =
    "import numpy as np\n\n\ndef rms_norm(x, weight, eps=1e-6):\n"
    "    rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)\n"
    "    return (x / rms * weight).astype(np.float32)\n";

// What the opencode session of both fixtures did: two writes, a failing test run, an edit, a
// passing run and a read of a missing file; tokens summed over every step. Paths are relative to
// the session's directory when the trace names it (`dir`: "" or the absolute prefix).
void expect_rmsnorm_session(const Trace& t, const std::string& dir) {
  const TraceCounts c = count(t);
  EXPECT_EQ(c.assistant_messages, 5u);
  EXPECT_EQ(c.tool_calls, 6u);
  EXPECT_EQ(c.tool_errors, 2u);  // the failing pytest (exit 1) and the read of README.md
  EXPECT_EQ(t.tool_counts.at("write"), 2);
  EXPECT_EQ(t.tool_counts.at("bash"), 2);
  EXPECT_EQ(t.tool_counts.at("edit"), 1);
  EXPECT_EQ(t.tool_counts.at("read"), 1);
  ASSERT_EQ(t.commands.size(), 2u);
  EXPECT_EQ(t.commands[0].command, "python -m pytest -q test_rmsnorm.py");
  EXPECT_TRUE(t.commands[0].failed);
  EXPECT_EQ(t.commands[0].exit_code, 1);
  EXPECT_FALSE(t.commands[1].failed);
  EXPECT_EQ(t.commands[1].exit_code, 0);
  ASSERT_EQ(t.fixes.size(), 1u);
  EXPECT_EQ(t.fixes[0].fixed_by, std::optional<std::size_t>(1));
  EXPECT_EQ(t.fixes[0].files_changed, std::vector<std::string>{dir + "rmsnorm.py"});
  EXPECT_EQ(c.files, 2u);
  EXPECT_EQ(final_contents(t, dir + "rmsnorm.py"), kRmsNormFixed);
  EXPECT_NE(final_contents(t, dir + "test_rmsnorm.py").find("def test_dtype_is_float32"),
            std::string::npos);
  bool read_error = false;
  for (const Turn& turn : t.turns)
    for (const ToolCall& call : turn.tool_calls) {
      if (call.name == "edit") EXPECT_EQ(classify_tool(call), ToolKind::edit);
      if (call.name == "write") EXPECT_EQ(classify_tool(call), ToolKind::write);
      if (call.name == "read") {
        EXPECT_EQ(classify_tool(call), ToolKind::read);
        read_error =
            call.is_error && call.result == "Error: File not found: /home/dev/rmsnorm/README.md";
      }
    }
  EXPECT_TRUE(read_error);
  EXPECT_TRUE(t.usage.reported);
  EXPECT_EQ(t.usage.cache_read, 11542 + 12650 + 13758 + 14263 + 15075 + 15366);
  EXPECT_EQ(t.usage.cache_write, 1108 + 1108 + 505 + 812 + 291 + 188);
  EXPECT_EQ(t.usage.input, 6 + 9 + 4 + 4 + 4 + 4 + t.usage.cache_read + t.usage.cache_write);
  EXPECT_EQ(t.usage.output, 171 + 236 + 63 + 198 + 112 + 54 + 61);  // reasoning included
  EXPECT_EQ(t.usage.reasoning, 61);
  EXPECT_EQ(t.stats.malformed, 0u);
  EXPECT_TRUE(t.stats.unknown_types.empty());
}

// An `opencode export` (written for the tests from opencode's documented message and part
// layout): the typed prompt, the synthetic text of an attached file as a meta turn, assistant
// messages with reasoning, text and tool parts, tokens from every step-finish part.
TEST(Opencode, ExportMessagesPartsToolsAndTokens) {
  auto t =
      parse_trace_file(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/opencode-export.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, Format::opencode);
  EXPECT_EQ(t->format_version, "opencode 1.0.134");
  EXPECT_EQ(t->cwd, "/home/dev/rmsnorm");
  ASSERT_EQ(t->turns.size(), 7u);
  EXPECT_EQ(t->turns[0].role, Role::user);
  EXPECT_FALSE(t->turns[0].meta);
  EXPECT_TRUE(t->turns[0].text.starts_with("Write rmsnorm.py with rms_norm"));
  EXPECT_EQ(t->turns[0].timestamp, "2025-12-01T09:32:03.118Z");
  EXPECT_EQ(t->turns[1].role, Role::user);
  EXPECT_TRUE(t->turns[1].meta);  // opencode's synthetic read of the attached NOTES.md
  EXPECT_NE(t->turns[1].text.find("Tests live beside the module."), std::string::npos);
  const Turn& first = t->turns[2];
  EXPECT_EQ(first.role, Role::assistant);
  EXPECT_EQ(first.model, "claude-sonnet-4-5");
  EXPECT_EQ(first.timestamp, "2025-12-01T09:32:04.002Z");
  EXPECT_TRUE(first.thinking.starts_with("RMSNorm: x / sqrt"));
  EXPECT_EQ(first.text, "I'll write the module first.");
  ASSERT_EQ(first.tool_calls.size(), 2u);  // two steps of one message
  EXPECT_EQ(first.tool_calls[0].id, "toolu_01Hq7mXv2cLr9Ts4Wn8bKe3P");
  EXPECT_EQ(first.tool_calls[0].input["file_path"], "/home/dev/rmsnorm/rmsnorm.py");
  EXPECT_EQ(t->turns[6].text,
            "Done: rms_norm now normalises each row over the last axis and both tests pass. "
            "There is no README.md to update.");
  EXPECT_EQ(t->models, std::vector<std::string>{"claude-sonnet-4-5"});
  EXPECT_EQ(count(*t).user_prompts, 1u);
  EXPECT_EQ(t->stats.records, 6u);
  EXPECT_EQ(t->stats.skipped.at("user part/file"), 1u);
  EXPECT_EQ(t->stats.skipped.at("part/step-start"), 6u);
  EXPECT_EQ(t->stats.skipped.at("part/patch"), 2u);
  expect_rmsnorm_session(*t, "");
}

// The same session as `opencode run --format json` prints it: no user turn (the prompt is an
// argument), one assistant turn per message id, tool_use events with completed or error state.
// The stream does not name the working directory, so paths stay absolute.
TEST(Opencode, RunEventsBecomeTurnsCallsAndUsage) {
  auto t = parse_trace_file(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/opencode-run.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, Format::opencode_run);
  EXPECT_EQ(t->format_version, "opencode run --format json");
  ASSERT_EQ(t->turns.size(), 5u);
  EXPECT_EQ(count(*t).user_prompts, 0u);
  EXPECT_TRUE(t->turns[0].thinking.starts_with("RMSNorm: x / sqrt"));
  EXPECT_EQ(t->turns[0].text, "I'll write the module first.");
  EXPECT_EQ(t->turns[0].tool_calls.size(), 2u);
  EXPECT_EQ(t->turns[0].timestamp, "2025-12-01T10:01:54.365Z");
  EXPECT_EQ(t->turns[2].text, "The mean runs over the whole array, not per row. Fixing the axis.");
  EXPECT_EQ(t->stats.records, 23u);
  EXPECT_EQ(t->stats.lines, 23u);
  EXPECT_TRUE(t->cwd.empty());
  expect_rmsnorm_session(*t, "/home/dev/rmsnorm/");
}

// Edge cases of both: a message without steps counts its info tokens; an interrupted tool is a
// call without a result; ignored text is skipped; an error is noted; a bad part or a line without
// a part is malformed and the rest is read.
// The real opencode 1.18.33 through tests/data/traces/scenarios/opencode-session.json: its
// `run --format json` stream and `opencode export` of the same session. Three writes, an edit it
// refused ("Could not find oldString"), `ls` failing with exit 2, the edit that fixes build.toml,
// `rm` of the notes; the files end as the agent left its workspace.
TEST(Opencode, RealRunStreamAndExportOfOneSession) {
  const std::string kernel =
      "// RMSNorm for sm_90: one block per row.\n__global__ void rms_norm_kernel(float* out, const "
      "float* in, int cols) {\n  out[blockIdx.x * cols + threadIdx.x] = in[blockIdx.x * cols + "
      "threadIdx.x];\n}\n";
  const std::string config =
      "[general]\nname = \"rmsnorm\"\n\n[kernel.rmsnorm]\nsrc = [\"kernel.cu\"]\n";
  for (const char* name : {"opencode-1.18.33-export.json", "opencode-1.18.33-run.jsonl"}) {
    SCOPED_TRACE(name);
    auto t = parse_trace_file(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces" / name);
    ASSERT_TRUE(t) << t.error().message;
    const bool exported = std::string(name).ends_with(".json");
    EXPECT_EQ(t->format, exported ? Format::opencode : Format::opencode_run);
    EXPECT_EQ(t->tool_counts.at("write"), 3);
    EXPECT_EQ(t->tool_counts.at("edit"), 2);
    EXPECT_EQ(t->tool_counts.at("bash"), 2);
    EXPECT_EQ(t->usage.input, 1080);
    EXPECT_EQ(t->usage.output, 84);
    // The export knows its folder: paths relative to it. The stream does not.
    const std::string at = exported ? "" : "/tmp/rec/ows/";
    ASSERT_EQ(t->files.size(), 3u);
    const FileTouch* source = file_named(*t, at + "kernel.cu");
    const FileTouch* build = file_named(*t, at + "build.toml");
    const FileTouch* notes = file_named(*t, at + "notes.txt");
    ASSERT_TRUE(source && build && notes);
    EXPECT_EQ(source->content, std::optional<std::string>(kernel));
    EXPECT_EQ(build->content, std::optional<std::string>(config));
    EXPECT_TRUE(notes->deleted);
    std::size_t refused = 0;
    for (const Turn& turn : t->turns)
      for (const ToolCall& call : turn.tool_calls)
        if (call.name == "edit" && call.is_error) {
          ++refused;
          EXPECT_NE(call.result.find("Could not find oldString"), std::string::npos);
        }
    EXPECT_EQ(refused, 1u);
    ASSERT_EQ(t->commands.size(), 2u);
    EXPECT_EQ(t->commands[0].command, "ls rmsnorm.cu");
    EXPECT_TRUE(t->commands[0].failed);
    EXPECT_EQ(t->commands[0].exit_code, std::optional<int>(2));
    EXPECT_FALSE(t->commands[1].failed);
    ASSERT_EQ(t->fixes.size(), 1u);
    EXPECT_TRUE(t->fixes[0].fixed_by.has_value());
    // The edit before the fix, and the rm the fixing command ran.
    EXPECT_EQ(t->fixes[0].files_changed,
              (std::vector<std::string>{at + "build.toml", at + "notes.txt"}));
    EXPECT_EQ(t->turns.back().text,
              "Done: build.toml now builds kernel.cu, and the scratch notes are gone.");
  }
}

TEST(Opencode, LenientAndContained) {
  const std::string doc = R"({"info": {"id": "ses_1", "directory": "/w"}, "messages": [
    {"info": {"role": "user"}, "parts": [{"type": "text", "text": "Go."},
                                         {"type": "text", "text": "old", "ignored": true}]},
    {"info": {"role": "assistant", "modelID": "gpt-5", "providerID": "openai",
              "tokens": {"input": 100, "output": 20, "reasoning": 5, "cache": {"read": 50, "write": 0}},
              "error": {"name": "MessageAbortedError", "data": {"message": "Aborted"}}},
     "parts": [7, {"type": "tool", "callID": "c1", "tool": "bash",
                   "state": {"status": "running", "input": {"command": "make"}}},
               {"type": "tool", "tool": "bash"}]},
    {"parts": []}]})";
  auto t = parse_trace_text(doc, "export.json", {});
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, Format::opencode);
  ASSERT_EQ(t->turns.size(), 2u);
  EXPECT_EQ(t->turns[0].text, "Go.");
  EXPECT_EQ(t->stats.skipped.at("ignored text"), 1u);
  ASSERT_EQ(t->turns[1].tool_calls.size(), 1u);
  EXPECT_FALSE(t->turns[1].tool_calls[0].has_result);
  EXPECT_EQ(t->usage.input, 150);
  EXPECT_EQ(t->usage.output, 20 + 5);  // reasoning included
  EXPECT_EQ(t->models, std::vector<std::string>{"gpt-5"});
  EXPECT_EQ(t->stats.malformed,
            3u);  // part 7, the tool part without state, the message without info
  bool aborted = false;
  for (const auto& n : t->stats.notes)
    aborted = aborted || n.find("MessageAbortedError: Aborted") != std::string::npos;
  EXPECT_TRUE(aborted);

  const std::string run =
      R"({"type":"step_start","timestamp":1,"sessionID":"s","part":{"type":"step-start"}})"
      "\n"
      R"({"type":"text","timestamp":2,"sessionID":"s","part":{"type":"text","text":"Hi","messageID":"m1"}})"
      "\n"
      R"({"type":"tool_use","timestamp":3,"sessionID":"s"})"
      "\n"
      R"({"type":"error","timestamp":4,"sessionID":"s","error":{"name":"APIError","data":{"message":"Rate limit exceeded"}}})"
      "\n";
  auto r = parse_trace_text(run, "run.jsonl", {});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->format, Format::opencode_run);
  ASSERT_EQ(r->turns.size(), 1u);
  EXPECT_EQ(r->turns[0].text, "Hi");
  EXPECT_EQ(r->stats.malformed, 1u);
  bool rate = false;
  for (const auto& n : r->stats.notes)
    rate = rate || n.find("run.jsonl:4: error: APIError: Rate limit exceeded") != std::string::npos;
  EXPECT_TRUE(rate);
}

TEST(Detection, Opencode) {
  EXPECT_EQ(
      detect_format(R"({"info":{"id":"ses_1"},"messages":[{"info":{},"parts":[]}]})", true).format,
      Format::opencode);
  EXPECT_EQ(detect_format("{\"type\":\"step_start\",\"sessionID\":\"s\",\"part\":{}}\n"
                          "{\"type\":\"text\",\"sessionID\":\"s\",\"part\":{}}\n",
                          false)
                .format,
            Format::opencode_run);
  // A reasoning event is opencode's, not a Responses API item.
  EXPECT_EQ(detect_format("{\"type\":\"reasoning\",\"sessionID\":\"s\",\"part\":{}}\n"
                          "{\"type\":\"tool_use\",\"sessionID\":\"s\",\"part\":{}}\n",
                          false)
                .format,
            Format::opencode_run);
  EXPECT_EQ(format_from_string("opencode"), Format::opencode);
  EXPECT_EQ(format_from_string("opencode-run"), Format::opencode_run);
}

TEST(Registry, EveryFormatHasOneNameAndReadsWithItsOwnReader) {
  const std::vector<Format> all{Format::claude_jsonl,    Format::claude_stream,
                                Format::claude_export,   Format::codex_rollout,
                                Format::codex_exec,      Format::openai_chat,
                                Format::responses,       Format::anthropic,
                                Format::fast_agent_json, Format::gemini,
                                Format::opencode,        Format::opencode_run,
                                Format::copilot_events,  Format::fast_agent_text,
                                Format::markdown,        Format::text};
  ASSERT_EQ(all.size(), Format::kCount);
  std::set<std::string> names;
  for (const Format f : all) {
    const std::string name(to_string(f));
    EXPECT_TRUE(names.insert(name).second) << name << " names two formats";
    EXPECT_EQ(format_from_string(name), f) << name;
    // Forced onto text of every shape, the format's reader runs; nothing escapes, and what it
    // reads is labelled with the format asked for.
    for (const char* text : {"hello\n", "{\"type\":\"x\"}\n{\"role\":\"user\"}\n",
                             "[{\"role\":\"user\",\"content\":\"hi\"}]", "{}"}) {
      ParseOptions o;
      o.format = f;
      const auto r = parse_trace_text(text, "forced", o);
      if (r) {
        EXPECT_EQ(r->format, f) << name << " on " << text;
      } else {  // nothing readable in that format: a usage error naming the input
        EXPECT_EQ(r.error().code, ExitCode::usage) << name << " on " << text;
        EXPECT_EQ(r.error().message.rfind("forced:", 0), 0u) << r.error().message;
      }
    }
  }
  // Each reader is the format's own: text reads as one user turn, a chat array as its message.
  ParseOptions as_text;
  as_text.format = Format::text;
  const auto plain = parse_trace_text("hello\n", "forced", as_text);
  ASSERT_TRUE(plain) << plain.error().message;
  ASSERT_EQ(plain->turns.size(), 1u);
  EXPECT_EQ(plain->turns[0].role, Role::user);
  ParseOptions as_chat;
  as_chat.format = Format::openai_chat;
  const auto chat =
      parse_trace_text(R"([{"role":"assistant","content":"hi there"}])", "forced", as_chat);
  ASSERT_TRUE(chat) << chat.error().message;
  ASSERT_EQ(chat->turns.size(), 1u);
  EXPECT_EQ(chat->turns[0].role, Role::assistant);
  EXPECT_EQ(chat->turns[0].text, "hi there");
  EXPECT_EQ(format_names().size(), Format::kCount);
  EXPECT_EQ(format_names().front(), "claude-jsonl");
  EXPECT_FALSE(format_from_string("claude"));
  EXPECT_FALSE(format_from_string(""));
  EXPECT_EQ(Format(), Format::text);
}

}  // namespace
}  // namespace upskill::trace
