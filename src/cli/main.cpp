// upskill: turn an expert agent's trace into a skill and measure whether it helps.
#include <mimalloc.h>
#include <spdlog/spdlog.h>
#include <strings.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "cli.hpp"
#include "upskill/core/logging.hpp"

namespace {

constexpr const char* kFooter = R"(Exit codes:
  0    success
  1    a quality gate or check failed (validate found errors, install refused an invalid skill)
  2    usage or input error (bad flag, unreadable or invalid file; the message names file and line)
  3    infrastructure failure (endpoint unreachable, toolchain missing, no GPU with --require-gpu)
  130  interrupted (results so far are saved)

Configuration: --config FILE, else $UPSKILL_CONFIG, else ./upskill.config.yaml, else
~/.config/upskill/config.yaml. Docs: README.md and docs/ in the source tree.)";

bool color_allowed(bool no_color, int fd) {
  if (no_color || std::getenv("NO_COLOR") != nullptr) return false;
  const char* term = std::getenv("TERM");
  return ::isatty(fd) && !(term && std::string(term) == "dumb");
}

// mimalloc is the process's malloc (linked first). Its memory comes in 2 MiB pages where the
// kernel gives them (transparent huge pages in "madvise" mode): reading a large trace takes a few
// hundred page faults instead of thousands (docs/PERFORMANCE.md). mimalloc maps its first segment
// while the libraries initialise, before main, so the option is set earlier still: functions in
// .preinit_array run before any library's initialisers. It only stores the value (no allocation);
// MIMALLOC_LARGE_OS_PAGES in the environment still decides.
void prefer_large_pages(int, char**, char** envp) {
  // mimalloc matches its variables' names without regard to case, and later versions call this one
  // MIMALLOC_ALLOW_LARGE_OS_PAGES.
  for (char** e = envp; e && *e; ++e)
    for (const char* name : {"MIMALLOC_LARGE_OS_PAGES=", "MIMALLOC_ALLOW_LARGE_OS_PAGES="})
      if (strncasecmp(*e, name, std::strlen(name)) == 0) return;
  mi_option_set(mi_option_large_os_pages, 1);
}
__attribute__((section(".preinit_array"),
               used)) void (*const kPreferLargePages)(int, char**, char**) = prefer_large_pages;

}  // namespace

int main(int argc, char** argv) {
  using namespace upskill;
  // A file-size limit (ulimit -f) reached while writing must be a write error that says which file,
  // not a signal that kills the process and loses what was computed.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{
      "upskill: turn an expert agent's work into a reusable agent skill, and measure whether it "
      "helps."};
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("upskill ") + UPSKILL_VERSION);
  app.require_subcommand(1);
  app.fallthrough();

  cli::GlobalOptions globals;
  app.add_option("--config", globals.config_file, "Configuration file (YAML)");
  app.add_flag("-v,--verbose", globals.verbose, "Show debug logging");
  app.add_flag("-q,--quiet", globals.quiet, "Only show warnings and errors");
  app.add_option("--log-file", globals.log_file, "Also write a debug log to this file");
  app.add_flag("--no-color", globals.no_color, "Do not colour the output (also: NO_COLOR)");
  app.add_option("--base-url", globals.base_url,
                 "Endpoint for the models named on the command line")
      ->group("Models");
  app.add_option("--api-key-env", globals.api_key_env, "Environment variable holding their API key")
      ->group("Models");
  app.add_option("--record", globals.record,
                 "Record every model response to a cassette (JSON lines)")
      ->group("Models");
  app.add_option("--replay", globals.replay, "Answer model calls from a cassette, with no network")
      ->group("Models");
  app.get_option("--record")->excludes(app.get_option("--replay"));

  cli::Runner selected;
  cli::add_generate_command(app, selected);
  cli::add_list_command(app, selected);
  cli::add_validate_command(app, selected);
  cli::add_install_command(app, selected);
  cli::add_models_command(app, selected);
  cli::add_eval_command(app, selected);
  cli::add_benchmark_command(app, selected);
  cli::add_runs_command(app, selected);
  cli::add_check_command(app, selected);
  cli::add_trace_command(app, selected);
  cli::add_ci_command(app, selected);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return static_cast<int>(ExitCode::usage);
  }

  cli::Context ctx{globals,
                   {color_allowed(globals.no_color, STDOUT_FILENO)},
                   {color_allowed(globals.no_color, STDERR_FILENO)}};
  logging::Options log_options;
  log_options.verbosity = globals.quiet     ? logging::Verbosity::quiet
                          : globals.verbose ? logging::Verbosity::verbose
                                            : logging::Verbosity::normal;
  log_options.log_file = globals.log_file;
  log_options.color = ctx.err.color;
  if (auto configured = logging::configure(log_options); !configured)
    return cli::exit_with(ctx, configured.error());
  spdlog::debug("upskill {} started", UPSKILL_VERSION);
  if (!selected) return static_cast<int>(ExitCode::usage);
  int code = 0;
  try {
    code = selected(ctx);
  } catch (const std::exception& e) {
    // A defect, not an input: said in one line, never an abort (what was written stays written).
    fmt::print(stderr, "{} internal error: {} (please report it)\n", ctx.err.red("upskill:"),
               e.what());
    code = static_cast<int>(ExitCode::infrastructure);
  }
  spdlog::default_logger()->flush();
  return code;
}
