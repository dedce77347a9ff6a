// config/: upskill.config.yaml read with positions in every message, the models: map, roles and
// upstream's keys.
#include <gtest/gtest.h>

#include "support/temp_dir.hpp"
#include "upskill/config/config.hpp"
#include "upskill/core/files.hpp"
#include "upskill/llm/model.hpp"

namespace upskill::config {
namespace {

constexpr const char* kFull = R"(# upskill's keys
skill_generation_model: sonnet
eval_model: glm-local
test_gen_model: haiku
skills_dir: ./my-skills
runs_dir: ./my-runs
max_refine_attempts: 3
auto_eval: false
python: /usr/bin/python3
retries: 2
retry_delay_s: 0.25
models:
  glm-local:
    provider: generic
    base_url: http://127.0.0.1:8080/v1
    model: glm-4.5-air
    max_concurrency: 2
    max_tokens_field: max_tokens
    max_tokens: 8192
    temperature: 0.6
    chat_template_kwargs:
      enable_thinking: false
    prices: {input: 0, output: 0}
  gpt:
    provider: openai
    model: gpt-4.1-mini
    api_key_env: OPENAI_API_KEY
    prices:
      input: 0.4
      output: 1.6
      cached_input: 0.1
)";

TEST(Config, ParsesEveryKey) {
  auto cfg = parse_config(kFull, "upskill.config.yaml");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->skill_generation_model, "sonnet");
  EXPECT_EQ(*cfg->eval_model, "glm-local");
  EXPECT_EQ(*cfg->test_gen_model, "haiku");
  EXPECT_EQ(cfg->skills_dir, "./my-skills");
  EXPECT_EQ(cfg->runs_dir, "./my-runs");
  EXPECT_EQ(cfg->max_refine_attempts, 3);
  EXPECT_FALSE(cfg->auto_eval);
  EXPECT_EQ(*cfg->python, "/usr/bin/python3");
  EXPECT_EQ(cfg->retries, 2);
  EXPECT_EQ(cfg->retry_delay_s, 0.25);
  ASSERT_EQ(cfg->models.size(), 2u);
  const auto* glm = cfg->find_model("glm-local");
  ASSERT_NE(glm, nullptr);
  EXPECT_EQ(glm->provider, "generic");
  EXPECT_EQ(*glm->base_url, "http://127.0.0.1:8080/v1");
  EXPECT_EQ(glm->model, "glm-4.5-air");
  EXPECT_EQ(*glm->max_concurrency, 2);
  EXPECT_EQ(*glm->max_tokens, 8192);
  EXPECT_EQ((*glm->chat_template_kwargs)["enable_thinking"], false);
  EXPECT_EQ(glm->defined_at.line, 13);
  const auto* gpt = cfg->find_model("gpt");
  ASSERT_NE(gpt, nullptr);
  EXPECT_EQ(*gpt->api_key_env, "OPENAI_API_KEY");
  EXPECT_EQ(*gpt->prices->cached_input, 0.1);
  EXPECT_EQ(cfg->find_model("nope"), nullptr);
  EXPECT_TRUE(cfg->warnings.empty());
}

TEST(Config, DefaultsAndLegacyModelKey) {
  auto empty = parse_config("", "c.yaml");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->skill_generation_model, "sonnet");
  EXPECT_EQ(empty->skills_dir, "./skills");
  EXPECT_EQ(empty->runs_dir, "./runs");
  EXPECT_EQ(empty->max_refine_attempts, 2);
  EXPECT_EQ(empty->retries, 4);
  EXPECT_EQ(empty->retry_delay_s, 1.0);
  auto legacy = parse_config("model: opus\n", "c.yaml");
  ASSERT_TRUE(legacy);
  EXPECT_EQ(legacy->skill_generation_model, "opus");
  auto both = parse_config("skill_generation_model: haiku\nmodel: opus\n", "c.yaml");
  ASSERT_TRUE(both);
  EXPECT_EQ(both->skill_generation_model, "haiku");  // the current name wins
  auto model_model = parse_config("models:\n  m:\n    provider: openai\n", "c.yaml");
  ASSERT_TRUE(model_model);
  EXPECT_EQ(model_model->models[0].model, "m");  // model id defaults to the name
}

TEST(Config, UnknownKeysWarnWithLocation) {
  auto cfg = parse_config(
      "skills_dir: s\nfancy: 1\nmodels:\n  m:\n    provider: openai\n    colour: red\n", "c.yaml");
  ASSERT_TRUE(cfg);
  ASSERT_EQ(cfg->warnings.size(), 2u);
  EXPECT_EQ(cfg->warnings[0], "c.yaml:2:1: unknown key 'fancy' is ignored");
  EXPECT_EQ(cfg->warnings[1], "c.yaml:6:5: model 'm': unknown key 'colour' is ignored");
}

struct BadConfig {
  const char* yaml;
  const char* message;
};
void PrintTo(const BadConfig& c, std::ostream* os) {
  *os << c.yaml;
}

class ConfigErrors : public ::testing::TestWithParam<BadConfig> {};

TEST_P(ConfigErrors, NameFileLineAndReason) {
  auto cfg = parse_config(GetParam().yaml, "cfg.yaml");
  ASSERT_FALSE(cfg) << GetParam().yaml;
  EXPECT_NE(cfg.error().message.find(GetParam().message), std::string::npos) << cfg.error().message;
  EXPECT_EQ(cfg.error().message.rfind("cfg.yaml:", 0), 0u) << cfg.error().message;
  EXPECT_EQ(cfg.error().code, ExitCode::usage);
}

INSTANTIATE_TEST_SUITE_P(
    AllPaths, ConfigErrors,
    ::testing::Values(
        BadConfig{"a: [1,\n", "invalid YAML"}, BadConfig{"- a\n- b\n", "must be a YAML mapping"},
        BadConfig{"eval_model: [a]\n", "'eval_model' must be a string"},
        BadConfig{"skills_dir: \"\"\n", "'skills_dir' must be a directory path"},
        BadConfig{"max_refine_attempts: many\n", "'max_refine_attempts' must be a whole number"},
        BadConfig{"max_refine_attempts: -1\n", "must be at least 0"},
        BadConfig{"retries: -1\n", "must be at least 0"},
        BadConfig{"retries: 21\n", "'retries' must be at most 20"},
        BadConfig{"retries: often\n", "'retries' must be a whole number"},
        BadConfig{"retry_delay_s: -0.5\n", "'retry_delay_s' must be between 0 and 60"},
        BadConfig{"retry_delay_s: .nan\n", "'retry_delay_s' must be a number"},
        BadConfig{"retry_delay_s: soon\n", "'retry_delay_s' must be a number"},
        BadConfig{"auto_eval: maybe\n", "'auto_eval' must be true or false"},
        BadConfig{"models: [a]\n", "'models' must be a mapping"},
        BadConfig{"models:\n  m: 3\n", "cfg.yaml:2:3: model 'm': must be a mapping"},
        BadConfig{"models:\n  m:\n    base_url: http://x\n", "missing 'provider'"},
        BadConfig{"models:\n  m:\n    provider: azure\n",
                  "provider must be one of: openai, anthropic, generic"},
        BadConfig{"models:\n  m:\n    provider: openai\n    base_url: localhost:8080\n",
                  "must start with http://"},
        BadConfig{"models:\n  m:\n    provider: openai\n    model: \"\"\n",
                  "'model' must not be empty"},
        BadConfig{"models:\n  m:\n    provider: openai\n    api_key: sk-secret\n",
                  "API keys do not belong"},
        BadConfig{"models:\n  m:\n    provider: openai\n    max_concurrency: 0\n",
                  "'max_concurrency' must be at least 1"},
        BadConfig{"models:\n  m:\n    provider: openai\n    prices: 3\n",
                  "'prices' must be a mapping"},
        BadConfig{"models:\n  m:\n    provider: openai\n    prices:\n      input: -1\n",
                  "must not be negative"},
        BadConfig{"models:\n  m:\n    provider: openai\n    prices:\n      input: cheap\n",
                  "'input' must be a number"},
        BadConfig{"models:\n  m:\n    provider: openai\n    max_tokens_field: tokens\n",
                  "max_tokens_field must be"},
        BadConfig{"models:\n  m:\n    provider: openai\n    temperature: hot\n",
                  "'temperature' must be a number"},
        BadConfig{"models:\n  m:\n    provider: openai\n    chat_template_kwargs: 1\n",
                  "must be a mapping"},
        BadConfig{"models:\n  m:\n    provider: openai\n    stream: sometimes\n",
                  "'stream' must be true or false"},
        BadConfig{"models:\n  m:\n    provider: openai\n    timeout_s: 0\n", "at least 0.001"},
        BadConfig{"executor: cloud\n", "'executor' must be 'local', 'slurm' or 'jobs'"},
        BadConfig{"shards: 0\n", "must be at least 1"},
        BadConfig{"shards: many\n", "'shards' must be a whole number"},
        BadConfig{"slurm: gpu\n", "'slurm' must be a mapping"},
        BadConfig{"slurm:\n  options: --qos=high\n",
                  "cfg.yaml:2:3: slurm: 'options' must be a list"},
        BadConfig{"slurm:\n  partition: [a]\n", "slurm: 'partition' must be a string"},
        BadConfig{"jobs_flavor: {a: 1}\n", "'jobs_flavor' must be a string"}));

TEST(Config, ExecutorKeys) {
  auto cfg = parse_config(
      "executor: slurm\nshards: 8\nslurm:\n  partition: cpu\n  time: \"2:00:00\"\n  account: lab\n"
      "  options: [--qos=high, --mem=4G]\n  gpu_partition: gpu\n  gpu_gres: gpu:h200:1\n"
      "  upskill: /opt/upskill/bin/upskill\n  colour: blue\njobs_secrets: [HF_TOKEN, "
      "OPENAI_API_KEY]\n"
      "jobs_flavor: a10g-small\njobs_timeout: 30m\njobs_namespace: org\n"
      "artifact_repo: me/runs\n",
      "c.yaml");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->executor, Executor::slurm);
  EXPECT_EQ(cfg->shards, 8);
  EXPECT_EQ(cfg->slurm.partition, "cpu");
  EXPECT_EQ(cfg->slurm.time, "2:00:00");
  EXPECT_EQ(cfg->slurm.account, "lab");
  EXPECT_EQ(cfg->slurm.options, (std::vector<std::string>{"--qos=high", "--mem=4G"}));
  EXPECT_EQ(cfg->slurm.gpu_partition, "gpu");
  EXPECT_EQ(cfg->slurm.gpu_gres, "gpu:h200:1");
  EXPECT_EQ(cfg->slurm.upskill, "/opt/upskill/bin/upskill");
  EXPECT_EQ(cfg->jobs_secrets, (std::vector<std::string>{"HF_TOKEN", "OPENAI_API_KEY"}));
  EXPECT_EQ(cfg->jobs_flavor, "a10g-small");
  EXPECT_EQ(cfg->jobs_timeout, "30m");
  EXPECT_EQ(cfg->jobs_namespace, "org");
  EXPECT_EQ(cfg->artifact_repo, "me/runs");
  ASSERT_EQ(cfg->warnings.size(), 1u);  // slurm.colour
  EXPECT_NE(cfg->warnings[0].find("c.yaml:11:3: slurm: unknown key 'colour'"), std::string::npos)
      << cfg->warnings[0];
  // upskill's comma-separated form.
  auto upstream =
      parse_config("executor: jobs\njobs_secrets: \"HF_TOKEN, OPENAI_API_KEY,\"\n", "c.yaml");
  ASSERT_TRUE(upstream);
  EXPECT_EQ(upstream->jobs_secrets, (std::vector<std::string>{"HF_TOKEN", "OPENAI_API_KEY"}));
  EXPECT_TRUE(upstream->warnings.empty());
}

TEST(Config, SecretsNeverEchoed) {
  auto cfg =
      parse_config("models:\n  m:\n    provider: openai\n    api_key: sk-very-secret\n", "c.yaml");
  ASSERT_FALSE(cfg);
  EXPECT_EQ(cfg.error().message.find("sk-very-secret"), std::string::npos);
}

TEST(Config, LookupOrder) {
  testing::TempDir dir;
  ConfigEnvironment env;
  env.cwd = dir / "project";
  env.home = dir / "home";
  std::filesystem::create_directories(env.cwd);
  EXPECT_FALSE(choose_config(std::nullopt, env).path);  // defaults
  dir.write("home/.config/upskill/config.yaml", "skills_dir: from-home\n");
  EXPECT_EQ(choose_config(std::nullopt, env).reason, "~/.config/upskill/config.yaml");
  dir.write("project/upskill.config.yaml", "skills_dir: from-cwd\n");
  EXPECT_EQ(choose_config(std::nullopt, env).reason, "./upskill.config.yaml");
  EXPECT_EQ(load_config(std::nullopt, env)->skills_dir, "from-cwd");
  env.upskill_config = (dir / "env.yaml").string();
  EXPECT_EQ(choose_config(std::nullopt, env).reason, "UPSKILL_CONFIG");
  // upskill uses $UPSKILL_CONFIG even when the file is missing: defaults, with a warning.
  auto missing_env = load_config(std::nullopt, env);
  ASSERT_TRUE(missing_env);
  EXPECT_EQ(missing_env->skills_dir, "./skills");
  EXPECT_EQ(missing_env->warnings.size(), 1u);
  dir.write("env.yaml", "skills_dir: from-env\n");
  EXPECT_EQ(load_config(std::nullopt, env)->skills_dir, "from-env");
  EXPECT_EQ(*load_config(std::nullopt, env)->source, dir / "env.yaml");
  dir.write("explicit.yaml", "skills_dir: from-flag\n");
  EXPECT_EQ(load_config(dir / "explicit.yaml", env)->skills_dir, "from-flag");
  auto missing_flag = load_config(dir / "absent.yaml", env);
  ASSERT_FALSE(missing_flag);
  EXPECT_NE(missing_flag.error().message.find("absent.yaml: config file not found"),
            std::string::npos);
}

}  // namespace
}  // namespace upskill::config

namespace upskill::config {
namespace {
TEST(Config, ShippedExampleLoadsCleanly) {
  auto cfg =
      load_config(std::filesystem::path(UPSKILL_SOURCE_DIR) / "examples/upskill.config.yaml");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_TRUE(cfg->warnings.empty()) << cfg->warnings[0];
  ASSERT_NE(cfg->find_model("glm-local"), nullptr);
  EXPECT_EQ(cfg->models.front().name, "glm-local");  // the documented first example
  EXPECT_EQ(cfg->find_model("glm-local")->provider, "generic");
}

TEST(Config, ModelRoles) {
  Config c;  // skill_generation_model: sonnet, nothing else set
  EXPECT_EQ(c.model_for(ModelRole::teacher), "sonnet");
  EXPECT_EQ(c.model_for(ModelRole::test_writer), "sonnet");
  EXPECT_EQ(c.model_for(ModelRole::student), "sonnet");
  // A teacher chosen on the command line (generate -m) stands in for the unset roles.
  EXPECT_EQ(c.model_for(ModelRole::teacher, "opus"), "opus");
  EXPECT_EQ(c.model_for(ModelRole::test_writer, "opus"), "opus");
  EXPECT_EQ(c.model_for(ModelRole::student, "opus"), "opus");
  c.test_gen_model = "writer";
  c.eval_model = "student";
  EXPECT_EQ(c.model_for(ModelRole::test_writer, "opus"), "writer");
  EXPECT_EQ(c.model_for(ModelRole::student, "opus"), "student");
  EXPECT_EQ(c.model_for(ModelRole::teacher, "opus"), "opus");
  EXPECT_EQ(c.model_for(ModelRole::teacher), "sonnet");
}

}  // namespace
}  // namespace upskill::config

namespace upskill::config {
namespace {

// fast-agent's fastagent.config.yaml (and secrets) give endpoints and keys to models by provider.
TEST(FastAgentConfig, EndpointsAndKeysReachModels) {
  testing::TempDir tmp;
  tmp.write("fastagent.config.yaml", R"(default_model: kimi
logger:
  level: warning
mcp:
  servers: {}
generic:
  base_url: "http://127.0.0.1:9/v1"
hf:
  default_provider: together
openrouter:
  api_key: ${MY_ROUTER_KEY}
)");
  tmp.write("fastagent.secrets.yaml", "anthropic:\n  api_key: sk-ant-literal\n");
  tmp.write("upskill.config.yaml", "fastagent_config: fastagent.config.yaml\n");
  auto cfg = load_config(tmp / "upskill.config.yaml");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(*cfg->providers.at("generic").base_url, "http://127.0.0.1:9/v1");
  EXPECT_EQ(*cfg->providers.at("openrouter").api_key_env, "MY_ROUTER_KEY");
  auto env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "MY_ROUTER_KEY") return "or-key";
    if (name == "HF_TOKEN") return "hf";
    return std::nullopt;
  };
  auto generic = llm::resolve_model("generic.llama3", *cfg, env);
  ASSERT_TRUE(generic) << generic.error().message;
  EXPECT_EQ(generic->base_url, "http://127.0.0.1:9/v1");
  auto routed = llm::resolve_model("openrouter.x/y", *cfg, env);
  ASSERT_TRUE(routed) << routed.error().message;
  EXPECT_EQ(routed->api_key.reveal(), "or-key");
  auto claude = llm::resolve_model("sonnet", *cfg, env);
  ASSERT_TRUE(claude) << claude.error().message;
  EXPECT_EQ(claude->api_key.reveal(), "sk-ant-literal");
  EXPECT_EQ(llm::resolve_model("hf.Qwen/Qwen3", *cfg, env)->model, "Qwen/Qwen3:together");
}

// Type mutations of a realistic fastagent.config.yaml: an error naming the file, or a config;
// never an exception.
TEST(FastAgentConfig, MutatedFilesNameTheFile) {
  const std::vector<std::string> values{"[1, 2]",  "{a: b}", "42", "null",           "\"\"",
                                        "ftp://x", "[[",     "${", "{base_url: [1]}"};
  const std::vector<std::string> templates{
      "generic:\n  base_url: VALUE\n",   "hf: VALUE\n",
      "openrouter:\n  api_key: VALUE\n", "VALUE: 1\n",
      "generic:\n  VALUE: 1\n",          "anthropic:\n  default_provider: VALUE\n"};
  int errors = 0, loaded = 0;
  for (const auto& t : templates)
    for (const auto& v : values) {
      testing::TempDir tmp;
      std::string text = t;
      text.replace(text.find("VALUE"), 5, v);
      tmp.write("fastagent.config.yaml", text);
      Config config;
      auto r = load_fastagent_settings(config, tmp / "fastagent.config.yaml");
      if (r) {
        ++loaded;
      } else {
        ++errors;
        EXPECT_NE(r.error().message.find("fastagent.config.yaml"), std::string::npos)
            << r.error().message;
      }
    }
  EXPECT_GT(errors, 5);
  EXPECT_GT(loaded, 5);
}

}  // namespace
}  // namespace upskill::config

namespace upskill::config {
namespace {

// Each mapping's keys come from the one table its parser reads; every one of them is described in
// docs/configuration.md, and a key the table lacks is only a warning, never read into a neighbour.
TEST(ConfigKeys, EveryKeyOfEveryTableIsDocumented) {
  auto doc = files::read_text(std::filesystem::path(UPSKILL_SOURCE_DIR) / "docs/configuration.md");
  ASSERT_TRUE(doc);
  for (const char* mapping : {"", "models.NAME", "models.NAME.prices", "slurm"}) {
    const auto keys = documented_keys(mapping);
    EXPECT_GE(keys.size(), 3u) << mapping;
    for (const auto& [key, what] : keys) {
      EXPECT_NE(doc->find("`" + key + "`"), std::string::npos) << mapping << ": " << key;
      EXPECT_FALSE(what.empty()) << mapping << ": " << key;
    }
  }
}

TEST(ConfigKeys, EveryKeyFillsItsOwnMemberAndNoOther) {
  // Each slurm key alone: exactly its member is set (an if-chain's last branch used to take any
  // unmatched key).
  for (const auto& [key, what] : documented_keys("slurm")) {
    if (key == "options") continue;
    auto cfg = parse_config("slurm:\n  " + key + ": v-" + key + "\n", "c.yaml");
    ASSERT_TRUE(cfg) << key << ": " << cfg.error().message;
    const auto& s = cfg->slurm;
    std::vector<std::string> set;
    for (const auto* m : {&s.partition, &s.time, &s.account, &s.gpu_partition, &s.gpu_gres, &s.mem,
                          &s.cpus_per_task, &s.upskill})
      if (*m) set.push_back(**m);
    EXPECT_EQ(set, std::vector<std::string>{"v-" + key}) << key;
  }
  for (const std::string key :
       {"jobs_image", "jobs_flavor", "jobs_timeout", "jobs_namespace", "artifact_repo"}) {
    auto cfg = parse_config(key + ": v-" + key + "\n", "c.yaml");
    ASSERT_TRUE(cfg) << key;
    std::vector<std::string> set;
    for (const auto* m : {&cfg->jobs_image, &cfg->jobs_flavor, &cfg->jobs_timeout,
                          &cfg->jobs_namespace, &cfg->artifact_repo})
      if (*m) set.push_back(**m);
    EXPECT_EQ(set, std::vector<std::string>{"v-" + key}) << key;
  }
  auto unknown = parse_config("slurm:\n  partitions: gpu\njobs_imag: x\n", "c.yaml");
  ASSERT_TRUE(unknown);
  EXPECT_FALSE(unknown->slurm.partition);
  EXPECT_FALSE(unknown->jobs_image);
  ASSERT_EQ(unknown->warnings.size(), 2u);
  EXPECT_NE(unknown->warnings[0].find("c.yaml:2:3: slurm: unknown key 'partitions'"),
            std::string::npos)
      << unknown->warnings[0];
}

}  // namespace
}  // namespace upskill::config

namespace upskill::config {
namespace {

// Config files nobody meant to write (found by a red-team pass over docs/configuration.md): each is
// refused with its file and line, exit 2 — never read into a default, a crash or a hang.
TEST(ConfigKeys, HostileFilesAreRefusedWithTheirLine) {
  struct Bad {
    std::string yaml, expected;
  };
  const std::string laughs =
      "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
      "a1: &a1 [*a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0]\n"
      "a2: &a2 [*a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1]\n"
      "a3: &a3 [*a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2]\n"
      "a4: &a4 [*a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3]\n"
      "a5: &a5 [*a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4]\n"
      "cli_providers: {x: [*a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5]}\n";
  const std::vector<Bad> bad{
      {"models:\n  [a, b]: {provider: generic}\n", "c.yaml:2:3: a key must be a plain name"},
      {"slurm:\n  {x: 1}: 2\n", "c.yaml:2:3: slurm: a key must be a plain name"},
      {"cli_providers: &a\n  x: *a\n", "c.yaml:1:1: 'cli_providers' nests deeper than 64"},
      {laughs, "more than 100000 values"},
      {"eval_model: a\n---\neval_model: b\n", "c.yaml:3: a config is one YAML document"},
      {"eval_model: a\neval_model: b\n",
       "c.yaml:2:1: 'eval_model' is given twice (first on line 1)"},
      {"models:\n  a: {provider: generic}\n  a: {provider: openai}\n",
       "c.yaml:3:3: 'a' is given twice"},
      {"models:\n  m: {provider: generic, timeout_s: .nan}\n", "'timeout_s' must be a number"},
      {"models:\n  m: {provider: generic, timeout_s: 0.0001}\n",
       "'timeout_s' must be at least 0.001"},
      {"models:\n  m: {provider: generic, prices: {input: .inf}}\n", "'input' must be a number"},
      {"models:\n  m: {provider: anthropic, anthropic_version: \"2023-06-01\\r\\nX-A: b\"}\n",
       "'anthropic_version' must be one line"},
      {"eval_model: \"\xff\"\n", "c.yaml:1:1: 'eval_model' is not UTF-8 text"},
      {"models:\n  m: {provider: generic, extra_body: {x: \"\xff\"}}\n",
       "holds text that is not UTF-8"},
      {"models:\n  a:\n    provder: generic\n", "missing 'provider'"},
      {"models:\n  a:\n    provder: generic\n",
       "\n  also: c.yaml:3:5: model 'a': unknown key 'provder' is ignored"},
  };
  for (const auto& b : bad) {
    auto cfg = parse_config(b.yaml, "c.yaml");
    ASSERT_FALSE(cfg) << b.yaml;
    EXPECT_EQ(cfg.error().code, ExitCode::usage) << b.yaml;
    EXPECT_NE(cfg.error().message.find(b.expected), std::string::npos) << b.yaml << "\n"
                                                                       << cfg.error().message;
  }
  // An unset jobs_secrets keeps its default, as every other unset Jobs key does.
  auto unset = parse_config("jobs_secrets: ~\n", "c.yaml");
  ASSERT_TRUE(unset);
  EXPECT_EQ(unset->jobs_secrets, std::vector<std::string>{"HF_TOKEN"});
}

}  // namespace
}  // namespace upskill::config
