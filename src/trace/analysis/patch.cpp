// apply_patch (the Codex / OpenAI patch format): parsing a patch into files and hunks, and
// applying an update to a file's contents.
#include <fmt/format.h>

#include "upskill/core/text.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace {

Result<std::vector<PatchFile>> parse_patch(std::string_view patch) {
  std::vector<PatchFile> out;
  bool begun = false;
  int line_no = 0;
  for (const std::string& line : text::split_lines(patch)) {
    ++line_no;
    if (line.starts_with("*** Begin Patch")) {
      begun = true;
      continue;
    }
    if (line.starts_with("*** End Patch")) break;
    if (!begun) continue;
    auto header = [&](std::string_view prefix, PatchFile::Op op) {
      if (!line.starts_with(prefix)) return false;
      PatchFile f;
      f.op = op;
      f.path = text::trim(std::string_view(line).substr(prefix.size()));
      out.push_back(std::move(f));
      return true;
    };
    if (header("*** Add File: ", PatchFile::Op::add) ||
        header("*** Update File: ", PatchFile::Op::update) ||
        header("*** Delete File: ", PatchFile::Op::remove))
      continue;
    if (line.starts_with("*** Move to: ")) {
      if (out.empty())
        return fail(Error::usage(fmt::format("patch line {}: Move to before a file", line_no)));
      out.back().move_to = text::trim(std::string_view(line).substr(13));
      continue;
    }
    if (line.starts_with("*** End of File")) continue;
    if (out.empty()) {
      if (text::trim(line).empty()) continue;
      return fail(Error::usage(
          fmt::format("patch line {}: '{}' before any file header", line_no, text::excerpt(line))));
    }
    out.back().lines.push_back(line);
  }
  if (!begun) return fail(Error::usage("not an apply_patch text (no '*** Begin Patch')"));
  return out;
}

namespace {

// Finds `needle` (a run of lines) in `hay` at or after `from`; trailing whitespace is ignored on a
// second try, as apply_patch does.
std::optional<std::size_t> find_lines(const std::vector<std::string>& hay,
                                      const std::vector<std::string>& needle, std::size_t from) {
  if (needle.empty()) return from;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = from; i + needle.size() <= hay.size(); ++i) {
      bool ok = true;
      for (std::size_t k = 0; k < needle.size() && ok; ++k) {
        if (pass == 0)
          ok = hay[i + k] == needle[k];
        else
          ok = text::trim(hay[i + k]) == text::trim(needle[k]);
      }
      if (ok) return i;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<std::string> apply_patch_update(const std::string& content, const PatchFile& file) {
  std::vector<std::string> lines = text::split_lines(content);
  const bool trailing_newline = content.empty() || content.ends_with('\n');
  std::size_t cursor = 0;
  std::vector<std::string> old_chunk, new_chunk;
  auto flush = [&]() -> Status {
    if (old_chunk.empty() && new_chunk.empty()) return {};
    auto at = find_lines(lines, old_chunk, cursor);
    if (!at) at = find_lines(lines, old_chunk, 0);
    if (!at)
      return fail(Error::usage(fmt::format("{}: hunk context not found ('{}')", file.path,
                                           text::excerpt(old_chunk.front()))));
    lines.erase(lines.begin() + static_cast<long>(*at),
                lines.begin() + static_cast<long>(*at + old_chunk.size()));
    lines.insert(lines.begin() + static_cast<long>(*at), new_chunk.begin(), new_chunk.end());
    cursor = *at + new_chunk.size();
    old_chunk.clear();
    new_chunk.clear();
    return {};
  };
  for (const std::string& l : file.lines) {
    if (l.starts_with("@@")) {
      UPSKILL_RETURN_IF_ERROR(flush());
      continue;
    }
    const char tag = l.empty() ? ' ' : l[0];
    const std::string rest = l.empty() ? std::string() : l.substr(1);
    if (tag == '-') {
      old_chunk.push_back(rest);
    } else if (tag == '+') {
      new_chunk.push_back(rest);
    } else {
      // Context: part of both sides.
      old_chunk.push_back(rest);
      new_chunk.push_back(rest);
    }
  }
  UPSKILL_RETURN_IF_ERROR(flush());
  std::string out = text::join(lines, "\n");
  if (trailing_newline && !lines.empty()) out += '\n';
  return out;
}

}  // namespace upskill::trace
