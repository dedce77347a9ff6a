#pragma once
// The key stays with upskill (docs/agents.md, "The key"): a coding agent on a configured model is
// pointed at a proxy on loopback that lives for one trial. The agent holds only a random token,
// worthless once the trial ends; the proxy checks it, puts the real key in its place and forwards
// the request to the configured endpoint, streaming the answer back as it arrives. It reads
// nothing of what passes but the credentials, so every wire format (Anthropic, OpenAI chat and
// Responses, Gemini) goes through it alike.
#include <atomic>
#include <memory>
#include <string>

#include "upskill/core/error.hpp"
#include "upskill/llm/model.hpp"

namespace upskill::agent {

class KeyProxy {
 public:
  // Listens on 127.0.0.1 (a free port) for requests to `model`'s endpoint. Errors: no port.
  static Result<std::unique_ptr<KeyProxy>> start(const llm::ResolvedModel& model);
  ~KeyProxy();  // stops listening and waits for the requests in flight: the token is dead
  KeyProxy(const KeyProxy&) = delete;
  KeyProxy& operator=(const KeyProxy&) = delete;

  // The model as the agent gets it: the same, but its base URL on the proxy (same path) and the
  // token for its key.
  const llm::ResolvedModel& through() const;
  // The requests forwarded to the endpoint (refused ones not counted).
  int forwarded() const;

  struct State;

 private:
  explicit KeyProxy(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace upskill::agent
