#include <fmt/format.h>

#include <filesystem>

#include "cli.hpp"
#include "upskill/core/text.hpp"
#include "upskill/skill/skill_bundle.hpp"

namespace upskill::cli {

namespace fs = std::filesystem;

namespace {
struct ListArgs {
  std::optional<std::string> dir;
  bool verbose = false;
};

// Prints one level of a tree: "├── " / "└── " and the matching continuation prefix.
struct TreePrinter {
  const Style& style;
  void line(const std::string& prefix, bool last, const std::string& text) const {
    fmt::print("{}{}{}\n", prefix, style.dim(last ? "└── " : "├── "), text);
  }
  static std::string child_prefix(const std::string& prefix, bool last) {
    return prefix + (last ? "    " : "│   ");
  }
};

void print_skill(const Context& ctx, const skill::SkillBundle& bundle, bool last, bool verbose) {
  const TreePrinter tree{ctx.out};
  tree.line("", last, ctx.out.bold(ctx.out.cyan(bundle.name())));
  const std::string p = TreePrinter::child_prefix("", last);
  tree.line(p, false, ctx.out.dim(text::excerpt(bundle.description(), 160)));
  std::vector<std::string> entries{bundle.skill_md_name};
  for (const auto& [path, _] : bundle.files) entries.push_back(path);
  if (bundle.meta)
    entries.push_back(fmt::format("skill_meta.json ({} test{})", bundle.tests().size(),
                                  bundle.tests().size() == 1 ? "" : "s"));
  tree.line(p, !verbose, "files");
  const std::string fp = TreePrinter::child_prefix(p, !verbose);
  for (std::size_t i = 0; i < entries.size(); ++i)
    tree.line(fp, i + 1 == entries.size(), entries[i]);
  if (verbose) {
    tree.line(p, true, fmt::format("preview (~{} tokens)", text::estimate_tokens(bundle.body)));
    const std::string vp = TreePrinter::child_prefix(p, true);
    std::vector<std::string> lines;
    for (const auto& l : text::split_lines(bundle.body)) {
      if (text::trim(l).empty()) continue;
      lines.push_back(text::excerpt(l, 100));
      if (lines.size() == 5) break;
    }
    for (std::size_t i = 0; i < lines.size(); ++i)
      tree.line(vp, i + 1 == lines.size(), ctx.out.dim(lines[i]));
  }
}

int run_list(const Context& ctx, const ListArgs& args) {
  fs::path dir;
  if (args.dir) {
    dir = *args.dir;
  } else {
    auto cfg = ctx.load_config();
    if (!cfg) return exit_with(ctx, cfg.error());
    dir = cfg->skills_dir;
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return exit_with(ctx, Error::usage(fmt::format("{}: no such skills directory", dir.string())));
  std::vector<fs::path> candidates;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory() && skill::find_skill_md(entry.path()))
      candidates.push_back(entry.path());
  std::sort(candidates.begin(), candidates.end());
  if (candidates.empty()) {
    fmt::print("No skills found in {}\n", dir.string());
    return 0;
  }
  fmt::print("{}\n", ctx.out.bold(dir.string()));
  int problems = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const bool last = i + 1 == candidates.size();
    auto bundle = skill::SkillBundle::load(candidates[i]);
    if (!bundle) {
      ++problems;
      TreePrinter{ctx.out}.line("", last,
                                fmt::format("{} {}", ctx.out.red(candidates[i].filename().string()),
                                            ctx.out.red("cannot load: " + bundle.error().message)));
      continue;
    }
    print_skill(ctx, *bundle, last, args.verbose);
  }
  return problems ? static_cast<int>(ExitCode::usage) : 0;
}
}  // namespace

void add_list_command(CLI::App& app, Runner& selected) {
  auto args = std::make_shared<ListArgs>();
  auto* cmd =
      app.add_subcommand("list", "Show the skills in a directory: name, description, files");
  cmd->add_option("-d,--dir", args->dir,
                  "Skills directory (default: skills_dir from the config, ./skills)");
  cmd->add_flag("-v,--verbose", args->verbose,
                "Also show a preview of each body and its token estimate");
  cmd->callback([&selected, args] {
    selected = [args](const Context& ctx) { return run_list(ctx, *args); };
  });
}

}  // namespace upskill::cli
