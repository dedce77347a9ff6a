// The check kinds (docs/test-cases.md) as data: what a test case asks of an answer (see
// check_spec.hpp).
#include "upskill/cases/check_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <regex>

#include "upskill/cases/json_path.hpp"
#include "upskill/core/enum_names.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/json_fields.hpp"
#include "upskill/core/text.hpp"

namespace upskill::cases {

namespace {

// The kinds a test file may name (`unsupported` is made only from verifiers).
constexpr enum_names::Table<CheckKind, 15> kKinds{{
    {CheckKind::contains, "contains"},
    {CheckKind::icontains, "icontains"},
    {CheckKind::contains_all, "contains_all"},
    {CheckKind::contains_any, "contains_any"},
    {CheckKind::not_contains, "not_contains"},
    {CheckKind::regex, "regex"},
    {CheckKind::equals, "equals"},
    {CheckKind::is_json, "is_json"},
    {CheckKind::json_path, "json_path"},
    {CheckKind::file_exists, "file_exists"},
    {CheckKind::file_contains, "file_contains"},
    {CheckKind::command, "command"},
    {CheckKind::validator, "validator"},
    {CheckKind::kernel, "kernel"},
    {CheckKind::judge, "judge"},
}};

constexpr enum_names::Table<KernelStage, 7> kStages{{
    {KernelStage::extract, "extract"},
    {KernelStage::layout, "layout"},
    {KernelStage::lint, "lint"},
    {KernelStage::compile, "compile"},
    {KernelStage::bind, "bind"},
    {KernelStage::correct, "correct"},
    {KernelStage::bench, "bench"},
}};

const std::vector<std::string> kLintProfiles{"kernel-builder", "torch-extension", "kernelbench",
                                             "none"};

// Keys every check may carry, plus the kind-specific ones.
std::vector<std::string> allowed_keys(CheckKind kind) {
  std::vector<std::string> keys{"type", "weight", "label"};
  auto add = [&](std::initializer_list<const char*> more) {
    keys.insert(keys.end(), more.begin(), more.end());
  };
  switch (kind) {
    case CheckKind::contains:
    case CheckKind::icontains:
    case CheckKind::not_contains:
      add({"value"});
      break;
    case CheckKind::contains_all:
    case CheckKind::contains_any:
      add({"values"});
      break;
    case CheckKind::regex:
      add({"pattern", "flags"});
      break;
    case CheckKind::equals:
      add({"value", "trim", "ignore_case"});
      break;
    case CheckKind::is_json:
      break;
    case CheckKind::json_path:
      add({"path", "equals"});
      break;
    case CheckKind::file_exists:
      add({"path"});
      break;
    case CheckKind::file_contains:
      add({"path", "value", "values", "ignore_case"});
      break;
    case CheckKind::command:
      add({"run", "expect_exit", "timeout_s"});
      break;
    case CheckKind::validator:
      add({"name", "config", "file"});
      break;
    case CheckKind::kernel:
      add({"stages", "backend", "capabilities", "lint", "spec", "project", "min_speedup",
           "timeout_s"});
      break;
    case CheckKind::judge:
      add({"criteria", "model", "scale", "threshold"});
      break;
    case CheckKind::unsupported:
      break;
  }
  return keys;
}

Result<std::string> non_empty_string(const JsonObjectReader& r, std::string_view key) {
  UPSKILL_ASSIGN_OR_RETURN(std::string s, r.required_string(key));
  if (s.empty()) return fail(r.error_at(key, fmt::format("'{}' must not be empty", key)));
  return s;
}

Result<std::string> workspace_path(const JsonObjectReader& r) {
  UPSKILL_ASSIGN_OR_RETURN(std::string path, r.required_string("path"));
  if (auto problem = workspace_path_problem(path)) return fail(r.error_at("path", *problem));
  return path;
}

Result<double> positive(const JsonObjectReader& r, std::string_view key, std::optional<double> v,
                        double fallback) {
  if (!v) return fallback;
  if (!(*v > 0)) return fail(r.error_at(key, fmt::format("'{}' must be greater than 0", key)));
  return *v;
}

Result<KernelParams> parse_kernel(const JsonObjectReader& r) {
  KernelParams p;
  UPSKILL_ASSIGN_OR_RETURN(auto stage_names, r.string_list("stages", false));
  if (stage_names.empty())
    stage_names = {"extract", "layout", "lint", "compile", "bind", "correct"};
  int previous = -1;
  for (const auto& name : stage_names) {
    auto stage = kernel_stage_from_string(name);
    if (!stage)
      return fail(r.error_at(
          "stages", fmt::format("unknown kernel stage '{}' (stages: extract, layout, lint, "
                                "compile, bind, correct, bench)",
                                name)));
    if (static_cast<int>(*stage) <= previous)
      return fail(r.error_at("stages", "stages must be listed once each, in pipeline order"));
    // Every stage needs the one before it, except that lint may be left out.
    for (int s = previous + 1; s < static_cast<int>(*stage); ++s) {
      if (static_cast<KernelStage>(s) != KernelStage::lint)
        return fail(r.error_at("stages", fmt::format("stage '{}' needs stage '{}' before it", name,
                                                     to_string(static_cast<KernelStage>(s)))));
    }
    previous = static_cast<int>(*stage);
    p.stages.push_back(*stage);
  }
  UPSKILL_ASSIGN_OR_RETURN(auto backend, r.optional_string("backend"));
  if (backend) {
    if (*backend != "cuda" && *backend != "cpu")
      return fail(r.error_at("backend",
                             fmt::format("backend must be 'cuda' or 'cpu', found '{}'", *backend)));
    p.backend = *backend;
  }
  UPSKILL_ASSIGN_OR_RETURN(p.capabilities, r.string_list("capabilities", false));
  static const std::regex kCapability(R"(^[0-9]+\.[0-9]+a?$)");
  for (const auto& cap : p.capabilities) {
    if (!std::regex_match(cap, kCapability))
      return fail(r.error_at("capabilities",
                             fmt::format("capability '{}' must look like '9.0' (or '9.0a')", cap)));
  }
  if (!p.capabilities.empty() && p.backend == "cpu")
    return fail(r.error_at("capabilities", "capabilities only apply to the cuda backend"));
  UPSKILL_ASSIGN_OR_RETURN(auto lint, r.optional_string("lint"));
  if (lint) {
    if (std::find(kLintProfiles.begin(), kLintProfiles.end(), *lint) == kLintProfiles.end())
      return fail(
          r.error_at("lint", fmt::format("unknown lint profile '{}' (profiles: kernel-builder, "
                                         "torch-extension, kernelbench, none)",
                                         *lint)));
    p.lint = *lint;
  }
  UPSKILL_ASSIGN_OR_RETURN(p.spec, r.optional_string("spec"));
  UPSKILL_ASSIGN_OR_RETURN(p.project, r.optional_string("project"));
  const bool runs_code = std::any_of(p.stages.begin(), p.stages.end(), [](KernelStage s) {
    return s == KernelStage::correct || s == KernelStage::bench;
  });
  if (runs_code && !p.spec)
    return fail(r.error(
        "a kernel check with stage 'correct' or 'bench' needs 'spec' (the op's test spec)"));
  UPSKILL_ASSIGN_OR_RETURN(auto speedup, r.optional_number("min_speedup"));
  if (speedup) {
    UPSKILL_ASSIGN_OR_RETURN(double s, positive(r, "min_speedup", speedup, 1.0));
    if (std::find(p.stages.begin(), p.stages.end(), KernelStage::bench) == p.stages.end())
      return fail(r.error_at("min_speedup", "'min_speedup' needs stage 'bench'"));
    p.min_speedup = s;
  }
  UPSKILL_ASSIGN_OR_RETURN(auto timeout, r.optional_number("timeout_s"));
  if (timeout) {
    UPSKILL_ASSIGN_OR_RETURN(double t, positive(r, "timeout_s", timeout, 0));
    p.timeout_s = t;
  }
  return p;
}

Result<JudgeParams> parse_judge(const JsonObjectReader& r) {
  JudgeParams p;
  if (!r.has("criteria")) return fail(r.error("a judge check needs 'criteria'"));
  p.criteria_was_string = r.value().at("criteria").is_string();
  UPSKILL_ASSIGN_OR_RETURN(p.criteria, r.string_list("criteria", true));
  std::erase_if(p.criteria, [](const std::string& c) { return text::trim(c).empty(); });
  if (p.criteria.empty()) return fail(r.error_at("criteria", "'criteria' must not be empty"));
  UPSKILL_ASSIGN_OR_RETURN(p.models, r.string_list("model", true));
  for (const auto& m : p.models)
    if (text::trim(m).empty()) return fail(r.error_at("model", "a judge model must not be empty"));
  UPSKILL_ASSIGN_OR_RETURN(auto scale, r.optional_number("scale"));
  UPSKILL_ASSIGN_OR_RETURN(p.scale, positive(r, "scale", scale, 10));
  UPSKILL_ASSIGN_OR_RETURN(auto threshold, r.optional_number("threshold"));
  p.threshold = threshold.value_or(0.7);
  if (p.threshold < 0 || p.threshold > 1)
    return fail(
        r.error_at("threshold", "'threshold' must be between 0 and 1 (a share of the scale)"));
  return p;
}

Result<CheckParams> parse_params(CheckKind kind, const JsonObjectReader& r) {
  switch (kind) {
    case CheckKind::contains:
    case CheckKind::icontains:
    case CheckKind::not_contains: {
      UPSKILL_ASSIGN_OR_RETURN(std::string v, non_empty_string(r, "value"));
      return TextMatchParams{{v}};
    }
    case CheckKind::contains_all:
    case CheckKind::contains_any: {
      if (!r.has("values")) return fail(r.error("missing required key 'values'"));
      UPSKILL_ASSIGN_OR_RETURN(auto values, r.string_list("values", false));
      if (values.empty()) return fail(r.error_at("values", "'values' must not be empty"));
      for (const auto& v : values)
        if (v.empty()) return fail(r.error_at("values", "'values' must not contain empty strings"));
      return TextMatchParams{values};
    }
    case CheckKind::regex: {
      RegexParams p;
      UPSKILL_ASSIGN_OR_RETURN(p.pattern, non_empty_string(r, "pattern"));
      UPSKILL_ASSIGN_OR_RETURN(auto flags, r.optional_string("flags"));
      p.flags = flags.value_or("");
      if (p.flags.find_first_not_of("im") != std::string::npos)
        return fail(
            r.error_at("flags", "flags may only contain 'i' (ignore case) and 'm' (multiline)"));
      try {
        auto options = std::regex::ECMAScript;
        if (p.flags.find('i') != std::string::npos) options |= std::regex::icase;
        if (p.flags.find('m') != std::string::npos) options |= std::regex::multiline;
        std::regex compiled(p.pattern, options);
      } catch (const std::regex_error& e) {
        return fail(r.error_at("pattern", fmt::format("invalid regular expression: {}", e.what())));
      }
      return p;
    }
    case CheckKind::equals: {
      EqualsParams p;
      UPSKILL_ASSIGN_OR_RETURN(p.value, r.required_string("value"));
      UPSKILL_ASSIGN_OR_RETURN(auto trim, r.optional_bool("trim"));
      UPSKILL_ASSIGN_OR_RETURN(auto icase, r.optional_bool("ignore_case"));
      p.trim = trim.value_or(true);
      p.ignore_case = icase.value_or(false);
      return p;
    }
    case CheckKind::is_json:
      return IsJsonParams{};
    case CheckKind::json_path: {
      JsonPathParams p;
      UPSKILL_ASSIGN_OR_RETURN(p.path, non_empty_string(r, "path"));
      if (auto parsed = parse_json_path(p.path); !parsed)
        return fail(r.error_at("path", parsed.error().message));
      if (r.value().contains("equals")) p.equals = r.value().at("equals");
      return p;
    }
    case CheckKind::file_exists: {
      UPSKILL_ASSIGN_OR_RETURN(std::string path, workspace_path(r));
      return FileExistsParams{path};
    }
    case CheckKind::file_contains: {
      FileContainsParams p;
      UPSKILL_ASSIGN_OR_RETURN(p.path, workspace_path(r));
      if (r.has("value") == r.has("values"))
        return fail(r.error("a file_contains check needs exactly one of 'value' and 'values'"));
      if (r.has("value")) {
        UPSKILL_ASSIGN_OR_RETURN(std::string v, non_empty_string(r, "value"));
        p.values = {v};
      } else {
        UPSKILL_ASSIGN_OR_RETURN(p.values, r.string_list("values", false));
        if (p.values.empty()) return fail(r.error_at("values", "'values' must not be empty"));
        for (const auto& v : p.values)
          if (v.empty())
            return fail(r.error_at("values", "'values' must not contain empty strings"));
      }
      UPSKILL_ASSIGN_OR_RETURN(auto icase, r.optional_bool("ignore_case"));
      p.ignore_case = icase.value_or(false);
      return p;
    }
    case CheckKind::command: {
      CommandParams p;
      UPSKILL_ASSIGN_OR_RETURN(p.run, non_empty_string(r, "run"));
      UPSKILL_ASSIGN_OR_RETURN(auto code, r.optional_integer("expect_exit"));
      if (code && (*code < 0 || *code > 255))
        return fail(r.error_at("expect_exit", "'expect_exit' must be between 0 and 255"));
      p.expect_exit = static_cast<int>(code.value_or(0));
      UPSKILL_ASSIGN_OR_RETURN(auto timeout, r.optional_number("timeout_s"));
      UPSKILL_ASSIGN_OR_RETURN(p.timeout_s, positive(r, "timeout_s", timeout, 60));
      return p;
    }
    case CheckKind::validator: {
      ValidatorParams p;
      UPSKILL_ASSIGN_OR_RETURN(p.name, non_empty_string(r, "name"));
      UPSKILL_ASSIGN_OR_RETURN(p.config, parse_scalar_map(r, "config"));
      UPSKILL_ASSIGN_OR_RETURN(p.file, r.optional_string("file"));
      if (p.file)
        if (auto problem = workspace_path_problem(*p.file))
          return fail(r.error_at("file", *problem));
      return p;
    }
    case CheckKind::kernel:
      return parse_kernel(r);
    case CheckKind::judge:
      return parse_judge(r);
    case CheckKind::unsupported:
      break;
  }
  return fail(r.error("unsupported check type"));
}

}  // namespace

std::string_view to_string(CheckKind kind) {
  return enum_names::name(kKinds, kind, kind == CheckKind::unsupported ? "unsupported" : "unknown");
}

std::optional<CheckKind> check_kind_from_string(std::string_view name) {
  return enum_names::parse(kKinds, name);
}

const std::vector<std::string>& check_kind_names() {
  static const std::vector<std::string> names = enum_names::all(kKinds);
  return names;
}

std::string_view to_string(KernelStage stage) {
  return enum_names::name(kStages, stage);
}

std::optional<KernelStage> kernel_stage_from_string(std::string_view name) {
  return enum_names::parse(kStages, name);
}

std::optional<std::string> workspace_path_problem(std::string_view path) {
  return files::relative_path_problem(path);
}

Result<ScalarMap> parse_scalar_map(const JsonObjectReader& r, std::string_view key) {
  if (!r.has(key)) return Json::object();
  const Json& v = r.value().at(std::string(key));
  if (!v.is_object()) return fail(r.error_at(key, fmt::format("'{}' must be an object", key)));
  for (const auto& [k, item] : v.items()) {
    if (!(item.is_string() || item.is_number() || item.is_boolean()))
      return fail(
          r.error_at(key, fmt::format("'{}.{}' must be a string, number or boolean, found {}", key,
                                      k, json_type_name(item))));
  }
  return v;
}

Result<Check> parse_check(const CheckSource& source) {
  JsonObjectReader r(source.doc, source.pointer, source.context);
  UPSKILL_RETURN_IF_ERROR(r.expect_object("a check"));
  UPSKILL_ASSIGN_OR_RETURN(std::string type, r.required_string("type"));
  auto kind = check_kind_from_string(type);
  if (!kind)
    return fail(r.error_at("type", fmt::format("unknown check type '{}' (types: {})", type,
                                               text::join(check_kind_names(), ", "))));
  UPSKILL_RETURN_IF_ERROR(r.reject_unknown_keys(allowed_keys(*kind)));
  Check check;
  check.kind = *kind;
  UPSKILL_ASSIGN_OR_RETURN(auto weight, r.optional_number("weight"));
  if (weight && *weight < 0) return fail(r.error_at("weight", "'weight' must not be negative"));
  check.weight = weight.value_or(1.0);
  UPSKILL_ASSIGN_OR_RETURN(auto label, r.optional_string("label"));
  check.label = label.value_or("");
  UPSKILL_ASSIGN_OR_RETURN(check.params, parse_params(*kind, r));
  return check;
}

Json check_to_json(const Check& check) {
  Json j = Json::object();
  j["type"] = std::string(to_string(check.kind));
  if (!check.label.empty()) j["label"] = check.label;
  std::visit(
      [&](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, TextMatchParams>) {
          if (check.kind == CheckKind::contains_all || check.kind == CheckKind::contains_any)
            j["values"] = p.values;
          else
            j["value"] = p.values.empty() ? std::string() : p.values.front();
        } else if constexpr (std::is_same_v<P, RegexParams>) {
          j["pattern"] = p.pattern;
          if (!p.flags.empty()) j["flags"] = p.flags;
        } else if constexpr (std::is_same_v<P, EqualsParams>) {
          j["value"] = p.value;
          if (!p.trim) j["trim"] = false;
          if (p.ignore_case) j["ignore_case"] = true;
        } else if constexpr (std::is_same_v<P, JsonPathParams>) {
          j["path"] = p.path;
          if (p.equals) j["equals"] = *p.equals;
        } else if constexpr (std::is_same_v<P, FileExistsParams>) {
          j["path"] = p.path;
        } else if constexpr (std::is_same_v<P, FileContainsParams>) {
          j["path"] = p.path;
          if (p.values.size() == 1)
            j["value"] = p.values.front();
          else
            j["values"] = p.values;
          if (p.ignore_case) j["ignore_case"] = true;
        } else if constexpr (std::is_same_v<P, CommandParams>) {
          j["run"] = p.run;
          if (p.expect_exit != 0) j["expect_exit"] = p.expect_exit;
          if (p.timeout_s != 60) j["timeout_s"] = p.timeout_s;
        } else if constexpr (std::is_same_v<P, ValidatorParams>) {
          j["name"] = p.name;
          if (!p.config.empty()) j["config"] = p.config;
          if (p.file) j["file"] = *p.file;
        } else if constexpr (std::is_same_v<P, KernelParams>) {
          Json stages = Json::array();
          for (auto s : p.stages) stages.push_back(std::string(to_string(s)));
          j["stages"] = stages;
          j["backend"] = p.backend;
          if (!p.capabilities.empty()) j["capabilities"] = p.capabilities;
          j["lint"] = p.lint;
          if (p.spec) j["spec"] = *p.spec;
          if (p.project) j["project"] = *p.project;
          if (p.min_speedup) j["min_speedup"] = *p.min_speedup;
          if (p.timeout_s) j["timeout_s"] = *p.timeout_s;
        } else if constexpr (std::is_same_v<P, JudgeParams>) {
          if (p.criteria_was_string && p.criteria.size() == 1)
            j["criteria"] = p.criteria.front();
          else
            j["criteria"] = p.criteria;
          if (p.models.size() == 1)
            j["model"] = p.models.front();
          else if (!p.models.empty())
            j["model"] = p.models;
          if (p.scale != 10) j["scale"] = p.scale;
          if (p.threshold != 0.7) j["threshold"] = p.threshold;
        } else if constexpr (std::is_same_v<P, UnsupportedParams>) {
          j["message"] = p.message;
        }
      },
      check.params);
  if (check.weight != 1.0) j["weight"] = check.weight;
  return j;
}

bool operator==(const Check& a, const Check& b) {
  return check_to_json(a) == check_to_json(b);
}

}  // namespace upskill::cases
