// Unicode with Python's semantics, for the skill validator's verdicts (see unicode.hpp).
#include "upskill/core/unicode.hpp"

#include <fmt/format.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include <type_traits>

namespace upskill::unicode {

namespace {

// Calls f(c) — or f(c, bytes), the bytes it was read from — for each code point; c < 0 for an
// ill-formed sequence (its maximal subpart). Stops when f returns false.
template <class F>
void for_each_codepoint(std::string_view s, F&& f) {
  int32_t i = 0;
  const auto* bytes = reinterpret_cast<const uint8_t*>(s.data());
  const auto length = static_cast<int32_t>(s.size());
  while (i < length) {
    const int32_t start = i;
    UChar32 c;
    U8_NEXT(bytes, i, length, c);
    bool go;
    if constexpr (std::is_invocable_v<F, UChar32, std::string_view>)
      go = f(c, s.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(i - start)));
    else
      go = f(c);
    if (!go) return;
  }
}

std::string to_utf8(const icu::UnicodeString& u) {
  std::string out;
  u.toUTF8String(out);
  return out;
}

// Python's str.isspace(): bidirectional class WS, B or S, or general category Zs.
bool py_isspace(UChar32 c) {
  const auto bidi = u_charDirection(c);
  return bidi == U_WHITE_SPACE_NEUTRAL || bidi == U_BLOCK_SEPARATOR ||
         bidi == U_SEGMENT_SEPARATOR || u_charType(c) == U_SPACE_SEPARATOR;
}

// Python's str.isalnum() for one character: isalpha() (categories L*) or isnumeric() (any
// character with a numeric value: Nd, Nl, No and CJK numerals).
bool py_isalnum(UChar32 c) {
  const int8_t type = u_charType(c);
  const bool alpha = type == U_UPPERCASE_LETTER || type == U_LOWERCASE_LETTER ||
                     type == U_TITLECASE_LETTER || type == U_MODIFIER_LETTER ||
                     type == U_OTHER_LETTER;
  return alpha || u_getIntPropertyValue(c, UCHAR_NUMERIC_TYPE) != U_NT_NONE;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  bool ok = true;
  for_each_codepoint(s, [&](UChar32 c) {
    if (c < 0) ok = false;
    return ok;
  });
  return ok;
}

std::string valid_utf8(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  for_each_codepoint(s, [&](UChar32 c, std::string_view read) {
    out += c < 0 ? std::string_view("\xEF\xBF\xBD") : read;  // U+FFFD for an ill-formed part
    return true;
  });
  return out;
}

std::string printable(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  for_each_codepoint(s, [&](UChar32 c, std::string_view read) {
    if (c >= 0) {
      out += read;
    } else {
      for (const unsigned char b : read) out += fmt::format("\\x{:02x}", b);
    }
    return true;
  });
  return out;
}

std::size_t first_nul(std::string_view s) {
  const std::size_t at = s.find('\0');
  return at == std::string_view::npos ? s.size() : at;
}

std::size_t codepoint_count(std::string_view s) {
  std::size_t n = 0;
  for_each_codepoint(s, [&](UChar32) {
    ++n;
    return true;
  });
  return n;
}

std::string nfkc(std::string_view s) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = icu::Normalizer2::getNFKCInstance(status);
  if (U_FAILURE(status)) return std::string(s);
  const icu::UnicodeString input =
      icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), static_cast<int32_t>(s.size())));
  icu::UnicodeString out = normalizer->normalize(input, status);
  if (U_FAILURE(status)) return std::string(s);
  return to_utf8(out);
}

std::string lower(std::string_view s) {
  icu::UnicodeString u =
      icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), static_cast<int32_t>(s.size())));
  u.toLower(icu::Locale::getRoot());
  return to_utf8(u);
}

std::string strip(std::string_view s) {
  // Find the byte range between the first and last non-space code points.
  std::size_t first = std::string_view::npos, last_end = 0;
  int32_t i = 0;
  const auto* bytes = reinterpret_cast<const uint8_t*>(s.data());
  const auto length = static_cast<int32_t>(s.size());
  while (i < length) {
    const int32_t start = i;
    UChar32 c;
    U8_NEXT(bytes, i, length, c);
    if (c < 0 || !py_isspace(c)) {
      if (first == std::string_view::npos) first = static_cast<std::size_t>(start);
      last_end = static_cast<std::size_t>(i);
    }
  }
  if (first == std::string_view::npos) return {};
  return std::string(s.substr(first, last_end - first));
}

bool is_alnum_or_hyphen(std::string_view s) {
  bool ok = true;
  for_each_codepoint(s, [&](UChar32 c) {
    ok = c == '-' || (c >= 0 && py_isalnum(c));
    return ok;
  });
  return ok;
}

}  // namespace upskill::unicode
