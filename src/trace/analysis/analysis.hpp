#pragma once
// Internal to the trace module: what the analysis (analysis.cpp; analyse() and count() in
// upskill/trace/trace.hpp) offers the digest — the agent's words about a failure.
#include <cstddef>
#include <optional>
#include <string>

#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

// The agent's first words (its text, else its thinking) after turn `failed_turn`, excerpted: what
// it made of a failure. Only words that belong to it: within the agent's next three turns, before
// the user speaks again, and not after `until_turn` (the fix or retry) — empty otherwise.
std::string first_words_after(const Trace& trace, std::size_t failed_turn,
                              std::optional<std::size_t> until_turn = std::nullopt);

}  // namespace upskill::trace::detail
