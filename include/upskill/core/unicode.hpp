#pragma once
// Unicode operations with Python's semantics, so the skill validator can give the same verdicts as
// the reference validator (skills-ref, written in Python). Backed by ICU.
#include <cstddef>
#include <string>
#include <string_view>

namespace upskill::unicode {

bool is_valid_utf8(std::string_view s);
// `s` with every ill-formed UTF-8 sequence replaced by U+FFFD (as Python's
// bytes.decode("utf-8", "replace") does); `s` itself when it is valid.
std::string valid_utf8(std::string_view s);
// `s` for a terminal or a log: every byte of an ill-formed UTF-8 sequence written as \xNN (as
// Python's "backslashreplace" does), so a file name or a line of bad bytes is shown, not garbled;
// `s` itself when it is valid.
std::string printable(std::string_view s);
// Where `s` stops being text: the offset of its first NUL byte, or its size.
std::size_t first_nul(std::string_view s);
std::size_t codepoint_count(std::string_view s);  // Python len(); s must be valid UTF-8
std::string nfkc(std::string_view s);             // unicodedata.normalize("NFKC", s)
std::string lower(std::string_view s);            // str.lower() (full case mapping)
std::string strip(std::string_view s);            // str.strip() (Unicode whitespace)
// all(c.isalnum() or c == "-" for c in s)
bool is_alnum_or_hyphen(std::string_view s);

}  // namespace upskill::unicode
