#pragma once
// upskill.config.yaml: upskill's keys plus `python:` and a `models:` map. Lookup order:
// --config FILE, then $UPSKILL_CONFIG (used even when the file is missing, as upskill does), then
// ./upskill.config.yaml, then ~/.config/upskill/config.yaml, else built-in defaults.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "upskill/core/error.hpp"
#include "upskill/core/json.hpp"

namespace upskill::config {

namespace fs = std::filesystem;

// USD per million tokens.
struct ModelPrices {
  std::optional<double> input;
  std::optional<double> output;
  std::optional<double> cached_input;
};

struct ModelConfig {
  std::string name;      // the key under models:, used with -m
  std::string provider;  // openai | anthropic | generic (any OpenAI-compatible server)
  std::optional<std::string> base_url;
  std::string model;                       // id sent to the server; defaults to the name
  std::optional<std::string> api_key_env;  // environment variable holding the key (never the key)
  std::optional<int> max_concurrency;
  std::optional<ModelPrices> prices;
  // Request dialect options.
  std::optional<std::string> max_tokens_field;  // max_tokens | max_completion_tokens
  std::optional<long long> max_tokens;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<std::string> reasoning_effort;
  std::optional<Json> chat_template_kwargs;  // e.g. {enable_thinking: false} for llama.cpp / vLLM
  std::optional<Json> extra_body;            // merged into every request body
  std::optional<bool> stream;
  std::optional<double> timeout_s;
  std::optional<std::string> anthropic_version;
  SourceLocation defined_at;
};

// A provider's endpoint and key as fast-agent's fastagent.config.yaml (and fastagent.secrets.yaml)
// give them (docs/models.md). A key written in the file is kept only to call that provider and is
// never printed; `${VAR}` keys are kept as the variable's name.
struct ProviderSettings {
  std::optional<std::string> base_url;
  std::optional<std::string> api_key_env;       // ${VAR} (or ${VAR:default}, default below)
  std::optional<std::string> api_key;           // a literal key, or ${VAR:default}'s default
  std::optional<std::string> default_provider;  // hf: the router's provider when a model names none
  SourceLocation defined_at;
};

// The parts models play: the teacher writes skills, the test writer writes test cases, students
// are evaluated with and without the skill.
enum class ModelRole { teacher, test_writer, student, judge };

// Where trials run (docs/scale-out.md): here, as a Slurm job array, or as Hugging Face Jobs.
enum class Executor { local, slurm, jobs };
std::string_view to_string(Executor executor);
std::optional<Executor> executor_from_string(std::string_view name);
const std::vector<std::string>& executor_names();

struct Config {
  std::string skill_generation_model = "sonnet";  // upskill's default teacher
  std::optional<std::string> eval_model;
  std::optional<std::string> test_gen_model;
  std::optional<std::string> judge_model;  // judge checks' default model (docs/judge.md)
  fs::path skills_dir = "./skills";
  fs::path runs_dir = "./runs";
  int max_refine_attempts = 2;
  bool auto_eval = true;  // accepted for compatibility; upskill ignores it too
  std::optional<std::string> fastagent_config;  // fast-agent's config: provider endpoints and keys
  std::optional<std::string> python;            // interpreter that has torch (kernel checks)
  int retries = 4;           // model calls: retries after a failed attempt (429, 5xx, network)
  double retry_delay_s = 1;  // the first retry's delay, doubled at each next one (with jitter)
  std::vector<ModelConfig> models;  // in file order
  // upskill main's keys: defaults of --runs and --max-parallel, and the executors' settings
  // (docs/configuration.md, docs/scale-out.md).
  std::optional<int> num_runs;
  std::optional<int> max_parallel;
  Executor executor = Executor::local;
  std::optional<int> shards;  // how many shards slurm and jobs run (default 4)
  struct Slurm {              // the `slurm:` mapping: defaults of the --slurm-* flags
    std::optional<std::string> partition, time, account, gpu_partition, gpu_gres, mem,
        cpus_per_task;
    std::vector<std::string> options;    // further #SBATCH lines
    std::optional<std::string> upskill;  // the binary the tasks run (default: this one)
  } slurm;
  std::vector<std::string> jobs_secrets{"HF_TOKEN"};
  std::optional<std::string> jobs_image, jobs_flavor, jobs_timeout, jobs_namespace, artifact_repo;
  Json cli_providers = Json::object();
  // Provider sections of fastagent.config.yaml / fastagent.secrets.yaml, by provider name.
  std::map<std::string, ProviderSettings> providers;

  std::optional<fs::path> source;     // the file these settings came from, if any
  std::vector<std::string> warnings;  // unknown keys, ignored settings

  const ModelConfig* find_model(std::string_view name) const;

  // Which model plays a role when the user names none on the command line. `teacher` is the
  // teacher the user chose for this command (generate -m), if any:
  //   teacher      teacher, else skill_generation_model
  //   test_writer  test_gen_model, else the teacher
  //   student      eval_model, else the teacher
  std::string model_for(ModelRole role, const std::optional<std::string>& teacher = {}) const;
};

// The keys of one mapping of the config file, each with what it means, from the one table its
// parser reads: "" (the top level), "models.NAME", "models.NAME.prices" or "slurm".
// docs/configuration.md describes each (tested).
std::vector<std::pair<std::string, std::string>> documented_keys(std::string_view mapping);

// Parses config text; `file` names it in messages ("file:line:col: ...").
Result<Config> parse_config(std::string_view text, const std::string& file);

struct ConfigEnvironment {
  std::optional<std::string> upskill_config;  // $UPSKILL_CONFIG
  fs::path cwd;
  std::optional<fs::path> home;
  static ConfigEnvironment current();
};

// Which file the lookup order picks, and why (for `-v` and error messages).
struct ConfigChoice {
  std::optional<fs::path> path;  // nullopt: built-in defaults
  bool required = false;         // --config: a missing file is an error
  std::string reason;
};
ConfigChoice choose_config(const std::optional<fs::path>& explicit_path,
                           const ConfigEnvironment& env);

Result<Config> load_config(const std::optional<fs::path>& explicit_path,
                           const ConfigEnvironment& env = ConfigEnvironment::current());

// Every provider a model may name (`provider:` in models:, the prefix of provider.model).
const std::vector<std::string>& known_providers();

// Reads fast-agent's provider sections into config.providers: `path` (with fastagent.secrets.yaml
// beside it, when present). Other sections of the file are fast-agent's own and ignored.
Status load_fastagent_settings(Config& config, const fs::path& path);

}  // namespace upskill::config
