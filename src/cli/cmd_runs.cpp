// `upskill runs` (and its deprecated alias `plot`) and `upskill runs merge`: flags → report/ and
// eval::merge_shards → printing.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli.hpp"
#include "upskill/core/files.hpp"
#include "upskill/eval/merge.hpp"
#include "upskill/report/eval_report.hpp"
#include "upskill/report/runs_report.hpp"
#include "upskill/scale/executor.hpp"

namespace upskill::cli {

namespace {
struct RunsArgs {
  std::optional<std::string> dir;
  std::vector<std::string> skills;
  std::vector<std::string> models;
  std::string metric = "success";
  std::optional<std::string> csv;
  std::optional<std::string> html;
};

struct MergeArgs {
  std::vector<std::string> shards;
  std::optional<std::string> runs_dir;
  std::optional<std::string> json, junit, summary_md;
  bool no_log_runs = false;
  bool require_gpu = false;
  eval::Gates gates;
};

}  // namespace

namespace {

// `upskill runs merge`: the shards' batches (or a submission folder's) as one, its result files,
// the terminal report; exit as eval does (3 when trials have no answer or a shard is incomplete).
int run_merge(const Context& ctx, const MergeArgs& args) {
  eval::MergeRequest request;
  for (const auto& s : args.shards) {
    auto inputs = scale::merge_inputs(s);
    if (!inputs) return exit_with(ctx, inputs.error());
    request.shards.insert(request.shards.end(), inputs->begin(), inputs->end());
  }
  if (args.runs_dir) {
    request.runs_dir = *args.runs_dir;
  } else {
    auto cfg = ctx.load_config();
    if (!cfg) return exit_with(ctx, cfg.error());
    request.runs_dir = cfg->runs_dir;
  }
  request.log_runs = !args.no_log_runs;
  request.result_files = result_files(args.json, args.junit, args.summary_md);
  request.gates = args.gates;
  request.require_gpu = args.require_gpu;
  auto merged = eval::merge_shards(request);
  if (!merged) return exit_with(ctx, merged.error());
  return print_merged(ctx, *merged, false);
}

int run_runs(const Context& ctx, const RunsArgs& args) {
  std::filesystem::path dir;
  if (args.dir) {
    dir = *args.dir;
  } else {
    auto cfg = ctx.load_config();
    if (!cfg) return exit_with(ctx, cfg.error());
    dir = cfg->runs_dir;
  }
  std::vector<std::string> problems;
  auto runs = report::load_runs(dir, problems);
  if (!runs) return exit_with(ctx, runs.error());
  for (const auto& p : problems) spdlog::warn("{}", p);
  const report::RunsFilter filter{args.skills, args.models};
  const auto results = report::best_results(*runs, filter, dir);
  const auto batches = report::group_batches(*runs, filter);
  if (args.csv) {
    if (auto s = files::write_atomic(*args.csv, report::render_runs_csv(*runs, filter)); !s)
      return exit_with(ctx, s.error());
    fmt::print("wrote {}\n", *args.csv);
  }
  if (args.html) {
    if (auto s = files::write_atomic(*args.html, report::render_runs_html(results, batches)); !s)
      return exit_with(ctx, s.error());
    fmt::print("wrote {}\n", *args.html);
  }
  // Every batch is mentioned: the pairings, then those with no with-skill run to pair yet.
  const std::string unpaired = report::render_unpaired_batches(batches);
  if (!results.empty() || unpaired.empty())
    fmt::print("{}", report::render_runs_terminal(results, args.metric == "tokens", ctx.out.color));
  fmt::print("{}", unpaired);
  return 0;
}
}  // namespace

void add_runs_command(CLI::App& app, Runner& selected) {
  auto args = std::make_shared<RunsArgs>();
  auto* cmd = app.add_subcommand(
      "runs",
      "Summarise the run logs (each batch's figures computed from them as eval computes them): "
      "bars per skill × model, CSV, HTML report");
  cmd->add_option("-d,--dir", args->dir,
                  "Runs directory (default: runs_dir from the config, ./runs)");
  cmd->add_option("-s,--skill", args->skills, "Only these skills");
  cmd->add_option("-m,--model", args->models, "Only these models");
  cmd->add_option("--metric", args->metric, "What the bars show")
      ->check(CLI::IsMember({"success", "tokens"}))
      ->capture_default_str();
  cmd->add_option("--csv", args->csv, "Write every run as CSV (upskill's columns first)");
  cmd->add_option("--html", args->html,
                  "Write one self-contained HTML page: the best pairings (inline SVG charts, "
                  "per-case table), then every batch and every trial, folded, with a search box");
  cmd->footer(
      "Each with-skill run is paired with the latest baseline of its batch numbered before it, and "
      "the best\n"
      "pairing per skill × model is shown, as upskill does.");
  cmd->callback([&selected, args, cmd] {
    // `runs merge` is its own command; the summary runs only without it.
    if (!cmd->get_subcommands().empty()) return;
    selected = [args](const Context& ctx) { return run_runs(ctx, *args); };
  });

  auto merge_args = std::make_shared<MergeArgs>();
  auto* merge = cmd->add_subcommand(
      "merge", "Merge the shard batches of one evaluation (eval --shard K/N) into one batch");
  merge
      ->add_option("BATCH_DIR", merge_args->shards,
                   "Every shard's batch folder, or the submission folder of an eval --executor "
                   "slurm|jobs (a Jobs submission's outputs are fetched first)")
      ->required();
  merge->add_option("--runs-dir", merge_args->runs_dir,
                    "Where the merged batch goes (default: runs_dir from the config)");
  merge->add_option("--json", merge_args->json, "Write the versioned JSON result");
  merge->add_option("--junit", merge_args->junit, "Write JUnit XML");
  merge->add_option("--summary-md", merge_args->summary_md,
                    "Write a markdown summary (default: append to $GITHUB_STEP_SUMMARY)");
  merge->add_flag("--no-log-runs", merge_args->no_log_runs, "Do not write the merged batch");
  merge->add_option("--min-lift", merge_args->gates.min_lift,
                    "Gate: the merged lift interval's lower bound must reach X (exit 1)");
  merge->add_option("--fail-under", merge_args->gates.fail_under,
                    "Gate: the merged with-skill pass rate must reach X (exit 1)");
  merge->add_flag("--require-gpu", merge_args->require_gpu,
                  "Exit 3 when kernel checks could not run their CUDA stages for want of a GPU");
  merge->footer(
      "The shards must come from one evaluation (same skill, models, runs, cases and seed, as\n"
      "each batch's plan.json records) and every shard 1..N must be there once: a missing shard\n"
      "is named, a shard given twice refused (exit 2). The merged summary, intervals, McNemar "
      "test\n"
      "and lift are those of an unsharded run with the same seed. Exit 3 when trials got no "
      "answer\n"
      "or a shard was incomplete.");
  merge->callback([&selected, merge_args] {
    selected = [merge_args](const Context& ctx) { return run_merge(ctx, *merge_args); };
  });

  // upskill's hidden, deprecated alias of `runs` (without --csv), kept for scripts that call it.
  auto plot_args = std::make_shared<RunsArgs>();
  auto* plot = app.add_subcommand("plot", "Deprecated alias of `runs` (upskill's)");
  plot->group("");  // hidden from the command list, as upskill's is
  plot->add_option("-d,--dir", plot_args->dir, "Runs directory");
  plot->add_option("-s,--skill", plot_args->skills, "Only these skills");
  plot->add_option("-m,--model", plot_args->models, "Only these models");
  plot->add_option("--metric", plot_args->metric, "What the bars show")
      ->check(CLI::IsMember({"success", "tokens"}));
  plot->callback([&selected, plot_args] {
    selected = [plot_args](const Context& ctx) {
      fmt::print(stderr, "Note: 'plot' is deprecated. Use 'upskill runs' instead.\n");
      return run_runs(ctx, *plot_args);
    };
  });
}

}  // namespace upskill::cli
