// Model resolution (docs/models.md): a configured name, one of upskill's aliases, or
// provider.model[.effort], plus --base-url / --api-key-env overrides (see model.hpp).
#include "upskill/llm/model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>

namespace upskill::llm {

namespace {

// What a provider needs (docs/models.md): its dialect, where its key and base URL come from,
// its default endpoint, and whether a key is required there.
struct ProviderDefaults {
  Dialect dialect;
  std::vector<std::string> key_envs;  // the first that is set
  std::string base_env;
  std::string base_url;
  bool key_required;
};

ProviderDefaults defaults_for(const std::string& provider) {
  static const std::map<std::string, ProviderDefaults> table{
      {"anthropic",
       {Dialect::anthropic,
        {"ANTHROPIC_API_KEY"},
        "ANTHROPIC_BASE_URL",
        "https://api.anthropic.com/v1",
        true}},
      {"openai",
       {Dialect::openai, {"OPENAI_API_KEY"}, "OPENAI_API_BASE", "https://api.openai.com/v1", true}},
      // fast-agent's Responses-API provider: the same models, here over chat completions.
      {"responses",
       {Dialect::openai, {"OPENAI_API_KEY"}, "OPENAI_API_BASE", "https://api.openai.com/v1", true}},
      {"generic",
       {Dialect::openai,
        {"GENERIC_API_KEY"},
        "GENERIC_BASE_URL",
        "http://localhost:11434/v1",
        false}},
      {"hf",
       {Dialect::openai,
        {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"},
        "HF_BASE_URL",
        "https://router.huggingface.co/v1",
        true}},
      {"openrouter",
       {Dialect::openai,
        {"OPENROUTER_API_KEY"},
        "OPENROUTER_BASE_URL",
        "https://openrouter.ai/api/v1",
        true}},
      {"google",
       {Dialect::openai,
        {"GOOGLE_API_KEY"},
        "GOOGLE_BASE_URL",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        true}},
      {"googleoai",
       {Dialect::openai,
        {"GOOGLEOAI_API_KEY", "GOOGLE_API_KEY"},
        "GOOGLE_BASE_URL",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        true}},
      {"deepseek",
       {Dialect::openai,
        {"DEEPSEEK_API_KEY"},
        "DEEPSEEK_BASE_URL",
        "https://api.deepseek.com",
        true}},
      {"xai", {Dialect::openai, {"XAI_API_KEY"}, "XAI_BASE_URL", "https://api.x.ai/v1", true}},
      {"groq",
       {Dialect::openai,
        {"GROQ_API_KEY"},
        "GROQ_BASE_URL",
        "https://api.groq.com/openai/v1",
        true}},
      {"aliyun",
       {Dialect::openai,
        {"ALIYUN_API_KEY"},
        "ALIYUN_BASE_URL",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        true}},
      {"tensorzero",
       {Dialect::openai,
        {"TENSORZERO_API_KEY"},
        "TENSORZERO_BASE_URL",
        "http://localhost:3000/openai/v1",
        false}},
  };
  auto it = table.find(provider);
  return it == table.end() ? table.at("generic") : it->second;
}

// fast-agent providers this version cannot call, and why.
const std::map<std::string, std::string>& unsupported_providers() {
  static const std::map<std::string, std::string> why{
      {"azure",
       "Azure OpenAI needs a deployment URL: configure it under models: as provider "
       "openai with its base_url"},
      {"bedrock", "Bedrock needs AWS request signing, which upskill does not do"},
      {"anthropic-vertex", "Vertex AI needs Google Cloud credentials, which upskill does not use"},
      {"codexresponses", "it needs a ChatGPT login, which upskill does not use"},
      {"openresponses", "upskill speaks chat completions, not the Open Responses protocol"},
      {"fast-agent", "it is fast-agent's internal test provider"},
  };
  return why;
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

Status fill_endpoint(ResolvedModel& m, const config::Config& config, const EnvLookup& env,
                     const ModelOverrides& overrides) {
  const ProviderDefaults d = defaults_for(m.provider);
  const config::ProviderSettings* fa = nullptr;
  if (auto it = config.providers.find(m.provider); it != config.providers.end()) fa = &it->second;
  m.dialect = d.dialect;
  if (overrides.base_url) {
    m.base_url = *overrides.base_url;
  } else if (m.options.base_url) {
    m.base_url = *m.options.base_url;
  } else if (fa && fa->base_url) {
    m.base_url = *fa->base_url;
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

  // The key: a variable named on the command line or in models:, else fast-agent's setting, else
  // the provider's variables.
  const std::optional<std::string> named =
      overrides.api_key_env ? overrides.api_key_env : m.options.api_key_env;
  std::vector<std::string> candidates;
  if (named) {
    candidates = {*named};
  } else {
    if (fa && fa->api_key_env) candidates.push_back(*fa->api_key_env);
    candidates.insert(candidates.end(), d.key_envs.begin(), d.key_envs.end());
  }
  m.api_key_env = candidates.front();
  for (const auto& name : candidates)
    if (auto key = env(name); key && !key->empty()) {
      m.api_key = Secret(*key);
      m.api_key_env = name;
      return {};
    }
  if (!named && fa && fa->api_key && !fa->api_key->empty()) {
    m.api_key = Secret(*fa->api_key);
    m.api_key_env.reset();  // from fast-agent's file
    return {};
  }
  if (overrides.keys_optional) return {};  // replaying a cassette: nothing is sent
  if (named)
    return fail(Error::usage(
        fmt::format("model '{}': environment variable {} is not set", m.name, *named)));
  if (d.key_required && !overrides.base_url && !m.options.base_url && !(fa && fa->base_url))
    // A hosted API without a key would only answer 401; say so now. Local servers need none.
    return fail(Error::usage(fmt::format("model '{}': set {} (or --api-key-env VAR) to call {}",
                                         m.name, candidates.front(), m.provider)));
  return {};
}

// A bare model name's provider, as fast-agent's model table has it; empty when unknown.
std::string provider_of_bare_name(const std::string& name) {
  static const std::vector<std::pair<std::string, std::string>> prefixes{
      {"claude-", "anthropic"}, {"gpt-", "openai"},    {"o1", "openai"},          {"o3", "openai"},
      {"o4", "openai"},         {"gemini-", "google"}, {"deepseek-", "deepseek"}, {"grok-", "xai"}};
  for (const auto& [prefix, provider] : prefixes)
    if (name.starts_with(prefix)) return provider;
  return "";
}

// `?reasoning=high&temperature=0.2`: fast-agent's query settings, applied to the model.
Status apply_query(ResolvedModel& m, const std::string& query) {
  std::size_t pos = 0;
  while (pos <= query.size()) {
    const std::size_t amp = query.find('&', pos);
    const std::string pair =
        query.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    pos = amp == std::string::npos ? query.size() + 1 : amp + 1;
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    const std::string key = pair.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : pair.substr(eq + 1);
    auto number = [&](std::optional<double>& out) -> Status {
      try {
        std::size_t used = 0;
        out = std::stod(value, &used);
        if (used == value.size()) return {};
      } catch (const std::exception&) {
      }
      return fail(Error::usage(fmt::format("model '{}': {} must be a number", m.spec, key)));
    };
    if (key == "reasoning") {
      const auto& efforts = reasoning_efforts();
      if (value == "auto" || value == "on" || value == "true") {
        m.reasoning_effort.reset();  // the server's default
      } else if (value == "off" || value == "false") {
        m.reasoning_effort = "none";
      } else if (std::find(efforts.begin(), efforts.end(), value) != efforts.end()) {
        m.reasoning_effort = value;
      } else {
        return fail(
            Error::usage(fmt::format("model '{}': reasoning must be one of auto, on, off, "
                                     "{}",
                                     m.spec, fmt::join(efforts, ", "))));
      }
    } else if (key == "temperature" || key == "temp") {
      UPSKILL_RETURN_IF_ERROR(number(m.options.temperature));
    } else if (key == "top_p") {
      UPSKILL_RETURN_IF_ERROR(number(m.options.top_p));
    } else {
      return fail(Error::usage(fmt::format(
          "model '{}': unknown setting '{}' (upskill reads reasoning, temperature, top_p)", m.spec,
          key)));
    }
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
  // fast-agent's aliases as the Python upskill 0.2.1 resolves them (fast-agent 0.4.x), plus ours.
  static const std::map<std::string, std::string> aliases{
      {"sonnet", "anthropic.claude-sonnet-4-5"},
      {"claude", "anthropic.claude-sonnet-4-5"},
      {"sonnet45", "anthropic.claude-sonnet-4-5"},
      {"sonnet4", "anthropic.claude-sonnet-4-0"},
      {"haiku", "anthropic.claude-haiku-4-5"},
      {"haiku45", "anthropic.claude-haiku-4-5"},
      {"opus", "anthropic.claude-opus-4-6"},
      {"opus46", "anthropic.claude-opus-4-6"},
      {"opus45", "anthropic.claude-opus-4-5"},
      {"opus4", "anthropic.claude-opus-4-1"},
      {"gpt-4.1", "openai.gpt-4.1"},
      {"gpt-4.1-mini", "openai.gpt-4.1-mini"},
      {"gpt-5", "openai.gpt-5"},
      {"gpt-5-mini", "openai.gpt-5-mini"},
      {"o3-mini", "openai.o3-mini"},
      {"gpt51", "responses.gpt-5.1"},
      {"gpt52", "responses.gpt-5.2"},
      {"codex", "responses.gpt-5.2-codex"},
      {"deepseek", "deepseek.deepseek-chat"},
      {"deepseek3", "deepseek.deepseek-chat"},
      {"deepseekv3", "deepseek.deepseek-chat"},
      {"gemini2", "google.gemini-2.0-flash"},
      {"gemini25pro", "google.gemini-2.5-pro"},
      {"gemini3", "google.gemini-3-pro-preview"},
      {"gemini3flash", "google.gemini-3-flash-preview"},
      {"grok-4-fast", "xai.grok-4-fast-non-reasoning"},
      {"grok-4-fast-reasoning", "xai.grok-4-fast-reasoning"},
      {"kimi", "hf.moonshotai/Kimi-K2-Instruct-0905:groq"},
      {"kimigroq", "groq.moonshotai/kimi-k2-instruct-0905"},
      {"kimithink", "hf.moonshotai/Kimi-K2-Thinking:together"},
      {"kimi25", "hf.moonshotai/Kimi-K2.5:fireworks-ai"},
      {"gpt-oss", "hf.openai/gpt-oss-120b:cerebras"},
      {"gpt-oss-20b", "hf.openai/gpt-oss-20b"},
      {"glm", "hf.zai-org/GLM-5:novita"},
      {"glm5", "hf.zai-org/GLM-5:novita"},
      {"glm47", "hf.zai-org/GLM-4.7:cerebras"},
      {"minimax", "hf.MiniMaxAI/MiniMax-M2.1:novita"},
      {"qwen3", "hf.Qwen/Qwen3-Next-80B-A3B-Instruct:together"},
      {"deepseek31", "hf.deepseek-ai/DeepSeek-V3.1"},
      {"deepseek32", "hf.deepseek-ai/DeepSeek-V3.2:fireworks-ai"},
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
    UPSKILL_RETURN_IF_ERROR(fill_endpoint(m, config, env, overrides));
    return m;
  }

  // A coding agent as the student (cli.claude-code, …): run as a program, no endpoint or key here.
  if (spec.starts_with("cli.")) {
    if (spec.size() == 4) return fail(Error::usage("model 'cli.': name the coding agent"));
    m.provider = "cli";
    m.model = spec.substr(4);
    m.options.name = spec;
    m.options.provider = "cli";
    m.options.model = m.model;
    m.max_concurrency = 2;
    m.source = "coding agent";
    return m;
  }

  // fast-agent's grammar: NAME[:ROUTER-PROVIDER][?SETTINGS], NAME an alias, provider.model,
  // provider/model or a bare model id.
  std::string target = spec, query;
  if (const std::size_t q = target.find('?'); q != std::string::npos) {
    query = target.substr(q + 1);
    target = target.substr(0, q);
  }
  std::optional<std::string> suffix;
  std::string head = target;
  if (const std::size_t colon = target.rfind(':'); colon != std::string::npos) {
    suffix = target.substr(colon + 1);
    head = target.substr(0, colon);
  }
  m.source = "provider.model";
  if (auto alias = model_aliases().find(head); alias != model_aliases().end()) {
    target = alias->second;
    if (suffix) {  // a router provider given with an alias replaces the alias's own
      const std::size_t colon = target.rfind(':');
      target = (colon == std::string::npos ? target : target.substr(0, colon)) + ":" + *suffix;
    }
    m.source = "alias";
  }
  const auto& providers = config::known_providers();
  auto is_provider = [&](const std::string& p) {
    return std::find(providers.begin(), providers.end(), p) == providers.end() ? false : true;
  };
  std::string provider, model;
  const std::size_t dot = target.find('.'), slash = target.find('/');
  if (dot != std::string::npos && is_provider(target.substr(0, dot))) {
    provider = target.substr(0, dot);
    model = target.substr(dot + 1);
  } else if (slash != std::string::npos && is_provider(target.substr(0, slash))) {
    provider = target.substr(0, slash);
    model = target.substr(slash + 1);
  } else if (std::string bare = provider_of_bare_name(target); !bare.empty()) {
    provider = bare;
    model = target;
    m.source = "model table";
  } else {
    const std::string prefix = target.substr(0, std::min(dot, slash));
    if (auto why = unsupported_providers().find(prefix); why != unsupported_providers().end())
      return fail(Error::usage(fmt::format("model '{}': provider '{}' is not supported: {}", spec,
                                           prefix, why->second)));
    std::vector<std::string> names;
    for (const auto& cm : config.models) names.push_back(cm.name);
    std::vector<std::string> alias_names;
    for (const auto& [a, _] : model_aliases()) alias_names.push_back(a);
    return fail(Error::usage(fmt::format(
        "unknown model '{}': not in the config ({}), not an alias ({}), not a known model id, and "
        "not provider.model with a provider upskill supports ({})",
        spec,
        names.empty() ? std::string("no models configured")
                      : fmt::format("{}", fmt::join(names, ", ")),
        fmt::join(alias_names, ", "), fmt::join(providers, ", "))));
  }
  // provider.model.effort (fast-agent 0.4's form): the last dot-part when it is a known effort.
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
  // The Hugging Face router picks its inference provider from a ":provider" suffix; fast-agent's
  // hf.default_provider fills one in.
  if (provider == "hf" && model.find(':') == std::string::npos)
    if (auto it = config.providers.find("hf");
        it != config.providers.end() && it->second.default_provider)
      model += ":" + *it->second.default_provider;
  m.provider = provider;
  m.model = model;
  m.options.name = spec;
  m.options.provider = provider;
  m.options.model = model;
  if (!query.empty()) UPSKILL_RETURN_IF_ERROR(apply_query(m, query));
  UPSKILL_RETURN_IF_ERROR(fill_endpoint(m, config, env, overrides));
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
