// Lone surrogate escapes ("\ud83d" alone: valid JSON, Python's json.loads reads it) appear in real
// Claude Code sessions where a string was cut inside an emoji. Each test takes a recording made by
// the real program (tests/data/traces/manifest.json), cuts one of its strings that way, and
// checks that nothing is lost: the record, the failure it carries, the whole document.
#include <gtest/gtest.h>

#include <random>

#include "upskill/core/files.hpp"
#include "upskill/core/json.hpp"
#include "upskill/trace/digest.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace {
namespace {

const std::filesystem::path kTraces =
    std::filesystem::path(UPSKILL_SOURCE_DIR) / "tests/data/traces";

std::string fixture(const std::string& name) {
  return *files::read_text(kTraces / name);
}

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

bool has_note(const Trace& t, std::string_view what) {
  for (const auto& n : t.stats.notes)
    if (n.find(what) != std::string::npos) return true;
  return false;
}

const std::string kCut = "\\ud83d";  // the escape, as the JSON text has it: an emoji's first half

TEST(LoneSurrogates, AClaudeRecordCutInsideAnEmojiKeepsItsFailure) {
  const std::string text =
      replace_once(fixture("claude-code-2.1.328-session.jsonl"), "No such file or directory\"",
                   "No such file or directory " + kCut + "\"");
  auto t = parse_trace_text(text, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->stats.malformed, 0u);
  EXPECT_EQ(t->stats.repaired_surrogates, 1u);
  EXPECT_TRUE(has_note(*t, "lone surrogate")) << t->stats.notes.size();
  const TraceCounts c = count(*t);
  EXPECT_EQ(c.failed_commands, 1u);  // the failing `ls` is still there, not "✓"
  ASSERT_FALSE(t->commands.empty());
  EXPECT_EQ(t->commands[0].exit_code, 2);
  const TraceDigest d = make_digest(*t);
  EXPECT_NE(d.text.find("No such file or directory \xEF\xBF\xBD"), std::string::npos) << d.text;
}

TEST(LoneSurrogates, ACodexRolloutLineIsKept) {
  const std::string text =
      replace_once(fixture("codex-0.171.0-rollout-patches.jsonl"), "Success. Updated the follo",
                   "Success. " + kCut + "Updated the follo");
  auto clean = parse_trace_text(fixture("codex-0.171.0-rollout-patches.jsonl"), "rollout.jsonl");
  auto t = parse_trace_text(text, "rollout.jsonl");
  ASSERT_TRUE(t && clean);
  EXPECT_EQ(t->stats.malformed, 0u);
  EXPECT_EQ(t->stats.repaired_surrogates, 1u);
  EXPECT_EQ(count(*t).tool_calls, count(*clean).tool_calls);
  EXPECT_EQ(t->stats.records, clean->stats.records);
}

TEST(LoneSurrogates, AGeminiLineAndAWholeDocumentAreRead) {
  const std::string lines = replace_once(fixture("gemini-cli-0.61.0-session.jsonl"),
                                         "Greet the new hire", "Greet the new hire " + kCut);
  auto t = parse_trace_text(lines, "session.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->stats.repaired_surrogates, 1u) << ::testing::PrintToString(t->stats.notes);
  // One lone low surrogate in a one-document session: it was refused whole (exit 2).
  const std::string doc = replace_once(fixture("gemini-session.json"), "capabilities are rejected.",
                                       "capabilities are rejected. \\ude00");
  auto d = parse_trace_text(doc, "session.json");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->stats.repaired_surrogates, 1u);
  EXPECT_GE(count(*d).user_prompts, 1u);
}

TEST(LoneSurrogates, RepairReplacesOnlyWhatNamesNoCharacter) {
  const auto r = [](std::string_view s) { return repair_lone_surrogates(s); };
  EXPECT_FALSE(r(R"({"a": "\ud83d\ude00 pair"})"));  // a pair is one character
  EXPECT_FALSE(r(R"({"a": "\\ud83d is text"})"));    // an escaped backslash, then text
  EXPECT_FALSE(r(R"({"a": "plain \u00e9"})"));
  auto lone_high = r(R"({"a": "cut \ud83d"})");
  ASSERT_TRUE(lone_high);
  EXPECT_EQ(lone_high->text, R"({"a": "cut \ufffd"})");
  auto lone_low = r(R"({"a": "\ude00 x", "b": "\uD83D\u0041"})");
  ASSERT_TRUE(lone_low);
  EXPECT_EQ(lone_low->text, R"({"a": "\ufffd x", "b": "\ufffd\u0041"})");
  EXPECT_EQ(lone_low->replaced, 2u);
  auto two_highs = r(R"(["\ud83d\ud83d\ude00"])");  // the first is lone, the second pairs
  ASSERT_TRUE(two_highs);
  EXPECT_EQ(two_highs->text, R"(["\ufffd\ud83d\ude00"])");
  // Outside strings nothing is touched (a key is a string too).
  auto key = r(R"({"\udfff": 1})");
  ASSERT_TRUE(key);
  EXPECT_EQ(key->text, R"({"\ufffd": 1})");
}

// Random JSON strings of characters, pairs, lone halves, other escapes and backslashes: whatever
// the repair returns parses, keeps every pair and every other escape, and the count is exact.
TEST(LoneSurrogates, RepairedTextAlwaysParsesAndKeepsWhatWasValid) {
  std::mt19937 rng(46);
  const std::vector<std::string> pieces = {
      "a",       " ",       "\\\\",    "\\\"",     "\\n",     "\\u00e9", "\\ud83d\\ude00",
      "\\ud83d", "\\ude00", "\\uDBFF", "\xc3\xa9", "\\u0041", "\\/"};
  for (int trial = 0; trial < 3000; ++trial) {
    std::string body;
    std::size_t lone = 0;
    bool last_high = false;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      const std::string& p = pieces[rng() % pieces.size()];
      const bool high = p == "\\ud83d" || p == "\\uDBFF";
      const bool low = p == "\\ude00";
      // A lone high followed by a lone low is a pair after all: count as the parser would.
      if (low && last_high) {
        --lone;
      } else if (high || low) {
        ++lone;
      }
      last_high = high;
      body += p;
    }
    const std::string text = "{\"k\": \"" + body + "\"}";
    const auto repaired = repair_lone_surrogates(text);
    const std::string& final_text = repaired ? repaired->text : text;
    const Json j = Json::parse(final_text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << text << " -> " << final_text;
    EXPECT_EQ(repaired ? repaired->replaced : 0u, lone) << text;
    std::size_t replaced = 0;
    EXPECT_EQ(parse_json_lenient(text, &replaced), j) << text;
  }
}

}  // namespace
}  // namespace upskill::trace
