// Kiro CLI as a student (docs/agents.md): `kiro-cli chat --no-interactive`, plain text, its skills
// in .kiro/skills. upskill reads only its answer: no tokens, no tool calls, no session record, and
// it cannot point it at a model (`cli_providers.kiro` sets its endpoint with env: and args:).
#include "../adapter.hpp"
#include "../agent_output.hpp"

namespace upskill::agent::agents {

namespace {

CliAgent settings() {
  return {
      .name = "kiro",
      .command = "kiro-cli",
      .argv = {"chat", "--no-interactive", "--trust-all-tools", "{prompt}"},
      .skills_dir = ".kiro/skills",
      .state_paths = {".kiro", ".local/share/kiro-cli"},
      .output = "text",
      .login_hint = "kiro-cli login",
  };
}

}  // namespace

extern constinit const Adapter kiro{
    .name = "kiro",
    .output = "text",
    .settings = settings,
    .read_output = output::read_text,
    .user_skills_dir = ".kiro/skills",
};

}  // namespace upskill::agent::agents
