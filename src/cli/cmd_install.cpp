// `upskill install`: flags → skill::install (validated first) → where the skill went.
#include <fmt/format.h>

#include "cli.hpp"
#include "upskill/agent/skills_folders.hpp"
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
  const agent::SkillsFolder* folder = agent::skills_folder_of(args.agent);
  skill::InstallOptions options;
  options.project_skills_dir = folder->project;
  options.user_skills_dir = folder->user;
  options.claude_code = folder->claude_code;
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
  std::string footer = "Destinations (project / --global):\n";
  for (const agent::SkillsFolder& f : agent::skills_folders())
    footer += fmt::format("  {:<12}{:<24}~/{}/NAME\n", f.agent, f.project + "/NAME", f.user);
  cmd->footer(footer +
              "Exit 1 when the skill fails validation (unless --no-validate), 2 when the "
              "destination exists (use --force) or on bad input.");
  cmd->add_option("SKILL_DIR", args->skill_dir, "Skill directory")->required();
  cmd->add_option("--agent", args->agent, "Which agent will use the skill")
      ->required()
      ->check(CLI::IsMember(agent::skills_folder_agents()));
  cmd->add_flag("--global", args->global, "Install for your user instead of the current project");
  cmd->add_flag("--force", args->force, "Replace an installed copy");
  cmd->add_flag(
      "--no-validate", args->no_validate,
      "Install even when the skill breaks a validation rule (the errors become warnings)");
  cmd->callback([&selected, args] {
    selected = [args](const Context& ctx) { return run_install(ctx, *args); };
  });
}

}  // namespace upskill::cli
