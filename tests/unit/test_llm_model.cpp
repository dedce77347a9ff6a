// llm/model: what users type resolved to an endpoint, model id and key.
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

namespace upskill::llm {
namespace {

// fast-agent's model names, as the Python upskill's users write them.
TEST(FastAgentNames, AliasesPrefixesAndBareIdsResolve) {
  const auto env = env_of({{"HF_TOKEN", "hf_x"},
                           {"GOOGLE_API_KEY", "g"},
                           {"OPENROUTER_API_KEY", "o"},
                           {"ANTHROPIC_API_KEY", "a"},
                           {"DEEPSEEK_API_KEY", "d"},
                           {"GROQ_API_KEY", "q"}});
  struct Want {
    const char* spec;
    const char* provider;
    const char* model;
    const char* base_url;
  };
  for (const Want& w : {
           Want{"kimi", "hf", "moonshotai/Kimi-K2-Instruct-0905:groq",
                "https://router.huggingface.co/v1"},
           Want{"kimi:together", "hf", "moonshotai/Kimi-K2-Instruct-0905:together",
                "https://router.huggingface.co/v1"},
           Want{"hf.Qwen/Qwen3-Coder-480B-A35B-Instruct", "hf",
                "Qwen/Qwen3-Coder-480B-A35B-Instruct", "https://router.huggingface.co/v1"},
           Want{"hf/openai/gpt-oss-20b", "hf", "openai/gpt-oss-20b",
                "https://router.huggingface.co/v1"},
           Want{"google.gemini-2.5-pro", "google", "gemini-2.5-pro",
                "https://generativelanguage.googleapis.com/v1beta/openai"},
           Want{"gemini-2.5-flash", "google", "gemini-2.5-flash",
                "https://generativelanguage.googleapis.com/v1beta/openai"},
           Want{"openrouter.anthropic/claude-sonnet-4", "openrouter", "anthropic/claude-sonnet-4",
                "https://openrouter.ai/api/v1"},
           Want{"claude-opus-4-1", "anthropic", "claude-opus-4-1", "https://api.anthropic.com/v1"},
           Want{"deepseek", "deepseek", "deepseek-chat", "https://api.deepseek.com"},
           Want{"kimigroq", "groq", "moonshotai/kimi-k2-instruct-0905",
                "https://api.groq.com/openai/v1"},
           Want{"generic.qwen2.5-coder:7b", "generic", "qwen2.5-coder:7b",
                "http://localhost:11434/v1"},
       }) {
    SCOPED_TRACE(w.spec);
    auto m = resolve_model(w.spec, {}, env);
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->provider, w.provider);
    EXPECT_EQ(m->model, w.model);
    EXPECT_EQ(m->base_url, w.base_url);
  }
  EXPECT_EQ(resolve_model("kimi", {}, env)->api_key.reveal(), "hf_x");
  // Settings in fast-agent's query form, and its older effort suffix.
  auto q = resolve_model("openai.o3-mini?reasoning=high&temperature=0.2", {},
                         env_of({{"OPENAI_API_KEY", "k"}}));
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(*q->reasoning_effort, "high");
  EXPECT_EQ(*q->options.temperature, 0.2);
  EXPECT_EQ(*resolve_model("o3-mini.low", {}, env_of({{"OPENAI_API_KEY", "k"}}))->reasoning_effort,
            "low");
  for (const char* bad : {"openai.o3-mini?reasoning=loud", "openai.o3-mini?temperature=hot",
                          "openai.o3-mini?verbosity=low"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(resolve_model(bad, {}, env_of({{"OPENAI_API_KEY", "k"}})));
  }
}

TEST(FastAgentNames, UnsupportedAndUnknownProvidersSaySo) {
  auto bedrock = resolve_model("bedrock.anthropic.claude-3", {}, env_of({}));
  ASSERT_FALSE(bedrock);
  EXPECT_NE(bedrock.error().message.find("provider 'bedrock' is not supported"), std::string::npos)
      << bedrock.error().message;
  auto unknown = resolve_model("nowhere.model", {}, env_of({}));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("openrouter"), std::string::npos)
      << unknown.error().message;
  // A hosted provider without its key says which variable to set.
  auto keyless = resolve_model("kimi", {}, env_of({}));
  ASSERT_FALSE(keyless);
  EXPECT_NE(keyless.error().message.find("HF_TOKEN"), std::string::npos);
  // Replaying a cassette needs no key.
  ModelOverrides replay;
  replay.keys_optional = true;
  EXPECT_TRUE(resolve_model("kimi", {}, env_of({}), replay));
}

}  // namespace
}  // namespace upskill::llm
