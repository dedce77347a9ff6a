// The Python front end: `import upskill` exposes the engine under the Python upskill's names
// (Skill.load / save / validate, Config.load, generate_skill, generate_tests, evaluate_skill,
// refine_skill) plus parse_trace, generate (the whole pipeline), evaluation_request (what
// evaluate_skill would run), merge_runs and run_remote (shards on Slurm or Hugging Face Jobs). Like
// the CLI it only translates arguments and results and calls the same library entry points
// (eval::run_session, gen::run_generate, gen::write_and_screen_tests); errors become Python
// exceptions (ValueError for bad input, RuntimeError for infrastructure).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "upskill/cases/test_suite.hpp"
#include "upskill/checks/checkers.hpp"
#include "upskill/config/config.hpp"
#include "upskill/eval/merge.hpp"
#include "upskill/eval/session.hpp"
#include "upskill/gen/pipeline.hpp"
#include "upskill/llm/model.hpp"
#include "upskill/scale/remote.hpp"
#include "upskill/skill/validator.hpp"
#include "upskill/trace/digest.hpp"

namespace py = pybind11;
namespace fs = std::filesystem;
using namespace upskill;

namespace {

[[noreturn]] void raise(const Error& e) {
  if (e.code == ExitCode::infrastructure) throw std::runtime_error(e.message);
  throw py::value_error(e.message);
}

template <class T>
T unwrap(Result<T> r) {
  if (!r) raise(r.error());
  return std::move(*r);
}

// A library call with the GIL released (model calls and kernel builds take seconds to minutes);
// its error is raised as a Python exception once the GIL is held again.
template <class F>
auto released(F&& call) {
  return unwrap([&] {
    py::gil_scoped_release release;
    return call();
  }());
}

// JSON <-> Python through the json module: exact, and no hand-written converter to get wrong.
py::object to_py(const Json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}
Json from_py(const py::handle& o) {
  return Json::parse(py::module_::import("json").attr("dumps")(o).cast<std::string>());
}

struct ConfigHandle {
  config::Config config;
  static ConfigHandle load(std::optional<fs::path> path) {
    return {unwrap(config::load_config(path))};
  }
};

const config::Config& config_or_default(const std::optional<ConfigHandle>& c,
                                        ConfigHandle& holder) {
  if (c) return c->config;
  holder = ConfigHandle::load(std::nullopt);
  return holder.config;
}

// The client and checkers a call needs, alive for its duration.
struct Session {
  llm::CurlTransport transport;
  llm::ChatClient client;
  llm::ModelAccess access;
  // The client retries as the configuration says, as the command line's does.
  explicit Session(const config::Config& cfg) : client(transport, llm::retry_policy(cfg)) {
    access.config = &cfg;
    access.connect = [this]() -> Result<llm::Connection> { return llm::Connection{&client}; };
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

// A str or pathlib path (a test-case file), as opposed to a list of case dicts.
bool is_path(const py::handle& o) {
  return py::isinstance<py::str>(o) ||
         py::isinstance(o, py::module_::import("pathlib").attr("PurePath"));
}

std::vector<cases::TestCase> cases_from(const py::object& tests, const skill::SkillBundle& skill) {
  if (tests.is_none()) return skill.tests();
  if (is_path(tests))
    return unwrap(cases::load_test_suite(py::str(tests).cast<std::string>())).cases;
  Json j = from_py(tests);
  if (j.is_array()) j = Json{{"cases", j}};
  return unwrap(cases::parse_test_suite(j.dump(), "<tests>")).cases;
}

// The result of evaluate_skill: upskill's fields for the first model, every model in `models`.
struct EvalResults {
  eval::Evaluation evaluation;
  eval::EvalSummary summary;
  std::optional<fs::path> batch_dir;  // where the run logs went (a merge's batch)
  int exit_code = 0;                  // what `upskill eval` / `runs merge` would exit with
  const eval::ModelSummary& first() const {
    if (summary.models.empty()) throw py::value_error("the evaluation has no models");
    return summary.models.front();
  }
};

// The lift when it was computed (a baseline ran and some case was scored in both arms).
const eval::LiftSummary* computed_lift(const eval::ModelSummary& m) {
  return m.lift && m.lift->computed() ? &*m.lift : nullptr;
}

std::optional<std::pair<double, double>> interval(const eval::LiftSummary* l) {
  if (!l) return std::nullopt;
  return std::make_pair(l->interval.low, l->interval.high);
}

// An arm's rate and interval, or None when it has no scored trial (never 0 for "not computed").
std::optional<double> arm_rate(const eval::ArmSummary* a) {
  return a && a->scored() ? std::optional<double>(a->pass_rate) : std::nullopt;
}
std::optional<std::pair<double, double>> arm_interval(const eval::ArmSummary* a) {
  if (!a || !a->scored()) return std::nullopt;
  return std::make_pair(a->interval.low, a->interval.high);
}

// The session request evaluate_skill and run_remote make, resolved from the arguments and the
// configuration as the command line's is (eval::resolve_request).
eval::SessionRequest request_for(const skill::SkillBundle& skill, const py::object& tests,
                                 std::vector<std::string> models, const config::Config& cfg,
                                 std::optional<int> runs, std::optional<bool> baseline,
                                 std::optional<int> jobs, std::uint64_t seed,
                                 std::optional<fs::path> directory) {
  eval::SessionRequest request;
  request.skill = skill;
  request.skill_dir = skill.directory;
  // Kernel specs are relative to the file the cases came from, as with `upskill eval -t`.
  if (is_path(tests)) request.tests = fs::path(py::str(tests).cast<std::string>());
  request.cases = cases_from(tests, skill);
  request.spec_dir = std::move(directory);
  request.models = std::move(models);
  request.seed = seed;
  // baseline None: as the command line resolves it (none with several models or runs > 1).
  eval::resolve_request(request, {jobs, runs, false, baseline}, cfg);
  return request;
}

EvalResults evaluate_skill(const skill::SkillBundle& skill, const py::object& tests,
                           std::vector<std::string> models, std::optional<ConfigHandle> config,
                           std::optional<int> runs, std::optional<bool> baseline,
                           std::optional<int> jobs, std::uint64_t seed,
                           std::optional<fs::path> directory) {
  ConfigHandle holder;
  const config::Config& cfg = config_or_default(config, holder);
  eval::SessionRequest request = request_for(skill, tests, std::move(models), cfg, runs, baseline,
                                             jobs, seed, std::move(directory));
  request.log_runs = false;
  Session session(cfg);
  eval::SessionObserver quiet;
  eval::SessionOutcome out =
      released([&] { return eval::run_session(request, session.access, quiet); });
  return EvalResults{std::move(out.evaluation), std::move(out.summary), std::nullopt,
                     static_cast<int>(out.exit)};
}

// A request in its JSON form (a dict, as evaluation_request returns it, or a file as `eval
// --request` reads it), run as the command line runs it.
EvalResults evaluate_request(const py::object& given, std::optional<ConfigHandle> config) {
  ConfigHandle holder;
  const config::Config& cfg = config_or_default(config, holder);
  eval::SessionRequest request =
      is_path(given)
          ? unwrap(eval::read_request_file(py::str(given).cast<std::string>()))
          : unwrap(eval::request_from_json(unwrap(parse_json_document(
                from_py(given).dump(2), "request (a dict; relative paths: the working folder)"))));
  eval::complete_request(request, cfg);
  Session session(cfg);
  eval::SessionObserver quiet;
  eval::SessionOutcome out =
      released([&] { return eval::run_session(request, session.access, quiet); });
  return EvalResults{std::move(out.evaluation), std::move(out.summary),
                     out.logged ? std::optional(out.batch_dir) : std::nullopt,
                     static_cast<int>(out.exit)};
}

EvalResults merge_runs(const std::vector<fs::path>& shards, std::optional<fs::path> runs_dir,
                       std::optional<ConfigHandle> config, bool log_runs) {
  eval::MergeRequest request;
  for (const auto& s : shards) {
    const auto inputs = unwrap(scale::merge_inputs(s));
    request.shards.insert(request.shards.end(), inputs.begin(), inputs.end());
  }
  ConfigHandle holder;
  request.runs_dir = runs_dir ? *runs_dir : config_or_default(config, holder).runs_dir;
  request.log_runs = log_runs;
  eval::MergeOutcome out = released([&] { return eval::merge_shards(request); });
  return EvalResults{std::move(out.evaluation), std::move(out.summary),
                     out.logged ? std::optional(out.batch_dir) : std::nullopt,
                     static_cast<int>(out.exit)};
}

py::dict run_remote(const fs::path& skill_dir, const std::string& executor,
                    std::vector<std::string> models, const py::object& tests,
                    std::optional<ConfigHandle> config, std::optional<int> runs,
                    std::optional<bool> baseline, std::optional<int> jobs, std::uint64_t seed,
                    std::optional<int> shards, bool wait) {
  ConfigHandle holder;
  const config::Config& cfg = config_or_default(config, holder);
  const skill::SkillBundle skill = unwrap(skill::SkillBundle::load(skill_dir));
  scale::RemoteRequest remote;
  remote.config = &cfg;
  remote.session =
      request_for(skill, tests, std::move(models), cfg, runs, baseline, jobs, seed, std::nullopt);
  remote.session.skill.reset();  // the tasks read the folder
  if (!remote.session.tests) remote.session.cases.reset();
  remote.settings.executor = config::executor_from_string(executor);
  if (!remote.settings.executor || remote.settings.executor == config::Executor::local)
    throw py::value_error("executor '" + executor + "': a remote run is 'slurm' or 'jobs'");
  remote.settings.shards = shards;
  remote.settings.wait = wait;
  if (cfg.source) remote.globals.config_file = *cfg.source;
  scale::RemoteObserver quiet;
  scale::RemoteOutcome out = released([&] { return scale::run_remote(remote, quiet); });
  py::dict d;
  d["submission"] = out.submission.dir.string();
  d["job_ids"] = out.submission.job_ids;
  d["waited"] = out.waited;
  d["exit_code"] = static_cast<int>(out.exit);
  std::vector<std::string> failed;
  for (const auto& t : out.failed) failed.push_back(t.describe());
  d["failed_tasks"] = failed;
  if (out.merged)
    d["results"] = py::cast(
        EvalResults{std::move(out.merged->evaluation), std::move(out.merged->summary),
                    out.merged->logged ? std::optional(out.merged->batch_dir) : std::nullopt,
                    static_cast<int>(out.merged->exit)});
  else
    d["results"] = py::none();
  return d;
}

gen::Teacher teacher_for(const std::string& model, llm::ResolvedModel& resolved, Session& session) {
  resolved = unwrap(session.access.resolve(model));
  return gen::Teacher{&resolved, &session.client, nullptr, {}};
}

std::optional<trace::TraceDigest> digest_of(const std::optional<trace::Trace>& t,
                                            std::size_t tokens) {
  if (!t) return std::nullopt;
  return trace::make_digest(*t, {tokens});
}

}  // namespace

PYBIND11_MODULE(upskill, m) {
  m.doc() =
      "upskill: turn an expert agent's work into an agent skill, and measure whether it helps. The "
      "same engine as the upskill command line.";
  m.attr("__version__") = UPSKILL_VERSION;

  py::class_<skill::SkillBundle>(m, "Skill")
      .def_static(
          "load", [](const fs::path& p) { return unwrap(skill::SkillBundle::load(p)); },
          py::arg("path"), "Load a skill folder (or its SKILL.md).")
      .def(
          "save",
          [](const skill::SkillBundle& s, const fs::path& dir) {
            if (auto r = s.save(dir); !r) raise(r.error());
          },
          py::arg("directory"), "Write SKILL.md, skill_meta.json and every file into `directory`.")
      .def(
          "validate",
          [](const skill::SkillBundle& s) {
            if (!s.directory.empty()) return skill::validate_skill(s.directory).errors;
            return gen::validation_errors(s);
          },
          "The Agent Skills errors (skills-ref wording); empty when valid.")
      .def_property_readonly("name", &skill::SkillBundle::name)
      .def_property_readonly("description", &skill::SkillBundle::description)
      .def_readwrite("body", &skill::SkillBundle::body)
      .def_property_readonly("directory", [](const skill::SkillBundle& s) { return s.directory; })
      .def_property_readonly("files",
                             [](const skill::SkillBundle& s) {
                               py::dict d;
                               for (const auto& [p, f] : s.files) d[py::str(p)] = f.content;
                               return d;
                             })
      .def_property_readonly(
          "tests",
          [](const skill::SkillBundle& s) { return to_py(cases::cases_to_json(s.tests())); })
      .def_property_readonly(
          "metadata",
          [](const skill::SkillBundle& s) { return s.meta ? to_py(s.meta->metadata) : py::dict(); })
      .def("render", &skill::SkillBundle::render_skill_md, "SKILL.md as text.")
      .def("__repr__", [](const skill::SkillBundle& s) { return "<Skill " + s.name() + ">"; });

  py::class_<ConfigHandle>(m, "Config")
      .def_static("load", &ConfigHandle::load, py::arg("path") = py::none(),
                  "Load upskill.config.yaml (path, else $UPSKILL_CONFIG, ./, ~/.config/upskill/).")
      .def_property_readonly("skill_generation_model",
                             [](const ConfigHandle& c) { return c.config.skill_generation_model; })
      .def_property_readonly("eval_model",
                             [](const ConfigHandle& c) { return c.config.eval_model; })
      .def_property_readonly("test_gen_model",
                             [](const ConfigHandle& c) { return c.config.test_gen_model; })
      .def_property_readonly("skills_dir",
                             [](const ConfigHandle& c) { return c.config.skills_dir; })
      .def_property_readonly("runs_dir", [](const ConfigHandle& c) { return c.config.runs_dir; })
      .def_property_readonly("max_refine_attempts",
                             [](const ConfigHandle& c) { return c.config.max_refine_attempts; })
      .def_property_readonly("models", [](const ConfigHandle& c) {
        std::vector<std::string> names;
        for (const auto& mc : c.config.models) names.push_back(mc.name);
        return names;
      });

  py::class_<trace::Trace>(m, "Trace")
      .def_property_readonly("format",
                             [](const trace::Trace& t) { return std::string(to_string(t.format)); })
      .def_property_readonly("format_version",
                             [](const trace::Trace& t) { return t.format_version; })
      .def_property_readonly("counts",
                             [](const trace::Trace& t) { return to_py(summary_json(t)["counts"]); })
      .def(
          "summary", [](const trace::Trace& t) { return to_py(summary_json(t)); },
          "What `upskill trace --json` prints.")
      .def(
          "digest",
          [](const trace::Trace& t, std::size_t tokens) { return make_digest(t, {tokens}).text; },
          py::arg("tokens") = trace::kDefaultDigestTokens, "The teacher's digest of the trace.")
      .def_property_readonly("final_files", [](const trace::Trace& t) {
        py::dict d;
        for (const auto& f : t.files)
          if (f.content && !f.deleted) d[py::str(f.path)] = *f.content;
        return d;
      });

  m.def(
      "parse_trace",
      [](const fs::path& path, std::optional<std::string> format) {
        trace::ParseOptions o;
        if (format) {
          o.format = trace::format_from_string(*format);
          if (!o.format) throw py::value_error("unknown trace format '" + *format + "'");
        }
        return unwrap(trace::parse_trace_file(path, o));
      },
      py::arg("path"), py::arg("format") = py::none(),
      "Parse an agent trace (format detected from its content).");

  py::class_<EvalResults>(m, "EvalResults")
      .def_property_readonly(
          "batch_dir",
          [](const EvalResults& r) -> std::optional<std::string> {
            if (!r.batch_dir) return std::nullopt;
            return r.batch_dir->string();
          },
          "Where the run logs went (a merge's batch), else None.")
      .def_readonly("exit_code", &EvalResults::exit_code,
                    "What the command line would exit with for this evaluation.")
      .def_property_readonly(
          "complete", [](const EvalResults& r) { return r.summary.completeness.complete(); },
          "Whether every planned trial got an answer; when not, every figure is partial.")
      .def_property_readonly(
          "incomplete",
          [](const EvalResults& r) -> std::optional<std::string> {
            if (r.summary.completeness.complete()) return std::nullopt;
            return eval::incomplete_note(r.summary.completeness);
          },
          "None, or 'incomplete: N of M trials unanswered — first cause: …'.")
      .def_property_readonly("skill_lift",
                             [](const EvalResults& r) {
                               const auto* l = computed_lift(r.first());
                               return l ? std::optional<double>(l->lift) : std::nullopt;
                             })
      .def_property_readonly("token_savings",
                             [](const EvalResults& r) {
                               const auto* l = computed_lift(r.first());
                               return l ? std::optional<double>(l->token_savings) : std::nullopt;
                             })
      .def_property_readonly("is_beneficial",
                             [](const EvalResults& r) {
                               const auto* l = computed_lift(r.first());
                               return l && l->is_beneficial && r.summary.completeness.complete();
                             })
      .def_property_readonly("significant",
                             [](const EvalResults& r) {
                               const auto* l = computed_lift(r.first());
                               return l && l->significant;
                             })
      .def_property_readonly(
          "lift_interval", [](const EvalResults& r) { return interval(computed_lift(r.first())); })
      .def_property_readonly("mcnemar_p",
                             [](const EvalResults& r) {
                               const auto* l = computed_lift(r.first());
                               return l ? std::optional<double>(l->mcnemar_p) : std::nullopt;
                             })
      .def_property_readonly("with_skill_rate",
                             [](const EvalResults& r) { return arm_rate(&r.first().with_skill); })
      .def_property_readonly(
          "with_skill_interval",
          [](const EvalResults& r) { return arm_interval(&r.first().with_skill); })
      .def_property_readonly("baseline_rate",
                             [](const EvalResults& r) {
                               const auto& b = r.first().baseline;
                               return arm_rate(b ? &*b : nullptr);
                             })
      .def_property_readonly("baseline_interval",
                             [](const EvalResults& r) {
                               const auto& b = r.first().baseline;
                               return arm_interval(b ? &*b : nullptr);
                             })
      .def_property_readonly(
          "with_skill_tokens",
          [](const EvalResults& r) { return r.first().with_skill.usage.total(); })
      .def_property_readonly("baseline_tokens",
                             [](const EvalResults& r) -> std::optional<long long> {
                               const auto& b = r.first().baseline;
                               if (!b) return std::nullopt;
                               return b->usage.total();
                             })
      .def(
          "to_json",
          [](const EvalResults& r) { return to_py(eval::to_json(r.summary, r.evaluation)); },
          "The versioned result (schema upskill.eval/1), as `upskill eval --json` writes it.");

  m.def("evaluate_skill", &evaluate_skill, py::arg("skill"), py::arg("tests") = py::none(),
        py::arg("models") = std::vector<std::string>{}, py::arg("config") = py::none(),
        py::arg("runs") = py::none(), py::arg("baseline") = py::none(),
        py::arg("jobs") = py::none(), py::arg("seed") = 20261202ULL,
        py::arg("directory") = py::none(),
        "Run the skill's test cases (or `tests`: a file or a list of case dicts) with and without "
        "it, as `upskill eval` does. Kernel specs the cases name are found under `directory` "
        "(default: the tests file's folder, else the skill's). runs and jobs default to the "
        "config's num_runs and max_parallel, else 1 and 4, as the command line's do.");

  m.def(
      "evaluate_request", &evaluate_request, py::arg("request"), py::arg("config") = py::none(),
      "Run an evaluation request in its JSON form — a dict as evaluation_request(...)[\"request\"] "
      "returns it, or the path of a file as `upskill eval --request FILE` reads it — with run "
      "logs as the request says. Fields left out take their defaults; the students, judges and "
      "runs folder come from the config when it names none.");

  m.def(
      "evaluation_request",
      [](const skill::SkillBundle& skill, const py::object& tests, std::vector<std::string> models,
         std::optional<ConfigHandle> config, std::optional<int> runs, std::optional<bool> baseline,
         std::optional<int> jobs, std::uint64_t seed) {
        ConfigHandle holder;
        const config::Config& cfg = config_or_default(config, holder);
        const eval::SessionRequest r = request_for(skill, tests, std::move(models), cfg, runs,
                                                   baseline, jobs, seed, std::nullopt);
        return to_py(Json{{"request", eval::to_json(eval::with_absolute_paths(r))},
                          {"retry", llm::to_json(llm::retry_policy(cfg))}});
      },
      py::arg("skill"), py::arg("tests") = py::none(),
      py::arg("models") = std::vector<std::string>{}, py::arg("config") = py::none(),
      py::arg("runs") = py::none(), py::arg("baseline") = py::none(), py::arg("jobs") = py::none(),
      py::arg("seed") = 20261202ULL,
      "What evaluate_skill would run, resolved from the arguments and the config (the request and "
      "the client's retry policy), as `upskill eval --dry-run` prints it.");

  m.def("merge_runs", &merge_runs, py::arg("shards"), py::arg("runs_dir") = py::none(),
        py::arg("config") = py::none(), py::arg("log_runs") = true,
        "Merge the shard batches of one evaluation (or a Slurm/Jobs submission folder), as "
        "`upskill runs merge` does; the merged results, with batch_dir and exit_code.");

  m.def("run_remote", &run_remote, py::arg("skill_dir"), py::arg("executor"),
        py::arg("models") = std::vector<std::string>{}, py::arg("tests") = py::none(),
        py::arg("config") = py::none(), py::arg("runs") = py::none(),
        py::arg("baseline") = py::none(), py::arg("jobs") = py::none(),
        py::arg("seed") = 20261202ULL, py::arg("shards") = py::none(), py::arg("wait") = true,
        "Run the evaluation as shards on Slurm or Hugging Face Jobs (executor 'slurm' or 'jobs'), "
        "as `upskill eval --executor` does; returns the submission folder, job ids, whether it "
        "waited, the failed tasks, the exit code and the merged results (None without waiting).");

  m.def(
      "generate_skill",
      [](const std::string& task, std::vector<std::string> examples,
         std::optional<trace::Trace> from_trace, std::optional<skill::SkillBundle> existing,
         std::optional<std::string> model, std::optional<ConfigHandle> config,
         std::size_t digest_tokens) {
        ConfigHandle holder;
        const config::Config& cfg = config_or_default(config, holder);
        Session session(cfg);
        llm::ResolvedModel resolved;
        const gen::Teacher teacher =
            teacher_for(cfg.model_for(config::ModelRole::teacher, model), resolved, session);
        const auto digest = digest_of(from_trace, digest_tokens);
        gen::SkillRequest request{task, examples, digest ? &*digest : nullptr,
                                  existing ? &*existing : nullptr};
        const gen::GeneratedSkill out =
            released([&] { return gen::generate_skill(request, teacher); });
        if (!out.validation.empty())
          throw py::value_error("the teacher's skill is invalid after a repair round-trip: " +
                                out.validation.front());
        return out.bundle;
      },
      py::arg("task"), py::arg("examples") = std::vector<std::string>{},
      py::arg("trace") = py::none(), py::arg("existing") = py::none(),
      py::arg("model") = py::none(), py::arg("config") = py::none(),
      py::arg("digest_tokens") = trace::kDefaultDigestTokens,
      "Have the teacher write a skill for `task` (from a parsed trace, or improving `existing`).");

  m.def(
      "generate_tests",
      [](const std::string& task, std::optional<skill::SkillBundle> skill,
         std::optional<trace::Trace> from_trace, std::optional<std::string> model,
         std::optional<ConfigHandle> config, int count, std::optional<fs::path> directory) {
        ConfigHandle holder;
        const config::Config& cfg = config_or_default(config, holder);
        Session session(cfg);
        llm::ResolvedModel resolved;
        const gen::Teacher teacher = teacher_for(
            model.value_or(cfg.model_for(config::ModelRole::test_writer)), resolved, session);
        const auto digest = digest_of(from_trace, trace::kDefaultDigestTokens);
        gen::TestsRequest request;
        request.task = task;
        request.skill = skill ? &*skill : nullptr;
        request.spec_dir = directory.value_or(skill ? skill->directory : fs::path());
        request.trace = from_trace ? &*from_trace : nullptr;
        request.digest = digest ? &*digest : nullptr;
        request.count = count;
        const checks::Checkers checkers(cfg, request.spec_dir);
        gen::GenerateObserver quiet;
        const gen::TestsOutcome out = released([&] {
          return gen::write_and_screen_tests(request, teacher, checkers.environment(), quiet);
        });
        return to_py(cases::cases_to_json(out.cases));
      },
      py::arg("task"), py::arg("skill") = py::none(), py::arg("trace") = py::none(),
      py::arg("model") = py::none(), py::arg("config") = py::none(), py::arg("count") = 5,
      py::arg("directory") = py::none(),
      "Have the test model write test cases (dicts in upskill's schema), screened as `upskill "
      "generate` screens them: a case an empty answer passes, or the trace's own solution fails, "
      "is left out. Spec files the kernel checks name are saved under `directory` (default: the "
      "skill's folder).");

  py::class_<gen::GenerateOutcome>(m, "GenerateResult")
      .def_readonly("skill", &gen::GenerateOutcome::skill)
      .def_property_readonly("skill_dir", [](const gen::GenerateOutcome& o) { return o.skill_dir; })
      .def_readonly("tests", &gen::GenerateOutcome::tests)
      .def_readonly("draft_errors", &gen::GenerateOutcome::draft_errors)
      .def_readonly("validation_errors", &gen::GenerateOutcome::validation_errors)
      .def_property_readonly("exit_code",
                             [](const gen::GenerateOutcome& o) { return static_cast<int>(o.exit); })
      .def_property_readonly("teacher_tokens", [](const gen::GenerateOutcome& o) {
        return std::make_pair(o.teacher_usage.input, o.teacher_usage.output);
      });

  m.def(
      "generate",
      [](const std::string& task, std::optional<fs::path> from, std::vector<std::string> examples,
         std::optional<std::string> model, std::optional<std::string> test_model,
         std::vector<std::string> eval_models, std::optional<fs::path> output, bool evaluate,
         std::optional<int> max_refine, int tests, std::optional<int> runs, bool log_runs,
         std::optional<fs::path> runs_dir, std::optional<ConfigHandle> config,
         std::optional<std::string> executor, std::optional<int> shards,
         std::optional<std::string> artifact_repo) {
        ConfigHandle holder;
        const config::Config& cfg = config_or_default(config, holder);
        gen::GenerateRequest request;
        // The executor (the argument, else the config's) is never ignored, as on the command line:
        // each attempt's evaluation runs there (scale::remote_evaluator).
        scale::RemoteRequest remote;
        remote.config = &cfg;
        if (executor) {
          remote.settings.executor = config::executor_from_string(*executor);
          if (!remote.settings.executor)
            throw py::value_error("executor '" + *executor + "': 'local', 'slurm' or 'jobs'");
        }
        remote.settings.shards = shards;
        remote.settings.artifact_repo = artifact_repo;
        if (evaluate && scale::executor_of(remote.settings, cfg) != config::Executor::local) {
          remote.session.runs_dir = runs_dir.value_or(cfg.runs_dir);
          remote.session.log_runs = log_runs;
          request.evaluate_elsewhere = unwrap(scale::remote_evaluator(remote, nullptr));
        }
        request.task = task;
        request.from = from;
        request.examples = std::move(examples);
        request.teacher_model = model;
        request.test_model = test_model;
        request.student_models = std::move(eval_models);
        request.output_root = output;
        request.evaluate = evaluate;
        request.max_attempts = max_refine;
        request.tests = tests;
        request.runs = eval::resolved_runs({std::nullopt, runs, false}, cfg);  // as the CLI's
        request.jobs = eval::resolved_jobs({}, cfg);
        request.log_runs = log_runs;
        request.runs_dir = runs_dir;
        Session session(cfg);
        gen::GenerateObserver quiet;
        return released([&] { return gen::run_generate(request, session.access, quiet); });
      },
      py::arg("task"), py::arg("from_") = py::none(),
      py::arg("examples") = std::vector<std::string>{}, py::arg("model") = py::none(),
      py::arg("test_model") = py::none(), py::arg("eval_models") = std::vector<std::string>{},
      py::arg("output") = py::none(), py::arg("evaluate") = true,
      py::arg("max_refine") = py::none(), py::arg("tests") = 5, py::arg("runs") = py::none(),
      py::arg("log_runs") = true, py::arg("runs_dir") = py::none(), py::arg("config") = py::none(),
      py::arg("executor") = py::none(), py::arg("shards") = py::none(),
      py::arg("artifact_repo") = py::none(),
      "The whole pipeline, as `upskill generate` runs it: skill, tests, screening, evaluation and "
      "refinement, saved under `output` (default: skills_dir). With executor 'slurm' or 'jobs' (or "
      "the config's executor:) each attempt's evaluation runs there as shards, as `generate "
      "--executor` does. Returns a GenerateResult.");

  m.def(
      "refine_skill",
      [](const skill::SkillBundle& skill, const EvalResults& results,
         std::optional<std::string> task, std::optional<std::string> model,
         std::optional<ConfigHandle> config) {
        ConfigHandle holder;
        const config::Config& cfg = config_or_default(config, holder);
        Session session(cfg);
        llm::ResolvedModel resolved;
        const gen::Teacher teacher =
            teacher_for(cfg.model_for(config::ModelRole::teacher, model), resolved, session);
        const auto failures = gen::failure_reports(results.evaluation);
        if (failures.empty()) return skill;  // nothing failed: nothing to refine
        gen::SkillRequest context{task.value_or(skill.description()), {}, nullptr, nullptr};
        const gen::GeneratedSkill out =
            released([&] { return gen::refine_skill(skill, failures, context, teacher); });
        if (!out.validation.empty())
          throw py::value_error("the refined skill is invalid: " + out.validation.front());
        return out.bundle;
      },
      py::arg("skill"), py::arg("results"), py::arg("task") = py::none(),
      py::arg("model") = py::none(), py::arg("config") = py::none(),
      "Rewrite the skill from an evaluation's failing checks (the whole skill and every reason).");
}
