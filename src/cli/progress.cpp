// What the pipelines tell the terminal while they run: the observers of an eval session and of
// generate, and the gate lines. Printing only; every decision is the library's.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "cli.hpp"
#include "upskill/core/text.hpp"
#include "upskill/report/eval_report.hpp"

namespace upskill::cli {

namespace fs = std::filesystem;

namespace {

std::string percent(double r) {
  return fmt::format("{:.0f}%", r * 100);
}

// The terminal side of a session: progress on a TTY, one debug line per trial otherwise.
class EvalPrinter : public eval::SessionObserver {
 public:
  explicit EvalPrinter(bool tty) : tty_(tty) {}
  void warning(const std::string& message) override { spdlog::warn("{}", message); }
  void notice(const std::string& message) override { fmt::print(stderr, "{}\n", message); }
  void resumed(const fs::path& batch_dir, std::size_t done) override {
    fmt::print(stderr, "resuming {}: {} trial(s) already done\n", batch_dir.string(), done);
  }
  void started(const eval::Evaluation& plan) override {
    const std::size_t cases = plan.cases.size(), models = plan.models.size();
    fmt::print(stderr, "Evaluating {} on {} case{} × {} run{} with {} model{}{}\n", plan.skill_name,
               cases, cases == 1 ? "" : "s", plan.runs, plan.runs == 1 ? "" : "s", models,
               models == 1 ? "" : "s",
               plan.baseline ? ", with and without the skill" : ", skill only");
  }
  void trial_done(const eval::Evaluation& plan, const eval::TrialResult& t, std::size_t done,
                  std::size_t total) override {
    passed_ += t.passed();
    errors_ += t.failure.has_value();
    if (tty_) {
      fmt::print(stderr, "\r  {} {}/{} trials", report::bar(static_cast<double>(done) / total, 30),
                 done, total);
      return;
    }
    spdlog::debug("trial {}/{}: {} {} run {}: {}", done, total, plan.models[t.key.model].name,
                  eval::to_string(t.key.arm), t.key.run,
                  t.failure ? std::string_view("error") : checks::to_string(t.verdict.status));
    // A CI log: a line every few seconds, and the last one.
    const auto now = std::chrono::steady_clock::now();
    if (done == total || now - last_line_ >= std::chrono::seconds(5)) {
      last_line_ = now;
      fmt::print(stderr, "  {}/{} trials done: {} passed, {} errors\n", done, total, passed_,
                 errors_);
    }
  }
  void finished() override {
    if (tty_) fmt::print(stderr, "\n");
  }

 private:
  bool tty_;
  std::size_t passed_ = 0, errors_ = 0;
  std::chrono::steady_clock::time_point last_line_ = std::chrono::steady_clock::now();
};

// The terminal side of the pipeline: one line per step on stderr.
class GeneratePrinter : public gen::GenerateObserver {
 public:
  explicit GeneratePrinter(const Style& err) : err_(err) {}
  void source_read(const fs::path& from, const gen::SourceInfo& source) override {
    if (source.existing) {
      fmt::print(stderr, "Improving the skill {} ({})\n", source.existing->name(), from.string());
      return;
    }
    const trace::TraceCounts c = trace::count(*source.trace);
    fmt::print(stderr,
               "Read trace {}: {}, {} turns, {} tool calls, {} commands ({} failed), {} files; "
               "digest {} of {} tokens\n",
               from.string(), trace::to_string(source.trace->format), c.turns, c.tool_calls,
               c.commands, c.failed_commands, c.files, source.digest->tokens,
               source.digest->budget);
  }
  void writing_skill(const llm::ResolvedModel& teacher) override {
    fmt::print(stderr, "Generating the skill with {} …\n", teacher.name);
  }
  void skill_written(const gen::GeneratedSkill& g) override {
    for (const auto& n : g.notes) note(n);
    if (!g.validation.empty()) return;
    fmt::print(stderr, "  skill {}: {} (body ≈{} tokens, {} file(s))\n", g.bundle.name(),
               text::excerpt(g.bundle.description(), 90), text::estimate_tokens(g.bundle.body),
               g.bundle.files.size());
  }
  void writing_tests(const llm::ResolvedModel& test_model) override {
    fmt::print(stderr, "Generating tests with {} …\n", test_model.name);
  }
  void test_unusable(const std::string& why) override {
    fmt::print(stderr, "  dropped: {}\n", why);
  }
  void note(const std::string& text) override { fmt::print(stderr, "  note: {}\n", text); }
  void screening(std::size_t cases, bool against_solution) override {
    fmt::print(stderr, "  {} test case(s); checking each against {}an empty answer\n", cases,
               against_solution ? "the trace's own solution and " : "");
  }
  void screened(const gen::Screening& s) override {
    fmt::print(stderr, "    {} {} — {}\n", s.kept ? err_.green("kept   ") : err_.red("dropped"),
               s.case_id, s.reason.empty() ? "an empty answer fails it" : s.reason);
  }
  void evaluating(const std::vector<llm::ResolvedModel>& students, int attempts) override {
    std::vector<std::string> names;
    for (const auto& m : students) names.push_back(m.name);
    fmt::print(stderr, "Evaluating on {} (at most {} attempt(s)) …\n", text::join(names, ", "),
               attempts);
  }
  void attempt_done(const gen::AttemptRecord& r) override {
    fmt::print(stderr, "  attempt {}: with the skill {}{}{}\n", r.attempt, percent(r.with_skill),
               r.baseline ? ", without " + percent(*r.baseline) : "",
               r.lift ? fmt::format(", lift {:+.0f} points", *r.lift * 100) : "");
  }
  void refined(const gen::RefineResult& r) override {
    const gen::AttemptRecord& best = r.attempts[r.best_attempt - 1];
    fmt::print(stderr, "  kept attempt {} of {} (best {}); stopped: {}\n", r.best_attempt,
               r.attempts.size(), best.lift ? "lift" : "pass rate", r.stopped_because);
  }
  void no_tests_left() override {
    fmt::print(stderr, "  no test survived; the skill is saved without evaluation\n");
  }
  void warning(const std::string& message) override { spdlog::warn("{}", message); }

 private:
  const Style& err_;
};

}  // namespace

std::unique_ptr<eval::SessionObserver> eval_progress(bool tty) {
  return std::make_unique<EvalPrinter>(tty);
}

std::unique_ptr<gen::GenerateObserver> generate_progress(const Style& err) {
  return std::make_unique<GeneratePrinter>(err);
}

}  // namespace upskill::cli
