// The kernel pipeline's first stage: the files of a kernel project, from an answer's fenced code
// blocks (with path hints) or from an agent's workspace (see extract.hpp).
#include "upskill/kernel/extract.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <regex>

#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"

namespace upskill::kernel {

namespace fs = std::filesystem;

bool looks_like_path(std::string_view token) {
  if (token.empty() || token.size() > 200) return false;
  if (token.find_first_of(" \t\"'<>|*?") != std::string_view::npos) return false;
  if (token.back() == '/' || token.back() == '.') return false;
  const std::size_t slash = token.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? token : token.substr(slash + 1);
  const std::size_t dot = name.rfind('.');
  const bool extension = dot != std::string_view::npos && dot > 0 && dot + 1 < name.size();
  return extension || (slash != std::string_view::npos && !name.empty());
}

namespace {

std::string unquote(std::string s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
    return s.substr(1, s.size() - 2);
  return s;
}

// ```lang title="p" / path=p / file=p / filename=p, ```lang:p, ```lang p
std::pair<std::string, std::optional<std::string>> parse_info(const std::string& info) {
  static const std::regex kKey(R"re((?:title|path|file|filename)\s*=\s*("[^"]*"|'[^']*'|\S+))re");
  std::string language = info.substr(0, info.find_first_of(" \t{"));
  std::optional<std::string> path;
  std::smatch m;
  if (std::regex_search(info, m, kKey)) {
    path = unquote(m[1].str());
  } else if (const std::size_t colon = language.find(':'); colon != std::string::npos) {
    path = language.substr(colon + 1);
    language = language.substr(0, colon);
  } else {
    const std::string rest = text::trim(info.substr(language.size()));
    if (looks_like_path(rest)) path = rest;
    // ```build.toml: the language slot holds the file name.
    if (!path && looks_like_path(language) && language.find('.') != std::string::npos) {
      path = language;
      language = language.substr(language.rfind('.') + 1);
    }
  }
  if (path && path->empty()) path.reset();
  return {text::to_lower_ascii(language), path};
}

// "// file: p", "# path: p", "<!-- file: p -->", or a first-line comment that is only a path.
std::optional<std::string> comment_path(const std::string& first_line) {
  static const std::regex kComment(
      R"re(^\s*(?://+|#+|--|;+|<!--|/\*)\s*(?:(?:file|path|filename)\s*:\s*)?(\S+?)\s*(?:-->|\*/)?\s*$)re",
      std::regex::icase);
  std::smatch m;
  if (!std::regex_match(first_line, m, kComment)) return std::nullopt;
  const std::string candidate = unquote(m[1].str());
  if (!looks_like_path(candidate)) return std::nullopt;
  return candidate;
}

// "**`k/a.cu`**", "File: k/a.cu", "### k/a.cu", "`k/a.cu`:", "1. `build.toml`"
std::optional<std::string> line_path(std::string line) {
  line = text::trim(line);
  static const std::regex kDecor(R"re(^(?:#+\s*|[-*+]\s+|\d+[.)]\s+)?)re");
  line = std::regex_replace(line, kDecor, "");
  static const std::regex kLabel(R"re(^(?:file(?:name)?|path)\s*:\s*)re", std::regex::icase);
  line = std::regex_replace(line, kLabel, "");
  std::string stripped;
  for (char c : line)
    if (c != '*' && c != '`') stripped += c;
  stripped = text::trim(stripped);
  // __emphasis__ around the name, but keep underscores inside it (rmsnorm_cuda/...).
  while (stripped.size() > 4 && stripped.starts_with("__") && stripped.ends_with("__"))
    stripped = stripped.substr(2, stripped.size() - 4);
  while (!stripped.empty() && (stripped.back() == ':' || stripped.back() == '.'))
    stripped.pop_back();
  if (line.find('`') == std::string::npos && stripped.find('/') == std::string::npos &&
      stripped.find('.') == std::string::npos)
    return std::nullopt;
  if (!looks_like_path(stripped)) return std::nullopt;
  return stripped;
}

void add_file(Extraction& out, std::map<std::string, std::size_t>& seen, ExtractedFile file) {
  if (auto problem = files::relative_path_problem(file.path)) {
    out.problems.push_back(
        {file.line, fmt::format("code block at line {}: {}", file.line, *problem)});
    return;
  }
  if (file.path.starts_with("./")) file.path = file.path.substr(2);
  if (auto it = seen.find(file.path); it != seen.end()) {
    ExtractedFile& earlier = out.files[it->second];
    out.problems.push_back(
        {file.line, fmt::format("{} is given twice (lines {} and {}); the later block is used",
                                file.path, earlier.line, file.line)});
    earlier = std::move(file);
    return;
  }
  seen[file.path] = out.files.size();
  out.files.push_back(std::move(file));
}

}  // namespace

Extraction extract_files(std::string_view answer) {
  Extraction out;
  std::map<std::string, std::size_t> seen;
  const std::vector<std::string> lines = text::split_lines(answer);
  static const std::regex kOpen(R"re(^(\s{0,3})(`{3,}|~{3,})\s*(.*)$)re");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, kOpen)) continue;
    const std::string fence = m[2].str();
    const std::string info = text::trim(m[3].str());
    if (fence[0] == '`' && info.find('`') != std::string::npos)
      continue;  // inline code, not a fence
    const int open_line = static_cast<int>(i) + 1;
    std::size_t end = i + 1;
    bool closed = false;
    for (; end < lines.size(); ++end) {
      const std::string t = text::trim(lines[end]);
      if (t.size() >= fence.size() && t.find_first_not_of(fence[0]) == std::string::npos) {
        closed = true;
        break;
      }
    }
    std::string content;
    for (std::size_t k = i + 1; k < end; ++k) content += lines[k] + "\n";
    if (!closed)
      out.problems.push_back(
          {open_line, fmt::format("the code block at line {} is never closed", open_line)});

    auto [language, from_info] = parse_info(info);
    std::optional<std::string> from_comment;
    if (i + 1 < end) from_comment = comment_path(lines[i + 1]);
    std::optional<std::string> from_line;
    for (std::size_t back = i; back > 0 && back + 2 >= i; --back) {
      const std::string previous = text::trim(lines[back - 1]);
      if (previous.empty()) continue;
      from_line = line_path(previous);
      break;
    }
    std::optional<std::string> chosen;
    std::string hint;
    std::vector<std::pair<std::string, std::string>> hints;
    if (from_info) hints.emplace_back("info string", *from_info);
    if (from_comment) hints.emplace_back("file comment", *from_comment);
    if (from_line) hints.emplace_back("preceding line", *from_line);
    if (!hints.empty()) {
      chosen = hints.front().second;
      hint = hints.front().first;
      for (std::size_t h = 1; h < hints.size(); ++h)
        if (hints[h].second != *chosen && hints[h].first != "preceding line")
          out.problems.push_back(
              {open_line, fmt::format("code block at line {}: the {} says '{}' but the {} says "
                                      "'{}'; using '{}'",
                                      open_line, hints.front().first, *chosen, hints[h].first,
                                      hints[h].second, *chosen)});
    }
    if (!chosen) {
      out.unnamed_blocks.push_back(open_line);
    } else {
      add_file(out, seen, ExtractedFile{*chosen, content, language, open_line, hint});
    }
    i = end;
  }
  return out;
}

Result<Extraction> extract_workspace(const fs::path& dir, std::size_t max_bytes) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return fail(Error::usage(fmt::format("{}: no such workspace", dir.string())));
  Extraction out;
  std::size_t total = 0;
  for (const auto& rel : files::list_files(dir)) {
    const std::string first = rel.begin()->string();
    if (first == ".git" || first == "build" || first == "__pycache__" ||
        rel.extension() == ".pyc" || rel.extension() == ".o" || rel.extension() == ".so")
      continue;
    if (fs::is_symlink(dir / rel, ec)) {
      out.problems.push_back(
          {0, fmt::format("{} is a symbolic link; left out", rel.generic_string())});
      continue;
    }
    total += fs::file_size(dir / rel, ec);
    if (total > max_bytes)
      return fail(Error::usage(fmt::format("{}: the workspace holds more than {} MiB of source",
                                           dir.string(), max_bytes >> 20)));
    UPSKILL_ASSIGN_OR_RETURN(std::string content, files::read_text(dir / rel));
    out.files.push_back({rel.generic_string(), std::move(content), "", 0, "workspace"});
  }
  return out;
}

}  // namespace upskill::kernel
