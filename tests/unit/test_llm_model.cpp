#include <gtest/gtest.h>

#include "upskill/llm/model.hpp"

namespace upskill::llm {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

config::Config config_with_glm() {
  auto cfg = config::parse_config(R"(models:
  glm-local:
    provider: generic
    base_url: http://127.0.0.1:8080/v1/
    model: glm-4.5-air
    max_concurrency: 2
  keyed:
    provider: openai
    api_key_env: MY_KEY
)",
                                  "c.yaml");
  return *cfg;
}

TEST(ModelResolution, ConfiguredNameFirst) {
  auto m = resolve_model("glm-local", config_with_glm(), env_of({}));
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->provider, "generic");
  EXPECT_EQ(m->dialect, Dialect::openai);
  EXPECT_EQ(m->base_url, "http://127.0.0.1:8080/v1");  // trailing slash dropped
  EXPECT_EQ(m->model, "glm-4.5-air");
  EXPECT_EQ(m->max_concurrency, 2);
  EXPECT_TRUE(m->api_key.empty());  // local servers need no key
  EXPECT_EQ(m->source, "config");
  EXPECT_EQ(chat_endpoint(*m), "http://127.0.0.1:8080/v1/chat/completions");
}

TEST(ModelResolution, ConfiguredKeyVariable) {
  auto missing = resolve_model("keyed", config_with_glm(), env_of({}));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("MY_KEY is not set"), std::string::npos);
  auto m = resolve_model("keyed", config_with_glm(), env_of({{"MY_KEY", "sk-1"}}));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->api_key.reveal(), "sk-1");
  EXPECT_EQ(m->base_url, "https://api.openai.com/v1");
}

TEST(ModelResolution, AliasesUseProviderEnvironment) {
  auto sonnet = resolve_model("sonnet", {}, env_of({{"ANTHROPIC_API_KEY", "ak"}}));
  ASSERT_TRUE(sonnet) << sonnet.error().message;
  EXPECT_EQ(sonnet->dialect, Dialect::anthropic);
  EXPECT_EQ(sonnet->model, "claude-sonnet-4-5");
  EXPECT_EQ(sonnet->base_url, "https://api.anthropic.com/v1");
  EXPECT_EQ(chat_endpoint(*sonnet), "https://api.anthropic.com/v1/messages");
  EXPECT_EQ(sonnet->source, "alias");
  auto based = resolve_model(
      "haiku", {},
      env_of({{"ANTHROPIC_API_KEY", "ak"}, {"ANTHROPIC_BASE_URL", "http://proxy:9000"}}));
  EXPECT_EQ(based->base_url, "http://proxy:9000/v1");
  auto gpt = resolve_model(
      "gpt-4.1", {}, env_of({{"OPENAI_API_KEY", "ok"}, {"OPENAI_API_BASE", "http://oai:1/v1"}}));
  ASSERT_TRUE(gpt);
  EXPECT_EQ(gpt->model, "gpt-4.1");
  EXPECT_EQ(gpt->base_url, "http://oai:1/v1");
  auto no_key = resolve_model("opus", {}, env_of({}));
  ASSERT_FALSE(no_key);
  EXPECT_NE(no_key.error().message.find("set ANTHROPIC_API_KEY"), std::string::npos);
}

TEST(ModelResolution, ProviderModelEffort) {
  auto m = resolve_model("openai.gpt-5.high", {}, env_of({{"OPENAI_API_KEY", "k"}}));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->model, "gpt-5");
  EXPECT_EQ(*m->reasoning_effort, "high");
  auto dotted = resolve_model("openai.gpt-4.1", {}, env_of({{"OPENAI_API_KEY", "k"}}));
  EXPECT_EQ(dotted->model, "gpt-4.1");
  EXPECT_FALSE(dotted->reasoning_effort);
  auto generic = resolve_model("generic.qwen3:8b", {}, env_of({}));
  ASSERT_TRUE(generic);
  EXPECT_EQ(generic->base_url,
            "http://localhost:11434/v1");  // upskill's GENERIC_BASE_URL default (Ollama)
  EXPECT_EQ(generic->model, "qwen3:8b");
  auto generic_env =
      resolve_model("generic.m", {},
                    env_of({{"GENERIC_BASE_URL", "http://gpu:8000/v1"}, {"GENERIC_API_KEY", "g"}}));
  EXPECT_EQ(generic_env->base_url, "http://gpu:8000/v1");
  EXPECT_EQ(generic_env->api_key.reveal(), "g");
}

TEST(ModelResolution, Overrides) {
  auto m = resolve_model("openai.gpt-4.1", {}, env_of({{"LOCAL_KEY", "lk"}}),
                         {"http://127.0.0.1:9/v1", "LOCAL_KEY"});
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->base_url, "http://127.0.0.1:9/v1");
  EXPECT_EQ(m->api_key.reveal(), "lk");
  auto no_key_needed =
      resolve_model("openai.gpt-4.1", {}, env_of({}), {"http://127.0.0.1:9/v1", std::nullopt});
  EXPECT_TRUE(no_key_needed);  // a local endpoint may need no key
  auto unset = resolve_model("glm-local", config_with_glm(), env_of({}), {std::nullopt, "NOPE"});
  ASSERT_FALSE(unset);
  EXPECT_NE(unset.error().message.find("NOPE is not set"), std::string::npos);
  auto bad_url =
      resolve_model("glm-local", config_with_glm(), env_of({}), {"ftp://x", std::nullopt});
  ASSERT_FALSE(bad_url);
}

TEST(ModelResolution, UnknownNamesExplainTheChoices) {
  auto m = resolve_model("gpt4", config_with_glm(), env_of({}));
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("glm-local, keyed"), std::string::npos) << m.error().message;
  EXPECT_NE(m.error().message.find("sonnet"), std::string::npos);
  EXPECT_FALSE(resolve_model("azure.gpt", {}, env_of({})));
  EXPECT_FALSE(resolve_model("openai.", {}, env_of({{"OPENAI_API_KEY", "k"}})));
  EXPECT_FALSE(resolve_model("", {}, env_of({})));
}

}  // namespace
}  // namespace upskill::llm
