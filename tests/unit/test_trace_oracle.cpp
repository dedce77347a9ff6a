// The digest's differential oracle (docs/traces.md, "How the readers are tested"). For every
// recorded fixture, the workspace its agent really found and really left — copied by
// scripts/record-trace-fixtures.sh into tests/data/traces/workspaces/<record>/{before,after} — is
// the truth the digest is read against, the way a teacher reads it:
// - every final version the digest shows is a file the agent left, with exactly those contents;
//   a partly shown one holds runs of the file's own lines, in order, between its gap markers;
// - every file the agent created or changed is in the digest, unless the manifest's
//   `oracle.not_shown` names it with the reason its format does not show it;
// - no file the agent removed is given as a final version;
// - every failure the manifest's `oracle.errors` lists (the command or the refused call, and what
//   the real program printed) is one entry of the errors section whose fenced output holds that
//   output line for line, whitespace kept, and which names the command that then succeeded.
// A mutation of the replay (a file's last line, a removed file brought back, a file dropped, an
// error's indentation flattened, a fix forgotten) must make it fail.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/trace/digest.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces";

using Tree = std::map<std::string, std::string>;  // relative path → contents

Tree read_tree(const fs::path& root) {
  Tree tree;
  if (!fs::is_directory(root)) return tree;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file() && !entry.is_symlink())
      tree[entry.path().lexically_relative(root).generic_string()] =
          files::read_text(entry.path()).value();
  return tree;
}

struct Workspace {
  Tree before, after;
};

// One fenced block of the digest: the line before it and its body.
struct Block {
  std::string label;
  std::string body;
};

// The digest's "## " sections, by their headings' first words.
std::map<std::string, std::vector<std::string>> sections(const std::string& digest) {
  std::map<std::string, std::vector<std::string>> out;
  std::string name;
  std::string fence;  // inside a fenced block: its fence (a "## " line there is the block's)
  for (const std::string& line : text::split_lines(digest)) {
    if (fence.empty() && line.starts_with("## ")) {
      name = line.substr(
          3, line.find(' ', 3) == std::string::npos ? std::string::npos : line.find(' ', 3) - 3);
      if (line.starts_with("## Final versions")) name = "Final";
      if (line.starts_with("## Errors")) name = "Errors";
      continue;
    }
    if (fence.empty() && line.starts_with("```")) {
      fence = line.substr(0, line.find_first_not_of('`'));
    } else if (!fence.empty() && line == fence) {
      fence.clear();
    }
    out[name].push_back(line);
  }
  return out;
}

// The "### " entries of a section, each with its head and the fenced blocks under it.
struct Entry {
  std::string head;
  std::vector<std::string> lines;  // everything under the head, fences included
  std::vector<std::string> blocks;
};

std::vector<Entry> entries(const std::vector<std::string>& lines) {
  std::vector<Entry> out;
  std::string fence, body;
  for (const std::string& line : lines) {
    if (fence.empty() && line.starts_with("### ")) {
      out.push_back({line.substr(4), {}, {}});
      continue;
    }
    if (out.empty()) continue;
    out.back().lines.push_back(line);
    if (fence.empty() && line.starts_with("```")) {
      fence = line.substr(0, line.find_first_not_of('`'));
      body.clear();
    } else if (!fence.empty() && line == fence) {
      out.back().blocks.push_back(body);
      fence.clear();
    } else if (!fence.empty()) {
      body += line + "\n";
    }
  }
  return out;
}

// A path as the digest gives it, made relative to the workspace (an agent may name files by their
// absolute path: the workspace's root is whatever prefix leaves a path the workspace holds).
std::string relative(std::string path, const Workspace& ws) {
  if (!path.starts_with('/')) return path;
  for (std::size_t at = 0; (at = path.find('/', at)) != std::string::npos; ++at) {
    const std::string rest = path.substr(at + 1);
    if (ws.after.contains(rest) || ws.before.contains(rest)) return rest;
  }
  return path;
}

bool is_gap_marker(std::string_view line) {
  return line.starts_with("[… ") && line.ends_with("…]");
}

// Whether `shown` (runs of lines between gap markers) is the file's own lines, in order, each run
// on consecutive lines — of its lines that are not blank, when the format does not show those (a
// Claude Code 2.0 preview).
bool shows_lines_of(const std::string& shown, const std::string& file, bool without_blanks) {
  std::vector<std::string> real = text::split_lines(file);
  if (without_blanks)
    std::erase_if(real, [](const std::string& line) { return text::trim(line).empty(); });
  std::size_t from = 0;
  std::vector<std::string> run;
  auto place = [&]() {
    if (run.empty()) return true;
    for (std::size_t at = from; at + run.size() <= real.size(); ++at)
      if (std::equal(run.begin(), run.end(), real.begin() + static_cast<long>(at))) {
        from = at + run.size();
        run.clear();
        return true;
      }
    return false;
  };
  for (const std::string& line : text::split_lines(shown)) {
    if (is_gap_marker(line)) {
      if (!place()) return false;
      continue;
    }
    run.push_back(line);
  }
  return place();
}

// Whether `want`'s lines are a run of consecutive lines of `block`, each exactly — the first may
// follow a label of the agent's own on its line ("Output: ", "<tool_use_error>", "Error: ").
bool holds_lines(const std::string& block, const std::string& want) {
  const std::vector<std::string> have = text::split_lines(block), lines = text::split_lines(want);
  if (lines.empty()) return true;
  for (std::size_t at = 0; at + lines.size() <= have.size(); ++at)
    if (have[at].ends_with(lines[0]) &&
        std::equal(lines.begin() + 1, lines.end(), have.begin() + static_cast<long>(at) + 1))
      return true;
  return false;
}

// Everything the digest of one fixture gets wrong against the workspace and the manifest's oracle.
std::vector<std::string> disagreements(const std::string& digest, const Workspace& ws,
                                       const Json& oracle) {
  std::vector<std::string> out;
  const auto parts = sections(digest);
  const Json not_shown = oracle.value("not_shown", Json::object());
  const Json stale = oracle.value("left_out_of_the_format", Json::object());
  std::set<std::string> shown;
  if (parts.contains("Final")) {
    for (const Entry& e : entries(parts.at("Final"))) {
      const std::string path = relative(e.head.substr(0, e.head.find(" (")), ws);
      shown.insert(path);
      const bool partly = e.head.find("(partly shown") != std::string::npos;
      const auto it = ws.after.find(path);
      if (it == ws.after.end() && stale.contains(path)) continue;
      if (it == ws.after.end()) {
        out.push_back(
            fmt::format("{}: shown as a final version, but the agent did not leave it", path));
        continue;
      }
      if (e.blocks.size() != 1) {
        out.push_back(fmt::format("{}: {} fenced blocks", path, e.blocks.size()));
        continue;
      }
      const std::string& body = e.blocks[0];
      const bool cut = body.find("[… ") != std::string::npos;
      if (!partly && !cut && body != it->second)
        out.push_back(
            fmt::format("{}: final version «{}», the agent left «{}»", path, body, it->second));
      const bool blanks_missing = e.head.find("missing its blank lines") != std::string::npos;
      if ((partly || cut) && !shows_lines_of(body, it->second, blanks_missing))
        out.push_back(fmt::format("{}: shown lines «{}» are not the file's own lines", path, body));
    }
    // "Also touched (contents not recoverable…)": named, with the reason.
    for (const std::string& line : parts.at("Final"))
      if (line.starts_with("- ") && line.find(": ") != std::string::npos)
        shown.insert(relative(line.substr(2, line.find(": ") - 2), ws));
  }
  for (const auto& [path, content] : ws.after) {
    const auto before = ws.before.find(path);
    if (before != ws.before.end() && before->second == content) continue;  // not the agent's work
    if (!shown.contains(path) && !not_shown.contains(path))
      out.push_back(path + ": the agent left it changed, the digest does not show it");
  }
  for (const auto& [path, reason] : not_shown.items())
    if (shown.contains(path))
      out.push_back(path + ": listed as not shown by the format, but the digest shows it");
  // The failures, each with its output's own lines and its fix.
  const std::vector<Entry> failures =
      parts.contains("Errors") ? entries(parts.at("Errors")) : std::vector<Entry>{};
  const Json errors = oracle.value("errors", Json::array());
  if (failures.size() != errors.size())
    out.push_back(fmt::format("{} failures in the digest, the session had {}", failures.size(),
                              errors.size()));
  for (const Json& error : errors) {
    const std::string what = error["what"];
    const auto e = std::find_if(failures.begin(), failures.end(), [&](const Entry& f) {
      return f.head.find(what) != std::string::npos;
    });
    if (e == failures.end()) {
      out.push_back("no failure entry for " + what);
      continue;
    }
    const std::string output = error.value("output", "");
    if (!output.empty() && (e->blocks.empty() || !holds_lines(e->blocks[0], output)))
      out.push_back(fmt::format("{}: output «{}», the program printed «{}»", what,
                                e->blocks.empty() ? "" : e->blocks[0], output));
    const std::string after = text::join(e->lines, "\n");
    for (const auto& words : error.value("then", Json::array()))
      if (after.find(words.get<std::string>()) == std::string::npos)
        out.push_back(
            fmt::format("{}: the entry does not say «{}»", what, words.get<std::string>()));
  }
  return out;
}

// The files a recorded workspace holds, as the record script listed them (a folder git cannot keep,
// being empty, is still recorded).
std::set<std::string> listed(const fs::path& list) {
  std::set<std::string> out;
  for (const std::string& line : text::split_lines(files::read_text(list).value_or("")))
    if (!line.empty()) out.insert(line);
  return out;
}

std::set<std::string> paths(const Tree& tree) {
  std::set<std::string> out;
  for (const auto& [path, content] : tree) out.insert(path);
  return out;
}

struct Case {
  std::string file;
  Trace trace;
  Workspace ws;
  Json oracle;
};

std::vector<Case> recorded_cases() {
  const Json m = Json::parse(files::read_text(kFixtures / "manifest.json").value());
  std::vector<Case> out;
  for (const Json& fixture : m["fixtures"]) {
    if (fixture.contains("written_for_tests")) continue;
    const fs::path root = kFixtures / "workspaces" / fixture["record"].get<std::string>();
    auto t = parse_trace_file(kFixtures / fixture["file"].get<std::string>());
    EXPECT_TRUE(t) << fixture["file"];
    if (!t) continue;
    Case c{fixture["file"],
           std::move(*t),
           {read_tree(root / "before"), read_tree(root / "after")},
           fixture.value("oracle", Json::object())};
    EXPECT_TRUE(fs::is_regular_file(root / "after.list") &&
                fs::is_regular_file(root / "before.list"))
        << fixture["file"] << ": no workspace recorded in " << root;
    EXPECT_EQ(paths(c.ws.before), listed(root / "before.list")) << root;
    EXPECT_EQ(paths(c.ws.after), listed(root / "after.list")) << root;
    EXPECT_TRUE(fixture.contains("oracle")) << fixture["file"] << " has no oracle";
    out.push_back(std::move(c));
  }
  return out;
}

TEST(DigestOracle, EveryRecordingsDigestShowsTheWorkspaceItsAgentLeft) {
  std::size_t checked = 0;
  for (const Case& c : recorded_cases()) {
    SCOPED_TRACE(c.file);
    for (const std::size_t budget : {kDefaultDigestTokens, std::size_t{4000}}) {
      const std::string digest = make_digest(c.trace, {budget}).text;
      const std::vector<std::string> wrong = disagreements(digest, c.ws, c.oracle);
      EXPECT_TRUE(wrong.empty()) << "budget " << budget << ":\n"
                                 << fmt::format("{}", fmt::join(wrong, "\n")) << "\n"
                                 << digest;
    }
    ++checked;
  }
  EXPECT_GE(checked, 16u);
}

// The oracle can fail: each way the replay could go wrong, applied to what a fixture's replay
// found, is caught.
TEST(DigestOracle, CatchesEveryMutationOfTheReplay) {
  std::size_t mutants = 0;
  auto caught = [&](const Case& c, const Trace& t, const std::string& what) {
    ++mutants;
    EXPECT_FALSE(disagreements(make_digest(t).text, c.ws, c.oracle).empty()) << what;
  };
  for (const Case& c : recorded_cases()) {
    SCOPED_TRACE(c.file);
    const Json stale = c.oracle.value("left_out_of_the_format", Json::object());
    for (std::size_t i = 0; i < c.trace.files.size(); ++i) {
      const FileTouch& f = c.trace.files[i];
      if (stale.contains(f.path)) continue;  // the oracle takes the format's word for it
      if (f.content && !f.deleted && !f.content->empty()) {
        Trace t = c.trace;  // its last line changed
        std::string& s = *t.files[i].content;
        s.insert(s.size() - (s.ends_with('\n') ? 1 : 0), " // changed");
        caught(c, t, f.path + "'s last line changed");
        t = c.trace;  // its last line lost
        std::vector<std::string> lines = text::split_lines(*f.content);
        lines.pop_back();
        t.files[i].content = text::join(lines, "\n") + (lines.empty() ? "" : "\n");
        caught(c, t, f.path + "'s last line lost");
        t = c.trace;  // left out
        t.files.erase(t.files.begin() + static_cast<long>(i));
        caught(c, t, f.path + " dropped");
      }
      if (f.deleted) {
        Trace t = c.trace;  // brought back
        t.files[i].deleted = false;
        t.files[i].content = "brought back\n";
        caught(c, t, f.path + " brought back");
      }
    }
    for (std::size_t k = 0; k < c.trace.fixes.size(); ++k) {
      Trace t = c.trace;  // a fix forgotten
      if (!t.fixes[k].fixed_by) continue;
      t.fixes[k].fixed_by.reset();
      caught(c, t, "fix forgotten");
    }
    // An error's output with its lines' leading whitespace flattened.
    for (std::size_t turn = 0; turn < c.trace.turns.size(); ++turn)
      for (std::size_t call = 0; call < c.trace.turns[turn].tool_calls.size(); ++call) {
        const ToolCall& failed = c.trace.turns[turn].tool_calls[call];
        const std::string& result = failed.result;
        if (!failed.is_error || result.find("\n  ") == std::string::npos) continue;
        Trace t = c.trace;
        std::string flat;
        for (const std::string& line : text::split_lines(result)) flat += text::trim(line) + "\n";
        t.turns[turn].tool_calls[call].result = flat;
        if (make_digest(t).text == make_digest(c.trace).text) continue;  // not in the digest
        caught(c, t, "an error's output flattened");
      }
  }
  EXPECT_GT(mutants, 40u);
}

}  // namespace
}  // namespace upskill::trace
