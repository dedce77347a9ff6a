// skill_meta.json ({"metadata": …, "tests": […]}) read and written as upskill does (see
// skill_meta.hpp).
#include "upskill/skill/skill_meta.hpp"

#include <fmt/format.h>

#include "upskill/core/json_fields.hpp"

namespace upskill::skill {

namespace {
std::string canonical(const SkillMeta& meta) {
  Json j = Json::object();
  j["metadata"] = meta.metadata;
  j["tests"] = cases::cases_to_json(meta.tests);
  return j.dump(2) + "\n";
}
}  // namespace

Result<SkillMeta> parse_skill_meta(std::string_view text, const std::string& file) {
  UPSKILL_ASSIGN_OR_RETURN(JsonDocument doc, parse_json_document(text, file));
  JsonObjectReader r(doc, "", "");
  UPSKILL_RETURN_IF_ERROR(
      r.expect_object("skill metadata ({\"metadata\": {...}, \"tests\": [...]})"));
  UPSKILL_RETURN_IF_ERROR(r.reject_unknown_keys({"metadata", "tests"}));
  SkillMeta meta;
  if (r.has("metadata")) {
    const Json& m = doc.value.at("metadata");
    if (!m.is_object())
      return fail(r.error_at(
          "metadata", fmt::format("'metadata' must be an object, found {}", json_type_name(m))));
    meta.metadata = m;
  }
  if (r.has("tests")) {
    UPSKILL_ASSIGN_OR_RETURN(cases::CaseListResult tests, cases::parse_case_array(doc, "/tests"));
    meta.tests = std::move(tests.cases);
    meta.warnings = std::move(tests.warnings);
  }
  meta.source_text = std::string(text);
  meta.source_rendering = canonical(meta);
  return meta;
}

std::string render_skill_meta(const SkillMeta& meta) {
  std::string now = canonical(meta);
  if (!meta.source_text.empty() && now == meta.source_rendering) return meta.source_text;
  return now;
}

}  // namespace upskill::skill
