// `upskill check`: flags → checks::check_saved_answer → each check's verdict printed.
#include <fmt/format.h>

#include <iostream>
#include <iterator>

#include "cli.hpp"
#include "upskill/checks/saved_answer.hpp"
#include "upskill/checks/stage_report.hpp"
#include "upskill/core/text.hpp"

namespace upskill::cli {

namespace {
struct CheckArgs {
  std::string target;
  std::string case_id;
  std::string answer;
  bool json = false;
  bool keep_build = false;
  bool require_gpu = false;
  std::optional<std::uint64_t> seed;
};

// Under a kernel check: one line per pipeline stage.
void print_stages(const Style& s, const checks::CheckResult& c) {
  const auto details = checks::kernel_check_details_from_json(c.details);
  if (!details) return;
  for (const auto& st : details->stages) {
    const std::string status(checks::to_string(st.status));
    const std::string shown = st.status == checks::Status::passed    ? s.green(status)
                              : st.status == checks::Status::not_run ? s.dim(status)
                                                                     : s.red(status);
    std::string extra;
    if (st.seconds) extra += fmt::format(" {:.1f} s", *st.seconds);
    if (st.details.value("cached", false)) extra += " (cached)";
    if (st.details.contains("speedup"))
      extra += fmt::format(", {:.2f}x vs PyTorch", st.details["speedup"].get<double>());
    if (!st.reason.empty()) extra += " — " + st.reason;
    fmt::print("      {:<8} {}{}\n", cases::to_string(st.stage), shown, s.dim(extra));
  }
  if (details->work_dir) fmt::print("      build folder kept: {}\n", *details->work_dir);
}

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

// 0 passed; 3 not run (the case could not be checked as asked: neither passed nor failed);
// 1 failed, or a check could not be evaluated.
int verdict_code(const checks::CaseResult& r) {
  if (r.status == checks::Status::passed) return 0;
  if (r.status == checks::Status::not_run) return static_cast<int>(ExitCode::infrastructure);
  return static_cast<int>(ExitCode::gate_failed);
}

int run_check(const Context& ctx, const CheckArgs& args) {
  checks::SavedAnswerRequest request;
  request.target = args.target;
  request.case_id = args.case_id;
  request.answer = args.answer;
  if (args.answer == "-")  // the answer on stdin
    request.answer_text.emplace(std::istreambuf_iterator<char>(std::cin),
                                std::istreambuf_iterator<char>());
  auto cfg = ctx.load_config();
  if (!cfg) return exit_with(ctx, cfg.error());
  request.kernel.python = cfg->python;
  request.kernel.keep_work = args.keep_build;
  request.kernel.seed = args.seed;
  auto checked = checks::check_saved_answer(request);
  if (!checked) return exit_with(ctx, checked.error());
  const auto& r = checked->result;
  if (args.json) {
    fmt::print("{}\n", checks::to_json(r).dump(2));
    if (args.require_gpu && checks::checks_needing_gpu(r) > 0)
      return static_cast<int>(ExitCode::infrastructure);
    return verdict_code(r);
  }
  const Style& s = ctx.out;
  const bool not_run = r.status == checks::Status::not_run;
  fmt::print("case {}: {} ({} of {} checks passed, score {:.2f}){}\n", s.bold(r.case_id),
             r.passed  ? s.green("PASS")
             : not_run ? s.yellow("NOT RUN")
                       : s.red("FAIL"),
             r.passed_checks, r.ran, r.score,
             r.not_run ? fmt::format(", {} not run", r.not_run) : std::string());
  for (const auto& c : r.checks) {
    std::string line = fmt::format("  {} {:<13} {}", mark(s, c.status), cases::to_string(c.kind),
                                   c.label.empty() || c.label == "expected.contains"
                                       ? c.expected
                                       : c.label + ": " + c.expected);
    if (c.status != checks::Status::passed && !c.reason.empty()) line += s.dim(" — " + c.reason);
    if (c.status == checks::Status::failed && !c.found.empty())
      line += s.dim(fmt::format(" (found: {})", c.found));
    fmt::print("{}\n", line);
    if (c.kind == cases::CheckKind::kernel) print_stages(s, c);
  }
  if (not_run)
    fmt::print(
        "  not run: the checks that ran passed, but {} could not run here, so the case is neither "
        "passed nor failed (exit 3)\n",
        r.not_run == 1 ? std::string("one") : std::to_string(r.not_run));
  else if (r.ran == 0)
    fmt::print("  no check ran, so the case cannot pass\n");
  if (const int code =
          report_gpu_not_run(ctx, checks::checks_needing_gpu(r), args.require_gpu, "  "))
    return code;
  return verdict_code(r);
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
  cmd->add_flag("--require-gpu", args->require_gpu,
                "Exit 3 when a kernel check cannot run its CUDA stages for want of a GPU, even if "
                "another check failed");
  cmd->add_flag("--keep-build", args->keep_build,
                "Keep each kernel check's build folder and print where it is");
  cmd->add_option("--seed", args->seed,
                  "Input seed for kernel correct/bench stages (default: a fresh one per check)");
  cmd->footer(
      "Each check prints its verdict (✓ passed, ✗ failed, ! could not be evaluated, - not run) "
      "with what it\n"
      "expected, why it failed and what it found. Commands run in a sandboxed copy of the "
      "workspace.\n"
      "Kernel checks also print each pipeline stage (docs/kernel-checks.md); objects, precompiled\n"
      "torch headers and modules are cached in $UPSKILL_CACHE_DIR (default ~/.cache/upskill);\n"
      "UPSKILL_PCH=0 compiles without precompiled headers and starts no background build.\n"
      "A check that could not run here (no workspace, no sandbox, no CUDA device) never counts as\n"
      "passed: a case whose checks passed as far as they could run is NOT RUN.\n"
      "Exit 0 when the case passes; 1 when it fails (a failed check decides, even beside checks "
      "that\n"
      "did not run) or a check could not be evaluated; 2 for a bad file or unknown case id; 3 "
      "when\n"
      "the case is not run, and with --require-gpu whenever a kernel check's CUDA stages could "
      "not\n"
      "run.");
  cmd->callback([&selected, args] {
    selected = [args](const Context& ctx) { return run_check(ctx, *args); };
  });
}

}  // namespace upskill::cli
