// upskill.config.yaml: upskill's keys plus `python:` and a `models:` map (see config.hpp).
#include "upskill/config/config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>

#include "upskill/core/enum_names.hpp"
#include "upskill/core/files.hpp"

namespace upskill::config {

namespace {
constexpr enum_names::Table<Executor, 3> kExecutors{
    {{Executor::local, "local"}, {Executor::slurm, "slurm"}, {Executor::jobs, "jobs"}}};
}  // namespace

std::string_view to_string(Executor executor) {
  return enum_names::name(kExecutors, executor);
}

std::optional<Executor> executor_from_string(std::string_view name) {
  return enum_names::parse(kExecutors, name);
}

const std::vector<std::string>& executor_names() {
  static const std::vector<std::string> names = enum_names::all(kExecutors);
  return names;
}

namespace {

// Reads one YAML mapping with typed accessors; errors carry file:line:col of the offending key.
class YamlFields {
 public:
  YamlFields(const YAML::Node& map, std::string file, std::string context, Config& config)
      : map_(map), file_(std::move(file)), context_(std::move(context)), config_(config) {}

  SourceLocation where(const YAML::Node& node) const {
    const auto mark = node.Mark();
    if (mark.is_null()) return {file_, 0, 0};
    return {file_, mark.line + 1, mark.column + 1};
  }
  Error error(const YAML::Node& key_node, const std::string& message) const {
    return Error::at(where(key_node), context_.empty() ? message : context_ + ": " + message);
  }

  // Walks the keys: known ones go to `handle`, unknown ones become warnings.
  template <class Handler>
  Status each(const std::vector<std::string>& known, Handler&& handle) {
    for (const auto& item : map_) {
      const std::string key = item.first.as<std::string>();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        config_.warnings.push_back(fmt::format("{}: {}unknown key '{}' is ignored",
                                               where(item.first).to_string(),
                                               context_.empty() ? "" : context_ + ": ", key));
        continue;
      }
      UPSKILL_RETURN_IF_ERROR(handle(key, item.first, item.second));
    }
    return {};
  }

  Result<std::optional<std::string>> string(const YAML::Node& key, const YAML::Node& value) const {
    if (value.IsNull()) return std::optional<std::string>{};
    if (!value.IsScalar())
      return fail(error(key, fmt::format("'{}' must be a string", key.as<std::string>())));
    return std::optional<std::string>{value.Scalar()};
  }
  // The strings of a sequence, each as string() takes it (null items left out).
  Result<std::vector<std::string>> strings(const YAML::Node& key, const YAML::Node& seq) const {
    std::vector<std::string> out;
    for (const auto& item : seq) {
      UPSKILL_ASSIGN_OR_RETURN(auto one, string(key, item));
      if (one) out.push_back(std::move(*one));
    }
    return out;
  }
  Result<double> number(const YAML::Node& key, const YAML::Node& value) const {
    double out = 0;
    if (!value.IsScalar() || !YAML::convert<double>::decode(value, out))
      return fail(error(key, fmt::format("'{}' must be a number", key.as<std::string>())));
    return out;
  }
  Result<long long> integer(const YAML::Node& key, const YAML::Node& value, long long min) const {
    long long out = 0;
    if (!value.IsScalar() || !YAML::convert<long long>::decode(value, out))
      return fail(error(key, fmt::format("'{}' must be a whole number", key.as<std::string>())));
    if (out < min)
      return fail(error(key, fmt::format("'{}' must be at least {}", key.as<std::string>(), min)));
    return out;
  }
  Result<bool> boolean(const YAML::Node& key, const YAML::Node& value) const {
    bool out = false;
    if (!value.IsScalar() || !YAML::convert<bool>::decode(value, out))
      return fail(error(key, fmt::format("'{}' must be true or false", key.as<std::string>())));
    return out;
  }

 private:
  const YAML::Node& map_;
  std::string file_;
  std::string context_;
  Config& config_;
};

Json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = yaml_to_json(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& item : node) out.push_back(yaml_to_json(item));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return s;  // quoted: always a string
      bool b;
      long long i;
      double d;
      if (YAML::convert<bool>::decode(node, b)) return b;
      if (YAML::convert<long long>::decode(node, i)) return i;
      if (YAML::convert<double>::decode(node, d)) return d;
      return s;
    }
    default:
      return nullptr;
  }
}

Result<ModelConfig> parse_model(const std::string& name, const YAML::Node& key_node,
                                const YAML::Node& node, const std::string& file, Config& config) {
  const std::string context = fmt::format("model '{}'", name);
  YamlFields fields(node, file, context, config);
  if (!node.IsMap())
    return fail(fields.error(key_node, "must be a mapping (provider, base_url, model, ...)"));
  ModelConfig m;
  m.name = name;
  m.model = name;
  m.defined_at = fields.where(key_node);
  bool has_provider = false;
  const std::vector<std::string> known{"provider",
                                       "base_url",
                                       "model",
                                       "api_key_env",
                                       "api_key",
                                       "max_concurrency",
                                       "prices",
                                       "max_tokens_field",
                                       "max_tokens",
                                       "temperature",
                                       "top_p",
                                       "reasoning_effort",
                                       "chat_template_kwargs",
                                       "extra_body",
                                       "stream",
                                       "timeout_s",
                                       "anthropic_version"};
  UPSKILL_RETURN_IF_ERROR(fields.each(
      known, [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) -> Status {
        if (key == "api_key")
          return fail(fields.error(
              k,
              "API keys do not belong in config files; put the key in an environment variable "
              "and name it with 'api_key_env'"));
        if (key == "provider") {
          UPSKILL_ASSIGN_OR_RETURN(auto p, fields.string(k, v));
          const auto& providers = known_providers();
          if (!p || std::find(providers.begin(), providers.end(), *p) == providers.end())
            return fail(fields.error(
                k, fmt::format("provider must be one of: {}", fmt::join(providers, ", "))));
          m.provider = *p;
          has_provider = true;
        } else if (key == "base_url") {
          UPSKILL_ASSIGN_OR_RETURN(m.base_url, fields.string(k, v));
          if (m.base_url &&
              !(m.base_url->starts_with("http://") || m.base_url->starts_with("https://")))
            return fail(fields.error(
                k, fmt::format("base_url '{}' must start with http:// or https://", *m.base_url)));
        } else if (key == "model") {
          UPSKILL_ASSIGN_OR_RETURN(auto id, fields.string(k, v));
          if (!id || id->empty()) return fail(fields.error(k, "'model' must not be empty"));
          m.model = *id;
        } else if (key == "api_key_env") {
          UPSKILL_ASSIGN_OR_RETURN(m.api_key_env, fields.string(k, v));
        } else if (key == "max_concurrency") {
          UPSKILL_ASSIGN_OR_RETURN(long long n, fields.integer(k, v, 1));
          m.max_concurrency = static_cast<int>(n);
        } else if (key == "prices") {
          if (!v.IsMap())
            return fail(
                fields.error(k, "'prices' must be a mapping (input, output, cached_input)"));
          ModelPrices prices;
          YamlFields pf(v, file, context + ": prices", config);
          UPSKILL_RETURN_IF_ERROR(pf.each(
              {"input", "output", "cached_input"},
              [&](const std::string& pk, const YAML::Node& pkn, const YAML::Node& pv) -> Status {
                UPSKILL_ASSIGN_OR_RETURN(double price, pf.number(pkn, pv));
                if (price < 0) return fail(pf.error(pkn, "prices must not be negative"));
                (pk == "input"    ? prices.input
                 : pk == "output" ? prices.output
                                  : prices.cached_input) = price;
                return {};
              }));
          m.prices = prices;
        } else if (key == "max_tokens_field") {
          UPSKILL_ASSIGN_OR_RETURN(m.max_tokens_field, fields.string(k, v));
          if (m.max_tokens_field && *m.max_tokens_field != "max_tokens" &&
              *m.max_tokens_field != "max_completion_tokens")
            return fail(fields.error(
                k, "max_tokens_field must be 'max_tokens' or 'max_completion_tokens'"));
        } else if (key == "max_tokens") {
          UPSKILL_ASSIGN_OR_RETURN(m.max_tokens, fields.integer(k, v, 1));
        } else if (key == "temperature") {
          UPSKILL_ASSIGN_OR_RETURN(m.temperature, fields.number(k, v));
        } else if (key == "top_p") {
          UPSKILL_ASSIGN_OR_RETURN(m.top_p, fields.number(k, v));
        } else if (key == "reasoning_effort") {
          UPSKILL_ASSIGN_OR_RETURN(m.reasoning_effort, fields.string(k, v));
        } else if (key == "chat_template_kwargs" || key == "extra_body") {
          if (!v.IsMap()) return fail(fields.error(k, fmt::format("'{}' must be a mapping", key)));
          (key == "extra_body" ? m.extra_body : m.chat_template_kwargs) = yaml_to_json(v);
        } else if (key == "stream") {
          UPSKILL_ASSIGN_OR_RETURN(m.stream, fields.boolean(k, v));
        } else if (key == "timeout_s") {
          UPSKILL_ASSIGN_OR_RETURN(double t, fields.number(k, v));
          if (t <= 0) return fail(fields.error(k, "'timeout_s' must be greater than 0"));
          m.timeout_s = t;
        } else if (key == "anthropic_version") {
          UPSKILL_ASSIGN_OR_RETURN(m.anthropic_version, fields.string(k, v));
        }
        return {};
      }));
  if (!has_provider)
    return fail(fields.error(key_node, fmt::format("missing 'provider' (one of: {})",
                                                   fmt::join(known_providers(), ", "))));
  return m;
}

}  // namespace

const std::vector<std::string>& known_providers() {
  static const std::vector<std::string> providers{
      "openai", "anthropic", "generic",  "hf",     "openrouter", "google",    "googleoai",
      "deepseek", "xai",     "groq",     "aliyun", "tensorzero", "responses"};
  return providers;
}

std::string Config::model_for(ModelRole role, const std::optional<std::string>& teacher) const {
  const std::string chosen_teacher = teacher.value_or(skill_generation_model);
  switch (role) {
    case ModelRole::teacher:
      return chosen_teacher;
    case ModelRole::test_writer:
      return test_gen_model.value_or(chosen_teacher);
    case ModelRole::student:
      return eval_model.value_or(chosen_teacher);
    case ModelRole::judge:
      return judge_model.value_or(chosen_teacher);
  }
  return chosen_teacher;
}

const ModelConfig* Config::find_model(std::string_view name) const {
  for (const auto& m : models)
    if (m.name == name) return &m;
  return nullptr;
}

namespace {

// The executors' keys (docs/scale-out.md): executor, shards, the slurm mapping, jobs_*.
bool executor_key(const std::string& key) {
  return key == "executor" || key == "shards" || key == "slurm" || key == "artifact_repo" ||
         key.starts_with("jobs_");
}

Status parse_slurm(YamlFields& fields, const YAML::Node& k, const YAML::Node& v,
                   const std::string& file, Config& config) {
  if (v.IsNull()) return {};
  if (!v.IsMap()) return fail(fields.error(k, "'slurm' must be a mapping (partition, time, …)"));
  YamlFields slurm(v, file, "slurm", config);
  return slurm.each(
      {"partition", "time", "account", "gpu_partition", "gpu_gres", "options", "upskill", "mem",
       "cpus_per_task"},
      [&](const std::string& key, const YAML::Node& sk, const YAML::Node& sv) -> Status {
        auto& c = config.slurm;
        if (key == "options") {
          if (sv.IsNull()) return {};
          if (!sv.IsSequence())
            return fail(slurm.error(sk, "'options' must be a list of sbatch options"));
          UPSKILL_ASSIGN_OR_RETURN(auto lines, slurm.strings(sk, sv));
          c.options.insert(c.options.end(), lines.begin(), lines.end());
          return {};
        }
        auto& field = key == "partition"       ? c.partition
                      : key == "time"          ? c.time
                      : key == "account"       ? c.account
                      : key == "gpu_partition" ? c.gpu_partition
                      : key == "upskill"       ? c.upskill
                      : key == "mem"           ? c.mem
                      : key == "cpus_per_task" ? c.cpus_per_task
                                               : c.gpu_gres;
        UPSKILL_ASSIGN_OR_RETURN(field, slurm.string(sk, sv));
        return {};
      });
}

Status parse_executor_key(YamlFields& fields, const std::string& key, const YAML::Node& k,
                          const YAML::Node& v, const std::string& file, Config& config) {
  if (key == "executor") {
    UPSKILL_ASSIGN_OR_RETURN(auto e, fields.string(k, v));
    const auto executor = e ? executor_from_string(*e) : Executor::local;
    if (!executor) return fail(fields.error(k, "'executor' must be 'local', 'slurm' or 'jobs'"));
    config.executor = *executor;
  } else if (key == "shards") {
    if (v.IsNull()) return {};
    UPSKILL_ASSIGN_OR_RETURN(long long n, fields.integer(k, v, 1));
    if (n > 10000) return fail(fields.error(k, "'shards' must be at most 10000"));
    config.shards = static_cast<int>(n);
  } else if (key == "slurm") {
    return parse_slurm(fields, k, v, file, config);
  } else if (key == "jobs_secrets") {
    // A comma-separated string, as upskill writes it, or a list.
    config.jobs_secrets.clear();
    std::vector<std::string> items;
    if (v.IsSequence()) {
      UPSKILL_ASSIGN_OR_RETURN(items, fields.strings(k, v));
    } else {
      UPSKILL_ASSIGN_OR_RETURN(auto secrets, fields.string(k, v));
      items.push_back(secrets.value_or(""));
    }
    for (const auto& item : items)
      for (auto& part : text::split_list(item)) config.jobs_secrets.push_back(std::move(part));
  } else {
    // jobs_image, jobs_flavor, jobs_timeout, jobs_namespace, artifact_repo (the known keys).
    auto& field = key == "jobs_image"       ? config.jobs_image
                  : key == "jobs_flavor"    ? config.jobs_flavor
                  : key == "jobs_timeout"   ? config.jobs_timeout
                  : key == "jobs_namespace" ? config.jobs_namespace
                                            : config.artifact_repo;
    UPSKILL_ASSIGN_OR_RETURN(field, fields.string(k, v));
  }
  return {};
}

}  // namespace

Result<Config> parse_config(std::string_view text, const std::string& file) {
  Config config;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return fail(Error::at({file, e.mark.line + 1, e.mark.column + 1}, "invalid YAML: " + e.msg));
  }
  if (root.IsNull()) return config;  // an empty file means defaults
  if (!root.IsMap())
    return fail(Error::at({file, 1, 0}, "the config must be a YAML mapping of settings"));
  YamlFields fields(root, file, "", config);
  const std::vector<std::string> known{"skill_generation_model",
                                       "model",
                                       "eval_model",
                                       "test_gen_model",
                                       "judge_model",
                                       "skills_dir",
                                       "runs_dir",
                                       "max_refine_attempts",
                                       "auto_eval",
                                       "fastagent_config",
                                       "python",
                                       "retries",
                                       "retry_delay_s",
                                       "num_runs",
                                       "max_parallel",
                                       "executor",
                                       "jobs_secrets",
                                       "jobs_image",
                                       "jobs_flavor",
                                       "jobs_timeout",
                                       "jobs_namespace",
                                       "artifact_repo",
                                       "shards",
                                       "slurm",
                                       "cli_providers",
                                       "models"};
  bool has_new_name = false;
  UPSKILL_RETURN_IF_ERROR(fields.each(
      known, [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) -> Status {
        if (key == "skill_generation_model" || key == "model") {
          UPSKILL_ASSIGN_OR_RETURN(auto name, fields.string(k, v));
          if (!name) return {};
          // `model` is upskill's old name; the new name wins when both are present.
          if (key == "skill_generation_model" || !has_new_name)
            config.skill_generation_model = *name;
          has_new_name = has_new_name || key == "skill_generation_model";
        } else if (key == "eval_model") {
          UPSKILL_ASSIGN_OR_RETURN(config.eval_model, fields.string(k, v));
        } else if (key == "test_gen_model") {
          UPSKILL_ASSIGN_OR_RETURN(config.test_gen_model, fields.string(k, v));
        } else if (key == "judge_model") {
          UPSKILL_ASSIGN_OR_RETURN(config.judge_model, fields.string(k, v));
        } else if (key == "skills_dir" || key == "runs_dir") {
          UPSKILL_ASSIGN_OR_RETURN(auto dir, fields.string(k, v));
          if (!dir || dir->empty())
            return fail(fields.error(k, fmt::format("'{}' must be a directory path", key)));
          (key == "skills_dir" ? config.skills_dir : config.runs_dir) = *dir;
        } else if (key == "max_refine_attempts") {
          UPSKILL_ASSIGN_OR_RETURN(long long n, fields.integer(k, v, 0));
          config.max_refine_attempts = static_cast<int>(n);
        } else if (key == "auto_eval") {
          UPSKILL_ASSIGN_OR_RETURN(config.auto_eval, fields.boolean(k, v));
        } else if (key == "fastagent_config") {
          UPSKILL_ASSIGN_OR_RETURN(config.fastagent_config, fields.string(k, v));
        } else if (key == "python") {
          UPSKILL_ASSIGN_OR_RETURN(config.python, fields.string(k, v));
        } else if (key == "retries") {
          UPSKILL_ASSIGN_OR_RETURN(long long n, fields.integer(k, v, 0));
          if (n > 20) return fail(fields.error(k, "'retries' must be at most 20"));
          config.retries = static_cast<int>(n);
        } else if (key == "retry_delay_s") {
          UPSKILL_ASSIGN_OR_RETURN(double d, fields.number(k, v));
          if (!(d >= 0 && d <= 60))
            return fail(fields.error(k, "'retry_delay_s' must be between 0 and 60"));
          config.retry_delay_s = d;
        } else if (key == "num_runs" || key == "max_parallel") {
          if (v.IsNull()) return {};
          UPSKILL_ASSIGN_OR_RETURN(long long n, fields.integer(k, v, 1));
          (key == "num_runs" ? config.num_runs : config.max_parallel) = static_cast<int>(n);
        } else if (executor_key(key)) {
          UPSKILL_RETURN_IF_ERROR(parse_executor_key(fields, key, k, v, file, config));
        } else if (key == "cli_providers") {
          if (v.IsNull()) return {};
          if (!v.IsMap()) return fail(fields.error(k, "'cli_providers' must be a mapping"));
          config.cli_providers = yaml_to_json(v);
        } else if (key == "models") {
          if (v.IsNull()) return {};
          if (!v.IsMap())
            return fail(fields.error(k, "'models' must be a mapping of model names to settings"));
          for (const auto& item : v) {
            const std::string name = item.first.as<std::string>();
            if (name.empty())
              return fail(fields.error(item.first, "model names must not be empty"));
            UPSKILL_ASSIGN_OR_RETURN(ModelConfig m,
                                     parse_model(name, item.first, item.second, file, config));
            config.models.push_back(std::move(m));
          }
        }
        return {};
      }));
  return config;
}

ConfigEnvironment ConfigEnvironment::current() {
  ConfigEnvironment env;
  if (const char* v = std::getenv("UPSKILL_CONFIG"); v && *v) env.upskill_config = v;
  std::error_code ec;
  env.cwd = fs::current_path(ec);
  if (auto home = files::home_directory()) env.home = *home;
  return env;
}

ConfigChoice choose_config(const std::optional<fs::path>& explicit_path,
                           const ConfigEnvironment& env) {
  std::error_code ec;
  if (explicit_path) return {*explicit_path, true, "--config"};
  if (env.upskill_config) return {fs::path(*env.upskill_config), false, "UPSKILL_CONFIG"};
  if (fs::exists(env.cwd / "upskill.config.yaml", ec))
    return {env.cwd / "upskill.config.yaml", false, "./upskill.config.yaml"};
  if (env.home && fs::exists(*env.home / ".config" / "upskill" / "config.yaml", ec))
    return {*env.home / ".config" / "upskill" / "config.yaml", false,
            "~/.config/upskill/config.yaml"};
  return {std::nullopt, false, "built-in defaults"};
}

Result<Config> load_config(const std::optional<fs::path>& explicit_path,
                           const ConfigEnvironment& env) {
  const ConfigChoice choice = choose_config(explicit_path, env);
  std::error_code ec;
  if (!choice.path) {
    Config config;
    if (fs::exists(env.cwd / "fastagent.config.yaml", ec))
      UPSKILL_RETURN_IF_ERROR(load_fastagent_settings(config, env.cwd / "fastagent.config.yaml"));
    return config;
  }
  if (!fs::exists(*choice.path, ec)) {
    if (choice.required)
      return fail(Error::usage(fmt::format("{}: config file not found", choice.path->string())));
    // upskill uses $UPSKILL_CONFIG even when the file is missing: the defaults apply.
    Config config;
    config.warnings.push_back(fmt::format("{} (from {}) does not exist; using defaults",
                                          choice.path->string(), choice.reason));
    return config;
  }
  UPSKILL_ASSIGN_OR_RETURN(std::string text, files::read_text(*choice.path));
  UPSKILL_ASSIGN_OR_RETURN(Config config, parse_config(text, choice.path->string()));
  config.source = *choice.path;
  // fast-agent's endpoints: the file the config names (relative to the config's folder), else one
  // in the working directory.
  if (config.fastagent_config) {
    fs::path fa = *config.fastagent_config;
    if (fa.is_relative()) fa = choice.path->parent_path() / fa;
    if (fs::exists(fa, ec)) {
      UPSKILL_RETURN_IF_ERROR(load_fastagent_settings(config, fa));
    } else {
      config.warnings.push_back(fmt::format("fastagent_config {} does not exist", fa.string()));
    }
  } else if (fs::exists(env.cwd / "fastagent.config.yaml", ec)) {
    UPSKILL_RETURN_IF_ERROR(load_fastagent_settings(config, env.cwd / "fastagent.config.yaml"));
  }
  return config;
}

}  // namespace upskill::config
