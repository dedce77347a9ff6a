#pragma once
// Small text helpers shared by every module.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace upskill::text {

std::string trim(std::string_view s);  // ASCII whitespace
std::string to_lower_ascii(std::string_view s);
bool icontains(std::string_view haystack, std::string_view needle);  // ASCII case-folded

// Lines without their terminators ("\n" or "\r\n"); a final line without a newline is kept.
std::vector<std::string> split_lines(std::string_view s);

// "a, b,,c " split at `sep`: the parts trimmed, empty ones left out.
std::vector<std::string> split_list(std::string_view s, char sep = ',');

// Whitespace-separated words.
std::vector<std::string> words(std::string_view s);

// Token estimate used wherever no tokenizer is available. upskill estimates words × 1.3, which
// undercounts code and CJK text badly, so we take the larger of that and bytes / 4.
std::size_t estimate_tokens(std::string_view s);

// "Write a CUDA kernel for RMSNorm!" -> "write-a-cuda-kernel-for-rmsnorm" (ASCII, at most
// `max_words` words, at most 48 characters; may be empty).
std::string slugify(std::string_view s, std::size_t max_words = 6);

// At most `max_bytes` bytes of `s` on one line ("…" marks a cut), for messages and previews.
std::string excerpt(std::string_view s, std::size_t max_bytes = 80);

// 1-based line and column of a byte offset.
struct LineColumn {
  int line = 1;
  int column = 1;
};
LineColumn line_column_at(std::string_view s, std::size_t offset);

// Joins with a separator.
std::string join(const std::vector<std::string>& parts, std::string_view sep);

}  // namespace upskill::text
