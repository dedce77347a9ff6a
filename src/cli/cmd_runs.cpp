#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli.hpp"
#include "upskill/core/files.hpp"
#include "upskill/report/runs_report.hpp"

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
  if (args.csv) {
    if (auto s = files::write_atomic(*args.csv, report::render_runs_csv(*runs, filter)); !s)
      return exit_with(ctx, s.error());
    fmt::print("wrote {}\n", *args.csv);
  }
  if (args.html) {
    if (auto s = files::write_atomic(*args.html, report::render_runs_html(results)); !s)
      return exit_with(ctx, s.error());
    fmt::print("wrote {}\n", *args.html);
  }
  fmt::print("{}", report::render_runs_terminal(results, args.metric == "tokens", ctx.out.color));
  return 0;
}
}  // namespace

void add_runs_command(CLI::App& app, Runner& selected) {
  auto args = std::make_shared<RunsArgs>();
  auto* cmd = app.add_subcommand(
      "runs", "Summarise the run logs: bars per skill × model, CSV, HTML report");
  cmd->add_option("-d,--dir", args->dir,
                  "Runs directory (default: runs_dir from the config, ./runs)");
  cmd->add_option("-s,--skill", args->skills, "Only these skills");
  cmd->add_option("-m,--model", args->models, "Only these models");
  cmd->add_option("--metric", args->metric, "What the bars show")
      ->check(CLI::IsMember({"success", "tokens"}))
      ->capture_default_str();
  cmd->add_option("--csv", args->csv, "Write every run as CSV (upskill's columns first)");
  cmd->add_option("--html", args->html,
                  "Write one self-contained HTML page (inline SVG charts, per-case table)");
  cmd->footer(
      "Each with-skill run is paired with the latest baseline of its batch numbered before it, and "
      "the best\n"
      "pairing per skill × model is shown, as upskill does.");
  cmd->callback([&selected, args] {
    selected = [args](const Context& ctx) { return run_runs(ctx, *args); };
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
