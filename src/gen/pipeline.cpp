// The generate pipeline (see pipeline.hpp): source → skill → tests → metadata → refinement → save.
#include "upskill/gen/pipeline.hpp"

#include <fmt/format.h>

#include <chrono>

#include "upskill/checks/checkers.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/temp_dir.hpp"
#include "upskill/core/timefmt.hpp"
#include "upskill/eval/batch.hpp"
#include "upskill/eval/run_log.hpp"
#include "upskill/skill/validator.hpp"

namespace upskill::gen {

namespace fs = std::filesystem;

namespace {

// The models of one run, resolved before any call is made.
struct Models {
  llm::ResolvedModel teacher;
  llm::ResolvedModel test_writer;
  std::vector<std::string> student_specs;
  std::vector<llm::ResolvedModel> students;
};

Result<Models> resolve_models(const GenerateRequest& request, const llm::ModelAccess& access) {
  const config::Config& cfg = *access.config;
  Models m;
  UPSKILL_ASSIGN_OR_RETURN(
      m.teacher, access.resolve(cfg.model_for(config::ModelRole::teacher, request.teacher_model)));
  UPSKILL_ASSIGN_OR_RETURN(
      m.test_writer, access.resolve(request.test_model.value_or(
                         cfg.model_for(config::ModelRole::test_writer, request.teacher_model))));
  m.student_specs = request.student_models;
  if (m.student_specs.empty())
    m.student_specs.push_back(cfg.model_for(config::ModelRole::student, request.teacher_model));
  UPSKILL_ASSIGN_OR_RETURN(m.students, access.resolve_all(m.student_specs));
  return m;
}

// What --from named: a skill folder to improve, or a trace (parsed and digested).
struct Source {
  std::optional<skill::SkillBundle> existing;
  std::optional<trace::Trace> trace;
  std::optional<trace::TraceDigest> digest;
};

Result<Source> read_source(const GenerateRequest& request, GenerateObserver& observer) {
  Source s;
  if (!request.from) return s;
  const fs::path& from = *request.from;
  std::error_code ec;
  if (fs::is_directory(from, ec)) {
    if (!skill::find_skill_md(from))
      return fail(Error::usage(fmt::format(
          "{}: a directory without SKILL.md (--from takes a trace file or a skill folder)",
          from.string())));
    UPSKILL_ASSIGN_OR_RETURN(s.existing, skill::SkillBundle::load(from));
  } else {
    trace::ParseOptions po;
    po.format = request.trace_format;
    UPSKILL_ASSIGN_OR_RETURN(s.trace, trace::parse_trace_file(from, po));
    s.digest = trace::make_digest(*s.trace, {request.digest_tokens});
  }
  observer.source_read(from, {s.existing ? &*s.existing : nullptr, s.trace ? &*s.trace : nullptr,
                              s.digest ? &*s.digest : nullptr});
  return s;
}

Json usage_json(const llm::Usage& u, int requests) {
  return Json{{"input", u.input}, {"output", u.output}, {"requests", requests}};
}

// skill_meta.json's metadata: upskill's keys first, ours after.
void record_metadata(Json& md, const GenerateRequest& request, const Models& models,
                     const Source& source, const Json& dropped) {
  md["version"] = "1.0";
  md["generated_by"] = models.teacher.model;
  md["generated_at"] = timefmt::iso8601(std::chrono::system_clock::now(), timefmt::Zone::utc);
  md["source_task"] = request.task;
  if (source.trace) {
    const trace::Trace& t = *source.trace;
    md["source_trace"] = {{"path", t.source.string()},
                          {"format", std::string(trace::to_string(t.format))},
                          {"format_version", t.format_version},
                          {"sha256", t.sha256},
                          {"bytes", t.bytes},
                          {"digest_tokens", source.digest->tokens},
                          {"digest_budget", source.digest->budget},
                          {"digest_file", "references/trace-digest.md"}};
  }
  if (source.existing) md["source_skill"] = request.from->string();
  md["test_gen_model"] = models.test_writer.model;
  if (!dropped.empty()) md["dropped_tests"] = dropped;
}

Json refinement_json(const RefineResult& refined, const std::vector<std::string>& student_specs) {
  Json attempts = Json::array();
  for (const auto& r : refined.attempts)
    attempts.push_back({{"attempt", r.attempt},
                        {"with_skill", r.with_skill},
                        {"baseline", r.baseline ? Json(*r.baseline) : Json()},
                        {"lift", r.lift ? Json(*r.lift) : Json()},
                        {"beneficial", r.beneficial},
                        {"batch_id", r.batch_id}});
  return {{"attempts", attempts},
          {"best_attempt", refined.best_attempt},
          {"stopped_because", refined.stopped_because},
          {"eval_models", student_specs}};
}

// Evaluates and refines, keeping the best attempt; every attempt's run logs are written when asked.
Result<RefineResult> evaluate_and_refine(
    const GenerateRequest& request, const Models& models, const skill::SkillBundle& bundle,
    const std::vector<cases::TestCase>& tests, const SkillRequest& context, const Teacher& teacher,
    const config::Config& cfg, const checks::CheckEnvironment& checks, GenerateObserver& observer) {
  RefineOptions ro;
  ro.max_attempts = std::max(1, request.max_attempts.value_or(cfg.max_refine_attempts));
  ro.eval.models = models.students;
  ro.eval.jobs = std::max(1, request.jobs);
  ro.eval.runs = std::max(1, request.runs);
  ro.eval.cancel = teacher.cancel;
  const fs::path runs_dir = request.runs_dir.value_or(cfg.runs_dir);
  const std::string batch = eval::make_batch_id(std::chrono::system_clock::now());
  ro.evaluate_elsewhere = request.evaluate_elsewhere;
  ro.students = models.student_specs;
  ro.on_attempt = [&](const AttemptRecord& r, const eval::Evaluation& ev,
                      const eval::EvalSummary& summary) -> std::string {
    observer.attempt_done(r);
    if (!request.log_runs || !r.batch_id.empty()) return "";  // logged where it ran
    // Each attempt its own batch, created exclusively and locked while it is written.
    auto folder = eval::create_named_batch(runs_dir, fmt::format("{}_attempt{}", batch, r.attempt));
    if (!folder) {
      observer.warning(folder.error().message);
      return "";
    }
    const eval::RunLogWriter writer{folder->dir, folder->id, bundle.name()};
    if (auto w = writer.write(ev, summary); !w) {
      observer.warning(w.error().message);
      return "";
    }
    return folder->id;
  };
  observer.evaluating(models.students, ro.max_attempts);
  return refine_loop(bundle, tests, context, teacher, *teacher.client, checks, ro);
}

}  // namespace

Result<TestsOutcome> write_and_screen_tests(const TestsRequest& request, const Teacher& teacher,
                                            const checks::CheckEnvironment& checks,
                                            GenerateObserver& observer) {
  TestsOutcome out;
  observer.writing_tests(*teacher.model);
  TestRequest tr;
  tr.task = request.task;
  tr.skill = request.skill;
  tr.digest = request.digest;
  tr.count = request.count;
  UPSKILL_ASSIGN_OR_RETURN(GeneratedTests written, generate_tests(tr, teacher));
  out.usage = written.usage;
  out.requests = written.requests;
  for (const auto& d : written.dropped) {
    observer.test_unusable(d);
    out.dropped.push_back({{"id", ""}, {"reason", d}});
  }
  if (!written.spec_files.empty() && request.spec_dir.empty())
    return fail(Error::usage(
        "the test writer bound kernel checks to spec files; name a folder to save them in"));
  for (const auto& [path, content] : written.spec_files) {
    UPSKILL_ASSIGN_OR_RETURN(fs::path target, files::resolve_inside(request.spec_dir, path));
    UPSKILL_RETURN_IF_ERROR(files::write_atomic(target, content));
  }
  out.spec_files = std::move(written.spec_files);
  out.cases = std::move(written.cases);

  TempDir scratch;  // the solution's workspace, when there is a trace
  std::optional<Solution> solution;
  if (request.trace != nullptr) {
    UPSKILL_ASSIGN_OR_RETURN(scratch, TempDir::create("upskill-gen"));
    auto s = solution_from_trace(*request.trace, scratch.path() / "solution");
    if (s)
      solution = std::move(*s);
    else
      observer.note(s.error().message);
  }
  observer.screening(out.cases.size(), solution.has_value());
  out.screenings = screen_tests(out.cases, solution ? &*solution : nullptr, checks);
  for (const auto& s : out.screenings) {
    observer.screened(s);
    if (!s.kept) out.dropped.push_back({{"id", s.case_id}, {"reason", s.reason}});
  }
  return out;
}

eval::TestWriter tests_on_demand(const llm::ModelAccess& access,
                                 const std::optional<std::string>& test_model,
                                 const fs::path& skill_dir, int count, GenerateObserver& observer) {
  auto model = std::make_shared<std::optional<llm::ResolvedModel>>();
  eval::TestWriter writer;
  writer.resolve = [&access, test_model, model]() -> Status {
    if (access.config == nullptr) return fail(Error::usage("tests on demand need a configuration"));
    UPSKILL_ASSIGN_OR_RETURN(*model, access.resolve(test_model.value_or(access.config->model_for(
                                         config::ModelRole::test_writer))));
    return {};
  };
  writer.write = [&access, model, skill_dir, count, &observer](
                     const skill::SkillBundle& bundle,
                     const llm::Connection& connection) -> Result<std::vector<cases::TestCase>> {
    if (!*model) return fail(Error::usage("the test writer was not resolved"));
    const Teacher test_writer{&**model, connection.client, connection.cancel, {}};
    const checks::Checkers checkers(*access.config, skill_dir);
    skill::SkillMeta meta = bundle.meta.value_or(skill::SkillMeta{});
    const Json& source_task = meta.metadata.value("source_task", Json());
    const std::string task =
        source_task.is_string() ? source_task.get<std::string>() : bundle.description();
    TestsRequest tr{task, &bundle, skill_dir, nullptr, nullptr, count};
    UPSKILL_ASSIGN_OR_RETURN(
        TestsOutcome tests,
        write_and_screen_tests(tr, test_writer, checkers.environment(), observer));
    if (tests.cases.empty()) return std::move(tests.cases);
    meta.tests = tests.cases;
    meta.metadata["test_gen_model"] = (*model)->model;
    meta.metadata["tests_generated_at"] =
        timefmt::iso8601(std::chrono::system_clock::now(), timefmt::Zone::utc);
    if (!tests.dropped.empty()) meta.metadata["dropped_tests"] = tests.dropped;
    UPSKILL_RETURN_IF_ERROR(
        files::write_atomic(skill_dir / "skill_meta.json", skill::render_skill_meta(meta)));
    return std::move(tests.cases);
  };
  return writer;
}

Result<GenerateOutcome> run_generate(const GenerateRequest& request, const llm::ModelAccess& access,
                                     GenerateObserver& observer) {
  if (access.config == nullptr || !access.connect)
    return fail(Error::usage("generate needs a configuration and a client"));
  UPSKILL_ASSIGN_OR_RETURN(Models models, resolve_models(request, access));
  UPSKILL_ASSIGN_OR_RETURN(Source source, read_source(request, observer));
  // Every input is checked: only now is the client opened.
  UPSKILL_ASSIGN_OR_RETURN(const llm::Connection connection, access.connect());

  const Teacher teacher{&models.teacher, connection.client, connection.cancel, {}};
  SkillRequest context{request.task, request.examples, source.digest ? &*source.digest : nullptr,
                       source.existing ? &*source.existing : nullptr};
  observer.writing_skill(models.teacher);
  UPSKILL_ASSIGN_OR_RETURN(GeneratedSkill generated, generate_skill(context, teacher));
  observer.skill_written(generated);
  GenerateOutcome out;
  out.teacher_usage = generated.usage;
  out.teacher_requests = generated.requests;
  skill::SkillBundle bundle = std::move(generated.bundle);
  out.skill_dir = request.output_dir
                      ? *request.output_dir
                      : request.output_root.value_or(access.config->skills_dir) / bundle.name();
  if (!generated.validation.empty()) {
    // Nothing computed is lost: the draft is saved for inspection, and the exit code says why.
    UPSKILL_RETURN_IF_ERROR(bundle.save(out.skill_dir));
    out.draft_errors = std::move(generated.validation);
    out.skill = std::move(bundle);
    out.exit = ExitCode::gate_failed;
    return out;
  }
  // Saved at once, so that a failure later (a model call, screening) leaves the skill on disk.
  UPSKILL_RETURN_IF_ERROR(bundle.save(out.skill_dir));

  // Tests: the existing skill's, else the test writer's, screened against the trace's solution.
  const checks::Checkers checkers(*access.config, out.skill_dir);
  skill::SkillMeta meta = bundle.meta.value_or(skill::SkillMeta{});
  Json dropped = Json::array();
  if (meta.tests.empty()) {
    const Teacher test_writer{&models.test_writer, connection.client, connection.cancel, {}};
    TestsRequest tr{request.task,   &bundle,
                    out.skill_dir,  source.trace ? &*source.trace : nullptr,
                    context.digest, request.tests};
    UPSKILL_ASSIGN_OR_RETURN(
        TestsOutcome tests,
        write_and_screen_tests(tr, test_writer, checkers.environment(), observer));
    for (const auto& [path, content] : tests.spec_files) bundle.files[path] = {content, false};
    out.teacher_usage += tests.usage;
    out.teacher_requests += tests.requests;
    meta.tests = std::move(tests.cases);
    dropped = std::move(tests.dropped);
  }
  record_metadata(meta.metadata, request, models, source, dropped);

  skill::SkillBundle final_bundle = bundle;
  if (request.evaluate && !meta.tests.empty()) {
    // The skill with its tests saved before they are evaluated: an evaluation that fails (a remote
    // executor refusing, say) leaves them on disk.
    final_bundle.meta = meta;
    UPSKILL_RETURN_IF_ERROR(final_bundle.save(out.skill_dir));
    auto evaluated = evaluate_and_refine(request, models, bundle, meta.tests, context, teacher,
                                         *access.config, checkers.environment(), observer);
    if (!evaluated)
      return fail(
          Error{evaluated.error().code,
                fmt::format("{}\n(the skill and its {} test(s) are saved, not evaluated, "
                            "in {})",
                            evaluated.error().message, meta.tests.size(), out.skill_dir.string())});
    RefineResult refined = std::move(*evaluated);
    // A later attempt that could not be evaluated: the best so far is kept, and the exit says so.
    if (refined.evaluation_error) {
      observer.warning(refined.evaluation_error->message);
      out.exit = refined.evaluation_error->code;
    }
    observer.refined(refined);
    out.teacher_usage += refined.teacher_usage;
    final_bundle = refined.best;
    meta.metadata["test_pass_rate"] = refined.attempts[refined.best_attempt - 1].with_skill;
    meta.metadata["refinement"] = refinement_json(refined, models.student_specs);
    if (refined.interrupted) out.exit = ExitCode::interrupted;
    out.refinement = std::move(refined);
  } else if (meta.tests.empty()) {
    observer.no_tests_left();
  }
  meta.metadata["teacher_tokens"] = usage_json(out.teacher_usage, out.teacher_requests);

  if (source.digest)
    final_bundle.files["references/trace-digest.md"] = {source.digest->text, false};
  out.has_digest = source.digest.has_value();
  out.tests = meta.tests.size();
  final_bundle.meta = std::move(meta);
  UPSKILL_RETURN_IF_ERROR(final_bundle.save(out.skill_dir));
  for (auto& e : skill::validate_skill(out.skill_dir).errors) {
    if (request.output_dir && e.starts_with("Directory name"))
      observer.warning(e + " (saved where -o said)");
    else
      out.validation_errors.push_back(std::move(e));
  }
  if (!out.validation_errors.empty()) out.exit = ExitCode::gate_failed;
  out.skill = std::move(final_bundle);
  return out;
}

}  // namespace upskill::gen
