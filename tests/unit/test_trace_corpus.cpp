// The recorded corpus (tests/data/traces/manifest.json): every fixture the real agent CLIs wrote,
// read by `upskill trace`, must show what its scripted session did — the counts, tools, commands
// with their failures, final files, error → fix pairs, prompt, answer, usage and the digest's words
// — as the manifest lists them from the scenario. The comparison itself is mutation-tested: every
// expectation changed must be caught. UPSKILL_TRACE_CORPUS points the test at another folder
// (scripts/record-trace-fixtures.sh checks a fresh recording that way).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "upskill/core/files.hpp"
#include "upskill/trace/digest.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces";

fs::path corpus_dir() {
  const char* dir = std::getenv("UPSKILL_TRACE_CORPUS");
  return dir && *dir ? fs::path(dir) : kFixtures;
}

Json manifest() {
  return Json::parse(files::read_text(kFixtures / "manifest.json").value());
}

// What one fixture showed, in the manifest's terms.
struct Seen {
  const Trace& trace;
  Json summary;
  std::string digest;
};

std::optional<int> exit_of(const Json& j) {
  return j.is_null() ? std::nullopt : std::optional<int>(j.get<int>());
}

void compare_commands(const Json& want, const Trace& t, std::vector<std::string>& out) {
  if (want.size() != t.commands.size()) {
    out.push_back(fmt::format("{} commands, expected {}", t.commands.size(), want.size()));
    return;
  }
  for (std::size_t i = 0; i < want.size(); ++i) {
    const CommandRun& run = t.commands[i];
    if (run.command != want[i]["command"].get<std::string>())
      out.push_back(fmt::format("command {}: `{}`", i, run.command));
    if (run.failed != want[i]["failed"].get<bool>())
      out.push_back(fmt::format("command {}: failed {}", i, run.failed));
    if (want[i].contains("exit_code") && run.exit_code != exit_of(want[i]["exit_code"]))
      out.push_back(fmt::format("command {}: exit code {}", i, run.exit_code.value_or(-1)));
  }
}

void compare_file(const Json& want, const FileTouch& f, std::vector<std::string>& out) {
  const std::string path = f.path;
  if (f.deleted != want.value("deleted", false))
    out.push_back(fmt::format("{}: deleted {}", path, f.deleted));
  if (want.contains("content")) {
    const Json& content = want["content"];  // null: the trace cannot show the contents
    const auto expected =
        content.is_string() ? std::optional<std::string>(content.get<std::string>()) : std::nullopt;
    if (f.content != expected || !(content.is_string() || content.is_null()))
      out.push_back(
          fmt::format("{}: content {}", path, f.content ? "«" + *f.content + "»" : "unknown"));
  }
  for (const auto& line : want.value("shown_contains", Json::array()))
    if (f.shown.find(line.get<std::string>()) == std::string::npos)
      out.push_back(fmt::format("{}: shown lacks «{}»", path, line.get<std::string>()));
  if (want.contains("unknown_contains") &&
      f.unknown_reason.find(want["unknown_contains"].get<std::string>()) == std::string::npos)
    out.push_back(fmt::format("{}: unknown because «{}»", path, f.unknown_reason));
}

void compare_files(const Json& want, const Trace& t, std::vector<std::string>& out) {
  std::set<std::string> expected;
  for (const auto& w : want) expected.insert(w["path"].get<std::string>());
  for (const FileTouch& f : t.files)
    if (!expected.contains(f.path)) out.push_back("file not expected: " + f.path);
  for (const auto& w : want) {
    const auto it = std::find_if(t.files.begin(), t.files.end(),
                                 [&](const FileTouch& f) { return f.path == w["path"]; });
    if (it == t.files.end())
      out.push_back("file missing: " + w["path"].get<std::string>());
    else
      compare_file(w, *it, out);
  }
}

void compare_fixes(const Json& want, const Trace& t, std::vector<std::string>& out) {
  if (want.size() != t.fixes.size()) {
    out.push_back(fmt::format("{} error → fix pairs, expected {}", t.fixes.size(), want.size()));
    return;
  }
  for (std::size_t i = 0; i < want.size(); ++i) {
    const ErrorFix& fix = t.fixes[i];
    if (t.commands[fix.failed].command != want[i]["failed"].get<std::string>())
      out.push_back(fmt::format("fix {}: failed `{}`", i, t.commands[fix.failed].command));
    const std::string fixed_by = fix.fixed_by ? t.commands[*fix.fixed_by].command : "";
    if (fixed_by != want[i]["fixed_by"].get<std::string>())
      out.push_back(fmt::format("fix {}: fixed by `{}`", i, fixed_by));
    if (Json(fix.files_changed) != want[i]["files_changed"])
      out.push_back(fmt::format("fix {}: files changed {}", i, Json(fix.files_changed).dump()));
  }
}

const Turn* first_prompt(const Trace& t) {
  for (const Turn& turn : t.turns)
    if (turn.role == Role::user && !turn.meta && !turn.sidechain) return &turn;
  return nullptr;
}

std::string last_answer(const Trace& t) {
  for (auto turn = t.turns.rbegin(); turn != t.turns.rend(); ++turn)
    if (turn->role == Role::assistant && !turn->text.empty()) return turn->text;
  return "";
}

// Every way the fixture differs from its expectations ("" when it shows them all).
std::vector<std::string> mismatches(const Json& expect, const Seen& seen) {
  std::vector<std::string> out;
  const Trace& t = seen.trace;
  for (const char* key : {"format", "format_version"})
    if (expect.contains(key) && seen.summary[key] != expect[key])
      out.push_back(fmt::format("{} {}", key, seen.summary[key].dump()));
  const Json counts = expect.value("counts", Json::object());
  for (const auto& [key, value] : counts.items())
    if (seen.summary["counts"].value(key, Json()) != value)
      out.push_back(
          fmt::format("counts.{} {}", key, seen.summary["counts"].value(key, Json()).dump()));
  if (expect.contains("tools") && seen.summary["tools"].get<std::map<std::string, Json>>() !=
                                      expect["tools"].get<std::map<std::string, Json>>())
    out.push_back("tools " + seen.summary["tools"].dump());
  if (t.stats.malformed != expect.value("malformed", 0u))
    out.push_back(fmt::format("{} malformed records", t.stats.malformed));
  if (expect.contains("commands")) compare_commands(expect["commands"], t, out);
  if (expect.contains("files")) compare_files(expect["files"], t, out);
  if (expect.contains("fixes")) compare_fixes(expect["fixes"], t, out);
  if (expect.contains("prompt")) {
    const Turn* prompt = first_prompt(t);
    if (!prompt || prompt->text != expect["prompt"].get<std::string>())
      out.push_back("prompt «" + (prompt ? prompt->text : "") + "»");
  }
  if (expect.contains("last_answer") && last_answer(t) != expect["last_answer"].get<std::string>())
    out.push_back("last answer «" + last_answer(t) + "»");
  if (expect.contains("usage") &&
      (t.usage.input != expect["usage"]["input"] || t.usage.output != expect["usage"]["output"]))
    out.push_back(fmt::format("usage {} in, {} out", t.usage.input, t.usage.output));
  for (const auto& words : expect.value("digest_contains", Json::array()))
    if (seen.digest.find(words.get<std::string>()) == std::string::npos)
      out.push_back("digest lacks «" + words.get<std::string>() + "»");
  return out;
}

Result<Trace> read_fixture(const Json& fixture) {
  return parse_trace_file(corpus_dir() / fixture["file"].get<std::string>());
}

TEST(TraceCorpus, EveryRecordingShowsWhatItsScenarioDid) {
  const Json m = manifest();
  std::size_t read = 0;
  for (const Json& fixture : m["fixtures"]) {
    SCOPED_TRACE(fixture["file"].get<std::string>());
    // A fresh recording of some of the programs (ONLY=…) holds only theirs.
    if (corpus_dir() != kFixtures && !fs::exists(corpus_dir() / fixture["file"].get<std::string>()))
      continue;
    ++read;
    auto t = read_fixture(fixture);
    ASSERT_TRUE(t) << t.error().message;
    const Seen seen{*t, summary_json(*t), make_digest(*t).text};
    const std::vector<std::string> wrong = mismatches(fixture["expect"], seen);
    EXPECT_TRUE(wrong.empty()) << fmt::format("{}", fmt::join(wrong, "\n"));
  }
  EXPECT_GT(read, 0u) << "no fixture of the manifest in " << corpus_dir();
}

// The manifest lists every fixture in the folder, each recorded one with its program, version,
// scenario and a name the record script knows.
TEST(TraceCorpus, ManifestListsEveryFixtureAndHowItWasRecorded) {
  const Json m = manifest();
  EXPECT_EQ(m["schema"], "upskill.trace-corpus/1");
  std::set<std::string> listed;
  const std::string script =
      files::read_text(fs::path(UPSKILL_SOURCE_DIR) / "scripts/record-trace-fixtures.sh").value();
  for (const Json& fixture : m["fixtures"]) {
    const std::string file = fixture["file"];
    EXPECT_TRUE(listed.insert(file).second) << file << " listed twice";
    EXPECT_TRUE(fs::is_regular_file(kFixtures / file)) << file;
    ASSERT_TRUE(fixture.contains("expect") && fixture["expect"].contains("format")) << file;
    if (fixture.contains("written_for_tests")) continue;
    for (const char* key : {"program", "package", "version", "record", "scenario", "task"})
      EXPECT_TRUE(fixture.contains(key)) << file << " has no " << key;
    EXPECT_NE(file.find(fixture["version"].get<std::string>()), std::string::npos) << file;
    EXPECT_TRUE(fs::is_regular_file(kFixtures / fixture["scenario"].get<std::string>())) << file;
    EXPECT_NE(script.find("want " + fixture["record"].get<std::string>()), std::string::npos)
        << file;
  }
  for (const auto& entry : fs::directory_iterator(kFixtures)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name != "README.md" && name != "manifest.json") {
      EXPECT_TRUE(listed.contains(name)) << name << " is not in manifest.json";
    }
  }
}

// Each expectation changed — a count, a tool, a command, its failure or exit code, a file's
// contents or deletion, a fix, the prompt, the answer, the usage, the digest's words — is caught.
TEST(TraceCorpus, ComparisonCatchesEveryChangedExpectation) {
  std::size_t mutants = 0;
  const Json m = manifest();
  for (const Json& fixture : m["fixtures"]) {
    if (fixture.contains("written_for_tests")) continue;
    SCOPED_TRACE(fixture["file"].get<std::string>());
    auto t = read_fixture(fixture);
    ASSERT_TRUE(t) << t.error().message;
    const Seen seen{*t, summary_json(*t), make_digest(*t).text};
    const Json expect = fixture["expect"];
    // The expectations as written hold, so that each change below is what is caught.
    ASSERT_TRUE(mismatches(expect, seen).empty());
    // Every leaf of the expectations, changed in turn (an empty list or object is no leaf).
    const Json leaves = expect.flatten();
    for (const auto& [pointer, value] : leaves.items()) {
      const Json::json_pointer at(pointer);
      if (!expect[at].is_primitive()) continue;
      Json changed = expect;
      if (value.is_boolean())
        changed[at] = !value.get<bool>();
      else if (value.is_number())
        changed[at] = value.get<long long>() + 1;
      else if (value.is_string())
        changed[at] = value.get<std::string>() + "x";
      else
        changed[at] = 7;  // null (no exit code, contents unknown) becomes a value
      ++mutants;
      EXPECT_FALSE(mismatches(changed, seen).empty()) << pointer << " changed";
    }
    // A command, a file and a fix dropped.
    for (const char* list : {"commands", "files", "fixes"}) {
      if (!expect.contains(list) || expect[list].empty()) continue;
      Json fewer = expect;
      fewer[list].erase(fewer[list].begin());
      ++mutants;
      EXPECT_FALSE(mismatches(fewer, seen).empty()) << list << " shortened";
    }
  }
  EXPECT_GT(mutants, 200u);
}

}  // namespace
}  // namespace upskill::trace
