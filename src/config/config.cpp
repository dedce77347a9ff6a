// upskill.config.yaml: upskill's keys plus `python:` and a `models:` map (see config.hpp).
#include "upskill/config/config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "upskill/core/enum_names.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "yaml_keys.hpp"

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

using yaml_keys::into;
using yaml_keys::Key;
using yaml_keys::Value;

constexpr long long kMost = std::numeric_limits<int>::max();  // counts with no smaller bound

// A string that must not be empty, and whose absence (null) is an error too.
Result<std::string> required_text(const Value& v, const std::string& what) {
  UPSKILL_ASSIGN_OR_RETURN(auto text, v.string());
  if (!text || text->empty()) return fail(v.error(fmt::format("'{}' must {}", v.key(), what)));
  return *text;
}

// A mapping's value as JSON (chat_template_kwargs, extra_body); null: unset.
Result<std::optional<Json>> mapping_json(const Value& v) {
  if (v.node().IsNull()) return std::optional<Json>{};
  if (!v.node().IsMap()) return fail(v.error(fmt::format("'{}' must be a mapping", v.key())));
  UPSKILL_ASSIGN_OR_RETURN(Json j, v.json());
  return std::optional<Json>{std::move(j)};
}

// The keys of a `prices:` mapping.
const std::vector<Key<ModelPrices>>& price_keys() {
  auto price = [](std::optional<double> ModelPrices::*member) {
    return into(member, [](const Value& v) -> Result<double> {
      UPSKILL_ASSIGN_OR_RETURN(double d, v.number());
      if (d < 0) return fail(v.error("prices must not be negative"));
      return d;
    });
  };
  static const std::vector<Key<ModelPrices>> keys{
      {"input", price(&ModelPrices::input), "USD per million input tokens"},
      {"output", price(&ModelPrices::output), "USD per million output tokens"},
      {"cached_input", price(&ModelPrices::cached_input), "USD per million cached input tokens"}};
  return keys;
}

// The keys of one model under `models:` (docs/configuration.md, "models:").
const std::vector<Key<ModelConfig>>& model_keys() {
  static const std::vector<Key<ModelConfig>> keys{
      {"provider",
       into(&ModelConfig::provider,
            [](const Value& v) -> Result<std::string> {
              UPSKILL_ASSIGN_OR_RETURN(auto p, v.string());
              const auto& known = known_providers();
              if (!p || std::find(known.begin(), known.end(), *p) == known.end())
                return fail(
                    v.error(fmt::format("provider must be one of: {}", fmt::join(known, ", "))));
              return *p;
            }),
       "openai, anthropic or generic (required)"},
      {"base_url",
       into(&ModelConfig::base_url,
            [](const Value& v) -> Result<std::optional<std::string>> {
              UPSKILL_ASSIGN_OR_RETURN(auto url, v.string());
              if (url && !url->starts_with("http://") && !url->starts_with("https://"))
                return fail(v.error(
                    fmt::format("base_url '{}' must start with http:// or https://", *url)));
              return url;
            }),
       "the API root"},
      {"model",
       into(&ModelConfig::model, [](const Value& v) { return required_text(v, "not be empty"); }),
       "the model id sent to the server"},
      {"api_key_env", into(&ModelConfig::api_key_env, yaml_keys::optional_string),
       "the environment variable holding the key"},
      {"api_key",
       [](ModelConfig&, const Value& v) -> Status {
         return fail(v.error(
             "API keys do not belong in config files; put the key in an environment variable "
             "and name it with 'api_key_env'"));
       },
       "refused: keys never go in the file"},
      {"max_concurrency", into(&ModelConfig::max_concurrency, yaml_keys::optional_int(1, kMost)),
       "requests in flight to this model"},
      {"prices",
       [](ModelConfig& m, const Value& v) -> Status {
         if (!v.node().IsMap())
           return fail(v.error("'prices' must be a mapping (input, output, cached_input)"));
         ModelPrices prices;
         const yaml_keys::Mapping in{v.node(), v.mapping().file, v.mapping().context + ": prices",
                                     v.mapping().warnings};
         UPSKILL_RETURN_IF_ERROR(yaml_keys::read_mapping(in, price_keys(), prices));
         m.prices = prices;
         return {};
       },
       "USD per million tokens"},
      {"max_tokens_field",
       into(&ModelConfig::max_tokens_field,
            [](const Value& v) -> Result<std::optional<std::string>> {
              UPSKILL_ASSIGN_OR_RETURN(auto field, v.string());
              if (field && *field != "max_tokens" && *field != "max_completion_tokens")
                return fail(
                    v.error("max_tokens_field must be 'max_tokens' or 'max_completion_tokens'"));
              return field;
            }),
       "max_tokens or max_completion_tokens"},
      {"max_tokens", into(&ModelConfig::max_tokens, [](const Value& v) { return v.integer(1); }),
       "sampling option"},
      {"temperature", into(&ModelConfig::temperature, [](const Value& v) { return v.number(); }),
       "sampling option"},
      {"top_p", into(&ModelConfig::top_p, [](const Value& v) { return v.number(); }),
       "sampling option"},
      {"reasoning_effort", into(&ModelConfig::reasoning_effort, yaml_keys::optional_string),
       "sampling option"},
      {"chat_template_kwargs", into(&ModelConfig::chat_template_kwargs, mapping_json),
       "passed to llama.cpp / vLLM chat templates"},
      {"extra_body", into(&ModelConfig::extra_body, mapping_json),
       "merged into every request body"},
      {"stream", into(&ModelConfig::stream, [](const Value& v) { return v.boolean(); }),
       "use SSE streaming"},
      {"timeout_s",
       into(&ModelConfig::timeout_s,
            [](const Value& v) -> Result<double> {
              UPSKILL_ASSIGN_OR_RETURN(double t, v.number());
              // Below a millisecond it would round to 0, which the client reads as no limit.
              if (t < 0.001) return fail(v.error("'timeout_s' must be at least 0.001 (seconds)"));
              return t;
            }),
       "per-request time limit"},
      {"anthropic_version", into(&ModelConfig::anthropic_version, yaml_keys::optional_string),
       "the anthropic-version header"}};
  return keys;
}

Result<ModelConfig> parse_model(const Value& entry) {
  const std::string name = entry.key();
  if (name.empty()) return fail(entry.error("model names must not be empty"));
  const yaml_keys::Mapping in{entry.node(), entry.mapping().file, fmt::format("model '{}'", name),
                              entry.mapping().warnings};
  const Value at(entry.key_node(), entry.node(), in);
  if (!entry.node().IsMap())
    return fail(at.error("must be a mapping (provider, base_url, model, ...)"));
  ModelConfig m;
  m.name = name;
  m.model = name;
  m.defined_at = at.where(entry.key_node());
  UPSKILL_RETURN_IF_ERROR(yaml_keys::read_mapping(in, model_keys(), m));
  if (m.provider.empty())
    return fail(at.error(
        fmt::format("missing 'provider' (one of: {})", fmt::join(known_providers(), ", "))));
  return m;
}

}  // namespace

const std::vector<std::string>& known_providers() {
  static const std::vector<std::string> providers{
      "openai",   "anthropic", "generic", "hf",     "openrouter", "google",   "googleoai",
      "deepseek", "xai",       "groq",    "aliyun", "tensorzero", "responses"};
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

// The keys of the `slurm:` mapping: defaults of the --slurm-* flags (docs/scale-out.md).
const std::vector<Key<Config::Slurm>>& slurm_keys() {
  using S = Config::Slurm;
  auto text = [](std::optional<std::string> S::*member) {
    return into(member, yaml_keys::optional_string);
  };
  static const std::vector<Key<S>> keys{
      {"partition", text(&S::partition), "#SBATCH --partition"},
      {"time", text(&S::time), "#SBATCH --time"},
      {"account", text(&S::account), "#SBATCH --account"},
      {"mem", text(&S::mem), "#SBATCH --mem"},
      {"cpus_per_task", text(&S::cpus_per_task), "#SBATCH --cpus-per-task"},
      {"gpu_partition", text(&S::gpu_partition), "the kernel shards' partition"},
      {"gpu_gres", text(&S::gpu_gres), "what a kernel shard asks for"},
      {"upskill", text(&S::upskill), "the binary the compute nodes run"},
      {"options",
       [](S& slurm, const Value& v) -> Status {
         if (v.node().IsNull()) return {};
         if (!v.node().IsSequence())
           return fail(v.error("'options' must be a list of sbatch options"));
         UPSKILL_ASSIGN_OR_RETURN(auto lines, v.strings());
         slurm.options.insert(slurm.options.end(), lines.begin(), lines.end());
         return {};
       },
       "further #SBATCH lines"}};
  return keys;
}

Result<fs::path> directory(const Value& v) {
  UPSKILL_ASSIGN_OR_RETURN(auto dir, v.string());
  if (!dir || dir->empty())
    return fail(v.error(fmt::format("'{}' must be a directory path", v.key())));
  return fs::path(*dir);
}

// The top-level keys (docs/configuration.md).
const std::vector<Key<Config>>& config_keys() {
  auto text = [](std::optional<std::string> Config::*member) {
    return into(member, yaml_keys::optional_string);
  };
  static const std::vector<Key<Config>> keys{
      {"skill_generation_model",
       [](Config& c, const Value& v) -> Status {
         UPSKILL_ASSIGN_OR_RETURN(auto name, v.string());
         if (name) c.skill_generation_model = *name;
         return {};
       },
       "the teacher model for generate"},
      {"model",
       [](Config& c, const Value& v) -> Status {
         UPSKILL_ASSIGN_OR_RETURN(auto name, v.string());
         // upskill's old name of skill_generation_model; the new name wins when both are set.
         if (name && !v.sibling_set("skill_generation_model")) c.skill_generation_model = *name;
         return {};
       },
       "the old name of skill_generation_model"},
      {"eval_model", text(&Config::eval_model), "the student when -m is not given"},
      {"test_gen_model", text(&Config::test_gen_model), "the model that writes test cases"},
      {"judge_model", text(&Config::judge_model), "the judge of judge checks that name none"},
      {"skills_dir", into(&Config::skills_dir, directory), "where skills are written and listed"},
      {"runs_dir", into(&Config::runs_dir, directory), "where run logs go"},
      {"max_refine_attempts", into(&Config::max_refine_attempts, yaml_keys::whole(0, kMost)),
       "refinement rounds in generate"},
      {"auto_eval", into(&Config::auto_eval, yaml_keys::boolean),
       "accepted for compatibility; not used"},
      {"fastagent_config", text(&Config::fastagent_config), "fast-agent's config file"},
      {"python", text(&Config::python), "the interpreter that has torch"},
      {"retries", into(&Config::retries, yaml_keys::whole(0, 20)),
       "retries of a failed model call"},
      {"retry_delay_s", into(&Config::retry_delay_s, yaml_keys::number_between(0, 60)),
       "the first retry's delay"},
      {"num_runs", into(&Config::num_runs, yaml_keys::optional_int(1, kMost)),
       "runs per case when --runs is not given"},
      {"max_parallel", into(&Config::max_parallel, yaml_keys::optional_int(1, kMost)),
       "requests in flight when -j is not given"},
      {"executor",
       into(&Config::executor,
            [](const Value& v) -> Result<Executor> {
              UPSKILL_ASSIGN_OR_RETURN(auto e, v.string());
              const auto executor = e ? executor_from_string(*e) : Executor::local;
              if (!executor) return fail(v.error("'executor' must be 'local', 'slurm' or 'jobs'"));
              return *executor;
            }),
       "where eval trials run"},
      {"shards", into(&Config::shards, yaml_keys::optional_int(1, 10000)),
       "how many shards slurm and jobs run"},
      {"slurm",
       [](Config& c, const Value& v) -> Status {
         if (v.node().IsNull()) return {};
         if (!v.node().IsMap())
           return fail(v.error("'slurm' must be a mapping (partition, time, …)"));
         const yaml_keys::Mapping in{v.node(), v.mapping().file, "slurm", v.mapping().warnings};
         return yaml_keys::read_mapping(in, slurm_keys(), c.slurm);
       },
       "the Slurm executor's settings"},
      {"jobs_secrets",
       [](Config& c, const Value& v) -> Status {
         if (v.node().IsNull()) return {};  // unset: the default (HF_TOKEN) stays
         auto read = [](const Value& v) -> Result<std::vector<std::string>> {
           // A comma-separated string, as upskill writes it, or a list.
           std::vector<std::string> items;
           if (v.node().IsSequence()) {
             UPSKILL_ASSIGN_OR_RETURN(items, v.strings());
           } else {
             UPSKILL_ASSIGN_OR_RETURN(auto secrets, v.string());
             items.push_back(secrets.value_or(""));
           }
           std::vector<std::string> names;
           for (const auto& item : items)
             for (auto& part : text::split_list(item)) names.push_back(std::move(part));
           return names;
         };
         UPSKILL_ASSIGN_OR_RETURN(c.jobs_secrets, read(v));
         return {};
       },
       "environment variables passed to Hugging Face Jobs"},
      {"jobs_image", text(&Config::jobs_image), "Hugging Face Jobs: the container image"},
      {"jobs_flavor", text(&Config::jobs_flavor), "Hugging Face Jobs: the hardware flavor"},
      {"jobs_timeout", text(&Config::jobs_timeout), "Hugging Face Jobs: each job's time limit"},
      {"jobs_namespace", text(&Config::jobs_namespace), "Hugging Face Jobs: the namespace"},
      {"artifact_repo", text(&Config::artifact_repo), "Hugging Face Jobs: the dataset repository"},
      {"cli_providers",
       [](Config& c, const Value& v) -> Status {
         if (v.node().IsNull()) return {};
         if (!v.node().IsMap()) return fail(v.error("'cli_providers' must be a mapping"));
         UPSKILL_ASSIGN_OR_RETURN(c.cli_providers, v.json());
         return {};
       },
       "coding-agent students' settings"},
      {"models",
       [](Config& c, const Value& v) -> Status {
         if (v.node().IsNull()) return {};
         if (!v.node().IsMap())
           return fail(v.error("'models' must be a mapping of model names to settings"));
         const yaml_keys::Mapping in{v.node(), v.mapping().file, "", v.mapping().warnings};
         UPSKILL_RETURN_IF_ERROR(yaml_keys::check_keys(in));
         for (const auto& item : v.node()) {
           UPSKILL_ASSIGN_OR_RETURN(ModelConfig m, parse_model(Value(item.first, item.second, in)));
           c.models.push_back(std::move(m));
         }
         return {};
       },
       "named models"}};
  return keys;
}

template <class Target>
std::vector<std::pair<std::string, std::string>> key_docs(const std::vector<Key<Target>>& keys) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& k : keys) out.emplace_back(k.name, k.doc);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> documented_keys(std::string_view mapping) {
  if (mapping == "models.NAME") return key_docs(model_keys());
  if (mapping == "models.NAME.prices") return key_docs(price_keys());
  if (mapping == "slurm") return key_docs(slurm_keys());
  return key_docs(config_keys());
}

Result<Config> parse_config(std::string_view text, const std::string& file) {
  Config config;
  YAML::Node root;
  try {
    // One document: settings after a second `---` would be silently dropped.
    const std::vector<YAML::Node> documents = YAML::LoadAll(std::string(text));
    if (documents.size() > 1) {
      const auto mark = documents[1].Mark();
      return fail(Error::at({file, mark.is_null() ? 0 : mark.line + 1, 0},
                            "a config is one YAML document; a second one starts here"));
    }
    if (!documents.empty()) root = documents[0];
  } catch (const YAML::Exception& e) {
    return fail(Error::at({file, e.mark.line + 1, e.mark.column + 1}, "invalid YAML: " + e.msg));
  }
  if (root.IsNull()) return config;  // an empty file means defaults
  if (!root.IsMap())
    return fail(Error::at({file, 1, 0}, "the config must be a YAML mapping of settings"));
  if (auto read = yaml_keys::read_mapping({root, file, "", config.warnings}, config_keys(), config);
      !read) {
    // What was ignored before the error may be why (a misspelt key): said with it.
    Error e = read.error();
    for (const auto& w : config.warnings) e.message += "\n  also: " + w;
    return fail(std::move(e));
  }
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
