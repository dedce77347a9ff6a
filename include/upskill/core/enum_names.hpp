#pragma once
// The one way an enum is named in files, flags and on screen: a table of (value, name) pairs,
// written once beside the enum's code, and these helpers reading it either way.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace upskill::enum_names {

template <class E, std::size_t N>
using Table = std::array<std::pair<E, std::string_view>, N>;

// The value's name; `otherwise` for a value the table lacks (a value cast from a number).
template <class E, std::size_t N>
constexpr std::string_view name(const Table<E, N>& table, E value,
                                std::string_view otherwise = "unknown") {
  for (const auto& [v, n] : table)
    if (v == value) return n;
  return otherwise;
}

// The value with this name, exactly as the table spells it; nullopt for any other text.
template <class E, std::size_t N>
constexpr std::optional<E> parse(const Table<E, N>& table, std::string_view text) {
  for (const auto& [v, n] : table)
    if (n == text) return v;
  return std::nullopt;
}

// Every name, in the table's order (for help texts and error messages).
template <class E, std::size_t N>
std::vector<std::string> all(const Table<E, N>& table) {
  std::vector<std::string> out;
  for (const auto& [v, n] : table) out.emplace_back(n);
  return out;
}

}  // namespace upskill::enum_names
