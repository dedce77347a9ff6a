#pragma once
// Model resolution (docs/models.md): a configured name, one of upskill's aliases, or
// provider.model[.effort], plus --base-url / --api-key-env overrides.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "upskill/config/config.hpp"
#include "upskill/core/cancel.hpp"
#include "upskill/core/error.hpp"
#include "upskill/llm/types.hpp"

namespace upskill::llm {

enum class Dialect { openai, anthropic };

// An API key. It can be used to build a request header and nothing else: it has no formatter and
// no stream operator, so it cannot end up in a log line or a message by accident.
class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  bool empty() const { return value_.empty(); }
  const std::string& reveal() const { return value_; }

 private:
  std::string value_;
};

struct ResolvedModel {
  std::string spec;      // what the user typed
  std::string name;      // shown in reports: the configured name or the spec
  std::string provider;  // openai | anthropic | generic
  Dialect dialect = Dialect::openai;
  std::string base_url;  // API root, no trailing slash (…/v1 for OpenAI-compatible servers)
  std::string model;     // id sent to the server
  std::optional<std::string> api_key_env;
  Secret api_key;
  std::optional<std::string> reasoning_effort;
  config::ModelConfig options;  // dialect options, prices, limits from the config (or defaults)
  int max_concurrency = 4;
  std::string source;  // "config", "alias", "provider.model"
};

struct ModelOverrides {
  std::optional<std::string> base_url;     // --base-url
  std::optional<std::string> api_key_env;  // --api-key-env
  bool keys_optional = false;              // --replay: answers come from a cassette, no key needed
};

// Environment lookup, injectable for tests.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_environment();

// upskill's aliases: name -> provider.model
const std::map<std::string, std::string>& model_aliases();
const std::vector<std::string>& reasoning_efforts();

Result<ResolvedModel> resolve_model(std::string_view spec, const config::Config& config,
                                    const EnvLookup& env, const ModelOverrides& overrides = {});

// What the pipelines (an eval session, generate) need to reach models: the configuration, how names
// typed by the user resolve (environment for keys, the command line's overrides) and a way to open
// the client. The front end owns every object referenced here.
class ChatClient;
struct Connection {
  ChatClient* client = nullptr;
  const CancelToken* cancel = nullptr;  // Ctrl-C; may be null
};
struct ModelAccess {
  const config::Config* config = nullptr;
  // Opens the client. A pipeline calls it once, after every input has been checked, so that bad
  // input never opens (or truncates) a --record cassette.
  std::function<Result<Connection>()> connect;
  EnvLookup env = process_environment();
  ModelOverrides overrides;

  Result<ResolvedModel> resolve(std::string_view spec) const;
  // Every spec resolved, in order; the first failure is returned.
  Result<std::vector<ResolvedModel>> resolve_all(const std::vector<std::string>& specs) const;
};

// Cost of a response in USD from the model's configured prices (0 when none are configured).
double cost_of(const Usage& usage, const config::ModelConfig& model);

// "https://api.openai.com/v1/chat/completions" etc.
std::string chat_endpoint(const ResolvedModel& model);

}  // namespace upskill::llm
