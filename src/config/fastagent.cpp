// fast-agent's fastagent.config.yaml and fastagent.secrets.yaml, read for their provider sections
// (docs/models.md): the Python upskill reaches every model through fast-agent, so this is where its
// users keep endpoints and keys.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>

#include "upskill/config/config.hpp"
#include "upskill/core/files.hpp"

namespace upskill::config {

namespace {

// fast-agent's section names; `huggingface` is another name for `hf`.
std::string provider_of_section(const std::string& section) {
  if (section == "huggingface") return "hf";
  for (const auto& p : known_providers())
    if (p == section) return p;
  return "";
}

SourceLocation where(const std::string& file, const YAML::Node& node) {
  const auto mark = node.Mark();
  if (mark.is_null()) return {file, 0, 0};
  return {file, mark.line + 1, mark.column + 1};
}

// "${VAR}" or "${VAR:default}": the variable's name and the default; nullopt for plain text.
std::optional<std::pair<std::string, std::optional<std::string>>> reference(const std::string& s) {
  if (!s.starts_with("${") || !s.ends_with("}")) return std::nullopt;
  const std::string inner = s.substr(2, s.size() - 3);
  const std::size_t colon = inner.find(':');
  if (colon == std::string::npos) return std::make_pair(inner, std::optional<std::string>());
  return std::make_pair(inner.substr(0, colon),
                        std::optional<std::string>(inner.substr(colon + 1)));
}

// Text with every ${VAR} / ${VAR:default} replaced from the environment.
std::string expand(const std::string& s) {
  std::string out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    const std::size_t open = s.find("${", pos);
    const std::size_t close = open == std::string::npos ? open : s.find('}', open);
    if (close == std::string::npos) {
      out += s.substr(pos);
      break;
    }
    out += s.substr(pos, open - pos);
    auto ref = reference(s.substr(open, close - open + 1));
    const char* value = std::getenv(ref->first.c_str());
    out += value ? std::string(value) : ref->second.value_or("");
    pos = close + 1;
  }
  return out;
}

Status read_file(Config& config, const fs::path& path) {
  UPSKILL_ASSIGN_OR_RETURN(std::string text, files::read_text(path));
  const std::string file = path.string();
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return fail(Error::at({file, e.mark.line + 1, e.mark.column + 1}, "invalid YAML: " + e.msg));
  }
  if (root.IsNull()) return {};
  if (!root.IsMap()) return fail(Error::at({file, 1, 0}, "fast-agent's config must be a mapping"));
  for (const auto& item : root) {
    const std::string provider = provider_of_section(item.first.as<std::string>());
    if (provider.empty() || item.second.IsNull()) continue;  // fast-agent's own settings
    if (!item.second.IsMap())
      return fail(Error::at(where(file, item.first),
                            fmt::format("'{}' must be a mapping (base_url, api_key, ...)",
                                        item.first.as<std::string>())));
    ProviderSettings& p = config.providers[provider];
    p.defined_at = where(file, item.first);
    for (const auto& field : item.second) {
      const std::string key = field.first.as<std::string>();
      if (key != "base_url" && key != "api_key" && key != "default_provider") continue;
      if (field.second.IsNull()) continue;
      if (!field.second.IsScalar())
        return fail(
            Error::at(where(file, field.first),
                      fmt::format("'{}.{}' must be text", item.first.as<std::string>(), key)));
      const std::string value = field.second.as<std::string>();
      if (key == "api_key") {
        if (auto ref = reference(value)) {
          p.api_key_env = ref->first;
          p.api_key = ref->second;
        } else {
          p.api_key = value;
          p.api_key_env.reset();
        }
      } else if (key == "base_url") {
        p.base_url = expand(value);
        if (!(p.base_url->starts_with("http://") || p.base_url->starts_with("https://")))
          return fail(Error::at(
              where(file, field.second),
              fmt::format("base_url '{}' must start with http:// or https://", *p.base_url)));
      } else {
        p.default_provider = expand(value);
      }
    }
  }
  return {};
}

// The file's provider sections; a YAML value of an unexpected kind (a list as a key) is an error
// naming the file, never an exception.
Status read_guarded(Config& config, const fs::path& path) {
  try {
    return read_file(config, path);
  } catch (const YAML::Exception& e) {
    return fail(Error::at({path.string(), e.mark.line + 1, e.mark.column + 1},
                          "unexpected value: " + e.msg));
  }
}

}  // namespace

Status load_fastagent_settings(Config& config, const fs::path& path) {
  UPSKILL_RETURN_IF_ERROR(read_guarded(config, path));
  std::error_code ec;
  const fs::path secrets = path.parent_path() / "fastagent.secrets.yaml";
  if (fs::exists(secrets, ec)) UPSKILL_RETURN_IF_ERROR(read_guarded(config, secrets));
  return {};
}

}  // namespace upskill::config
