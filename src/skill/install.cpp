// A skill copied where an agent looks for skills, after it validates (see install.hpp).
#include "upskill/skill/install.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/skill/skill_bundle.hpp"
#include "upskill/skill/validator.hpp"

namespace upskill::skill {

namespace fs = std::filesystem;

Result<InstallResult> install_skill(const fs::path& skill_dir, const InstallOptions& options) {
  // Claude Code reads its own front-matter keys (model, hooks, ...); other agents get the plain
  // spec.
  ValidationOptions validation;
  validation.claude_code = options.claude_code;
  const ValidationReport report = validate_skill(skill_dir, validation);
  if (report.not_a_skill)
    return fail(Error::usage(fmt::format("{}: {}", skill_dir.string(), report.errors.front())));
  if (!report.valid() && options.validate) {
    std::string message =
        fmt::format("{} does not pass validation, not installing:", skill_dir.string());
    for (const auto& e : report.errors) message += "\n  - " + e;
    return fail(Error{ExitCode::gate_failed, message});
  }
  UPSKILL_ASSIGN_OR_RETURN(SkillBundle bundle, SkillBundle::load(skill_dir));

  fs::path home = options.home;
  if (home.empty() && options.global) {
    UPSKILL_ASSIGN_OR_RETURN(home, files::home_directory());
  }
  const fs::path project = options.project_dir.empty() ? fs::current_path() : options.project_dir;
  const fs::path folder =
      options.global ? home / options.user_skills_dir : project / options.project_skills_dir;
  InstallResult result;
  result.destination = folder / bundle.name();
  result.warnings = report.warnings;
  for (const auto& e : report.errors)
    result.warnings.push_back("does not pass validation (installed with --no-validate): " + e);

  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(result.destination, ec));
  if (exists && !options.force)
    return fail(Error::usage(
        fmt::format("{} already exists; use --force to replace it", result.destination.string())));
  if (fs::equivalent(bundle.directory, result.destination, ec))
    return fail(Error::usage(
        fmt::format("{} is the skill itself; nothing to install", result.destination.string())));

  // Copy next to the destination first, so the agent never sees a half-copied skill.
  const fs::path staging = folder / fmt::format(".{}.installing-{}", bundle.name(), ::getpid());
  fs::remove_all(staging, ec);
  auto copied = files::copy_tree(bundle.directory, staging,
                                 {.skip = [](const fs::path& rel) { return is_bundle_junk(rel); }});
  if (!copied) {
    fs::remove_all(staging, ec);
    return fail(copied.error());
  }
  result.files = copied->files;
  for (const auto& link : copied->skipped_symlinks)
    result.warnings.push_back(fmt::format("symbolic link {} was not copied", link.string()));

  if (exists) {
    const fs::path old = folder / fmt::format(".{}.replaced-{}", bundle.name(), ::getpid());
    fs::remove_all(old, ec);
    fs::rename(result.destination, old, ec);
    if (ec) {
      fs::remove_all(staging, ec);
      return fail(Error::usage(
          fmt::format("{}: cannot replace: {}", result.destination.string(), ec.message())));
    }
    result.replaced = true;
    fs::rename(staging, result.destination, ec);
    if (ec) {
      std::error_code restore;
      fs::rename(old, result.destination, restore);
      return fail(Error::usage(
          fmt::format("{}: cannot install: {}", result.destination.string(), ec.message())));
    }
    fs::remove_all(old, ec);
  } else {
    fs::rename(staging, result.destination, ec);
    if (ec) {
      std::error_code cleanup;
      fs::remove_all(staging, cleanup);
      return fail(Error::usage(
          fmt::format("{}: cannot install: {}", result.destination.string(), ec.message())));
    }
  }
  return result;
}

}  // namespace upskill::skill
