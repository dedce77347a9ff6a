// skill/install: a validated skill copied where each agent looks for skills.
#include <gtest/gtest.h>

#include "support/temp_dir.hpp"
#include "upskill/agent/skills_folders.hpp"
#include "upskill/skill/install.hpp"

namespace upskill::skill {
namespace {

using testing::read_file;
using testing::TempDir;

class InstallTest : public ::testing::Test {
 protected:
  TempDir tmp;
  // Where `agent` reads skills, as `upskill install --agent` finds it.
  InstallOptions options(const std::string& agent, bool global = false, bool force = false) {
    const agent::SkillsFolder* folder = agent::skills_folder_of(agent);
    EXPECT_NE(folder, nullptr) << agent;
    InstallOptions o;
    o.project_skills_dir = folder->project;
    o.user_skills_dir = folder->user;
    o.claude_code = folder->claude_code;
    o.global = global;
    o.force = force;
    o.project_dir = tmp / "project";
    o.home = tmp / "home";
    return o;
  }
  void SetUp() override {
    tmp.write("src/good/SKILL.md", "---\nname: good\ndescription: Use when testing.\n---\nBody\n");
    tmp.write("src/good/references/r.md", "r");
    tmp.write("src/good/__pycache__/x.pyc", "junk");
  }
};

TEST_F(InstallTest, CopiesToProjectAndGlobalFolders) {
  auto project = install_skill(tmp / "src/good", options("claude"));
  ASSERT_TRUE(project) << project.error().message;
  EXPECT_EQ(project->destination, tmp / "project/.claude/skills/good");
  EXPECT_EQ(project->files, 2u);
  EXPECT_EQ(read_file(project->destination / "references/r.md"), "r");
  EXPECT_FALSE(std::filesystem::exists(project->destination / "__pycache__"));
  auto global = install_skill(tmp / "src/good", options("opencode", true));
  ASSERT_TRUE(global) << global.error().message;
  EXPECT_EQ(global->destination, tmp / "home/.config/opencode/skills/good");
  EXPECT_TRUE(std::filesystem::exists(global->destination / "SKILL.md"));
}

TEST_F(InstallTest, RefusesToOverwriteWithoutForce) {
  ASSERT_TRUE(install_skill(tmp / "src/good", options("agents")));
  auto again = install_skill(tmp / "src/good", options("agents"));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ExitCode::usage);
  EXPECT_NE(again.error().message.find("already exists; use --force"), std::string::npos);
  tmp.write("project/.agents/skills/good/stale.txt", "old");
  auto forced = install_skill(tmp / "src/good", options("agents", false, true));
  ASSERT_TRUE(forced) << forced.error().message;
  EXPECT_TRUE(forced->replaced);
  EXPECT_FALSE(std::filesystem::exists(forced->destination / "stale.txt"));
  // No staging or backup folders left behind.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e :
       std::filesystem::directory_iterator(tmp / "project/.agents/skills"))
    ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST_F(InstallTest, ClaudeCodeKeysAreFineForClaudeOnly) {
  tmp.write("src/cc/SKILL.md", "---\nname: cc\ndescription: Use when.\nmodel: opus\n---\n");
  EXPECT_TRUE(install_skill(tmp / "src/cc", options("claude")));
  auto codex = install_skill(tmp / "src/cc", options("codex"));
  ASSERT_FALSE(codex);
  EXPECT_NE(codex.error().message.find("Unexpected fields in frontmatter: model."),
            std::string::npos);
}

TEST_F(InstallTest, ValidatesFirst) {
  tmp.write("src/Bad_Name/SKILL.md", "---\nname: Bad_Name\ndescription: d\n---\n");
  auto bad = install_skill(tmp / "src/Bad_Name", options("claude"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ExitCode::gate_failed);
  EXPECT_NE(bad.error().message.find("must be lowercase"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(tmp / "project/.claude/skills"));
  auto missing = install_skill(tmp / "src/none", options("claude"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ExitCode::usage);
}

}  // namespace
}  // namespace upskill::skill
