// The built-in validators of upskill's `validator:` field.
#include <fmt/format.h>

#include <regex>

#include "upskill/checks/checks.hpp"
#include "upskill/core/text.hpp"

namespace upskill::checks {

void ValidatorRegistry::add(const std::string& name, std::string description, ValidatorFn fn) {
  validators_[name] = {std::move(description), std::move(fn)};
}

const ValidatorFn* ValidatorRegistry::find(const std::string& name) const {
  auto it = validators_.find(name);
  return it == validators_.end() ? nullptr : &it->second.second;
}

std::vector<std::string> ValidatorRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : validators_) out.push_back(name);
  return out;
}

std::string ValidatorRegistry::description(const std::string& name) const {
  auto it = validators_.find(name);
  return it == validators_.end() ? std::string() : it->second.first;
}

namespace {

long long int_option(const Json& config, const char* key, long long fallback) {
  auto it = config.find(key);
  if (it == config.end()) return fallback;
  if (it->is_number()) return it->get<long long>();
  if (it->is_string()) {
    try {
      return std::stoll(it->get<std::string>());
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

// Fenced code blocks: ```lang ... ``` with the info string's first word as the language.
CheckResult fenced_code(const Answer& answer, const Json& config) {
  CheckResult r;
  const std::string language = config.value("language", "");
  const long long wanted = int_option(config, "min_blocks", 1);
  r.expected = fmt::format("at least {} fenced {}code block{}", wanted,
                           language.empty() ? "" : language + " ", wanted == 1 ? "" : "s");
  static const std::regex kOpen(R"((^|\n)[ \t]*(```|~~~)[ \t]*([A-Za-z0-9_+.#-]*)[^\n]*\n)");
  long long found = 0;
  std::vector<std::string> languages;
  auto begin = answer.text.cbegin();
  std::smatch m;
  while (std::regex_search(begin, answer.text.cend(), m, kOpen)) {
    const std::string fence = m[2].str();
    const auto after = m[0].second;
    const std::string rest(after, answer.text.cend());
    const std::size_t close = rest.find("\n" + fence);
    const std::string lang = text::to_lower_ascii(m[3].str());
    languages.push_back(lang.empty() ? "(none)" : lang);
    if (language.empty() || lang == text::to_lower_ascii(language)) ++found;
    if (close == std::string::npos) break;  // an unclosed block still counts once
    begin = after + static_cast<std::ptrdiff_t>(close + 1 + fence.size());
  }
  r.status = found >= wanted ? Status::passed : Status::failed;
  r.found = languages.empty() ? "no fenced code blocks" : "blocks: " + text::join(languages, ", ");
  if (r.status == Status::failed)
    r.reason = fmt::format("found {} matching block{}", found, found == 1 ? "" : "s");
  return r;
}

// Length limits in words.
CheckResult word_count(const Answer& answer, const Json& config) {
  CheckResult r;
  const long long min = int_option(config, "min", 0);
  const long long max = int_option(config, "max", -1);
  long long words = 0;
  bool in_word = false;
  for (char c : answer.text) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  r.expected =
      max >= 0 ? fmt::format("{} to {} words", min, max) : fmt::format("at least {} words", min);
  r.found = fmt::format("{} words", words);
  const bool ok = words >= min && (max < 0 || words <= max);
  r.status = ok ? Status::passed : Status::failed;
  if (!ok) r.reason = words < min ? "too short" : "too long";
  return r;
}

}  // namespace

const ValidatorRegistry& ValidatorRegistry::builtin() {
  static const ValidatorRegistry registry = [] {
    ValidatorRegistry r;
    r.add("fenced_code", "the answer has fenced code blocks (config: language, min_blocks)",
          fenced_code);
    r.add("word_count", "the answer's length in words (config: min, max)", word_count);
    return r;
  }();
  return registry;
}

}  // namespace upskill::checks
