#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "cli.hpp"
#include "upskill/core/text.hpp"
#include "upskill/gen/pipeline.hpp"

namespace upskill::cli {

namespace fs = std::filesystem;

namespace {
struct GenerateArgs {
  std::string task;
  std::optional<std::string> from;
  std::vector<std::string> examples;
  std::optional<std::string> model;
  std::optional<std::string> test_gen_model;
  std::optional<std::string> output;
  bool no_eval = false;
  std::vector<std::string> eval_models;
  std::optional<int> max_refine;
  std::optional<std::string> runs_dir;
  bool no_log_runs = false;
  bool log_runs = false;            // upskill's --log-runs (the default)
  std::optional<std::string> tool;  // accepted for compatibility, ignored like upskill does
  std::optional<std::string> trace_format;
  std::size_t digest_tokens = trace::kDefaultDigestTokens;
  int tests = 5;
  int jobs = 4;
  int runs = 1;
};

std::string percent(double r) {
  return fmt::format("{:.0f}%", r * 100);
}

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

gen::GenerateRequest generate_request(const GenerateArgs& args) {
  gen::GenerateRequest r;
  r.task = args.task;
  r.examples = args.examples;
  if (args.from) r.from = *args.from;
  if (args.trace_format) r.trace_format = trace::format_from_string(*args.trace_format);
  r.digest_tokens = args.digest_tokens;
  r.teacher_model = args.model;
  r.test_model = args.test_gen_model;
  r.student_models = args.eval_models;
  if (args.output) r.output_root = *args.output;
  r.evaluate = !args.no_eval;
  r.max_attempts = args.max_refine;
  r.tests = args.tests;
  r.jobs = args.jobs;
  r.runs = args.runs;
  r.log_runs = !args.no_log_runs;
  if (args.runs_dir) r.runs_dir = *args.runs_dir;
  return r;
}

int run_generate(const Context& ctx, const GenerateArgs& args) {
  auto cfg = ctx.load_config();
  if (!cfg) return exit_with(ctx, cfg.error());
  auto session = ctx.open_model_session();
  if (!session) return exit_with(ctx, session.error());
  const llm::ModelAccess models{&*cfg, (*session)->client.get(), &(*session)->cancel,
                                llm::process_environment(),
                                {ctx.globals.base_url, ctx.globals.api_key_env}};
  GeneratePrinter printer(ctx.err);
  auto outcome = gen::run_generate(generate_request(args), models, printer);
  if (!outcome) return exit_with(ctx, outcome.error());
  const gen::GenerateOutcome& out = *outcome;
  if (!out.draft_errors.empty()) {
    fmt::print(stderr,
               "{} the teacher's skill is invalid even after a repair round-trip (draft "
               "saved to {}):\n",
               ctx.err.red("error:"), out.skill_dir.string());
    for (const auto& e : out.draft_errors) fmt::print(stderr, "  - {}\n", e);
    return static_cast<int>(out.exit);
  }
  fmt::print("{} {} ({} test case(s){})\n",
             out.validation_errors.empty() ? "Saved" : "Saved (invalid)", out.skill_dir.string(),
             out.tests, out.has_digest ? ", digest in references/trace-digest.md" : "");
  fmt::print("teacher tokens: {} in, {} out over {} request(s)\n", out.teacher_usage.input,
             out.teacher_usage.output, out.teacher_requests);
  for (const auto& e : out.validation_errors) fmt::print(stderr, "  - {}\n", e);
  return static_cast<int>(out.exit);
}
}  // namespace

void add_generate_command(CLI::App& app, Runner& selected) {
  auto args = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand(
      "generate", "Have a teacher model write a skill (from a task, a trace or an existing skill)");
  cmd->add_option("TASK", args->task, "What the skill should teach")->required();
  cmd->add_option(
      "-f,--from", args->from,
      "A trace file to learn from (any supported format), or a skill folder to improve");
  cmd->add_option("-e,--example", args->examples, "An example request the skill must serve");
  cmd->add_option("-m,--model", args->model,
                  "Teacher model (default: skill_generation_model from the config)");
  cmd->add_option("--test-gen-model", args->test_gen_model,
                  "Model that writes the tests (default: test_gen_model, else the teacher)");
  cmd->add_option("-o,--output", args->output,
                  "Folder the skill folder goes in (default: skills_dir from the config)");
  cmd->add_flag("--no-eval", args->no_eval, "Do not evaluate or refine");
  cmd->add_option("--eval-model", args->eval_models,
                  "Student model(s) for evaluation (default: eval_model, else the teacher)");
  cmd->add_option("--max-refine", args->max_refine,
                  "Evaluations at most, refining in between (default: max_refine_attempts)");
  cmd->add_option("--runs-dir", args->runs_dir, "Where run logs go (default: runs_dir)");
  cmd->add_flag("--no-log-runs", args->no_log_runs, "Do not write run logs");
  cmd->add_flag("--log-runs", args->log_runs, "Write run logs (the default)");
  cmd->add_option("--tool", args->tool, "Accepted for compatibility with upskill; ignored");
  cmd->add_option("--trace-format", args->trace_format, "Read --from as this trace format")
      ->check(CLI::IsMember(trace::format_names()));
  cmd->add_option("--digest-tokens", args->digest_tokens,
                  "Token budget of the trace digest sent to the teacher")
      ->capture_default_str();
  cmd->add_option("--tests", args->tests, "Test cases to ask the teacher for")
      ->capture_default_str();
  cmd->add_option("-j,--jobs", args->jobs, "Evaluation requests in flight")->capture_default_str();
  cmd->add_option("--runs", args->runs, "Runs per case in each evaluation")->capture_default_str();
  cmd->footer(
      "--from TRACE: the whole trace is parsed and digested under --digest-tokens (goals, errors "
      "and their fixes,\n"
      "decisions, final files); the digest is saved as references/trace-digest.md. Generated "
      "tests are run\n"
      "against the trace's own final files and an empty answer first; a test the solution fails "
      "or an empty\n"
      "answer passes is dropped, with the reason. The best attempt by lift is kept, not the last.\n"
      "Exit 0 ok, 1 the skill is invalid after a repair round-trip (draft saved), 2 bad input, 3 "
      "a model call\n"
      "failed, 130 interrupted.");
  cmd->callback([&selected, args] {
    selected = [args](const Context& ctx) { return run_generate(ctx, *args); };
  });
}

}  // namespace upskill::cli
