#pragma once
// How an evaluation is shown: the terminal (bars like upskill's, with intervals and p-values),
// JUnit XML (assertion failures as <failure>, infrastructure problems as <error>, trials whose
// checks could not all run as <skipped message="not run: ...">, never an empty suite) and a
// GitHub-flavoured markdown summary kept under GitHub's 1 MiB step-summary limit.
#include <cstddef>
#include <string>

#include "upskill/eval/summary.hpp"

namespace upskill::report {

struct TerminalOptions {
  bool verbose = false;  // one line per case with the failing check's reason
  bool color = false;
};

std::string bar(double fraction, int width = 20);
// A model's figures as `eval` prints them: each arm's line (bar, rate, interval, tokens a trial,
// trials not run and pairs left out), the lift line and the cost. The one rendering of them that
// `eval` and `runs` share.
std::string render_model_figures(const eval::EvalSummary& summary, const eval::ModelSummary& model,
                                 bool color);
// Beside an arm's rate: how many of its trials were not run, and how many it left out in all
// (" · 5 not run (5 left out with their pairs)"); empty when none.
std::string not_run_note(long long not_run, long long excluded);
std::string render_terminal(const eval::EvalSummary& summary, const eval::Evaluation& evaluation,
                            const TerminalOptions& options);
std::string render_junit(const eval::EvalSummary& summary, const eval::Evaluation& evaluation);
std::string render_markdown(const eval::EvalSummary& summary, const eval::Evaluation& evaluation,
                            std::size_t max_bytes = 1000 * 1024);

std::string xml_escape(std::string_view text);

}  // namespace upskill::report
