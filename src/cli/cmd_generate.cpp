#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>

#include "cli.hpp"
#include "upskill/checks/kernel_runner.hpp"
#include "upskill/checks/sandbox_runner.hpp"
#include "upskill/core/text.hpp"
#include "upskill/eval/run_log.hpp"
#include "upskill/gen/refine.hpp"
#include "upskill/gen/test_gen.hpp"
#include "upskill/skill/validator.hpp"

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

// A temporary folder removed on scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "upskill-gen-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string percent(double r) {
  return fmt::format("{:.0f}%", r * 100);
}

std::string iso_now() {
  const auto now = std::chrono::system_clock::now();
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                     fmt::gmtime(std::chrono::system_clock::to_time_t(now)));
}

Json usage_json(const llm::Usage& u, int requests) {
  return Json{{"input", u.input}, {"output", u.output}, {"requests", requests}};
}

int run_generate(const Context& ctx, const GenerateArgs& args) {
  auto cfg = ctx.load_config();
  if (!cfg) return exit_with(ctx, cfg.error());
  const llm::ModelOverrides overrides{ctx.globals.base_url, ctx.globals.api_key_env};
  auto resolve = [&](const std::string& spec) {
    return llm::resolve_model(spec, *cfg, llm::process_environment(), overrides);
  };
  auto teacher_model = resolve(args.model.value_or(cfg->skill_generation_model));
  if (!teacher_model) return exit_with(ctx, teacher_model.error());
  auto test_model = resolve(args.test_gen_model.value_or(
      cfg->test_gen_model.value_or(args.model.value_or(cfg->skill_generation_model))));
  if (!test_model) return exit_with(ctx, test_model.error());
  std::vector<std::string> eval_specs = args.eval_models;
  if (eval_specs.empty())
    eval_specs.push_back(
        cfg->eval_model.value_or(args.model.value_or(cfg->skill_generation_model)));
  std::vector<llm::ResolvedModel> eval_models;
  for (const auto& spec : eval_specs) {
    auto m = resolve(spec);
    if (!m) return exit_with(ctx, m.error());
    eval_models.push_back(std::move(*m));
  }

  // --from: an existing skill to improve, or a trace to learn from.
  std::optional<skill::SkillBundle> existing;
  std::optional<trace::Trace> source_trace;
  std::optional<trace::TraceDigest> digest;
  if (args.from) {
    std::error_code ec;
    if (fs::is_directory(*args.from, ec)) {
      if (!skill::find_skill_md(*args.from))
        return exit_with(ctx, Error::usage(fmt::format(
                                  "{}: a directory without SKILL.md (--from takes a trace file or "
                                  "a skill folder)",
                                  *args.from)));
      auto loaded = skill::SkillBundle::load(*args.from);
      if (!loaded) return exit_with(ctx, loaded.error());
      existing = std::move(*loaded);
      fmt::print(stderr, "Improving the skill {} ({})\n", existing->name(), *args.from);
    } else {
      trace::ParseOptions po;
      if (args.trace_format) po.format = trace::format_from_string(*args.trace_format);
      auto parsed = trace::parse_trace_file(*args.from, po);
      if (!parsed) return exit_with(ctx, parsed.error());
      source_trace = std::move(*parsed);
      digest = trace::make_digest(*source_trace, {args.digest_tokens});
      const trace::TraceCounts c = trace::count(*source_trace);
      fmt::print(stderr,
                 "Read trace {}: {}, {} turns, {} tool calls, {} commands ({} failed), {} files; "
                 "digest {} of {} tokens\n",
                 *args.from, trace::to_string(source_trace->format), c.turns, c.tool_calls,
                 c.commands, c.failed_commands, c.files, digest->tokens, digest->budget);
    }
  }

  auto session = ctx.open_model_session();
  if (!session) return exit_with(ctx, session.error());
  gen::Teacher teacher{&*teacher_model, (*session)->client.get(), &(*session)->cancel, {}};
  gen::SkillRequest request;
  request.task = args.task;
  request.examples = args.examples;
  request.digest = digest ? &*digest : nullptr;
  request.existing = existing ? &*existing : nullptr;

  fmt::print(stderr, "Generating the skill with {} …\n", teacher_model->name);
  auto generated = gen::generate_skill(request, teacher);
  if (!generated) return exit_with(ctx, generated.error());
  llm::Usage teacher_usage = generated->usage;
  int teacher_requests = generated->requests;
  for (const auto& note : generated->notes) fmt::print(stderr, "  note: {}\n", note);
  skill::SkillBundle bundle = std::move(generated->bundle);
  const fs::path out_root = args.output ? fs::path(*args.output) : cfg->skills_dir;
  const fs::path skill_dir = out_root / bundle.name();
  if (!generated->validation.empty()) {
    // Nothing computed is lost: the draft is saved for inspection, and the exit code says why.
    if (auto saved = bundle.save(skill_dir); !saved) return exit_with(ctx, saved.error());
    fmt::print(stderr,
               "{} the teacher's skill is invalid even after a repair round-trip (draft "
               "saved to {}):\n",
               ctx.err.red("error:"), skill_dir.string());
    for (const auto& e : generated->validation) fmt::print(stderr, "  - {}\n", e);
    return static_cast<int>(ExitCode::gate_failed);
  }
  fmt::print(stderr, "  skill {}: {} (body ≈{} tokens, {} file(s))\n", bundle.name(),
             text::excerpt(bundle.description(), 90), text::estimate_tokens(bundle.body),
             bundle.files.size());

  // Tests: the existing skill's, else the teacher's, screened against the trace's solution.
  skill::SkillMeta meta = bundle.meta.value_or(skill::SkillMeta{});
  std::vector<cases::TestCase> tests = meta.tests;
  Json dropped = Json::array();
  checks::SandboxCommandRunner commands;
  checks::KernelPipelineOptions kernel_options;
  kernel_options.python = cfg->python;
  kernel_options.spec_base = skill_dir;
  checks::KernelPipelineChecker kernels(kernel_options);
  checks::CheckEnvironment env;
  env.commands = &commands;
  env.kernels = &kernels;
  if (tests.empty()) {
    fmt::print(stderr, "Generating tests with {} …\n", test_model->name);
    gen::Teacher test_teacher = teacher;
    test_teacher.model = &*test_model;
    gen::TestRequest tr;
    tr.task = args.task;
    tr.skill = &bundle;
    tr.digest = request.digest;
    tr.count = args.tests;
    auto written = gen::generate_tests(tr, test_teacher);
    if (!written) return exit_with(ctx, written.error());
    teacher_usage += written->usage;
    teacher_requests += written->requests;
    for (const auto& d : written->dropped) {
      fmt::print(stderr, "  dropped: {}\n", d);
      dropped.push_back({{"id", ""}, {"reason", d}});
    }
    for (const auto& [path, content] : written->spec_files) bundle.files[path] = {content, false};
    tests = std::move(written->cases);
    // Specs must be on disk before kernel checks can use them.
    if (auto saved = bundle.save(skill_dir); !saved) return exit_with(ctx, saved.error());
    TempDir scratch;
    std::optional<gen::Solution> solution;
    if (source_trace) {
      auto s = gen::solution_from_trace(*source_trace, scratch.path() / "solution");
      if (s)
        solution = std::move(*s);
      else
        fmt::print(stderr, "  note: {}\n", s.error().message);
    }
    fmt::print(stderr, "  {} test case(s); checking each against {}an empty answer\n", tests.size(),
               solution ? "the trace's own solution and " : "");
    for (const auto& s : gen::screen_tests(tests, solution ? &*solution : nullptr, env)) {
      fmt::print(stderr, "    {} {} — {}\n",
                 s.kept ? ctx.err.green("kept   ") : ctx.err.red("dropped"), s.case_id,
                 s.reason.empty() ? "an empty answer fails it" : s.reason);
      if (!s.kept) dropped.push_back({{"id", s.case_id}, {"reason", s.reason}});
    }
  }
  meta.tests = tests;

  // Metadata (upskill's keys first, ours after).
  Json& md = meta.metadata;
  md["version"] = "1.0";
  md["generated_by"] = teacher_model->model;
  md["generated_at"] = iso_now();
  md["source_task"] = args.task;
  if (source_trace) {
    md["source_trace"] = {{"path", source_trace->source.string()},
                          {"format", std::string(trace::to_string(source_trace->format))},
                          {"format_version", source_trace->format_version},
                          {"sha256", source_trace->sha256},
                          {"bytes", source_trace->bytes},
                          {"digest_tokens", digest->tokens},
                          {"digest_budget", digest->budget},
                          {"digest_file", "references/trace-digest.md"}};
  }
  if (existing) md["source_skill"] = *args.from;
  md["test_gen_model"] = test_model->model;
  if (!dropped.empty()) md["dropped_tests"] = dropped;

  // Evaluate and refine, keeping the best version.
  int code = 0;
  skill::SkillBundle final_bundle = bundle;
  if (!args.no_eval && !tests.empty()) {
    gen::RefineOptions ro;
    ro.max_attempts = args.max_refine.value_or(cfg->max_refine_attempts);
    ro.eval.models = eval_models;
    ro.eval.jobs = std::max(1, args.jobs);
    ro.eval.runs = std::max(1, args.runs);
    ro.eval.cancel = &(*session)->cancel;
    const fs::path runs_dir = args.runs_dir ? fs::path(*args.runs_dir) : cfg->runs_dir;
    const std::string batch = eval::make_batch_id(std::chrono::system_clock::now());
    ro.on_attempt = [&](const gen::AttemptRecord& r, const eval::Evaluation& ev,
                        const eval::EvalSummary& summary) -> std::string {
      fmt::print(stderr, "  attempt {}: with the skill {}{}{}\n", r.attempt, percent(r.with_skill),
                 r.baseline ? ", without " + percent(*r.baseline) : "",
                 r.lift ? fmt::format(", lift {:+.0f} points", *r.lift * 100) : "");
      if (args.no_log_runs) return "";
      const std::string id = fmt::format("{}_attempt{}", batch, r.attempt);
      const eval::RunLogWriter writer{runs_dir / id, id, bundle.name()};
      if (auto w = writer.write(ev, summary); !w) {
        spdlog::warn("{}", w.error().message);
        return "";
      }
      return id;
    };
    fmt::print(stderr, "Evaluating on {} (at most {} attempt(s)) …\n",
               text::join(
                   [&] {
                     std::vector<std::string> names;
                     for (const auto& m : eval_models) names.push_back(m.name);
                     return names;
                   }(),
                   ", "),
               std::max(1, ro.max_attempts));
    auto refined = gen::refine_loop(bundle, tests, request, teacher, *(*session)->client, env, ro);
    if (!refined) return exit_with(ctx, refined.error());
    teacher_usage += refined->teacher_usage;
    final_bundle = refined->best;
    const gen::AttemptRecord& best = refined->attempts[refined->best_attempt - 1];
    md["test_pass_rate"] = best.with_skill;
    Json attempts = Json::array();
    for (const auto& r : refined->attempts)
      attempts.push_back({{"attempt", r.attempt},
                          {"with_skill", r.with_skill},
                          {"baseline", r.baseline ? Json(*r.baseline) : Json()},
                          {"lift", r.lift ? Json(*r.lift) : Json()},
                          {"beneficial", r.beneficial},
                          {"batch_id", r.batch_id}});
    md["refinement"] = {{"attempts", attempts},
                        {"best_attempt", refined->best_attempt},
                        {"stopped_because", refined->stopped_because},
                        {"eval_models", eval_specs}};
    fmt::print(stderr, "  kept attempt {} of {} (best {}); stopped: {}\n", refined->best_attempt,
               refined->attempts.size(), best.lift ? "lift" : "pass rate",
               refined->stopped_because);
    if (refined->interrupted) code = static_cast<int>(ExitCode::interrupted);
  } else if (tests.empty()) {
    fmt::print(stderr, "  no test survived; the skill is saved without evaluation\n");
  }
  md["teacher_tokens"] = usage_json(teacher_usage, teacher_requests);

  if (digest) final_bundle.files["references/trace-digest.md"] = {digest->text, false};
  final_bundle.meta = meta;
  if (auto saved = final_bundle.save(skill_dir); !saved) return exit_with(ctx, saved.error());
  const auto report = skill::validate_skill(skill_dir);
  fmt::print("{} {} ({} test case(s){})\n", report.valid() ? "Saved" : "Saved (invalid)",
             skill_dir.string(), tests.size(),
             digest ? ", digest in references/trace-digest.md" : "");
  fmt::print("teacher tokens: {} in, {} out over {} request(s)\n", teacher_usage.input,
             teacher_usage.output, teacher_requests);
  if (!report.valid()) {
    for (const auto& e : report.errors) fmt::print(stderr, "  - {}\n", e);
    return static_cast<int>(ExitCode::gate_failed);
  }
  return code;
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
