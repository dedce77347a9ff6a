// Test cases in upskill's JSON format plus our additions (id, mode, threshold, checks) (see
// test_case.hpp).
#include "upskill/cases/test_case.hpp"

#include <fmt/format.h>

#include <map>
#include <regex>

#include "upskill/core/enum_names.hpp"
#include "upskill/core/hash.hpp"
#include "upskill/core/json_fields.hpp"
#include "upskill/core/text.hpp"

namespace upskill::cases {

namespace {
constexpr enum_names::Table<Mode, 2> kModes{{{Mode::chat, "chat"}, {Mode::agent, "agent"}}};
}  // namespace

std::string_view to_string(Mode mode) {
  return enum_names::name(kModes, mode);
}

std::optional<Mode> mode_from_string(std::string_view name) {
  return enum_names::parse(kModes, name);
}

const std::vector<std::string>& mode_names() {
  static const std::vector<std::string> names = enum_names::all(kModes);
  return names;
}

namespace {

std::string case_context(const Json& raw, std::size_t index) {
  if (raw.is_object()) {
    auto it = raw.find("id");
    if (it != raw.end() && it->is_string())
      return fmt::format("case {} ('{}')", index + 1, it->get<std::string>());
  }
  return fmt::format("case {}", index + 1);
}

Result<TestCase> parse_case(const JsonDocument& doc, const std::string& pointer,
                            std::size_t index) {
  const std::string context = case_context(doc.value.at(Json::json_pointer(pointer)), index);
  JsonObjectReader r(doc, pointer, context);
  UPSKILL_RETURN_IF_ERROR(r.expect_object("a test case"));
  UPSKILL_RETURN_IF_ERROR(r.reject_unknown_keys(test_case_keys()));
  TestCase c;
  UPSKILL_ASSIGN_OR_RETURN(c.input, r.required_string("input"));
  if (text::trim(c.input).empty()) return fail(r.error_at("input", "'input' must not be empty"));

  UPSKILL_ASSIGN_OR_RETURN(auto id, r.optional_string("id"));
  if (id) {
    static const std::regex kId(R"(^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$)");
    if (!std::regex_match(*id, kId))
      return fail(r.error_at(
          "id", fmt::format("id '{}' must be 1-100 characters of letters, digits, '.', '_' "
                            "or '-', starting with a letter or digit",
                            *id)));
    c.id = *id;
  } else {
    c.id = derive_case_id(c.input);
    c.id_generated = true;
  }

  if (r.has("context")) {
    c.has_context = true;
    JsonObjectReader ctx(doc, r.child("context"), context + ": context");
    UPSKILL_RETURN_IF_ERROR(ctx.expect_object("'context'"));
    UPSKILL_RETURN_IF_ERROR(ctx.reject_unknown_keys({"files"}));
    if (ctx.has("files")) {
      JsonObjectReader files(doc, ctx.child("files"), context + ": context.files");
      UPSKILL_RETURN_IF_ERROR(files.expect_object("'context.files' (file name -> content)"));
      for (const auto& [name, content] : files.value().items()) {
        if (!content.is_string())
          return fail(
              files.error_at(name, fmt::format("file '{}' must have string content, found {}", name,
                                               json_type_name(content))));
        if (name.empty()) return fail(files.error_at_key(name, "file names must not be empty"));
        c.context_files.emplace_back(name, content.get<std::string>());
      }
    }
  }

  if (r.has("expected")) {
    c.has_expected = true;
    JsonObjectReader ex(doc, r.child("expected"), context + ": expected");
    UPSKILL_RETURN_IF_ERROR(ex.expect_object("'expected'"));
    UPSKILL_RETURN_IF_ERROR(ex.reject_unknown_keys({"contains"}));
    if (ex.has("contains")) {
      c.expected_contains_was_string = ex.value().at("contains").is_string();
      UPSKILL_ASSIGN_OR_RETURN(c.expected_contains, ex.string_list("contains", true));
    }
  }

  if (r.has("verifiers")) {
    c.has_verifiers = true;
    const Json& list = r.value().at("verifiers");
    if (!list.is_array())
      return fail(r.error_at(
          "verifiers", fmt::format("'verifiers' must be a list, found {}", json_type_name(list))));
    for (std::size_t i = 0; i < list.size(); ++i) {
      UPSKILL_ASSIGN_OR_RETURN(Verifier v,
                               parse_verifier({doc, json_pointer_append(r.child("verifiers"), i),
                                               fmt::format("{}: verifier {}", context, i + 1)}));
      c.verifiers.push_back(std::move(v));
    }
  }

  UPSKILL_ASSIGN_OR_RETURN(c.output_file, r.optional_string("output_file"));
  UPSKILL_ASSIGN_OR_RETURN(c.validator, r.optional_string("validator"));
  if (r.has("validator_config")) {
    const Json& cfg = r.value().at("validator_config");
    if (!cfg.is_object())
      return fail(r.error_at(
          "validator_config",
          fmt::format("'validator_config' must be an object, found {}", json_type_name(cfg))));
    for (const auto& [k, v] : cfg.items()) {
      if (!(v.is_string() || v.is_number() || v.is_boolean()))
        return fail(r.error_at(
            "validator_config",
            fmt::format("'validator_config.{}' must be a string, number or boolean, found {}", k,
                        json_type_name(v))));
    }
    c.validator_config = cfg;
  }

  UPSKILL_ASSIGN_OR_RETURN(const auto mode, r.optional_string("mode"));
  if (mode) {
    c.mode = mode_from_string(*mode);
    if (!c.mode)
      return fail(
          r.error_at("mode", fmt::format("mode must be 'chat' or 'agent', found '{}'", *mode)));
  }
  UPSKILL_ASSIGN_OR_RETURN(c.threshold, r.optional_number("threshold"));
  if (c.threshold && (*c.threshold < 0 || *c.threshold > 1))
    return fail(r.error_at("threshold", "'threshold' must be between 0 and 1"));

  if (r.has("checks")) {
    const Json& checks = r.value().at("checks");
    if (!checks.is_array())
      return fail(r.error_at(
          "checks", fmt::format("'checks' must be a list, found {}", json_type_name(checks))));
    for (std::size_t i = 0; i < checks.size(); ++i) {
      UPSKILL_ASSIGN_OR_RETURN(Check check,
                               parse_check({doc, json_pointer_append(r.child("checks"), i),
                                            fmt::format("{}: check {}", context, i + 1)}));
      c.checks.push_back(std::move(check));
    }
  }
  return c;
}

}  // namespace

const std::vector<std::string>& test_case_keys() {
  static const std::vector<std::string> keys{
      "id",        "input",       "context",   "expected",
      "verifiers", "output_file", "validator", "validator_config",
      "mode",      "threshold",   "checks"};
  return keys;
}

std::string derive_case_id(std::string_view input) {
  std::string slug = text::slugify(input, 5);
  if (slug.empty()) slug = "case";
  return slug + "-" + hash::sha256_hex(input).substr(0, 8);
}

std::vector<Check> TestCase::effective_checks() const {
  std::vector<Check> out;
  std::vector<std::string> wanted;
  for (const auto& value : expected_contains)
    if (!value.empty()) wanted.push_back(value);  // upskill: an empty string is trivially present
  if (!wanted.empty())
    out.push_back(
        Check{CheckKind::contains_all, TextMatchParams{wanted}, 1.0, "expected.contains"});
  for (const auto& v : verifiers) out.push_back(v.to_check());
  if (validator) {
    std::optional<std::string> file;
    if (output_file && !workspace_path_problem(*output_file)) file = output_file;
    out.push_back(
        Check{CheckKind::validator,
              ValidatorParams{*validator, validator_config.value_or(Json::object()), file}, 1.0,
              "validator"});
  }
  out.insert(out.end(), checks.begin(), checks.end());
  return out;
}

bool TestCase::verifiers_need_workspace() const {
  for (const auto& v : verifiers)
    if (v.type == "file_exists" || v.type == "file_contains" || v.type == "command" ||
        (v.type == "validator" && v.path))
      return true;
  return false;
}

Result<CaseListResult> parse_case_array(const JsonDocument& doc, const std::string& pointer,
                                        bool allow_checkless) {
  const Json& list = doc.value.at(Json::json_pointer(pointer));
  if (!list.is_array())
    return fail(Error::at(doc.at(pointer), fmt::format("expected a list of test cases, found {}",
                                                       json_type_name(list))));
  CaseListResult result;
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string item = json_pointer_append(pointer, i);
    UPSKILL_ASSIGN_OR_RETURN(TestCase c, parse_case(doc, item, i));
    if (auto [it, inserted] = seen.emplace(c.id, i); !inserted) {
      return fail(Error::at(
          doc.at(item),
          fmt::format("case {}: id '{}' is already used by case {}{}", i + 1, c.id, it->second + 1,
                      c.id_generated ? " (same input; give the cases distinct ids)" : "")));
    }
    if (c.effective_checks().empty() && !allow_checkless)
      return fail(Error::at(doc.at(item),
                            fmt::format("case {} ('{}') has no check, so it could never pass: give "
                                        "it expected.contains, verifiers, a validator or checks",
                                        i + 1, c.id)));
    if (c.effective_checks().empty())
      result.warnings.push_back(
          fmt::format("{}: case {} ('{}') has no checks, so it can never pass",
                      doc.at(item).to_string(), i + 1, c.id));
    result.cases.push_back(std::move(c));
  }
  return result;
}

Json case_to_json(const TestCase& c) {
  Json j = Json::object();
  if (!c.id_generated) j["id"] = c.id;
  j["input"] = c.input;
  if (c.has_context) {
    Json files = Json::object();
    for (const auto& [name, content] : c.context_files) files[name] = content;
    j["context"] = Json{{"files", files}};
  }
  if (c.has_expected) {
    Json expected = Json::object();
    if (c.expected_contains_was_string && c.expected_contains.size() == 1)
      expected["contains"] = c.expected_contains.front();
    else
      expected["contains"] = c.expected_contains;
    j["expected"] = expected;
  }
  if (c.has_verifiers) {
    Json list = Json::array();
    for (const auto& v : c.verifiers) list.push_back(verifier_to_json(v));
    j["verifiers"] = list;
  }
  if (c.output_file) j["output_file"] = *c.output_file;
  if (c.validator) j["validator"] = *c.validator;
  if (c.validator_config) j["validator_config"] = *c.validator_config;
  if (c.mode) j["mode"] = to_string(*c.mode);
  if (c.threshold) j["threshold"] = *c.threshold;
  if (!c.checks.empty()) {
    Json checks = Json::array();
    for (const auto& check : c.checks) checks.push_back(check_to_json(check));
    j["checks"] = checks;
  }
  return j;
}

Json cases_to_json(const std::vector<TestCase>& cases) {
  Json out = Json::array();
  for (const auto& c : cases) out.push_back(case_to_json(c));
  return out;
}

bool operator==(const TestCase& a, const TestCase& b) {
  return a.id == b.id && case_to_json(a) == case_to_json(b);
}

const TestCase* find_case(const std::vector<TestCase>& cases, std::string_view id) {
  for (const auto& c : cases)
    if (c.id == id) return &c;
  return nullptr;
}

}  // namespace upskill::cases
