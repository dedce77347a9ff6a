// `upskill ci`: flags → ci::CiRequest → ci::run_ci → print.
#include <fmt/format.h>

#include <cstdlib>

#include "cli.hpp"
#include "upskill/ci/ci.hpp"
#include "upskill/core/files.hpp"
#include "upskill/scale/hub_history.hpp"

namespace upskill::cli {

namespace {

class CiPrinter : public ci::CiObserver {
 public:
  void planned(const ci::CiOutcome& plan) override {
    fmt::print(stderr, "{} changed file(s) in {} skill folder(s); {} scenario(s) to evaluate\n",
               plan.changed_files.size(), plan.changed_skills.size(), plan.results.size());
    for (const auto& note : plan.notes) fmt::print(stderr, "  {}\n", note);
  }
  void evaluating(const ci::Scenario& s, const std::string& side) override {
    fmt::print(stderr, "  {}: evaluating the {} skill\n", s.id, side);
  }
};

// --persist without a file: upskill_ci.py's switch, the history on the Hub (--history-repo).
struct HubPersist {
  std::optional<std::string> file_or_switch;  // --persist [FILE]
  CLI::Option* option = nullptr;
  std::optional<std::string> repo;  // --history-repo
  bool on() const { return option && option->count() > 0 && file_or_switch.value_or("").empty(); }
  std::string repo_name() const {
    if (repo) return *repo;
    const char* env = std::getenv("UPSKILL_HISTORY_REPO");
    return env && *env ? env : "hf-skills/skill-performance-history";
  }
};

int run_ci_command(const Context& ctx, const ci::CiRequest& request, const HubPersist& hub) {
  auto cfg = ctx.load_config();
  if (!cfg) return exit_with(ctx, cfg.error());
  std::unique_ptr<ModelSession> session;
  CiPrinter printer;
  ci::CiRequest req = request;
  if (hub.on())
    req.persist.reset();
  else if (hub.file_or_switch)
    req.persist = *hub.file_or_switch;
  if (const char* step = std::getenv("GITHUB_STEP_SUMMARY"); step && *step) req.step_summary = step;
  auto out = ci::run_ci(req, model_access(ctx, *cfg, session), printer);
  if (!out) return exit_with(ctx, out.error());
  for (const auto& r : out->results) {
    // Each line says its verdict and, for ERROR and FAIL, its first cause on the same line.
    std::string line = fmt::format("{:<6} {} ({})", r.status, r.id, r.skill);
    if (r.current) {  // what was not computed shows as "—"
      auto hard = [](const ci::Side& side) {
        return side.assertions_total ? fmt::format("{:.0f}%", side.hard_score * 100)
                                     : std::string("—");
      };
      line += fmt::format(
          ": hard {}{}, {} tokens/case", hard(*r.current),
          r.base ? fmt::format(" (base {})", hard(*r.base)) : "",
          r.current->answered ? fmt::format("{:.0f}", r.current->avg_tokens) : std::string("—"));
    }
    if (!r.error.empty()) line += (r.current ? " — " : ": ") + r.error;
    if (!r.regressions.empty()) line += " — " + r.regressions.front();
    fmt::print("{}\n", line);
    for (std::size_t i = 1; i < r.regressions.size(); ++i)
      fmt::print("       {}\n", r.regressions[i]);
    if (r.status == "FAIL" && r.current && !r.current->first_failure.empty())
      fmt::print("       first failed check now: {}\n", r.current->first_failure);
  }
  if (out->results.empty()) fmt::print("No scenario's skills changed.\n");
  fmt::print("report: {}\nsummary: {}\n", out->report_json.string(), out->summary_md.string());
  if (out->step_summary_error)
    fmt::print(stderr, "{} {}\n", ctx.err.red("error:"), out->step_summary_error->message);
  if (out->persist_failed)
    fmt::print(stderr, "{} --persist: cannot append to {}\n", ctx.err.red("error:"),
               req.persist->string());
  int exit = static_cast<int>(out->exit);
  if (hub.on() && out->exit == ExitCode::interrupted) {
    fmt::print(stderr, "--persist: interrupted, so nothing goes to the history\n");
  } else if (hub.on()) {  // after the report is written: it is what goes up with the history
    scale::HubHistory history{
        hub.repo_name(), ci::history_rows(*out), out->commit, {}, out->report_json};
    for (const auto& row : history.rows)
      history.scenarios.push_back(row["scenario_id"].get<std::string>());
    if (auto saved = scale::append_hub_history(history); !saved) {
      fmt::print(stderr, "{} --persist: {}\n", ctx.err.red("error:"), saved.error().message);
      if (out->exit == ExitCode::ok) exit = static_cast<int>(ExitCode::infrastructure);
    } else if (!ctx.globals.quiet) {
      fmt::print(stderr, "history: {} row(s) appended to the dataset {}\n", history.rows.size(),
                 history.repo);
    }
  }
  return exit;
}

}  // namespace

void add_ci_command(CLI::App& app, Runner& selected) {
  auto request = std::make_shared<ci::CiRequest>();
  auto* cmd = app.add_subcommand(
      "ci",
      "Gate a skills repository: evaluate the skills changed since a base ref against their "
      "base version (the eval manifest's scenarios)");
  cmd->add_option("--base-ref", request->base_ref,
                  "Compare with the skills at this ref (PR base SHA; all zeros: HEAD~1)")
      ->required();
  cmd->add_option("--head-ref", request->head_ref, "The ref whose changes select scenarios")
      ->capture_default_str();
  cmd->add_option("-C,--repo", request->repo, "The repository")->capture_default_str();
  cmd->add_option("--manifest", request->manifest, "The eval manifest, relative to the repository")
      ->capture_default_str();
  cmd->add_option("--runs", request->runs,
                  "Runs per case on each side (default: num_runs from the config, else 1)")
      ->check(positive_count());
  cmd->add_option("--eval-model,-m", request->eval_model,
                  "Student model (default: eval_model, else skill_generation_model)");
  cmd->add_option("--judge-model", request->judge_models,
                  "Judge model(s) for scenarios with a judge (default: judge_model, else "
                  "skill_generation_model)");
  cmd->add_flag("--all", request->all, "Evaluate every scenario, changed or not");
  cmd->add_option("--scenario", request->scenarios, "Only these scenario ids (repeatable)");
  cmd->add_option("--hard-threshold,--hard-regression-threshold", request->thresholds.hard,
                  "Fail when the hard score falls by more than this")
      ->capture_default_str();
  cmd->add_option("--judge-threshold,--judge-regression-threshold", request->thresholds.judge,
                  "Fail when the judge score falls by more than this (hard score not improved)")
      ->capture_default_str();
  cmd->add_option("--tokens-threshold,--token-regression-threshold", request->thresholds.tokens,
                  "Fail when tokens per case grow by more than this share (hard score not "
                  "improved)")
      ->capture_default_str();
  cmd->add_option("--report-dir", request->report_dir,
                  "Where upskill-ci-report.json and upskill-ci-summary.md go")
      ->capture_default_str();
  cmd->add_option("--output", request->report_json,
                  "The report JSON's path (default: upskill-ci-report.json in --report-dir)");
  cmd->add_option("--artifacts-dir", request->artifacts_dir, "Where the run logs go")
      ->capture_default_str();
  auto hub = std::make_shared<HubPersist>();
  hub->option =
      cmd->add_option("--persist", hub->file_or_switch,
                      "Append one JSON line per scenario to this history file; without FILE "
                      "(upskill_ci.py's switch), append the report to the Hub dataset "
                      "--history-repo")
          ->expected(0, 1);
  cmd->add_option("--history-repo", hub->repo,
                  "The Hub dataset --persist appends to (default: $UPSKILL_HISTORY_REPO, else "
                  "hf-skills/skill-performance-history): data/history.jsonl, data/metadata.json "
                  "and reports/<sha>.json, through the hf client");
  cmd->add_option("-j,--jobs", request->jobs,
                  "Requests in flight (default: max_parallel from the config, else 4)")
      ->check(positive_count());
  cmd->footer(
      R"(Reads .upskill/evals.json ({"scenarios": [{id, skills, tests, judge: {enabled, criteria},
include_baseline}]}), selects the scenarios whose skill folders (the nearest folder with a SKILL.md
above each file of `git diff --name-only BASE...HEAD`) changed, and evaluates each skill as it is and
as it was at BASE, with the skill, on the scenario's current tests. A skill absent at BASE is NEW.
Regression: hard score (assertions passed ÷ assertions, judge left out) below the base's; when the hard
score did not improve, the judge score down by more than --judge-threshold or tokens per case up by
more than --tokens-threshold. The markdown summary is appended to $GITHUB_STEP_SUMMARY when set.
Every ERROR and FAIL line ends with its first cause: the model's error, the judge's, or the regression.
Exit 0 no regression, 1 a regression, 2 an error (bad manifest, git, a scenario that could not be
evaluated: a trial without an answer, or a judge that could not score an answer — never PASS),
3 --persist could not be written, 130 interrupted. docs/ci.md.)");
  cmd->callback([&selected, request, hub] {
    selected = [request, hub](const Context& ctx) { return run_ci_command(ctx, *request, *hub); };
  });
}

}  // namespace upskill::cli
