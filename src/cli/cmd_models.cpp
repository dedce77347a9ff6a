// `upskill models`: the configured models and their endpoints; --ping checks each one.
#include <fmt/format.h>

#include <memory>

#include "cli.hpp"
#include "upskill/core/text.hpp"
#include "upskill/llm/cassette.hpp"
#include "upskill/llm/client.hpp"
#include "upskill/llm/ping.hpp"

namespace upskill::cli {

namespace {
struct ModelsArgs {
  std::vector<std::string> models;
  bool ping = false;
  double wait_s = 120;
};

std::string price_text(const config::ModelConfig& o) {
  if (!o.prices) return "-";
  auto p = [](const std::optional<double>& v) {
    return v ? fmt::format("{:g}", *v) : std::string("?");
  };
  return fmt::format("{}/{}", p(o.prices->input), p(o.prices->output));
}

int run_models(const Context& ctx, const ModelsArgs& args) {
  auto cfg = ctx.load_config();
  if (!cfg) return exit_with(ctx, cfg.error());
  std::vector<std::string> specs = args.models;
  if (specs.empty())
    for (const auto& m : cfg->models) specs.push_back(m.name);
  if (specs.empty()) {
    std::vector<std::string> aliases;
    for (const auto& [a, target] : llm::model_aliases()) aliases.push_back(a + " = " + target);
    fmt::print(
        "No models configured{}. Add a models: section (docs/configuration.md), or name one with "
        "-m:\n"
        "a configured name, an alias ({}), or provider.model[.effort].\n",
        cfg->source ? " in " + cfg->source->string() : std::string(), text::join(aliases, ", "));
    return 0;
  }
  llm::ModelOverrides overrides{ctx.globals.base_url, ctx.globals.api_key_env};
  const auto env = llm::process_environment();

  auto session = ctx.open_model_session(*cfg);
  if (!session) return exit_with(ctx, session.error());
  llm::ChatClient& client = *(*session)->client;
  CancelToken& cancel = (*session)->cancel;

  int failures = 0, unresolved = 0;
  fmt::print("{}\n", ctx.out.bold(fmt::format("{:<18} {:<9} {:<28} {:<34} {:<26} {:>5} {:>11}",
                                              "NAME", "PROVIDER", "MODEL", "ENDPOINT", "KEY",
                                              "LIMIT", "$/Mtok i/o")));
  // Listed whether or not its key is set (the KEY column says which); only calling it needs one.
  llm::ModelOverrides listing = overrides;
  listing.keys_optional = true;
  for (const auto& spec : specs) {
    auto model = llm::resolve_model(spec, *cfg, env, listing);
    if (!model) {
      ++unresolved;
      fmt::print("{:<18} {}\n", spec, ctx.out.red(model.error().message));
      continue;
    }
    const std::string key =
        model->api_key_env
            ? fmt::format("{} ({})", *model->api_key_env, model->api_key.empty() ? "unset" : "set")
            : "-";
    fmt::print("{:<18} {:<9} {:<28} {:<34} {:<26} {:>5} {:>11}\n", model->name, model->provider,
               model->model, model->base_url, key, model->max_concurrency,
               price_text(model->options));
    if (!args.ping) continue;
    if (auto callable = llm::resolve_model(spec, *cfg, env, overrides); !callable) {
      ++failures;  // its key is missing: nothing is sent
      fmt::print("  {} {}\n", ctx.out.red("failed"), callable.error().message);
      continue;
    }
    llm::PingOptions options;
    options.health_wait = std::chrono::milliseconds(static_cast<long long>(args.wait_s * 1000));
    options.cancel = &cancel;
    options.endpoint_checks = !ctx.globals.replay;
    const llm::PingReport report = llm::ping_model(*model, (*session)->transport, client, options);
    const std::string served =
        report.served.empty()
            ? (report.models_error.empty() ? "lists no models" : "models " + report.models_error)
            : fmt::format("serves {}{}", text::join(report.served, ", "),
                          report.model_listed ? "" : " (not this id)");
    if (report.ok()) {
      const auto& chat = *report.chat;
      fmt::print("  {} health {} · {} · chat {:.0f} ms, {} in / {} out tokens{}: \"{}\"\n",
                 ctx.out.green("ok"), report.health, served, chat.latency_ms, chat.usage.input,
                 chat.usage.output, chat.usage.estimated ? " (estimated)" : "",
                 text::excerpt(chat.content, 40));
    } else {
      ++failures;
      fmt::print("  {} health {} · {}{}\n", ctx.out.red("failed"), report.health, served,
                 report.chat_error.empty() ? "" : "\n  " + report.chat_error);
    }
    if (cancel.cancelled()) return static_cast<int>(ExitCode::interrupted);
  }
  if (unresolved && !args.models.empty()) return static_cast<int>(ExitCode::usage);
  return failures ? static_cast<int>(ExitCode::infrastructure) : 0;
}
}  // namespace

void add_models_command(CLI::App& app, Runner& selected) {
  auto args = std::make_shared<ModelsArgs>();
  auto* cmd = app.add_subcommand("models", "List the configured models and check their endpoints");
  cmd->add_option("-m,--model", args->models, "Models to show (default: every configured one)");
  cmd->add_flag(
      "--ping", args->ping,
      "Check each endpoint: GET /health (waiting while it says 'Loading model'), GET /models, and "
      "one tiny chat, with latency and tokens");
  cmd->add_option("--wait", args->wait_s, "Seconds to wait for a model that is still loading")
      ->capture_default_str();
  cmd->footer(
      "A model is a configured name (glm-local), an alias (sonnet, haiku, opus, gpt-4.1, o3-mini, "
      "...) or\n"
      "provider.model[.effort] (openai.gpt-4.1, anthropic.claude-sonnet-4-5, generic.my-model).\n"
      "Exit 3 when a --ping fails, 2 when a model given with -m cannot be resolved.");
  cmd->callback([&selected, args] {
    selected = [args](const Context& ctx) { return run_models(ctx, *args); };
  });
}

}  // namespace upskill::cli
