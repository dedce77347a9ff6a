#include "upskill/llm/model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>

namespace upskill::llm {

namespace {

struct ProviderDefaults {
  Dialect dialect;
  std::string key_env;
  std::string base_env;
  std::string base_url;
  bool key_required;
};

ProviderDefaults defaults_for(const std::string& provider) {
  if (provider == "anthropic")
    return {Dialect::anthropic, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
            "https://api.anthropic.com/v1", true};
  if (provider == "openai")
    return {Dialect::openai, "OPENAI_API_KEY", "OPENAI_API_BASE", "https://api.openai.com/v1",
            true};
  return {Dialect::openai, "GENERIC_API_KEY", "GENERIC_BASE_URL", "http://localhost:11434/v1",
          false};
}

std::string strip_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

// Anthropic's base URL variable names the host (https://api.anthropic.com); we address /v1 below
// it.
std::string anthropic_root(std::string url) {
  url = strip_slash(std::move(url));
  if (!url.ends_with("/v1")) url += "/v1";
  return url;
}

Status fill_endpoint(ResolvedModel& m, const EnvLookup& env, const ModelOverrides& overrides) {
  const ProviderDefaults d = defaults_for(m.provider);
  m.dialect = d.dialect;
  if (overrides.base_url) {
    m.base_url = *overrides.base_url;
  } else if (m.options.base_url) {
    m.base_url = *m.options.base_url;
  } else if (auto from_env = env(d.base_env)) {
    m.base_url = *from_env;
  } else {
    m.base_url = d.base_url;
  }
  if (!(m.base_url.starts_with("http://") || m.base_url.starts_with("https://")))
    return fail(Error::usage(fmt::format(
        "model '{}': base URL '{}' must start with http:// or https://", m.name, m.base_url)));
  m.base_url =
      m.dialect == Dialect::anthropic ? anthropic_root(m.base_url) : strip_slash(m.base_url);

  const std::string key_env =
      overrides.api_key_env.value_or(m.options.api_key_env.value_or(d.key_env));
  m.api_key_env = key_env;
  if (auto key = env(key_env); key && !key->empty()) {
    m.api_key = Secret(*key);
  } else if (overrides.api_key_env || m.options.api_key_env) {
    return fail(Error::usage(
        fmt::format("model '{}': environment variable {} is not set", m.name, key_env)));
  } else if (d.key_required && !overrides.base_url && !m.options.base_url) {
    // A hosted API without a key would only answer 401; say so now. Local servers need none.
    return fail(Error::usage(fmt::format("model '{}': set {} (or --api-key-env VAR) to call {}",
                                         m.name, key_env, m.provider)));
  }
  return {};
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

const std::map<std::string, std::string>& model_aliases() {
  static const std::map<std::string, std::string> aliases{
      {"sonnet", "anthropic.claude-sonnet-4-5"}, {"haiku", "anthropic.claude-haiku-4-5"},
      {"opus", "anthropic.claude-opus-4-5"},     {"gpt-4.1", "openai.gpt-4.1"},
      {"gpt-4.1-mini", "openai.gpt-4.1-mini"},   {"gpt-5", "openai.gpt-5"},
      {"gpt-5-mini", "openai.gpt-5-mini"},       {"o3-mini", "openai.o3-mini"},
  };
  return aliases;
}

const std::vector<std::string>& reasoning_efforts() {
  static const std::vector<std::string> efforts{"none",   "minimal", "low",
                                                "medium", "high",    "xhigh"};
  return efforts;
}

Result<ResolvedModel> resolve_model(std::string_view spec_view, const config::Config& config,
                                    const EnvLookup& env, const ModelOverrides& overrides) {
  const std::string spec(spec_view);
  if (spec.empty()) return fail(Error::usage("empty model name"));
  ResolvedModel m;
  m.spec = spec;
  m.name = spec;

  if (const auto* configured = config.find_model(spec)) {
    m.options = *configured;
    m.provider = configured->provider;
    m.model = configured->model;
    m.reasoning_effort = configured->reasoning_effort;
    m.max_concurrency = configured->max_concurrency.value_or(4);
    m.source = "config";
    UPSKILL_RETURN_IF_ERROR(fill_endpoint(m, env, overrides));
    return m;
  }

  std::string target = spec;
  if (auto alias = model_aliases().find(spec); alias != model_aliases().end()) {
    target = alias->second;
    m.source = "alias";
  } else {
    m.source = "provider.model";
  }
  const std::size_t dot = target.find('.');
  const std::string provider = dot == std::string::npos ? "" : target.substr(0, dot);
  const auto& providers = config::known_providers();
  if (std::find(providers.begin(), providers.end(), provider) == providers.end()) {
    std::vector<std::string> names;
    for (const auto& cm : config.models) names.push_back(cm.name);
    std::vector<std::string> alias_names;
    for (const auto& [a, _] : model_aliases()) alias_names.push_back(a);
    return fail(
        Error::usage(fmt::format("unknown model '{}': not in the config ({}), not an alias ({}), "
                                 "and not provider.model with provider "
                                 "openai, anthropic or generic",
                                 spec,
                                 names.empty() ? std::string("no models configured")
                                               : fmt::format("{}", fmt::join(names, ", ")),
                                 fmt::join(alias_names, ", "))));
  }
  std::string model = target.substr(dot + 1);
  // provider.model.effort: the effort is the last dot-part when it is one of the known words.
  if (const std::size_t last = model.rfind('.'); last != std::string::npos) {
    const std::string effort = model.substr(last + 1);
    const auto& efforts = reasoning_efforts();
    if (std::find(efforts.begin(), efforts.end(), effort) != efforts.end()) {
      m.reasoning_effort = effort;
      model = model.substr(0, last);
    }
  }
  if (model.empty())
    return fail(Error::usage(fmt::format("model '{}': no model id after '{}.'", spec, provider)));
  m.provider = provider;
  m.model = model;
  m.options.name = spec;
  m.options.provider = provider;
  m.options.model = model;
  UPSKILL_RETURN_IF_ERROR(fill_endpoint(m, env, overrides));
  return m;
}

std::string chat_endpoint(const ResolvedModel& model) {
  return model.base_url + (model.dialect == Dialect::anthropic ? "/messages" : "/chat/completions");
}

Result<ResolvedModel> ModelAccess::resolve(std::string_view spec) const {
  if (config == nullptr) return fail(Error::usage("no configuration to resolve models with"));
  return resolve_model(spec, *config, env, overrides);
}

Result<std::vector<ResolvedModel>> ModelAccess::resolve_all(
    const std::vector<std::string>& specs) const {
  std::vector<ResolvedModel> out;
  for (const auto& spec : specs) {
    UPSKILL_ASSIGN_OR_RETURN(ResolvedModel m, resolve(spec));
    out.push_back(std::move(m));
  }
  return out;
}

double cost_of(const llm::Usage& usage, const config::ModelConfig& model) {
  if (!model.prices) return 0;
  const auto& p = *model.prices;
  const double cached = static_cast<double>(usage.cached);
  const double uncached = static_cast<double>(usage.input) - cached;
  const double cached_price = p.cached_input.value_or(p.input.value_or(0));
  return (uncached * p.input.value_or(0) + cached * cached_price +
          static_cast<double>(usage.output) * p.output.value_or(0)) /
         1e6;
}

}  // namespace upskill::llm
