// `upskill list`: the skills in a folder as a tree (name, description, files, tests).
#include <fmt/format.h>

#include <filesystem>
#include <map>

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

// The skill's files, a folder that holds many collapsed to one line ("assets/fonts/ (80 files)").
std::vector<std::string> file_entries(const skill::SkillBundle& bundle) {
  constexpr std::size_t kCollapseAbove = 8;
  std::map<std::string, std::vector<std::string>> by_folder;
  for (const auto& [path, _] : bundle.files)
    by_folder[fs::path(path).parent_path().generic_string()].push_back(path);
  std::vector<std::string> out{bundle.skill_md_name};
  for (const auto& [folder, paths] : by_folder) {
    if (!folder.empty() && paths.size() > kCollapseAbove) {
      out.push_back(fmt::format("{}/ ({} files)", folder, paths.size()));
      continue;
    }
    out.insert(out.end(), paths.begin(), paths.end());
  }
  if (bundle.meta)
    out.push_back(fmt::format("skill_meta.json ({} test{})", bundle.tests().size(),
                              bundle.tests().size() == 1 ? "" : "s"));
  return out;
}

// One skill: its folder (relative to the listed directory), the front-matter name when it
// differs, the description, its files.
void print_skill(const Context& ctx, const skill::SkillBundle& bundle, const std::string& folder,
                 bool last, bool verbose) {
  const TreePrinter tree{ctx.out};
  std::string head = ctx.out.bold(ctx.out.cyan(folder));
  if (fs::path(folder).filename().string() != bundle.name())
    head += " " + ctx.out.yellow(fmt::format("≠ name '{}'", bundle.name()));
  tree.line("", last, head);
  const std::string p = TreePrinter::child_prefix("", last);
  tree.line(p, false, ctx.out.dim(text::excerpt(bundle.description(), 160)));
  const std::vector<std::string> entries = file_entries(bundle);
  tree.line(p, !verbose, fmt::format("files ({})", bundle.files.size() + 1));
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
  const std::vector<fs::path> found = skill::find_skills(dir);
  if (found.empty()) {
    fmt::print("No skills found in {}\n", dir.string());
    return 0;
  }
  fmt::print("{}\n", ctx.out.bold(dir.string()));
  int problems = 0, with_tests = 0, mismatched = 0;
  for (std::size_t i = 0; i < found.size(); ++i) {
    const bool last = i + 1 == found.size();
    std::string folder = found[i].lexically_relative(dir).generic_string();
    if (folder.empty() || folder == ".") folder = found[i].filename().generic_string();
    auto bundle = skill::SkillBundle::load(found[i]);
    if (!bundle) {
      ++problems;
      TreePrinter{ctx.out}.line("", last,
                                fmt::format("{} {}", ctx.out.red(folder),
                                            ctx.out.red("cannot load: " + bundle.error().message)));
      continue;
    }
    with_tests += !bundle->tests().empty();
    mismatched += fs::path(folder).filename().string() != bundle->name();
    print_skill(ctx, *bundle, folder, last, args.verbose);
  }
  fmt::print("{} skill{}{}{}{}\n", found.size(), found.size() == 1 ? "" : "s",
             with_tests ? fmt::format(", {} with tests", with_tests) : "",
             mismatched ? fmt::format(", {} named unlike {} folder", mismatched,
                                      mismatched == 1 ? "its" : "their")
                        : "",
             problems ? fmt::format(", {} that cannot be loaded", problems) : "");
  return problems ? static_cast<int>(ExitCode::usage) : 0;
}
}  // namespace

void add_list_command(CLI::App& app, Runner& selected) {
  auto args = std::make_shared<ListArgs>();
  auto* cmd =
      app.add_subcommand("list", "Show the skills below a directory: folder, description, files");
  cmd->add_option("-d,--dir", args->dir,
                  "Skills directory (default: skills_dir from the config, ./skills)");
  cmd->add_flag("-v,--verbose", args->verbose,
                "Also show a preview of each body and its token estimate");
  cmd->callback([&selected, args] {
    selected = [args](const Context& ctx) { return run_list(ctx, *args); };
  });
}

}  // namespace upskill::cli
