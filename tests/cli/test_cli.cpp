// The binary as a user runs it: output wording, streams and exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>

#include "scripted_server.hpp"
#include "support/temp_dir.hpp"

namespace upskill {
namespace {

using testing::read_file;
using testing::TempDir;

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class Cli : public ::testing::Test {
 protected:
  TempDir tmp;
  // Runs upskill in `cwd` (default: the temp dir) with HOME pointing into the temp dir.
  CliRun run(const std::vector<std::string>& args, const std::string& cwd = "") {
    std::string cmd = "cd " + quote(cwd.empty() ? tmp.path().string() : cwd) +
                      " && env -u UPSKILL_CONFIG -u OPENAI_API_KEY -u ANTHROPIC_API_KEY HOME=" +
                      quote((tmp / "home").string()) + " " + env_ + " " + quote(UPSKILL_BINARY);
    for (const auto& a : args) cmd += " " + quote(a);
    cmd += " >" + quote((tmp / ".out").string()) + " 2>" + quote((tmp / ".err").string());
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(tmp / ".out"),
            read_file(tmp / ".err")};
  }
  std::string env_;  // extra VAR=value words for the command line

  void good_skill(const std::string& name) {
    tmp.write("skills/" + name + "/SKILL.md",
              "---\nname: " + name + "\ndescription: Does " + name + " things. Use when " + name +
                  " is needed.\n---\n# " + name + "\n\nFirst line of the body.\n");
    tmp.write("skills/" + name + "/references/guide.md", "# guide\n");
    tmp.write("skills/" + name + "/skill_meta.json",
              R"({"metadata": {}, "tests": [{"input": "x", "expected": {"contains": "x"}}]})");
  }
};

TEST_F(Cli, VersionAndHelp) {
  auto v = run({"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out.rfind("upskill ", 0), 0u);
  auto h = run({"--help"});
  EXPECT_EQ(h.code, 0);
  for (const char* part :
       {"validate", "list", "install", "Exit codes:", "130", "--config", "--log-file"})
    EXPECT_NE(h.out.find(part), std::string::npos) << part;
}

// mimalloc is the program's allocator, with large OS pages on from before any library allocated
// (src/cli/main.cpp); MIMALLOC_LARGE_OS_PAGES still decides. mimalloc lists its options at start
// when verbose.
TEST_F(Cli, AllocatorUsesLargePagesUnlessTheEnvironmentSaysNo) {
  env_ = "MIMALLOC_VERBOSE=1";
  auto on = run({"--version"});
  EXPECT_EQ(on.code, 0);
  EXPECT_NE(on.err.find("mimalloc: option 'large_os_pages': 1"), std::string::npos) << on.err;
  env_ = "MIMALLOC_VERBOSE=1 MIMALLOC_LARGE_OS_PAGES=0";
  auto off = run({"--version"});
  EXPECT_EQ(off.code, 0);
  EXPECT_NE(off.err.find("mimalloc: option 'large_os_pages': 0"), std::string::npos) << off.err;
}

// libcurl is opened on the first HTTP request, not linked (src/llm/http.cpp): the program does not
// need it to start, and when it cannot be opened a request fails with the reason (exit 3 here).
TEST_F(Cli, LibcurlIsOpenedOnTheFirstRequestOnly) {
  const std::string headers = (tmp / "headers.txt").string();
  ASSERT_EQ(std::system(("objdump -p " + quote(UPSKILL_BINARY) + " > " + quote(headers)).c_str()),
            0);
  const std::string needed = read_file(headers);
  EXPECT_NE(needed.find("NEEDED               libmimalloc.so.2"), std::string::npos) << needed;
  EXPECT_EQ(needed.find("libcurl"), std::string::npos) << needed;
  tmp.write("lib/libcurl.so.4", "not a library");
  env_ = "LD_LIBRARY_PATH=" + quote((tmp / "lib").string()) +
         " GENERIC_BASE_URL=http://127.0.0.1:9/v1";
  auto broken = run({"models", "-m", "generic.probe", "--ping"});
  EXPECT_EQ(broken.code, 3);
  EXPECT_NE((broken.out + broken.err).find("cannot load libcurl.so.4"), std::string::npos)
      << broken.out << broken.err;
  env_ = "GENERIC_BASE_URL=http://127.0.0.1:9/v1";
  auto refused = run({"models", "-m", "generic.probe", "--ping"});
  EXPECT_EQ(refused.code, 3);
  EXPECT_NE(refused.out.find("unreachable"), std::string::npos) << refused.out << refused.err;
}

TEST_F(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(run({}).code, 2);
  EXPECT_EQ(run({"frobnicate"}).code, 2);
  EXPECT_EQ(run({"validate"}).code, 2);
  EXPECT_EQ(run({"install", "x", "--agent", "vim"}).code, 2);
  // A whole-number flag out of range says so in words, with no 300-digit upper bound.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"eval", "s", "--runs", "0"},
        std::vector<std::string>{"benchmark", "s", "-m", "m", "--runs", "-2"},
        std::vector<std::string>{"eval", "s", "--jobs", "1.5"},
        std::vector<std::string>{"generate", "t", "--runs", "x"},
        std::vector<std::string>{"ci", "--jobs", "0"},
        std::vector<std::string>{"eval", "s", "--gpu-shards", "-1"}}) {
    const CliRun r = run(args);
    EXPECT_EQ(r.code, 2) << args[2];
    EXPECT_NE(r.err.find("is not a whole number of at least"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("00000000000"), std::string::npos) << r.err;
  }
}

TEST_F(Cli, ValidateValidSkill) {
  good_skill("alpha");
  auto r = run({"validate", "skills/alpha"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "Valid skill: skills/alpha\n");
}

TEST_F(Cli, ValidateFailurePrintsSkillsRefFormatOnStderr) {
  tmp.write("skills/beta/SKILL.md", "---\nname: Beta\ndescription: d\n---\n");
  auto r = run({"validate", "skills/beta"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(
      r.err.rfind("Validation failed for skills/beta:\n  - Skill name 'Beta' must be lowercase\n"
                  "  - Directory name 'beta' must match skill name 'Beta'\n",
                  0),
      0u)
      << r.err;
  EXPECT_NE(r.err.find("  warning: "), std::string::npos);  // upskill's checks follow as warnings
}

TEST_F(Cli, ValidateNotASkillExitsOneAsTheReferenceDoes) {
  tmp.write("skills/beta/SKILL.md", "---\nname: Beta\ndescription: d\n---\n");
  auto r = run({"validate", "nowhere"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Validation failed for nowhere:\n  - Path does not exist: nowhere"),
            std::string::npos);
  EXPECT_EQ(run({"validate", "skills/beta", "nowhere"}).code, 1);
  tmp.write("empty/readme.txt", "x");
  auto empty = run({"validate", "empty"});
  EXPECT_EQ(empty.code, 1);
  EXPECT_NE(empty.err.find("Missing required file: SKILL.md"), std::string::npos) << empty.err;
  good_skill("alpha");
  EXPECT_EQ(run({"validate", "skills/alpha", "skills/beta"}).code, 1);
}

TEST_F(Cli, ValidateStrictAndClaudeCodeAndJson) {
  good_skill("alpha");
  tmp.write("skills/warn/SKILL.md", "---\nname: warn\ndescription: Helps.\n---\n");
  EXPECT_EQ(run({"validate", "skills/warn"}).code, 0);
  EXPECT_EQ(run({"validate", "--strict", "skills/warn"}).code, 1);
  EXPECT_EQ(run({"validate", "--strict", "skills/alpha"}).code, 0);
  tmp.write("skills/cc/SKILL.md", "---\nname: cc\ndescription: Use when.\nmodel: opus\n---\n");
  EXPECT_EQ(run({"validate", "skills/cc"}).code, 1);
  EXPECT_EQ(run({"validate", "--claude-code", "skills/cc"}).code, 0);
  auto j = run({"validate", "--json", "skills/alpha", "skills/cc"});
  EXPECT_EQ(j.code, 1);
  EXPECT_NE(j.out.find("\"valid\": true"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("Unexpected fields in frontmatter: model."), std::string::npos) << j.out;
}

TEST_F(Cli, ListShowsATree) {
  good_skill("alpha");
  good_skill("beta");
  std::filesystem::create_directories(tmp / "skills/not-a-skill");
  auto r = run({"list"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("./skills\n", 0), 0u) << r.out;
  for (const char* part : {"├── alpha", "└── beta", "Does alpha things", "SKILL.md",
                           "references/guide.md", "skill_meta.json (1 test)"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  EXPECT_EQ(r.out.find("not-a-skill"), std::string::npos);
  EXPECT_EQ(r.out.find("First line of the body"), std::string::npos);
  auto v = run({"list", "-v"});
  EXPECT_NE(v.out.find("preview (~"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("First line of the body"), std::string::npos) << v.out;
  EXPECT_EQ(v.out.find("\033["), std::string::npos);  // no colour when not a terminal
}

TEST_F(Cli, ListDirectoryFromFlagAndConfig) {
  tmp.write("elsewhere/gamma/SKILL.md", "---\nname: gamma\ndescription: Use when gamma.\n---\n");
  EXPECT_NE(run({"list", "-d", "elsewhere"}).out.find("gamma"), std::string::npos);
  tmp.write("upskill.config.yaml", "skills_dir: elsewhere\n");
  EXPECT_NE(run({"list"}).out.find("gamma"), std::string::npos);
  tmp.write("other.yaml", "skills_dir: nowhere\n");
  auto missing = run({"--config", "other.yaml", "list"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("nowhere: no such skills directory"), std::string::npos)
      << missing.err;
  std::filesystem::create_directories(tmp / "empty");
  auto none = run({"list", "-d", "empty"});
  EXPECT_EQ(none.code, 0);
  EXPECT_EQ(none.out, "No skills found in empty\n");
}

TEST_F(Cli, BrokenConfigNamesFileAndLine) {
  tmp.write("upskill.config.yaml", "skills_dir: s\nmax_refine_attempts: lots\n");
  auto r = run({"list"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("upskill.config.yaml:2:1: 'max_refine_attempts' must be a whole number"),
            std::string::npos)
      << r.err;
  tmp.write("upskill.config.yaml", "skills_dir: s\nshiny: 1\n");
  std::filesystem::create_directories(tmp / "s");
  auto warned = run({"list"});
  EXPECT_EQ(warned.code, 0);
  EXPECT_NE(warned.err.find("unknown key 'shiny' is ignored"), std::string::npos) << warned.err;
  // -q hides progress and information, never warnings.
  EXPECT_NE(run({"-q", "list"}).err.find("unknown key"), std::string::npos);
}

TEST_F(Cli, InstallPrintsDestinationAndRefusesOverwrite) {
  good_skill("alpha");
  std::filesystem::create_directories(tmp / "project");
  auto r = run({"install", (tmp / "skills/alpha").string(), "--agent", "claude"},
               (tmp / "project").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Installed " + (tmp / "project/.claude/skills/alpha").string()),
            std::string::npos)
      << r.out;
  auto again = run({"install", (tmp / "skills/alpha").string(), "--agent", "claude"},
                   (tmp / "project").string());
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.err.find("--force"), std::string::npos);
  auto forced = run({"install", (tmp / "skills/alpha").string(), "--agent", "claude", "--force"},
                    (tmp / "project").string());
  EXPECT_EQ(forced.code, 0);
  EXPECT_NE(forced.out.find("Replaced"), std::string::npos);
  auto global = run({"install", "skills/alpha", "--agent", "codex", "--global"});
  EXPECT_EQ(global.code, 0) << global.err;
  EXPECT_TRUE(std::filesystem::exists(tmp / "home/.agents/skills/alpha/SKILL.md"));
  tmp.write("skills/Bad/SKILL.md", "---\nname: Bad\ndescription: d\n---\n");
  auto bad = run({"install", "skills/Bad", "--agent", "cursor"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("does not pass validation"), std::string::npos) << bad.err;
  // An official skill that breaks a rule can still be installed, on purpose.
  auto anyway = run({"install", "skills/Bad", "--agent", "cursor", "--no-validate"});
  EXPECT_EQ(anyway.code, 0) << anyway.err;
  EXPECT_NE(anyway.err.find("installed with --no-validate): Skill name 'Bad' must be lowercase"),
            std::string::npos)
      << anyway.err;
  EXPECT_TRUE(std::filesystem::exists(tmp / ".cursor/skills/Bad/SKILL.md"));
}

// A repository of skills as published: skills in nested and hidden folders, one named unlike its
// folder, one shipping a font folder; validate and list take the whole tree.
TEST_F(Cli, FoldersOfSkillsAreValidatedAndListedSkillBySkill) {
  auto skill = [&](const std::string& folder, const std::string& name) {
    tmp.write("repo/" + folder + "/SKILL.md",
              "---\nname: " + name + "\ndescription: Use for " + name + " work.\n---\nBody.\n");
  };
  skill("skills/.curated/pdf", "pdf");
  skill("skills/.system/slides", "slide-maker");
  skill("skills/docx", "docx");
  for (int i = 0; i < 20; ++i)
    tmp.write("repo/skills/docx/assets/fonts/f" + std::to_string(i) + ".ttf", "x");
  tmp.write("repo/.git/skills/fake/SKILL.md", "---\nname: fake\n---\n");
  auto v = run({"validate", "repo"});
  EXPECT_EQ(v.code, 1);  // slide-maker's folder is named 'slides'
  EXPECT_NE(v.out.find("Valid skill: repo/skills/.curated/pdf"), std::string::npos) << v.out;
  EXPECT_NE(v.err.find("Directory name 'slides' must match skill name 'slide-maker'"),
            std::string::npos);
  EXPECT_NE(v.out.find("3 skills: 2 valid, 1 invalid, 0 with warnings"), std::string::npos)
      << v.out;
  auto l = run({"list", "-d", "repo"});
  EXPECT_EQ(l.code, 0) << l.err;
  for (const char* part :
       {"skills/.curated/pdf", "skills/.system/slides ≠ name 'slide-maker'", "skills/docx",
        "assets/fonts/ (20 files)", "3 skills, 1 named unlike its folder"})
    EXPECT_NE(l.out.find(part), std::string::npos) << part << "\n" << l.out;
  EXPECT_EQ(l.out.find("f7.ttf"), std::string::npos);
  EXPECT_EQ(l.out.find("fake"), std::string::npos);
}

TEST_F(Cli, LogFileReceivesDebugOutput) {
  good_skill("alpha");
  auto r = run({"--log-file", "log.txt", "validate", "skills/alpha"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(read_file(tmp / "log.txt").find("upskill"), std::string::npos);
  EXPECT_EQ(r.err, "");  // debug lines go to the file, not the terminal
  auto verbose = run({"-v", "validate", "skills/alpha"});
  EXPECT_NE(verbose.err.find("debug"), std::string::npos) << verbose.err;
  tmp.write("plain-file", "x");
  auto unwritable =
      run({"--log-file", (tmp / "plain-file/log.txt").string(), "validate", "skills/alpha"});
  EXPECT_EQ(unwritable.code, 2);
  EXPECT_NE(unwritable.err.find("cannot open log file"), std::string::npos) << unwritable.err;
}

TEST_F(Cli, BundledSkillsAreValid) {
  auto r = run({"validate", "--strict",
                std::string(UPSKILL_SOURCE_DIR) + "/skills/kernel-builder-cuda-kernels"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// Every case of the bundled skill passes with its reference answer and fails on an empty one.
TEST_F(Cli, BundledSkillCasesPassTheirReferenceAnswersAndFailEmptyOnes) {
  const std::filesystem::path skill =
      std::filesystem::path(UPSKILL_SOURCE_DIR) / "skills/kernel-builder-cuda-kernels";
  const std::filesystem::path answers =
      std::filesystem::path(UPSKILL_SOURCE_DIR) / "tests/data/answers/kernel-builder-cuda-kernels";
  tmp.write("empty.md", "");
  int text_cases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(answers)) {
    const std::string id = entry.path().stem().string();
    auto good = run({"check", skill.string(), "--case", id, "--answer", entry.path().string()});
    EXPECT_EQ(good.code, 0) << id << "\n" << good.out << good.err;
    auto empty = run({"check", skill.string(), "--case", id, "--answer", "empty.md"});
    EXPECT_EQ(empty.code, 1) << id << " passes an empty answer\n" << empty.out;
    ++text_cases;
  }
  EXPECT_GE(text_cases, 6);
}

TEST_F(Cli, CheckPrintsEachVerdict) {
  tmp.write("cases.json", R"([{"id": "a", "input": "q", "checks": [
      {"type": "contains", "value": "alpha"}, {"type": "regex", "pattern": "beta\\d"},
      {"type": "file_exists", "path": "x.txt"}]},
    {"id": "w", "input": "q", "checks": [{"type": "command", "run": "test -f built.txt"}]}])");
  tmp.write("answer.txt", "alpha and beta");
  auto r = run({"check", "cases.json", "--case", "a", "--answer", "answer.txt"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("case a: FAIL (1 of 2 checks passed, score 0.50)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("✓ contains"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("✗ regex"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no match"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("- file_exists"), std::string::npos) << r.out;
  auto json = run({"check", "cases.json", "--case", "a", "--answer", "answer.txt", "--json"});
  EXPECT_EQ(json.code, 1);
  EXPECT_NE(json.out.find("\"status\": \"not run\""), std::string::npos) << json.out;
  // A workspace answer: the command runs in a sandboxed copy, never in the user's folder.
  tmp.write("ws/built.txt", "ok");
  auto ws = run({"check", "cases.json", "--case", "w", "--answer", "ws"});
  EXPECT_EQ(ws.code, 0) << ws.out << ws.err;
  auto unknown = run({"check", "cases.json", "--case", "zz", "--answer", "answer.txt"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("no case with id 'zz' (cases: a, w)"), std::string::npos)
      << unknown.err;
  EXPECT_EQ(run({"check", "cases.json", "--case", "a", "--answer", "missing.txt"}).code, 2);
  EXPECT_EQ(run({"check", "nowhere.json", "--case", "a", "--answer", "answer.txt"}).code, 2);
}

TEST_F(Cli, KernelChecksPrintEachStage) {
  tmp.write("k.json", R"([
    {"id": "layout", "input": "q", "checks": [{"type": "kernel", "stages": ["extract", "layout"], "project": "rmsnorm"}]},
    {"id": "lint", "input": "q", "checks": [{"type": "kernel", "stages": ["extract", "layout", "lint"]}]}])");
  const std::string good = R"(**`build.toml`**
```toml
[general]
name = "rmsnorm"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.rmsnorm]
backend = "cuda"
depends = ["torch"]
src = ["rmsnorm_cuda/rmsnorm.cu"]
```

```cuda title="rmsnorm_cuda/rmsnorm.cu"
__global__ void rms_norm_kernel() {}
```

```cpp
// torch-ext/torch_binding.cpp
#include "registration.h"
```

```python
# file: torch-ext/rmsnorm/__init__.py
from ._ops import ops
```
)";
  tmp.write("good.md", good);
  auto pass = run({"check", "k.json", "--case", "layout", "--answer", "good.md"});
  EXPECT_EQ(pass.code, 0) << pass.out << pass.err;
  const std::string no_package = good.substr(0, good.find("```python"));
  tmp.write("no-package.md", no_package);
  auto fail = run({"check", "k.json", "--case", "layout", "--answer", "no-package.md"});
  EXPECT_EQ(fail.code, 1);
  EXPECT_NE(fail.out.find("layout: torch-ext/rmsnorm/__init__.py is missing"), std::string::npos)
      << fail.out;
  EXPECT_NE(pass.out.find("layout   passed"), std::string::npos) << pass.out;
  auto linted = run({"check", "k.json", "--case", "lint", "--answer", "good.md"});
  EXPECT_EQ(linted.code, 1);
  EXPECT_NE(linted.out.find("lint [missing-registration]"), std::string::npos) << linted.out;
  EXPECT_NE(linted.out.find("lint     failed"), std::string::npos) << linted.out;
  tmp.write("prose.md", "I would write a kernel.");
  auto prose = run({"check", "k.json", "--case", "layout", "--answer", "prose.md"});
  EXPECT_EQ(prose.code, 1);
  EXPECT_NE(prose.out.find("names no files"), std::string::npos) << prose.out;
}

constexpr const char* kKey = "sk-cli-SECRET-987654321";

TEST_F(Cli, ModelsListsResolvedEndpointsWithoutKeys) {
  tmp.write(
      "upskill.config.yaml",
      "models:\n  glm-local:\n    provider: generic\n    base_url: http://127.0.0.1:8080/v1\n    "
      "model: glm-4.5-air\n"
      "    max_concurrency: 1\n    prices: {input: 0, output: 0}\n  gpt:\n    provider: openai\n"
      "    api_key_env: CLI_TEST_KEY\n");
  env_ = std::string("CLI_TEST_KEY=") + kKey;
  auto r = run({"models"});
  EXPECT_EQ(r.code, 0) << r.err;
  for (const char* part : {"glm-local", "generic", "glm-4.5-air", "http://127.0.0.1:8080/v1",
                           "CLI_TEST_KEY (set)", "https://api.openai.com/v1", "0/0"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  EXPECT_EQ(r.out.find(kKey), std::string::npos);
  auto alias = run({"models", "-m", "generic.qwen3:8b"});
  EXPECT_EQ(alias.code, 0);
  EXPECT_NE(alias.out.find("http://localhost:11434/v1"), std::string::npos) << alias.out;
  auto unknown = run({"models", "-m", "nonsense"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.out.find("unknown model 'nonsense'"), std::string::npos) << unknown.out;
  env_.clear();
  // A model whose key is not set is listed, its key marked unset; only calling it needs the key.
  auto unset = run({"models"});
  EXPECT_EQ(unset.code, 0) << unset.out << unset.err;
  EXPECT_NE(unset.out.find("CLI_TEST_KEY (unset)"), std::string::npos) << unset.out;
  auto kimi = run({"models", "-m", "kimi"});
  EXPECT_EQ(kimi.code, 0) << kimi.out << kimi.err;
  EXPECT_NE(kimi.out.find("HF_TOKEN (unset)"), std::string::npos) << kimi.out;
  auto ping = run({"models", "-m", "gpt", "--ping"});
  EXPECT_EQ(ping.code, 3) << ping.out << ping.err;
  EXPECT_NE(ping.out.find("CLI_TEST_KEY is not set"), std::string::npos) << ping.out;
  std::filesystem::remove(tmp / "upskill.config.yaml");
  EXPECT_NE(run({"models"}).out.find("No models configured"), std::string::npos);
}

TEST_F(Cli, ModelsPingRecordReplayAndNoKeyAnywhere) {
  testing::ScriptedServer server(
      Json::parse(std::string(R"({
    "rules": [{"reply": {"content": "pong", "usage": {"prompt_tokens": 12, "completion_tokens": 1}},
               "faults": [{"type": "status", "status": 429, "retry_after": "0",
                           "body": {"error": {"message": "slow down, key )") +
                  kKey + R"( has no credit left today", "type": "rate_limit_error"}}}]}],
    "models": ["glm-4.5-air"]})"));
  server.start();
  tmp.write("upskill.config.yaml",
            "models:\n  glm-local:\n    provider: generic\n    base_url: " + server.base_url() +
                "\n    model: glm-4.5-air\n    api_key_env: CLI_TEST_KEY\n");
  env_ = std::string("CLI_TEST_KEY=") + kKey;
  auto r = run({"--log-file", "debug.log", "-v", "--record", "cassette.jsonl", "models", "--ping"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("health ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("serves glm-4.5-air"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("12 in / 1 out tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"pong\""), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("rate limited"), std::string::npos) << r.err;  // the retry is logged at -v
  for (const auto& text :
       {r.out, r.err, read_file(tmp / "debug.log"), read_file(tmp / "cassette.jsonl")})
    EXPECT_EQ(text.find(kKey), std::string::npos) << text;
  server.stop();
  // The endpoint is gone; the cassette answers the chat with the same numbers, no network.
  auto replay = run({"--replay", "cassette.jsonl", "models", "--ping"});
  EXPECT_EQ(replay.code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("health not checked (replay)"), std::string::npos) << replay.out;
  EXPECT_NE(replay.out.find("12 in / 1 out tokens"), std::string::npos) << replay.out;
  EXPECT_EQ(run({"models", "--ping", "--wait", "0"}).code, 3);  // without the cassette: unreachable
  auto missing = run({"--replay", "nope.jsonl", "models"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(run({"--record", "a", "--replay", "b", "models"}).code, 2);
}

TEST_F(Cli, PingFailureExitsThree) {
  tmp.write("upskill.config.yaml",
            "models:\n  down:\n    provider: generic\n    base_url: http://127.0.0.1:9/v1\n");
  auto r = run({"models", "--ping"});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("failed"), std::string::npos);
  EXPECT_NE(r.out.find("unreachable"), std::string::npos) << r.out;
}

// Run logs written by upskill (Python) have no batch_summary.json, and another batch's summary may
// not list the model: `upskill runs --html` still writes its page (it once aborted, exit 134).
TEST_F(Cli, RunsHtmlWithoutABatchSummaryOrWithoutTheModelInIt) {
  auto run_result = [](const std::string& batch, int number, const std::string& model) {
    return Json{{"metadata",
                 {{"model", model},
                  {"task", "say hi"},
                  {"batch_id", batch},
                  {"run_number", number},
                  {"timestamp", "2025-06-01T10:00:00"}}},
                {"stats", {{"input_tokens", 100}, {"output_tokens", 10}}},
                {"passed", true},
                {"assertions_passed", 1},
                {"assertions_total", 2},
                {"error_message", nullptr},
                {"session_id", nullptr},
                {"session_history_file", nullptr}}
        .dump(2);
  };
  tmp.write("runs/2025_06_01_10_00/run_1/run_result.json",
            run_result("2025_06_01_10_00", 1, "gpt-4o"));
  tmp.write("runs/2025_06_02_10_00/run_1/run_result.json",
            run_result("2025_06_02_10_00", 1, "haiku"));
  tmp.write("runs/2025_06_02_10_00/batch_summary.json",
            R"({"summary": {"models": [{"name": "sonnet", "lift": {"lift": 0.5}}]}})");
  auto r = run({"runs", "--html", "report.html"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("wrote report.html"), std::string::npos) << r.out;
  const std::string html = read_file(tmp / "report.html");
  EXPECT_NE(html.find("<small>· gpt-4o</small>"), std::string::npos) << html;
  EXPECT_NE(html.find("<small>· haiku</small>"), std::string::npos) << html;
  EXPECT_EQ(html.find("class=\"lift\""), std::string::npos) << html;
  EXPECT_EQ(html.substr(html.size() - 15), "</body></html>\n");
}

}  // namespace
}  // namespace upskill
