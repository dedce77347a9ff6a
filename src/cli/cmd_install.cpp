// `upskill install`: flags → skill::install (validated first) → where the skill went.
#include <fmt/format.h>

#include "cli.hpp"
#include "upskill/skill/install.hpp"

namespace upskill::cli {

namespace {
struct InstallArgs {
  std::string skill_dir;
  std::string agent;
  bool global = false;
  bool force = false;
  bool no_validate = false;
};

int run_install(const Context& ctx, const InstallArgs& args) {
  skill::InstallOptions options;
  options.agent = *skill::agent_from_string(args.agent);
  options.global = args.global;
  options.force = args.force;
  options.validate = !args.no_validate;
  auto result = skill::install_skill(args.skill_dir, options);
  if (!result) return exit_with(ctx, result.error());
  for (const auto& w : result->warnings)
    fmt::print(stderr, "{} {}\n", ctx.err.yellow("warning:"), w);
  fmt::print("{} {} ({} files{})\n", result->replaced ? "Replaced" : "Installed",
             result->destination.string(), result->files,
             result->replaced ? ", previous copy removed" : "");
  return 0;
}
}  // namespace

void add_install_command(CLI::App& app, Runner& selected) {
  auto args = std::make_shared<InstallArgs>();
  auto* cmd =
      app.add_subcommand("install", "Validate a skill and copy it where an agent looks for skills");
  cmd->footer(
      "Destinations (project / --global):\n"
      "  claude    .claude/skills/NAME     ~/.claude/skills/NAME\n"
      "  codex     .agents/skills/NAME     ~/.agents/skills/NAME\n"
      "  cursor    .cursor/skills/NAME     ~/.cursor/skills/NAME\n"
      "  opencode  .opencode/skills/NAME   ~/.config/opencode/skills/NAME\n"
      "  agents    .agents/skills/NAME     ~/.agents/skills/NAME\n"
      "Exit 1 when the skill fails validation (unless --no-validate), 2 when the destination exists (use --force) or on "
      "bad input.");
  cmd->add_option("SKILL_DIR", args->skill_dir, "Skill directory")->required();
  cmd->add_option("--agent", args->agent, "Which agent will use the skill")
      ->required()
      ->check(CLI::IsMember(skill::agent_names()));
  cmd->add_flag("--global", args->global, "Install for your user instead of the current project");
  cmd->add_flag("--force", args->force, "Replace an installed copy");
  cmd->add_flag("--no-validate", args->no_validate,
                "Install even when the skill breaks a validation rule (the errors become warnings)");
  cmd->callback([&selected, args] {
    selected = [args](const Context& ctx) { return run_install(ctx, *args); };
  });
}

}  // namespace upskill::cli
