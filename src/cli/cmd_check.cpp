#include <fmt/format.h>

#include "cli.hpp"
#include "upskill/core/text.hpp"
#include "upskill/eval/check_answer.hpp"

namespace upskill::cli {

namespace {
struct CheckArgs {
  std::string target;
  std::string case_id;
  std::string answer;
  bool json = false;
};

std::string mark(const Style& s, checks::Status status) {
  switch (status) {
    case checks::Status::passed:
      return s.green("✓");
    case checks::Status::failed:
      return s.red("✗");
    case checks::Status::error:
      return s.red("!");
    case checks::Status::not_run:
      return s.dim("-");
  }
  return "?";
}

int run_check(const Context& ctx, const CheckArgs& args) {
  auto checked = eval::check_saved_answer({args.target, args.case_id, args.answer});
  if (!checked) return exit_with(ctx, checked.error());
  const auto& r = checked->result;
  if (args.json) {
    fmt::print("{}\n", checks::to_json(r).dump(2));
    return r.passed ? 0 : static_cast<int>(ExitCode::gate_failed);
  }
  const Style& s = ctx.out;
  fmt::print("case {}: {} ({} of {} checks passed, score {:.2f})\n", s.bold(r.case_id),
             r.passed ? s.green("PASS") : s.red("FAIL"), r.passed_checks, r.ran, r.score);
  for (const auto& c : r.checks) {
    std::string line = fmt::format("  {} {:<13} {}", mark(s, c.status), cases::to_string(c.kind),
                                   c.label.empty() || c.label == "expected.contains"
                                       ? c.expected
                                       : c.label + ": " + c.expected);
    if (c.status != checks::Status::passed && !c.reason.empty()) line += s.dim(" — " + c.reason);
    if (c.status == checks::Status::failed && !c.found.empty())
      line += s.dim(fmt::format(" (found: {})", c.found));
    fmt::print("{}\n", line);
  }
  if (r.ran == 0) fmt::print("  no check ran, so the case cannot pass\n");
  return r.passed ? 0 : static_cast<int>(ExitCode::gate_failed);
}
}  // namespace

void add_check_command(CLI::App& app, Runner& selected) {
  auto args = std::make_shared<CheckArgs>();
  auto* cmd =
      app.add_subcommand("check", "Score a saved answer against one test case, with no model");
  cmd->add_option("TARGET", args->target,
                  "A skill directory (its skill_meta.json) or a test-case file")
      ->required();
  cmd->add_option("--case", args->case_id, "The case id")->required();
  cmd->add_option(
         "--answer", args->answer,
         "The answer: a text file, - for standard input, or a directory (an agent's workspace)")
      ->required();
  cmd->add_flag("--json", args->json, "Print the verdicts as JSON");
  cmd->footer(
      "Each check prints its verdict (✓ passed, ✗ failed, ! could not be evaluated, - not run) "
      "with what it\n"
      "expected, why it failed and what it found. Commands run in a sandboxed copy of the "
      "workspace.\n"
      "Exit 0 when the case passes, 1 when it fails, 2 for a bad file or unknown case id.");
  cmd->callback([&selected, args] {
    selected = [args](const Context& ctx) { return run_check(ctx, *args); };
  });
}

}  // namespace upskill::cli
