// Small text helpers shared by every module (see text.hpp).
#include "upskill/core/text.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace upskill::text {

namespace {
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
}  // namespace

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

std::string to_lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool icontains(std::string_view haystack, std::string_view needle) {
  if (needle.empty()) return true;
  return to_lower_ascii(haystack).find(to_lower_ascii(needle)) != std::string::npos;
}

std::vector<std::string> split_list(std::string_view s, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t at = 0; at != std::string_view::npos; start = at + 1) {
    at = s.find(sep, start);
    std::string part = trim(s.substr(start, at == std::string_view::npos ? at : at - start));
    if (!part.empty()) parts.push_back(std::move(part));
  }
  return parts;
}

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    std::size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::vector<std::string> split_lines(std::string_view s) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t nl = s.find('\n', start);
    if (nl == std::string_view::npos) {
      lines.emplace_back(s.substr(start));
      break;
    }
    std::size_t end = nl;
    if (end > start && s[end - 1] == '\r') --end;
    lines.emplace_back(s.substr(start, end - start));
    start = nl + 1;
  }
  return lines;
}

std::size_t estimate_tokens(std::string_view s) {
  // A word starts where a byte that is not a space follows a space (or the start): counted pair by
  // pair without a branch or a carried state, so the compiler can vectorise it (the digest
  // measures every excerpt it considers; docs/PERFORMANCE.md).
  const auto space = [](unsigned char c) -> unsigned {
    return static_cast<unsigned>(c == ' ') | static_cast<unsigned>(c - 9u < 5u);  // \t \n \v \f \r
  };
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::size_t words = s.empty() ? 0 : 1 - space(p[0]);
  for (std::size_t i = 1; i < s.size(); ++i) words += space(p[i - 1]) & (1u - space(p[i]));
  const auto by_words = static_cast<std::size_t>(std::ceil(static_cast<double>(words) * 1.3));
  const std::size_t by_bytes = (s.size() + 3) / 4;
  return std::max(by_words, by_bytes);
}

std::string slugify(std::string_view s, std::size_t max_words) {
  std::string out;
  std::size_t words = 0;
  bool pending_dash = false;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) && u < 0x80) {
      if (pending_dash && !out.empty()) {
        if (++words >= max_words) break;
        out.push_back('-');
      }
      pending_dash = false;
      out.push_back(static_cast<char>(std::tolower(u)));
    } else {
      pending_dash = true;
    }
    if (out.size() >= 48) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string excerpt(std::string_view s, std::size_t max_bytes) {
  std::string flat;
  flat.reserve(std::min(s.size(), max_bytes + 8));
  bool space = false;
  for (char c : s) {
    if (is_space(c)) {
      space = !flat.empty();
      continue;
    }
    if (space) flat.push_back(' ');
    space = false;
    flat.push_back(c);
    if (flat.size() > max_bytes) break;
  }
  if (flat.size() <= max_bytes) return flat;
  std::size_t cut = max_bytes;
  // Do not split a UTF-8 sequence.
  while (cut > 0 && (static_cast<unsigned char>(flat[cut]) & 0xC0) == 0x80) --cut;
  flat.resize(cut);
  return flat + "…";
}

LineColumn line_column_at(std::string_view s, std::size_t offset) {
  LineColumn lc;
  offset = std::min(offset, s.size());
  for (std::size_t i = 0; i < offset; ++i) {
    if (s[i] == '\n') {
      ++lc.line;
      lc.column = 1;
    } else if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      ++lc.column;
    }
  }
  return lc;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

}  // namespace upskill::text
