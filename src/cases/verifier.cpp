// upskill's `verifiers` (docs/test-cases.md): a case's list of typed checks in the Python upskill's
// shape — contains, file_exists, file_contains, command, validator (see verifier.hpp).
#include "upskill/cases/verifier.hpp"

#include <fmt/format.h>

#include "upskill/core/json_fields.hpp"

namespace upskill::cases {

namespace {

constexpr double kCommandTimeoutS = 60;  // upskill's default for config.timeout_seconds

Check unsupported(std::string label, std::string message) {
  return Check{CheckKind::unsupported, UnsupportedParams{std::move(message)}, 1.0,
               std::move(label)};
}

// The strings a contains/file_contains verifier looks for: `values`, else `text`.
std::vector<std::string> wanted(const Verifier& v) {
  if (v.values && !v.values->empty()) return *v.values;
  if (v.text) return {*v.text};
  return {};
}

}  // namespace

const std::vector<std::string>& verifier_keys() {
  static const std::vector<std::string> keys{"type", "name", "values", "path",
                                             "text", "cmd",  "config"};
  return keys;
}

Check Verifier::to_check() const {
  std::string label = name && type != "validator" ? *name : "verifier " + type;
  if (type == "contains") {
    auto items = wanted(*this);
    if (items.empty()) return unsupported(label, "a contains verifier needs 'values' or 'text'");
    return Check{CheckKind::contains_all, TextMatchParams{items}, 1.0, label};
  }
  if (type == "file_exists" || type == "file_contains") {
    if (!path) return unsupported(label, fmt::format("a {} verifier needs 'path'", type));
    if (auto problem = workspace_path_problem(*path))
      return unsupported(label, fmt::format("path '{}': {}", *path, *problem));
    if (type == "file_exists")
      return Check{CheckKind::file_exists, FileExistsParams{*path}, 1.0, label};
    auto items = wanted(*this);
    if (items.empty())
      return unsupported(label, "a file_contains verifier needs 'values' or 'text'");
    return Check{CheckKind::file_contains, FileContainsParams{*path, items, true}, 1.0, label};
  }
  if (type == "command") {
    if (!cmd || cmd->empty()) return unsupported(label, "a command verifier needs 'cmd'");
    CommandParams p;
    p.run = *cmd;
    p.timeout_s = kCommandTimeoutS;
    if (config) {
      auto it = config->find("timeout_seconds");
      if (it != config->end()) {
        if (!it->is_number() || it->get<double>() <= 0)
          return unsupported(label, "config.timeout_seconds must be a number greater than 0");
        p.timeout_s = it->get<double>();
      }
    }
    return Check{CheckKind::command, p, 1.0, label};
  }
  if (type == "validator") {
    if (!name || name->empty())
      return unsupported(label, "a validator verifier needs 'name' (the validator's)");
    ValidatorParams p{*name, config.value_or(Json::object()), std::nullopt};
    if (path) {
      if (auto problem = workspace_path_problem(*path))
        return unsupported(label, fmt::format("path '{}': {}", *path, *problem));
      p.file = *path;
    }
    return Check{CheckKind::validator, p, 1.0, "verifier validator"};
  }
  return unsupported(label, fmt::format("unsupported verifier type: {}", type));
}

Result<Verifier> parse_verifier(const CheckSource& source) {
  JsonObjectReader r(source.doc, source.pointer, source.context);
  UPSKILL_RETURN_IF_ERROR(r.expect_object("a verifier"));
  UPSKILL_RETURN_IF_ERROR(r.reject_unknown_keys(verifier_keys()));
  Verifier v;
  UPSKILL_ASSIGN_OR_RETURN(v.type, r.required_string("type"));
  UPSKILL_ASSIGN_OR_RETURN(v.name, r.optional_string("name"));
  if (r.has("values")) {
    v.values_was_string = r.value().at("values").is_string();
    UPSKILL_ASSIGN_OR_RETURN(v.values, r.string_list("values", true));
  }
  UPSKILL_ASSIGN_OR_RETURN(v.path, r.optional_string("path"));
  UPSKILL_ASSIGN_OR_RETURN(v.text, r.optional_string("text"));
  UPSKILL_ASSIGN_OR_RETURN(v.cmd, r.optional_string("cmd"));
  if (r.has("config")) {
    UPSKILL_ASSIGN_OR_RETURN(v.config, parse_scalar_map(r, "config"));
  }
  return v;
}

Json verifier_to_json(const Verifier& v) {
  Json j = {{"type", v.type}};
  if (v.name) j["name"] = *v.name;
  if (v.values) {
    if (v.values_was_string && v.values->size() == 1)
      j["values"] = v.values->front();
    else
      j["values"] = *v.values;
  }
  if (v.path) j["path"] = *v.path;
  if (v.text) j["text"] = *v.text;
  if (v.cmd) j["cmd"] = *v.cmd;
  if (v.config) j["config"] = *v.config;
  return j;
}

bool operator==(const Verifier& a, const Verifier& b) {
  return verifier_to_json(a) == verifier_to_json(b);
}

}  // namespace upskill::cases
