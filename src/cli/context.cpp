// What a command reads at run time: the configuration, the model session of --record / --replay
// with its retry policy and Ctrl-C, the model access the pipelines receive, and the one way an
// error ends a command.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>

#include "cli.hpp"
#include "upskill/core/unicode.hpp"

namespace upskill::cli {

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
  session->client = std::make_unique<llm::ChatClient>(session->transport, llm::retry_policy(config),
                                                      session->cassette.get());
  install_interrupt_handler(session->cancel);
  return session;
}

int exit_with(const Context& ctx, const Error& error) {
  // A file name or an input's bytes in the message are shown, never sent raw to the terminal.
  fmt::print(stderr, "{} {}\n", ctx.err.red("error:"), unicode::printable(error.message));
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

namespace {

CLI::Validator count_at_least(long long least, const char* name) {
  return CLI::Validator(
      [least](std::string& value) -> std::string {
        long long n = 0;
        const char* end = value.data() + value.size();
        const auto [stop, ec] = std::from_chars(value.data(), end, n);
        if (ec == std::errc() && stop == end && n >= least) return {};
        return fmt::format("{} is not a whole number of at least {}", value, least);
      },
      name);
}

}  // namespace

const CLI::Validator& positive_count() {
  static const CLI::Validator v = count_at_least(1, "POSITIVE");
  return v;
}

const CLI::Validator& non_negative_count() {
  static const CLI::Validator v = count_at_least(0, "NONNEGATIVE");
  return v;
}

}  // namespace upskill::cli
