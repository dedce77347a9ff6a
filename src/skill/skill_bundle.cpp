// A skill's folder read and written: SKILL.md (strict front matter), its files and
// skill_meta.json (see skill_bundle.hpp).
#include "upskill/skill/skill_bundle.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <functional>
#include <regex>

#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"

namespace upskill::skill {

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";
const std::vector<std::string> kModelledKeys{"name",          "description",   "license",
                                             "compatibility", "allowed-tools", "metadata"};

bool is_fence(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
    line.remove_suffix(1);
  return line == "---";
}

// Scalars that YAML 1.1/1.2 readers would turn into something other than a string.
bool looks_like_non_string(const std::string& s) {
  static const std::regex kSpecial(
      R"(^(true|false|yes|no|on|off|y|n|null|~|\.nan|[-+]?\.inf)$|^[-+]?([0-9][0-9_]*)?(\.[0-9]*)?([eE][-+]?[0-9]+)?$|^0[xo][0-9a-fA-F]+$)",
      std::regex::icase);
  return s.empty() || std::regex_match(s, kSpecial);
}

void emit_string(YAML::Emitter& out, const std::string& s) {
  if (s.find('\n') != std::string::npos)
    out << YAML::Literal << s;
  else if (looks_like_non_string(s))
    out << YAML::DoubleQuoted << s;
  else
    out << s;
}

// Client-guide leniency: `description: Use when: x` is invalid YAML that agents accept; quote the
// value and try again.
std::string quote_colon_values(std::string_view yaml) {
  static const std::regex kLine(R"(^([A-Za-z0-9_-]+):[ \t]+([^'"|>\s].*:.*)$)");
  std::string out;
  for (const auto& line : text::split_lines(yaml)) {
    std::smatch m;
    if (std::regex_match(line, m, kLine)) {
      std::string value = m[2].str();
      std::string escaped;
      for (char c : value) {
        if (c == '"' || c == '\\') escaped.push_back('\\');
        escaped.push_back(c);
      }
      out += m[1].str() + ": \"" + escaped + "\"\n";
    } else {
      out += line + "\n";
    }
  }
  return out;
}

Result<YAML::Node> load_yaml(const std::string& yaml, const std::string& file) {
  try {
    return YAML::Load(yaml);
  } catch (const YAML::Exception& first) {
    try {
      return YAML::Load(quote_colon_values(yaml));
    } catch (const YAML::Exception&) {
      // Line numbers: the front matter starts on line 2 of the file.
      return fail(Error::at({file, first.mark.line + 2, first.mark.column + 1},
                            "invalid YAML in front matter: " + first.msg));
    }
  }
}

Result<SkillFrontmatter> frontmatter_from_yaml(const YAML::Node& root, const std::string& file) {
  if (!root.IsMap())
    return fail(Error::at({file, 2, 0}, "front matter must be a YAML mapping of keys to values"));
  SkillFrontmatter fm;
  for (const auto& item : root) {
    const std::string key = item.first.as<std::string>();
    const YAML::Node& value = item.second;
    fm.key_order.push_back(key);
    const bool scalar = value.IsScalar();
    if (key == "name" && scalar) {
      fm.name = value.Scalar();
    } else if (key == "description" && scalar) {
      fm.description = value.Scalar();
    } else if (key == "license" && scalar) {
      fm.license = value.Scalar();
    } else if (key == "compatibility" && scalar) {
      fm.compatibility = value.Scalar();
    } else if (key == "allowed-tools" && scalar) {
      fm.allowed_tools = split_allowed_tools(value.Scalar());
    } else if (key == "allowed-tools" && value.IsSequence() &&
               std::all_of(value.begin(), value.end(),
                           [](const YAML::Node& n) { return n.IsScalar(); })) {
      std::vector<std::string> tools;
      for (const auto& n : value) tools.push_back(n.Scalar());
      fm.allowed_tools = tools;
    } else if (key == "metadata" && value.IsMap() &&
               std::all_of(value.begin(), value.end(),
                           [](const auto& kv) { return kv.second.IsScalar(); })) {
      std::vector<std::pair<std::string, std::string>> meta;
      for (const auto& kv : value)
        meta.emplace_back(kv.first.as<std::string>(), kv.second.Scalar());
      fm.metadata = meta;
    } else {
      fm.extra.emplace_back(key, YAML::Clone(value));
    }
  }
  const auto missing = [&](const char* key) {
    return std::find(fm.key_order.begin(), fm.key_order.end(), key) == fm.key_order.end();
  };
  if (missing("name")) return fail(Error::at({file, 2, 0}, "front matter has no 'name'"));
  if (missing("description"))
    return fail(Error::at({file, 2, 0}, "front matter has no 'description'"));
  return fm;
}

}  // namespace

std::vector<std::string> split_allowed_tools(std::string_view text) {
  std::vector<std::string> tools;
  std::string current;
  int depth = 0;
  auto flush = [&] {
    std::string t = text::trim(current);
    if (!t.empty()) tools.push_back(t);
    current.clear();
  };
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')' && depth > 0) --depth;
    if (depth == 0 && (c == ',' || c == ' ' || c == '\t')) {
      flush();
      continue;
    }
    current.push_back(c);
  }
  flush();
  return tools;
}

std::string render_frontmatter(const SkillFrontmatter& fm) {
  std::vector<std::string> order = fm.key_order;
  auto ensure = [&](const std::string& key) {
    if (std::find(order.begin(), order.end(), key) == order.end()) order.push_back(key);
  };
  for (const auto& key : kModelledKeys) ensure(key);
  for (const auto& [key, _] : fm.extra) ensure(key);

  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const auto& key : order) {
    auto extra = std::find_if(fm.extra.begin(), fm.extra.end(),
                              [&](const auto& kv) { return kv.first == key; });
    if (extra != fm.extra.end()) {
      out << YAML::Key << key << YAML::Value << extra->second;
    } else if (key == "name") {
      out << YAML::Key << key << YAML::Value;
      emit_string(out, fm.name);
    } else if (key == "description") {
      out << YAML::Key << key << YAML::Value;
      emit_string(out, fm.description);
    } else if (key == "license" && fm.license) {
      out << YAML::Key << key << YAML::Value;
      emit_string(out, *fm.license);
    } else if (key == "compatibility" && fm.compatibility) {
      out << YAML::Key << key << YAML::Value;
      emit_string(out, *fm.compatibility);
    } else if (key == "allowed-tools" && fm.allowed_tools) {
      out << YAML::Key << key << YAML::Value;
      emit_string(out, text::join(*fm.allowed_tools, " "));
    } else if (key == "metadata" && fm.metadata) {
      out << YAML::Key << key << YAML::Value << YAML::BeginMap;
      for (const auto& [k, v] : *fm.metadata) {
        out << YAML::Key << k << YAML::Value;
        emit_string(out, v);
      }
      out << YAML::EndMap;
    }
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

Result<ParsedSkillMd> parse_skill_md(std::string_view text, const std::string& file) {
  ParsedSkillMd parsed;
  const std::string_view original = text;
  if (text.starts_with(kBom)) text.remove_prefix(kBom.size());
  const std::size_t first_nl = text.find('\n');
  const std::string_view first_line = text.substr(0, first_nl);
  if (!is_fence(first_line))
    return fail(
        Error::at({file, 1, 0}, "SKILL.md must start with YAML front matter (a line '---')"));
  if (first_line.ends_with('\r')) parsed.newline = "\r\n";
  if (first_nl == std::string_view::npos)
    return fail(Error::at({file, 1, 0}, "front matter is not closed with a line '---'"));
  std::size_t pos = first_nl + 1;
  const std::size_t fm_start = pos;
  parsed.opening = std::string(original.substr(0, original.size() - text.size() + pos));
  while (pos <= text.size()) {
    std::size_t nl = text.find('\n', pos);
    const std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (is_fence(line)) {
      parsed.frontmatter_text = std::string(text.substr(fm_start, pos - fm_start));
      parsed.body = nl == std::string_view::npos ? std::string() : std::string(text.substr(nl + 1));
      parsed.closing = nl == std::string_view::npos ? std::string(line)
                                                    : std::string(text.substr(pos, nl + 1 - pos));
      UPSKILL_ASSIGN_OR_RETURN(YAML::Node root, load_yaml(parsed.frontmatter_text, file));
      UPSKILL_ASSIGN_OR_RETURN(parsed.frontmatter, frontmatter_from_yaml(root, file));
      parsed.frontmatter_rendering = render_frontmatter(parsed.frontmatter);
      return parsed;
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return fail(Error::at({file, 1, 0}, "front matter is not closed with a line '---'"));
}

bool is_bundle_junk(const fs::path& relative) {
  for (const auto& part : relative) {
    const std::string p = part.string();
    if (p == "__pycache__" || p == ".git" || p == "node_modules" || p == ".DS_Store" ||
        p == ".ipynb_checkpoints")
      return true;
  }
  return relative.extension() == ".pyc";
}

std::optional<fs::path> find_skill_md(const fs::path& dir) {
  std::error_code ec;
  for (const char* name : {"SKILL.md", "skill.md"}) {
    if (fs::is_regular_file(dir / name, ec)) return dir / name;
  }
  return std::nullopt;
}

std::vector<fs::path> find_skills(const fs::path& root, int max_depth) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (find_skill_md(root)) return {root};
  std::function<void(const fs::path&, int)> walk = [&](const fs::path& dir, int depth) {
    if (depth > max_depth) return;
    std::vector<fs::path> children;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::error_code e2;
      if (!entry.is_directory(e2) || entry.is_symlink(e2)) continue;
      const std::string name = entry.path().filename().string();
      if (name == ".git" || name == "node_modules" || name == "__pycache__" || name == ".venv" ||
          name == "venv")
        continue;
      children.push_back(entry.path());
    }
    std::sort(children.begin(), children.end());
    for (const auto& child : children) {
      if (find_skill_md(child))
        out.push_back(child);  // a skill's own folders are its own, not more skills
      else
        walk(child, depth + 1);
    }
  };
  walk(root, 1);
  return out;
}

std::vector<std::string> SkillBundle::files_under(std::string_view folder) const {
  std::vector<std::string> out;
  const std::string prefix = std::string(folder) + "/";
  for (const auto& [path, _] : files)
    if (path.starts_with(prefix)) out.push_back(path);
  return out;
}

const std::vector<cases::TestCase>& SkillBundle::tests() const {
  static const std::vector<cases::TestCase> kNone;
  return meta ? meta->tests : kNone;
}

Result<SkillBundle> SkillBundle::load(const fs::path& path) {
  std::error_code ec;
  fs::path dir = path;
  if (fs::is_regular_file(path, ec) &&
      (path.filename() == "SKILL.md" || path.filename() == "skill.md"))
    dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!fs::exists(dir, ec))
    return fail(Error::usage(fmt::format("{}: no such skill directory", path.string())));
  if (!fs::is_directory(dir, ec))
    return fail(Error::usage(
        fmt::format("{}: not a skill directory (expected a folder with SKILL.md)", path.string())));
  auto skill_md = find_skill_md(dir);
  if (!skill_md)
    return fail(Error::usage(fmt::format("{}: not a skill (no SKILL.md)", dir.string())));

  SkillBundle bundle;
  bundle.directory = dir;
  bundle.skill_md_name = skill_md->filename().string();
  if (bundle.skill_md_name != "SKILL.md")
    bundle.warnings.push_back(
        fmt::format("{}: the file should be named SKILL.md", skill_md->string()));
  UPSKILL_ASSIGN_OR_RETURN(std::string text, files::read_text(*skill_md));
  UPSKILL_ASSIGN_OR_RETURN(ParsedSkillMd parsed, parse_skill_md(text, skill_md->string()));
  bundle.frontmatter = std::move(parsed.frontmatter);
  bundle.body = std::move(parsed.body);
  bundle.source_frontmatter_text = std::move(parsed.frontmatter_text);
  bundle.source_frontmatter_rendering = std::move(parsed.frontmatter_rendering);
  bundle.newline = parsed.newline;
  bundle.source_opening = std::move(parsed.opening);
  bundle.source_closing = std::move(parsed.closing);

  for (const auto& rel : files::list_files(dir)) {
    const std::string key = rel.generic_string();
    if (key == bundle.skill_md_name || key == "skill_meta.json" || is_bundle_junk(rel)) continue;
    if (fs::is_symlink(dir / rel, ec)) {
      bundle.warnings.push_back(
          fmt::format("{}: symbolic link left out of the bundle", (dir / rel).string()));
      continue;
    }
    UPSKILL_ASSIGN_OR_RETURN(std::string content, files::read_text(dir / rel));
    const auto perms = fs::status(dir / rel, ec).permissions();
    const bool exec = (perms & fs::perms::owner_exec) != fs::perms::none;
    bundle.files.emplace(key, BundleFile{std::move(content), exec});
  }

  const fs::path meta_path = dir / "skill_meta.json";
  if (fs::exists(meta_path, ec)) {
    UPSKILL_ASSIGN_OR_RETURN(std::string meta_text, files::read_text(meta_path));
    UPSKILL_ASSIGN_OR_RETURN(SkillMeta meta, parse_skill_meta(meta_text, meta_path.string()));
    bundle.warnings.insert(bundle.warnings.end(), meta.warnings.begin(), meta.warnings.end());
    bundle.meta = std::move(meta);
  }
  return bundle;
}

std::string SkillBundle::render_skill_md() const {
  std::string fm = render_frontmatter(frontmatter);
  if (!source_frontmatter_rendering.empty() && fm == source_frontmatter_rendering)
    return source_opening + source_frontmatter_text + source_closing + body;
  if (newline == "\r\n") {
    std::string crlf;
    for (char c : fm) {
      if (c == '\n') crlf += '\r';
      crlf += c;
    }
    fm = crlf;
  }
  return "---" + newline + fm + "---" + newline + body;
}

Status SkillBundle::save(const fs::path& dir) const {
  UPSKILL_RETURN_IF_ERROR(files::write_atomic(dir / skill_md_name, render_skill_md()));
  if (meta)
    UPSKILL_RETURN_IF_ERROR(files::write_atomic(dir / "skill_meta.json", render_skill_meta(*meta)));
  for (const auto& [rel, file] : files) {
    const fs::path target = dir / rel;
    UPSKILL_RETURN_IF_ERROR(files::write_atomic(target, file.content));
    std::error_code ec;
    if (file.executable) {
      fs::permissions(target,
                      fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                      fs::perm_options::add, ec);
      if (ec)
        return fail(Error::usage(
            fmt::format("{}: cannot make executable: {}", target.string(), ec.message())));
    }
  }
  return {};
}

}  // namespace upskill::skill
