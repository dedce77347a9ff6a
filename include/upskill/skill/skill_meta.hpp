#pragma once
// skill_meta.json: {"metadata": {...}, "tests": [...]} as upskill writes it (we also save the
// generated tests, which upskill forgets to do).
#include <string>
#include <string_view>
#include <vector>

#include "upskill/cases/test_case.hpp"
#include "upskill/core/json.hpp"

namespace upskill::skill {

struct SkillMeta {
  // upskill's fields (version, generated_by, generated_at, source_task, test_pass_rate, license,
  // compatibility) plus ours; any other key is kept as written.
  Json metadata = Json::object();
  std::vector<cases::TestCase> tests;
  std::vector<std::string> warnings;  // from loading the tests

  // Round-trip memory: the text read and what it rendered to, so an unchanged file is written back
  // byte for byte.
  std::string source_text;
  std::string source_rendering;
};

Result<SkillMeta> parse_skill_meta(std::string_view text, const std::string& file);
std::string render_skill_meta(const SkillMeta& meta);

}  // namespace upskill::skill
