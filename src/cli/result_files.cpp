// --json, --junit and --summary-md (else $GITHUB_STEP_SUMMARY): the result files of an
// evaluation, rendered by report/ and written by eval::write_result_files.
#include <cstdlib>

#include "cli.hpp"
#include "upskill/report/eval_report.hpp"

namespace upskill::cli {

std::vector<eval::ResultFile> result_files(const std::optional<std::string>& json,
                                           const std::optional<std::string>& junit,
                                           const std::optional<std::string>& summary_md) {
  std::vector<eval::ResultFile> files;
  const auto markdown = [](const auto& summary, const auto& evaluation) {
    return report::render_markdown(summary, evaluation);
  };
  if (json)
    files.push_back({*json, false, [](const auto& summary, const auto& evaluation) {
                       return eval::to_json(summary, evaluation).dump(2) + "\n";
                     }});
  if (junit) files.push_back({*junit, false, report::render_junit});
  if (summary_md) {
    files.push_back({*summary_md, false, markdown});
  } else if (const char* step = std::getenv("GITHUB_STEP_SUMMARY"); step && *step) {
    files.push_back({step, true, markdown});
  }
  return files;
}

}  // namespace upskill::cli
