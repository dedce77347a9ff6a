#pragma once
// The digest: a trace turned into teacher input under a token budget. It keeps what a skill is
// made of — the user's goals and corrections, failing commands with their error and the change that
// fixed them, the agent's decisions, and the final versions of the files it wrote — selected by
// importance, never cut blindly from the head. Anything shortened or left out is marked in place.
// Secrets (API keys, tokens, passwords) are redacted.
#include <cstddef>
#include <string>
#include <vector>

#include "upskill/trace/trace.hpp"

namespace upskill::trace {

// Sized for a 128k-context teacher: the digest, the instructions and a long answer fit.
inline constexpr std::size_t kDefaultDigestTokens = 48000;

struct DigestOptions {
  std::size_t token_budget = kDefaultDigestTokens;
};

struct DigestSection {
  std::string name;
  std::size_t tokens = 0;
  std::size_t items = 0;      // included (whole or shortened)
  std::size_t shortened = 0;  // included, but shortened
  std::size_t omitted = 0;    // left out for the budget
};

struct TraceDigest {
  std::string text;  // markdown
  std::size_t tokens = 0;
  std::size_t budget = 0;
  std::vector<DigestSection> sections;
  std::size_t redactions = 0;
};

TraceDigest make_digest(const Trace& trace, const DigestOptions& options = {});

// Replaces secrets (sk-…, hf_…, ghp_…, AKIA…, Bearer tokens, KEY=value assignments) with
// "[REDACTED]"; `count` receives how many.
std::string redact_secrets(std::string_view text, std::size_t* count = nullptr);

}  // namespace upskill::trace
