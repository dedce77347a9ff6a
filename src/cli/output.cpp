#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdlib>

#include "cli.hpp"
#include "upskill/report/eval_report.hpp"

namespace upskill::cli {

namespace {
std::string wrap(bool color, const char* code, const std::string& s) {
  return color ? fmt::format("\033[{}m{}\033[0m", code, s) : s;
}
}  // namespace

std::string Style::bold(const std::string& s) const {
  return wrap(color, "1", s);
}
std::string Style::dim(const std::string& s) const {
  return wrap(color, "2", s);
}
std::string Style::red(const std::string& s) const {
  return wrap(color, "31", s);
}
std::string Style::green(const std::string& s) const {
  return wrap(color, "32", s);
}
std::string Style::yellow(const std::string& s) const {
  return wrap(color, "33", s);
}
std::string Style::cyan(const std::string& s) const {
  return wrap(color, "36", s);
}

Result<config::Config> Context::load_config() const {
  std::optional<std::filesystem::path> path;
  if (globals.config_file) path = *globals.config_file;
  auto cfg = config::load_config(path);
  if (cfg) {
    for (const auto& w : cfg->warnings) spdlog::warn("{}", w);
    spdlog::debug("configuration: {}",
                  cfg->source ? cfg->source->string() : std::string("built-in defaults"));
  }
  return cfg;
}

Result<std::unique_ptr<ModelSession>> Context::open_model_session(
    const config::Config& config) const {
  auto session = std::make_unique<ModelSession>();
  if (globals.replay || globals.record) {
    auto opened = globals.replay ? llm::Cassette::open_replay(*globals.replay)
                                 : llm::Cassette::open_record(*globals.record);
    if (!opened) return fail(opened.error());
    session->cassette = std::move(*opened);
  }
  llm::RetryPolicy retry;
  retry.max_retries = config.retries;
  retry.base_delay = std::chrono::milliseconds(std::llround(config.retry_delay_s * 1000));
  session->client =
      std::make_unique<llm::ChatClient>(session->transport, retry, session->cassette.get());
  install_interrupt_handler(session->cancel);
  return session;
}

std::vector<eval::ResultFile> result_files(const std::optional<std::string>& json,
                                           const std::optional<std::string>& junit,
                                           const std::optional<std::string>& summary_md) {
  std::vector<eval::ResultFile> files;
  const auto markdown = [](const auto& summary, const auto& evaluation) {
    return report::render_markdown(summary, evaluation);
  };
  if (json)
    files.push_back({*json, false, [](const auto& summary, const auto& evaluation) {
                       return eval::to_json(summary, evaluation).dump(2) + "\n";
                     }});
  if (junit) files.push_back({*junit, false, report::render_junit});
  if (summary_md) {
    files.push_back({*summary_md, false, markdown});
  } else if (const char* step = std::getenv("GITHUB_STEP_SUMMARY"); step && *step) {
    files.push_back({step, true, markdown});
  }
  return files;
}

Result<eval::Shard> parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  int k = 0, n = 0;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    std::size_t used_k = 0, used_n = 0;
    k = std::stoi(text.substr(0, slash), &used_k);
    n = std::stoi(text.substr(slash + 1), &used_n);
    if (used_k != slash || used_n != text.size() - slash - 1) throw std::invalid_argument("junk");
  } catch (const std::exception&) {
    return fail(Error::usage(fmt::format("--shard {}: expected K/N, e.g. 2/4", text)));
  }
  if (n < 1 || k < 1 || k > n)
    return fail(Error::usage(fmt::format("--shard {}: K must be between 1 and N", text)));
  return eval::Shard{k, n};
}

Error remote_generate_unsupported(const std::string& executor) {
  return Error::usage(fmt::format(
      "generate --executor {}: generate refines the skill between evaluations, so they run here; "
      "evaluate the skill it writes with `upskill eval SKILL --executor {}` (docs/scale-out.md)",
      executor, executor));
}

void print_recommendations(const Context& ctx, const eval::EvalSummary& summary) {
  // No verdict from partial results: one line that says why instead.
  if (!summary.completeness.complete()) {
    fmt::print("{}\n",
               ctx.out.yellow("No recommendation: " + eval::incomplete_note(summary.completeness)));
    return;
  }
  // upskill's verdict line, from its is_beneficial rule.
  for (const auto& ms : summary.models) {
    if (!ms.lift) continue;
    const std::string who = summary.models.size() > 1 ? " for " + ms.name : "";
    if (!ms.lift->computed()) {
      fmt::print("{}\n", ctx.out.yellow(fmt::format("No recommendation{}: the lift was not "
                                                    "computed ({})",
                                                    who, ms.lift->not_computed)));
      continue;
    }
    fmt::print("{}\n", ms.lift->is_beneficial
                           ? ctx.out.green(fmt::format("Recommendation{}: keep skill", who))
                           : ctx.out.yellow(fmt::format(
                                 "Recommendation{}: skill may not be beneficial", who)));
  }
}

int exit_with(const Context& ctx, const Error& error) {
  fmt::print(stderr, "{} {}\n", ctx.err.red("error:"), error.message);
  return static_cast<int>(error.code);
}

llm::ModelAccess model_access(const Context& ctx, const config::Config& config,
                              std::unique_ptr<ModelSession>& session) {
  llm::ModelAccess access;
  access.config = &config;
  access.overrides = {ctx.globals.base_url, ctx.globals.api_key_env,
                      ctx.globals.replay.has_value()};
  access.connect = [&ctx, &config, &session]() -> Result<llm::Connection> {
    UPSKILL_ASSIGN_OR_RETURN(session, ctx.open_model_session(config));
    return llm::Connection{session->client.get(), &session->cancel};
  };
  return access;
}

int report_gpu_not_run(const Context& ctx, int count, bool require_gpu, std::string_view indent) {
  if (count <= 0) return 0;
  fmt::print(
      "{}{} kernel check{} could not run the CUDA stages (correct, bench): this machine has no "
      "CUDA "
      "device; they count as not run, never as passed\n",
      indent, count, count == 1 ? "" : "s");
  if (!require_gpu) return 0;
  fmt::print(stderr, "{} --require-gpu: no CUDA device to run the kernels\n",
             ctx.err.red("error:"));
  return static_cast<int>(ExitCode::infrastructure);
}

}  // namespace upskill::cli
