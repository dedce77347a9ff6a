// A saved answer scored against one case (see saved_answer.hpp).
#include "upskill/checks/saved_answer.hpp"

#include <fmt/format.h>

#include "upskill/cases/test_suite.hpp"
#include "upskill/checks/checkers.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/temp_dir.hpp"
#include "upskill/core/text.hpp"
#include "upskill/skill/skill_bundle.hpp"

namespace upskill::checks {

namespace fs = std::filesystem;

namespace {

Result<std::vector<cases::TestCase>> load_cases(const fs::path& target, std::string& source) {
  std::error_code ec;
  if (fs::is_directory(target, ec)) {
    UPSKILL_ASSIGN_OR_RETURN(skill::SkillBundle bundle, skill::SkillBundle::load(target));
    if (!bundle.meta)
      return fail(Error::usage(
          fmt::format("{}: the skill has no skill_meta.json, so no test cases", target.string())));
    source = (target / "skill_meta.json").string();
    return bundle.meta->tests;
  }
  UPSKILL_ASSIGN_OR_RETURN(cases::TestSuite suite, cases::load_test_suite(target));
  source = target.string();
  return suite.cases;
}

// A private copy of the workspace, so commands cannot change the user's files.
Result<fs::path> scratch_copy(const fs::path& from, TempDir& scratch) {
  UPSKILL_ASSIGN_OR_RETURN(scratch, TempDir::create("upskill-check"));
  UPSKILL_RETURN_IF_ERROR(files::copy_tree(from, scratch.path() / "workspace", {}));
  return scratch.path() / "workspace";
}

}  // namespace

Result<SavedAnswerResult> check_saved_answer(const SavedAnswerRequest& request) {
  SavedAnswerResult out;
  UPSKILL_ASSIGN_OR_RETURN(std::vector<cases::TestCase> all,
                           load_cases(request.target, out.source));
  const cases::TestCase* found = cases::find_case(all, request.case_id);
  if (!found) {
    std::vector<std::string> ids;
    for (const auto& c : all) ids.push_back(c.id);
    return fail(Error::usage(
        fmt::format("{}: no case with id '{}' (cases: {})", out.source, request.case_id,
                    ids.empty() ? std::string("none") : text::join(ids, ", "))));
  }
  out.test_case = *found;

  Answer answer;
  TempDir scratch;
  std::error_code ec;
  if (request.answer_text) {
    answer.text = *request.answer_text;
  } else if (fs::is_directory(request.answer, ec)) {
    UPSKILL_ASSIGN_OR_RETURN(answer.workspace, scratch_copy(request.answer, scratch));
  } else {
    UPSKILL_ASSIGN_OR_RETURN(answer.text, files::read_text(request.answer));
  }
  KernelPipelineOptions kernel_options = request.kernel;
  kernel_options.spec_base = fs::path(out.source).parent_path();
  const Checkers checkers(kernel_options);
  out.result = score_case(out.test_case, answer, checkers.environment());
  return out;
}

}  // namespace upskill::checks
