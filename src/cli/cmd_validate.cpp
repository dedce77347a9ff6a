// `upskill validate`: flags → skill::validate_skill → the verdicts, as skills-ref words them.
#include <fmt/format.h>

#include "cli.hpp"
#include "upskill/core/json.hpp"
#include "upskill/skill/skill_bundle.hpp"
#include "upskill/skill/validator.hpp"

namespace upskill::cli {

namespace {
struct ValidateArgs {
  std::vector<std::string> paths;
  bool claude_code = false;
  bool strict = false;
  bool json = false;
  bool upskill = false;
};

int run_validate(const Context& ctx, const ValidateArgs& args) {
  skill::ValidationOptions options;
  options.claude_code = args.claude_code;
  options.expect_tests = args.upskill;
  // A folder of skills (no SKILL.md of its own) stands for every skill below it.
  std::vector<std::filesystem::path> targets;
  bool several = false;
  for (const auto& path : args.paths) {
    std::error_code ec;
    std::vector<std::filesystem::path> found;
    if (std::filesystem::is_directory(path, ec) && !skill::find_skill_md(path))
      found = skill::find_skills(path);
    several = several || found.size() > 1;
    if (found.empty()) targets.emplace_back(path);
    targets.insert(targets.end(), found.begin(), found.end());
  }
  several = several || targets.size() > 1;
  int valid = 0, invalid = 0, warned = 0;
  bool any_failed = false;
  Json reports = Json::array();
  for (const auto& path : targets) {
    const auto report = skill::validate_skill(path, options);
    const bool failed = !report.valid() || (args.strict && !report.warnings.empty());
    (report.valid() ? valid : invalid) += 1;
    warned += !report.warnings.empty();
    any_failed = any_failed || failed;
    if (args.json) {
      reports.push_back({{"path", report.skill_dir.string()},
                         {"valid", !failed},
                         {"not_a_skill", report.not_a_skill},
                         {"errors", report.errors},
                         {"warnings", report.warnings}});
      continue;
    }
    // Same wording and streams as skills-ref: success on stdout, failures on stderr.
    FILE* stream = report.valid() ? stdout : stderr;
    const Style& style = report.valid() ? ctx.out : ctx.err;
    if (report.valid()) {
      fmt::print(stream, "Valid skill: {}\n", report.skill_dir.string());
    } else {
      fmt::print(stream, "Validation failed for {}:\n", report.skill_dir.string());
      for (const auto& e : report.errors) fmt::print(stream, "  - {}\n", e);
    }
    for (const auto& w : report.warnings)
      fmt::print(stream, "  {} {}\n", style.yellow("warning:"), w);
  }
  if (args.json)
    fmt::print("{}\n", reports.dump(2));
  else if (several)
    fmt::print("{} skill{}: {} valid, {} invalid, {} with warnings\n", valid + invalid,
               valid + invalid == 1 ? "" : "s", valid, invalid, warned);
  // As skills-ref: 1 for any skill that fails, a folder without SKILL.md included.
  return any_failed ? static_cast<int>(ExitCode::gate_failed) : 0;
}
}  // namespace

void add_validate_command(CLI::App& app, Runner& selected) {
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand(
      "validate", "Check skills against the Agent Skills spec plus upskill's checks");
  cmd->footer(
      "Errors follow the reference validator skills-ref, word for word; upskill's own checks "
      "(size, links,\n"
      "descriptions, stray archives, skill_meta.json tests) are warnings. A folder without a "
      "SKILL.md of its own\n"
      "stands for every skill below it (hidden folders such as .curated/ included), with a "
      "summary line.\n"
      "Exit 0 when every skill is valid, 1 when one is not (a folder with no skill at all "
      "included) or has\n"
      "warnings with --strict.");
  cmd->add_option("SKILL_DIR", args->paths, "Skill directories (or their SKILL.md)")->required();
  cmd->add_flag(
      "--claude-code", args->claude_code,
      "Also accept Claude Code's front-matter keys (argument-hint, disable-model-invocation, "
      "user-invocable, model, effort, context, agent, hooks)");
  cmd->add_flag("--strict", args->strict, "Treat warnings as failures");
  cmd->add_flag("--upskill", args->upskill,
                "Also warn when a skill has no skill_meta.json (tests for upskill eval)");
  cmd->add_flag("--json", args->json, "Print the reports as JSON on stdout");
  cmd->callback([&selected, args] {
    selected = [args](const Context& ctx) { return run_validate(ctx, *args); };
  });
}

}  // namespace upskill::cli
