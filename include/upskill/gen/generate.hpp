#pragma once
// Generation: a teacher model writes a skill bundle (name, description, body, references, scripts)
// through structured output, with a SKILL.md-text fallback for servers that ignore the schema; the
// result must pass `validate`, with one repair round-trip to the teacher when it does not. The same
// engine improves an existing skill (`--from SKILL_DIR`) and refines one from failing checks.
#include <optional>
#include <string>
#include <vector>

#include "upskill/core/cancel.hpp"
#include "upskill/llm/client.hpp"
#include "upskill/skill/skill_bundle.hpp"
#include "upskill/trace/digest.hpp"

namespace upskill::gen {

// Who answers generation requests.
struct Teacher {
  const llm::ResolvedModel* model = nullptr;
  llm::ChatClient* client = nullptr;
  const CancelToken* cancel = nullptr;
  llm::SamplingOptions sampling;
};

struct SkillRequest {
  std::string task;
  std::vector<std::string> examples;             // -e: example requests the skill should serve
  const trace::TraceDigest* digest = nullptr;    // --from TRACE
  const skill::SkillBundle* existing = nullptr;  // --from SKILL_DIR: improve it
};

struct GeneratedSkill {
  skill::SkillBundle bundle;
  llm::Usage usage;  // teacher tokens spent on it
  int requests = 0;
  int repairs = 0;                      // repair round-trips used (0 or 1)
  std::vector<std::string> validation;  // errors left after the repair (empty: valid)
  std::vector<std::string> notes;       // how the reply was read, what was fixed up
};

// What one failing trial tells the teacher: the case, the answer and every failing check's reason.
struct FailureReport {
  std::string case_id;
  std::string input;
  std::string answer;                // the student's answer (bounded)
  std::vector<std::string> reasons;  // "check label: reason (expected …, found …)"
};

// Writes a new skill (or an improved `existing` one).
Result<GeneratedSkill> generate_skill(const SkillRequest& request, const Teacher& teacher);

// Rewrites `current` (sent whole, with every file) so that the failures stop failing.
Result<GeneratedSkill> refine_skill(const skill::SkillBundle& current,
                                    const std::vector<FailureReport>& failures,
                                    const SkillRequest& context, const Teacher& teacher);

// Reads a teacher reply: the JSON skill object (fenced or bare), else SKILL.md text (fenced or
// bare). Files outside references/, scripts/ and assets/ are moved under references/.
Result<skill::SkillBundle> parse_skill_reply(const std::string& reply,
                                             std::vector<std::string>& notes);

// The validator's errors for a bundle, judged as it would be saved.
std::vector<std::string> validation_errors(const skill::SkillBundle& bundle);

// The JSON schema of the skill object the teacher is asked for.
const Json& skill_schema();

}  // namespace upskill::gen
