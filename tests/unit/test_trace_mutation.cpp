// Type mutations of realistic records: every field of every record of the example traces (one
// session rendered in each JSON format, examples/traces/) set to each JSON type, and removed. A
// parser treats a wrong-typed or missing field as a malformed record — counted, noted, skipped — or
// rejects the file with a usage error; no exception ever escapes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "upskill/core/json.hpp"
#include "upskill/core/unicode.hpp"
#include "upskill/trace/digest.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// What a field may be replaced with: each JSON type, and nothing (removal, for object members).
const std::vector<Json>& replacements() {
  static const std::vector<Json> all{
      Json(nullptr),   Json(true),    Json(0),        Json(-7.5),
      Json("mutated"), Json::array(), Json::object(), Json::array({1, "two"})};
  return all;
}

// Every JSON pointer below `value` (not the root), depth first.
void pointers(const Json& value, const Json::json_pointer& at,
              std::vector<Json::json_pointer>& out) {
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) {
      out.push_back(at / key);
      pointers(child, at / key, out);
    }
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      out.push_back(at / i);
      pointers(value[i], at / i, out);
    }
  }
}

// Every mutation of one JSON value: each pointer replaced by each type, and removed.
std::vector<Json> mutations(const Json& original) {
  std::vector<Json::json_pointer> paths;
  pointers(original, Json::json_pointer(), paths);
  std::vector<Json> out;
  for (const auto& p : paths) {
    for (const Json& r : replacements()) {
      Json m = original;
      m[p] = r;
      out.push_back(std::move(m));
    }
    Json removed = original;
    const Json::json_pointer parent = p.parent_pointer();
    if (removed[parent].is_object())
      removed[parent].erase(p.back());
    else
      removed[parent].erase(std::stoul(p.back()));
    out.push_back(std::move(removed));
  }
  return out;
}

struct Outcome {
  std::size_t variants = 0, parsed = 0, rejected = 0;
  ~Outcome() {
    std::cout << fmt::format("  {} variants: {} parsed, {} rejected with a usage error\n", variants,
                             parsed, rejected);
  }
};

// Parses one variant; an escaped exception fails the test with the variant that caused it.
void parse_variant(const std::string& text, Format format, const std::string& what, Outcome& o) {
  ++o.variants;
  ParseOptions options;
  options.format = format;
  try {
    // Detection reads the same records without the format given: it must hold up too (a "type"
    // of another kind once threw there).
    (void)detect_format(std::string_view(text).substr(0, 65536), text.size() <= 65536);
    auto parsed = parse_trace_text(text, "mutated", options);
    if (parsed) {
      ++o.parsed;
      // What `upskill trace` and `generate` do next with a parsed trace must hold up too.
      if (o.parsed % 97 == 0) {
        (void)summary_json(*parsed);
        (void)make_digest(*parsed, {4000});
      }
    } else {
      ++o.rejected;
      EXPECT_EQ(parsed.error().code, ExitCode::usage) << what << ": " << parsed.error().message;
      EXPECT_NE(parsed.error().message.find("mutated"), std::string::npos)
          << "the message names the file: " << parsed.error().message;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " threw: " << e.what() << "\n" << text.substr(0, 2000);
  }
}

void mutate_lines(const fs::path& file, Format format, Outcome& o) {
  std::vector<std::string> lines;
  std::istringstream in(read(file));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const Json record = Json::parse(lines[i], nullptr, false);
    if (record.is_discarded()) continue;
    for (const Json& m : mutations(record)) {
      std::string text;
      for (std::size_t j = 0; j < lines.size(); ++j) text += (j == i ? m.dump() : lines[j]) + "\n";
      parse_variant(
          text, format,
          fmt::format("{} line {}: {}", file.filename().string(), i + 1, m.dump().substr(0, 300)),
          o);
    }
  }
}

void mutate_document(const fs::path& file, Format format, Outcome& o) {
  const Json doc = Json::parse(read(file));
  for (const Json& m : mutations(doc))
    parse_variant(m.dump(), format, file.filename().string() + ": " + m.dump().substr(0, 300), o);
}

const fs::path kTraces = fs::path(UPSKILL_SOURCE_DIR) / "examples/traces";

TEST(TraceMutation, ClaudeSessionRecordsNeverEscape) {
  Outcome o;
  mutate_lines(kTraces / "claude-code/rmsnorm-session.jsonl", Format::claude_jsonl, o);
  EXPECT_GT(o.variants, 5000u);
  EXPECT_EQ(o.rejected, 0u);  // a bad field costs its record, never the trace
}

TEST(TraceMutation, CodexRolloutRecordsNeverEscape) {
  Outcome o;
  mutate_lines(kTraces / "codex-rollout.jsonl", Format::codex_rollout, o);
  EXPECT_GT(o.variants, 1000u);
  EXPECT_EQ(o.rejected, 0u);
}

TEST(TraceMutation, CodexExecEventsNeverEscape) {
  Outcome o;
  mutate_lines(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/codex-exec.jsonl",
               Format::codex_exec, o);
  EXPECT_GT(o.variants, 500u);
  EXPECT_EQ(o.rejected, 0u);
}

TEST(TraceMutation, GeminiSessionNeverEscapes) {
  Outcome o;
  mutate_document(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/gemini-session.json",
                  Format::gemini, o);
  EXPECT_GT(o.variants, 500u);
}

// The JSON lines the real Gemini CLI 0.61.0 wrote (tests/data/traces/README.md).
TEST(TraceMutation, GeminiSessionLinesNeverEscape) {
  Outcome o;
  mutate_lines(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/gemini-cli-0.61.0-session.jsonl",
               Format::gemini, o);
  EXPECT_GT(o.variants, 2000u);
  EXPECT_EQ(o.rejected, 0u);
}

// The rollout and exec stream the real Codex 0.171.0 wrote (tests/data/traces/README.md).
TEST(TraceMutation, RealCodexRecordsNeverEscape) {
  Outcome o;
  const fs::path dir = fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces";
  mutate_lines(dir / "codex-0.171.0-exec-patches.jsonl", Format::codex_exec, o);
  mutate_lines(dir / "codex-0.171.0-rollout-patches.jsonl", Format::codex_rollout, o);
  EXPECT_GT(o.variants, 3000u);
  EXPECT_EQ(o.rejected, 0u);
}

// The session events the real Copilot CLI 1.0.102 kept (tests/data/traces/README.md).
TEST(TraceMutation, CopilotEventsNeverEscape) {
  Outcome o;
  mutate_lines(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/copilot-cli-1.0.102-events.jsonl",
               Format::copilot_events, o);
  EXPECT_GT(o.variants, 2000u);
  EXPECT_EQ(o.rejected, 0u);
}

TEST(TraceMutation, OpencodeExportNeverEscapes) {
  Outcome o;
  mutate_document(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/opencode-export.json",
                  Format::opencode, o);
  EXPECT_GT(o.variants, 300u);
}

TEST(TraceMutation, OpencodeRunEventsNeverEscape) {
  Outcome o;
  mutate_lines(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/opencode-run.jsonl",
               Format::opencode_run, o);
  EXPECT_GT(o.variants, 300u);
  EXPECT_EQ(o.rejected, 0u);
}

// What the real opencode 1.18.33 printed and exported (tests/data/traces/README.md).
TEST(TraceMutation, RealOpencodeRecordsNeverEscape) {
  Outcome o;
  mutate_document(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/opencode-1.18.33-export.json",
                  Format::opencode, o);
  mutate_lines(fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/opencode-1.18.33-run.jsonl",
               Format::opencode_run, o);
  EXPECT_GT(o.variants, 1000u);
}

TEST(TraceMutation, JsonDocumentsNeverEscape) {
  for (const auto& [name, format] : std::vector<std::pair<std::string, Format>>{
           {"openai-chat.json", Format::openai_chat},
           {"anthropic-messages.json", Format::anthropic},
           {"responses.json", Format::responses},
           {"fast-agent-history.json", Format::fast_agent_json}}) {
    Outcome o;
    mutate_document(kTraces / name, format, o);
    EXPECT_GT(o.variants, 100u) << name;
  }
}

// Random bytes: with a NUL among them (any binary file) the trace is refused, naming the file;
// without, whatever is read, the digest a teacher gets and the summary are valid UTF-8.
TEST(TraceFuzz, RandomBytesAreRefusedOrGiveValidUtf8) {
  std::mt19937 rng(20261205);
  std::uniform_int_distribution<int> byte(0, 255), size(1, 5000);
  std::string binary(4096, '\0');
  for (auto& c : binary) c = static_cast<char>(byte(rng));
  binary[100] = '\0';
  auto refused = parse_trace_text(binary, "noise.bin", {});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("noise.bin: binary data, not a trace"), std::string::npos)
      << refused.error().message;
  for (int i = 0; i < 300; ++i) {
    std::string text(static_cast<std::size_t>(size(rng)), ' ');
    for (auto& c : text) c = static_cast<char>(1 + byte(rng) % 255);  // never NUL
    if (i % 3 == 0) text = "## User\nFix the kernel \xff\xfe.\n## Assistant\nDone \xc3(.\n" + text;
    auto t = parse_trace_text(text, "noise.txt", {});
    if (!t) continue;
    const TraceDigest d = make_digest(*t, {4000});
    EXPECT_TRUE(unicode::is_valid_utf8(d.text)) << i;
    EXPECT_NO_THROW((void)summary_json(*t).dump()) << i;
  }
}

// A malformed record (no readable message, or no known type) sharing its uuid with the valid next
// line does not make that line a duplicate: the prompt is kept.
TEST(TraceMutation, AMalformedRecordDoesNotHideTheValidOneWithItsUuid) {
  for (const std::string bad :
       {R"({"type":"user","uuid":"u1","sessionId":"s","message":"cut"})",
        R"({"type":7,"uuid":"u1","sessionId":"s"})",
        R"({"uuid":"u1","sessionId":"s","message":{"role":"user","content":"x"}})"}) {
    const std::string text =
        bad + "\n" +
        R"({"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"Build the fused kernel."}})"
        "\n"
        R"({"type":"assistant","uuid":"a1","sessionId":"s","message":{"id":"m1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"On it."}]}})"
        "\n";
    auto t = parse_trace_text(text, "session.jsonl", {});
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->format, Format::claude_jsonl) << bad;
    ASSERT_EQ(t->turns.size(), 2u) << bad;
    EXPECT_EQ(t->turns[0].text, "Build the fused kernel.") << bad;
    EXPECT_EQ(t->stats.duplicates, 0u) << bad;
  }
}

// A Claude Code 2.0.46 session wrote `"isMeta": null` on a user record: it reads as not meta, and
// the prompt is kept.
TEST(TraceMutation, NullIsMetaKeepsThePrompt) {
  const std::string text =
      R"({"type":"user","uuid":"u1","isMeta":null,"isSidechain":null,"message":{"role":"user","content":"Build the fused kernel."}})"
      "\n"
      R"({"type":"assistant","uuid":"a1","message":{"id":"m1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"On it."}]}})"
      "\n";
  auto t = parse_trace_text(text, "session.jsonl", {});
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->turns.size(), 2u);
  EXPECT_EQ(t->turns[0].text, "Build the fused kernel.");
  EXPECT_FALSE(t->turns[0].meta);
  EXPECT_EQ(t->stats.malformed, 0u);
}

// An invalid record must not hide a valid one that carries the same uuid; the invalid one is
// counted and noted with its file and line.
TEST(TraceMutation, AnInvalidRecordDoesNotHideAValidOneWithItsUuid) {
  const std::string text =
      R"({"type":"user","uuid":"u1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]},"toolUseResult":{"interrupted":"yes"}})"
      "\n"
      R"({"type":"user","uuid":"u1","message":{"role":"user","content":"The real prompt."}})"
      "\n";
  auto t = parse_trace_text(text, "session.jsonl", {});
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->stats.malformed, 1u);
  ASSERT_FALSE(t->stats.notes.empty());
  EXPECT_EQ(t->stats.notes[0].rfind("session.jsonl:1: a field of an unexpected type", 0), 0u)
      << t->stats.notes[0];
  EXPECT_EQ(t->stats.duplicates, 0u);
  bool found = false;
  for (const auto& turn : t->turns) found = found || turn.text == "The real prompt.";
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace upskill::trace
