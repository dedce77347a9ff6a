// The skills-repo CI flow (see ci.hpp).
#include "upskill/ci/ci.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "upskill/core/files.hpp"
#include "upskill/core/json_fields.hpp"
#include "upskill/core/sandbox.hpp"
#include "upskill/core/temp_dir.hpp"
#include "upskill/core/text.hpp"
#include "upskill/core/timefmt.hpp"

namespace upskill::ci {

namespace fs = std::filesystem;

namespace {

constexpr std::chrono::seconds kGitTimeout{120};

// A command on the user's own repository: trusted, so not confined beyond a clean environment and
// a time limit.
Result<sandbox::RunResult> run_trusted(const fs::path& repo, std::vector<std::string> argv) {
  sandbox::Options o;
  o.workdir = repo;
  o.argv = std::move(argv);
  o.isolate_network = false;
  o.isolate_pids = false;
  o.confine_writes = false;
  o.limits.wall = kGitTimeout;
  o.limits.output_bytes = 64 << 20;
  return sandbox::run(o);
}

// git in the repository; safe.directory lets CI containers that run as another user read it.
Result<std::string> git(const fs::path& repo, std::vector<std::string> args) {
  std::vector<std::string> argv{"git", "-c", "safe.directory=*", "-c", "core.quotePath=false"};
  argv.insert(argv.end(), args.begin(), args.end());
  UPSKILL_ASSIGN_OR_RETURN(sandbox::RunResult r, run_trusted(repo, std::move(argv)));
  if (!r.ok())
    return fail(Error::usage(fmt::format("git {} failed{}: {}", text::join(args, " "),
                                         r.timed_out ? " (timed out)" : "",
                                         text::excerpt(text::trim(r.output), 300))));
  return r.output;
}

bool git_has(const fs::path& repo, const std::string& ref, const std::string& path) {
  return git(repo, {"cat-file", "-e", ref + ":" + path}).has_value();
}

// The skill folder as it was at `ref`, copied to `dest`.
Status extract_at(const fs::path& repo, const std::string& ref, const std::string& folder,
                  const fs::path& dest) {
  UPSKILL_ASSIGN_OR_RETURN(
      sandbox::RunResult r,
      run_trusted(repo, {"sh", "-c",
                         "git -c safe.directory='*' archive --format=tar \"$1\" -- \"$2\" | "
                         "tar -x -C \"$3\"",
                         "extract", ref, folder, dest.string()}));
  if (!r.ok())
    return fail(Error::usage(fmt::format("cannot take {} at {}: {}", folder, ref,
                                         text::excerpt(text::trim(r.output), 300))));
  return {};
}

std::string normalize(std::string path) {
  while (path.starts_with("./")) path = path.substr(2);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// One side's numbers, from the with-skill arm of its evaluation.
Side side_of(const eval::SessionOutcome& out) {
  Side s;
  s.batch_dir = out.logged ? out.batch_dir.string() : "";
  long long answered = 0, tokens = 0, judged = 0;
  double judge_sum = 0;
  for (const auto& t : out.evaluation.trials) {
    if (t.key.arm != eval::Arm::with_skill || !t.completed) continue;
    if (t.failure) {
      ++s.errors;
      continue;
    }
    ++answered;
    tokens += t.usage.total();
    // A trial not run here, or whose pair was not, is left out of the score as eval leaves it out
    // of the pass rate.
    if (eval::excluded_as_not_run(out.evaluation, t.key)) continue;
    for (const auto& c : t.verdict.checks) {
      if (c.kind == cases::CheckKind::judge) {
        ++s.judge_checks;
        if (c.details.is_object() && c.details.contains("mean")) {
          judge_sum += c.details.value("mean", 0.0);
          ++judged;
        } else if (c.status == checks::Status::error) {
          ++s.judge_errors;
          if (s.first_judge_error.empty()) s.first_judge_error = text::excerpt(c.reason, 300);
        }
        continue;
      }
      ++s.assertions_total;
      s.assertions_passed += c.status == checks::Status::passed;
      if (c.status != checks::Status::passed && s.first_failure.empty())
        s.first_failure = text::excerpt(
            fmt::format("{}: {}: {}", out.evaluation.cases[t.key.test_case].id, c.expected,
                        c.reason.empty() ? std::string(checks::to_string(c.status)) : c.reason),
            300);
    }
  }
  if (const auto causes = eval::failure_causes(out.evaluation); !causes.empty())
    s.first_error = causes.front().message;
  s.hard_score = s.assertions_total ? static_cast<double>(s.assertions_passed) /
                                          static_cast<double>(s.assertions_total)
                                    : 0;
  s.avg_tokens = answered ? static_cast<double>(tokens) / static_cast<double>(answered) : 0;
  s.answered = answered;
  if (judged) s.judge_score = judge_sum / static_cast<double>(judged);
  return s;
}

Json side_json(const std::optional<Side>& s) {
  if (!s) return nullptr;
  // A figure that was not computed is null, never 0.
  return {{"hard_score", s->assertions_total ? Json(s->hard_score) : Json(nullptr)},
          {"assertions_passed", s->assertions_passed},
          {"assertions_total", s->assertions_total},
          {"avg_tokens", s->answered ? Json(s->avg_tokens) : Json(nullptr)},
          {"judge_score", s->judge_score ? Json(*s->judge_score) : Json(nullptr)},
          {"errors", s->errors},
          {"first_error", s->first_error.empty() ? Json(nullptr) : Json(s->first_error)},
          {"judge_errors", s->judge_errors},
          {"first_failure", s->first_failure.empty() ? Json(nullptr) : Json(s->first_failure)},
          {"batch_dir", s->batch_dir}};
}

// The session's connection opened once and shared by every evaluation (a --record cassette is
// opened once).
llm::ModelAccess shared_connection(const llm::ModelAccess& models) {
  llm::ModelAccess shared = models;
  auto opened = std::make_shared<std::optional<llm::Connection>>();
  shared.connect = [connect = models.connect, opened]() -> Result<llm::Connection> {
    if (!*opened) {
      UPSKILL_ASSIGN_OR_RETURN(llm::Connection c, connect());
      *opened = c;
    }
    return **opened;
  };
  return shared;
}

class Quiet : public eval::SessionObserver {};

}  // namespace

eval::SessionRequest side_request(const CiRequest& request, const config::Config& config,
                                  const Scenario& s, const std::string& student,
                                  const fs::path& skill_dir, const std::string& side) {
  eval::SessionRequest sr;
  sr.skill_dir = skill_dir;
  sr.tests = (request.repo / s.tests).lexically_normal();
  sr.models = {student};
  if (s.judge) {
    sr.judge_criteria = s.criteria;
    sr.judge_models = request.judge_models;
  }
  eval::resolve_request(sr, {request.jobs, request.runs, false, s.include_baseline}, config);
  std::error_code ec;
  const fs::path artifacts = request.artifacts_dir.is_absolute()
                                 ? request.artifacts_dir
                                 : fs::absolute(request.repo, ec) / request.artifacts_dir;
  sr.runs_dir = artifacts / s.id / side;
  return sr;
}

Result<Manifest> parse_manifest(std::string_view text, const std::string& file) {
  UPSKILL_ASSIGN_OR_RETURN(JsonDocument doc, parse_json_document(text, file));
  JsonObjectReader root(doc, "", "the manifest");
  UPSKILL_RETURN_IF_ERROR(root.expect_object("the eval manifest"));
  if (!root.has("scenarios")) return fail(root.error("the manifest needs 'scenarios'"));
  const Json& list = root.value().at("scenarios");
  if (!list.is_array()) return fail(root.error_at("scenarios", "'scenarios' must be a list"));
  Manifest m;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < list.size(); ++i) {
    JsonObjectReader r(doc, json_pointer_append(root.child("scenarios"), i),
                       fmt::format("scenario {}", i + 1));
    UPSKILL_RETURN_IF_ERROR(r.expect_object("a scenario"));
    UPSKILL_RETURN_IF_ERROR(
        r.reject_unknown_keys({"id", "skills", "tests", "judge", "include_baseline"}));
    Scenario s;
    UPSKILL_ASSIGN_OR_RETURN(s.id, r.required_string("id"));
    if (!ids.insert(s.id).second)
      return fail(r.error_at("id", fmt::format("scenario id '{}' is used twice", s.id)));
    UPSKILL_ASSIGN_OR_RETURN(s.skills, r.string_list("skills", true));
    for (auto& skill : s.skills) {
      skill = normalize(skill);
      if (auto problem = files::relative_path_problem(skill))
        return fail(r.error_at("skills", fmt::format("skill '{}': {}", skill, *problem)));
    }
    UPSKILL_ASSIGN_OR_RETURN(s.tests, r.required_string("tests"));
    s.tests = normalize(s.tests);
    if (auto problem = files::relative_path_problem(s.tests))
      return fail(r.error_at("tests", fmt::format("tests '{}': {}", s.tests, *problem)));
    if (r.has("judge")) {
      JsonObjectReader j(doc, r.child("judge"), fmt::format("scenario {}: judge", i + 1));
      UPSKILL_RETURN_IF_ERROR(j.expect_object("'judge'"));
      UPSKILL_RETURN_IF_ERROR(j.reject_unknown_keys({"enabled", "criteria"}));
      UPSKILL_ASSIGN_OR_RETURN(auto enabled, j.optional_bool("enabled"));
      s.judge = enabled.value_or(true);
      UPSKILL_ASSIGN_OR_RETURN(s.criteria, j.string_list("criteria", true));
      if (s.judge && s.criteria.empty()) return fail(j.error("an enabled judge needs 'criteria'"));
    }
    UPSKILL_ASSIGN_OR_RETURN(auto baseline, r.optional_bool("include_baseline"));
    s.include_baseline = baseline.value_or(false);
    m.scenarios.push_back(std::move(s));
  }
  return m;
}

Result<Manifest> load_manifest(const fs::path& path) {
  UPSKILL_ASSIGN_OR_RETURN(std::string text, files::read_text(path));
  return parse_manifest(text, path.string());
}

std::optional<std::string> skill_folder_of(
    const std::string& path, const std::function<bool(const std::string&)>& has_skill_md) {
  fs::path p = normalize(path);
  if (p.filename() == "SKILL.md") p = p.parent_path();
  for (; !p.empty(); p = p.parent_path()) {
    if (has_skill_md(p.generic_string())) return p.generic_string();
    if (p == p.parent_path()) break;
  }
  return std::nullopt;
}

std::vector<std::string> regressions(const Side& current, const Side& base, const Thresholds& t) {
  std::vector<std::string> out;
  if (current.hard_score + t.hard < base.hard_score - 1e-12)
    out.push_back(fmt::format("hard score fell from {:.1f}% to {:.1f}% (threshold {:g})",
                              base.hard_score * 100, current.hard_score * 100, t.hard));
  const bool hard_improved = current.hard_score > base.hard_score + 1e-12;
  if (!hard_improved && current.judge_score && base.judge_score &&
      *current.judge_score + t.judge < *base.judge_score - 1e-12)
    out.push_back(fmt::format("judge score fell from {:.2f} to {:.2f} (threshold {:g})",
                              *base.judge_score, *current.judge_score, t.judge));
  if (!hard_improved && base.avg_tokens > 0 &&
      (current.avg_tokens - base.avg_tokens) / base.avg_tokens > t.tokens + 1e-12)
    out.push_back(fmt::format(
        "tokens per case rose from {:.0f} to {:.0f} (+{:.0f}%, threshold "
        "{:.0f}%)",
        base.avg_tokens, current.avg_tokens,
        (current.avg_tokens - base.avg_tokens) / base.avg_tokens * 100, t.tokens * 100));
  return out;
}

Json to_json(const CiOutcome& o, const CiRequest& request) {
  Json scenarios = Json::array();
  for (const auto& r : o.results)
    scenarios.push_back({{"id", r.id},
                         {"skill", r.skill},
                         {"status", r.status},
                         {"current", side_json(r.current)},
                         {"base", side_json(r.base)},
                         {"regressions", r.regressions},
                         {"error", r.error.empty() ? Json(nullptr) : Json(r.error)}});
  return {{"schema", "upskill.ci/1"},
          {"base_ref", request.base_ref},
          {"head_ref", request.head_ref},
          {"runs", request.runs.value_or(1)},
          {"thresholds",
           {{"hard", request.thresholds.hard},
            {"judge", request.thresholds.judge},
            {"tokens", request.thresholds.tokens}}},
          {"changed_files", o.changed_files},
          {"changed_skills", o.changed_skills},
          {"deleted_skills", o.deleted_skills},
          {"notes", o.notes},
          {"scenarios", scenarios},
          {"exit_code", static_cast<int>(o.exit)}};
}

std::string render_markdown(const CiOutcome& o, const CiRequest& request) {
  std::string out = fmt::format(
      "## upskill CI\n\nBase `{}` → `{}` · {} changed skill folder{} · "
      "{} scenario{} evaluated\n\n",
      request.base_ref, request.head_ref, o.changed_skills.size(),
      o.changed_skills.size() == 1 ? "" : "s", o.results.size(), o.results.size() == 1 ? "" : "s");
  for (const auto& note : o.notes) out += "- " + note + "\n";
  if (!o.notes.empty()) out += "\n";
  if (o.results.empty()) return out + "No scenario's skills changed.\n";
  auto pct = [](const std::optional<Side>& s) {
    return s && s->assertions_total ? fmt::format("{:.0f}%", s->hard_score * 100)
                                    : std::string("—");
  };
  auto judge = [](const std::optional<Side>& s) {
    return s && s->judge_score ? fmt::format("{:.2f}", *s->judge_score) : std::string("—");
  };
  auto tokens = [](const std::optional<Side>& s) {
    return s && s->answered ? fmt::format("{:.0f}", s->avg_tokens) : std::string("—");
  };
  auto cell = [](std::string s) {
    for (std::size_t at = 0; (at = s.find('|', at)) != std::string::npos; at += 2)
      s.insert(at, "\\");
    for (auto& c : s)
      if (c == '\n' || c == '\r') c = ' ';
    return s;
  };
  out += "| Scenario | Skill | Status | Hard (base → now) | Judge | Tokens/case | Notes |\n";
  out += "|---|---|---|---|---|---|---|\n";
  for (const auto& r : o.results) {
    std::string notes = r.status == "ERROR" ? r.error : text::join(r.regressions, "; ");
    out += fmt::format("| {} | {} | **{}** | {} → {} | {} → {} | {} → {} | {} |\n", cell(r.id),
                       cell(r.skill), r.status, pct(r.base), pct(r.current), judge(r.base),
                       judge(r.current), tokens(r.base), tokens(r.current), cell(notes));
  }
  return out;
}

namespace {

// What every step of a run shares.
struct Run {
  CiRequest req;  // base_ref resolved
  fs::path repo;
  llm::ResolvedModel student;
  llm::ModelAccess models;  // one connection for every evaluation
  CiObserver& observer;
  fs::path in_repo(const fs::path& p) const {
    return (p.is_absolute() ? p : repo / p).lexically_normal();
  }
};

// The changed files, their skill folders and the scenarios they select (manifest order).
Result<std::vector<const Scenario*>> select(const Run& run, const Manifest& manifest,
                                            CiOutcome& out) {
  const CiRequest& req = run.req;
  UPSKILL_ASSIGN_OR_RETURN(std::string diff, git(run.repo, {"diff", "--name-only",
                                                            req.base_ref + "..." + req.head_ref}));
  for (const auto& line : text::split_lines(diff))
    if (!text::trim(line).empty()) out.changed_files.push_back(text::trim(line));
  std::set<std::string> changed;
  std::error_code ec;
  for (const auto& f : out.changed_files) {
    auto folder = skill_folder_of(f, [&](const std::string& dir) {
      return fs::is_regular_file(run.repo / dir / "SKILL.md", ec) ||
             git_has(run.repo, req.base_ref, dir + "/SKILL.md");
    });
    if (folder) changed.insert(*folder);
  }
  out.changed_skills.assign(changed.begin(), changed.end());
  for (const auto& k : changed)
    if (!fs::is_regular_file(run.repo / k / "SKILL.md", ec)) out.deleted_skills.push_back(k);
  const auto deleted = [&](const std::string& k) {
    return std::find(out.deleted_skills.begin(), out.deleted_skills.end(), k) !=
           out.deleted_skills.end();
  };
  std::vector<const Scenario*> selected;
  for (const auto& s : manifest.scenarios) {
    if (!req.scenarios.empty() &&
        std::find(req.scenarios.begin(), req.scenarios.end(), s.id) == req.scenarios.end())
      continue;
    const bool touched = std::any_of(s.skills.begin(), s.skills.end(),
                                     [&](const std::string& k) { return changed.contains(k); });
    if (!req.all && !touched) continue;
    if (!s.skills.empty() && std::all_of(s.skills.begin(), s.skills.end(), deleted)) {
      out.notes.push_back(fmt::format("scenario {} not evaluated: this change deletes {}", s.id,
                                      text::join(s.skills, ", ")));
      continue;
    }
    selected.push_back(&s);
  }
  return selected;
}

// One side of a scenario evaluated: the skill folder `skill_dir` on the scenario's tests.
// One side of a scenario evaluated: the skill folder `skill_dir` on the scenario's tests. What
// was measured is kept in `measured` even when the side is an error, for the report.
Result<Side> evaluate_side(const Run& run, const Scenario& s, const fs::path& skill_dir,
                           const std::string& side, std::optional<Side>& measured) {
  run.observer.evaluating(s, side);
  const eval::SessionRequest sr =
      side_request(run.req, *run.models.config, s, run.student.spec, skill_dir, side);
  Quiet quiet;
  UPSKILL_ASSIGN_OR_RETURN(eval::SessionOutcome o, eval::run_session(sr, run.models, quiet));
  measured = side_of(o);
  const Side& result = *measured;
  if (o.evaluation.interrupted) return fail(Error{ExitCode::interrupted, "interrupted"});
  // No verdict from what was not measured: a judge that could not score or a student without
  // answers makes the scenario an ERROR, with the first cause.
  if (result.judge_errors > 0)
    return fail(Error::infrastructure(fmt::format(
        "the judge could not score {} of {} answer(s) of the {} skill: {} (run logs: {})",
        result.judge_errors, result.judge_checks, side, result.first_judge_error,
        o.batch_dir.string())));
  if (!o.summary.completeness.complete())
    return fail(Error::infrastructure(
        fmt::format("the {} skill's evaluation is {} (run logs: {})", side,
                    eval::incomplete_note(o.summary.completeness), o.batch_dir.string())));
  return result;
}

// A scenario's status: its skill now, then (unless it is new) as it was at the base ref.
void evaluate_scenario(const Run& run, const Scenario& s, ScenarioResult& r) {
  if (s.skills.size() != 1) {
    r.status = "ERROR";
    r.error = fmt::format("a scenario must name exactly one skill, found {}", s.skills.size());
    return;
  }
  auto current = evaluate_side(run, s, run.repo / r.skill, "current", r.current);
  if (!current) {
    r.status = current.error().code == ExitCode::interrupted ? "INTERRUPTED" : "ERROR";
    r.error = current.error().message;
    return;
  }
  r.current = *current;
  if (!git_has(run.repo, run.req.base_ref, r.skill + "/SKILL.md")) {
    r.status = "NEW";
    return;
  }
  auto scratch = TempDir::create("upskill-ci");
  Status taken = scratch ? extract_at(run.repo, run.req.base_ref, r.skill, scratch->path())
                         : Status(std::unexpected(scratch.error()));
  auto base = taken ? evaluate_side(run, s, scratch->path() / r.skill, "base", r.base)
                    : Result<Side>(std::unexpected(taken.error()));
  if (!base) {
    r.status = base.error().code == ExitCode::interrupted ? "INTERRUPTED" : "ERROR";
    r.error = base.error().message;
    return;
  }
  r.base = *base;
  r.regressions = regressions(*r.current, *r.base, run.req.thresholds);
  r.status = r.regressions.empty() ? "PASS" : "FAIL";
}

// --persist: one JSON line per scenario appended to the history file; false when it failed.
bool persist(const Run& run, const CiOutcome& out) {
  std::string lines;
  for (const auto& r : out.results)
    lines += Json{{"timestamp", out.generated_at},
                  {"scenario", r.id},
                  {"skill", r.skill},
                  {"status", r.status},
                  {"commit", out.commit},
                  {"base_ref", run.req.base_ref},
                  {"model", out.model},
                  {"current", side_json(r.current)},
                  {"base", side_json(r.base)}}
                 .dump() +
             "\n";
  return files::append_line(run.in_repo(*run.req.persist), lines, true).has_value();
}

}  // namespace

std::vector<Json> history_rows(const CiOutcome& out) {
  auto figure = [](const Json& side, const char* key) {
    return side.is_null() ? Json(nullptr) : side.at(key);
  };
  std::vector<Json> rows;
  for (const auto& r : out.results) {
    if (r.status == "INTERRUPTED") continue;
    const bool error = r.status == "ERROR";
    // The report's figures (side_json: null where not computed); an ERROR scenario's are partial.
    const Json current = error ? Json(nullptr) : side_json(r.current);
    const Json base = error ? Json(nullptr) : side_json(r.base);
    Json notes = Json::array();
    if (r.status == "NEW")
      notes.push_back(fmt::format("No baseline skill found at `{}`.", out.base_ref));
    if (error) notes.push_back(r.error);
    rows.push_back({{"generated_at", out.generated_at},
                    {"commit_sha", out.commit},
                    {"base_ref", out.base_ref},
                    {"scenario_id", r.id},
                    {"skill_path", r.skill},
                    {"eval_model", out.model},
                    {"runs", out.runs},
                    {"hard_score", figure(current, "hard_score")},
                    {"judge_score", figure(current, "judge_score")},
                    {"avg_tokens", figure(current, "avg_tokens")},
                    {"avg_turns", nullptr},
                    {"baseline_hard_score", figure(base, "hard_score")},
                    {"baseline_judge_score", figure(base, "judge_score")},
                    {"baseline_avg_tokens", figure(base, "avg_tokens")},
                    {"regression", r.status == "FAIL"},
                    {"notes", notes},
                    {"reasons", r.regressions}});
  }
  return rows;
}

Result<CiOutcome> run_ci(const CiRequest& request, const llm::ModelAccess& models,
                         CiObserver& observer) {
  if (models.config == nullptr || !models.connect)
    return fail(Error::usage("upskill ci needs a configuration and a client"));
  std::error_code ec;
  Run run{request, fs::absolute(request.repo, ec), {}, shared_connection(models), observer};
  UPSKILL_ASSIGN_OR_RETURN(Manifest manifest, load_manifest(run.in_repo(request.manifest)));
  CiRequest& req = run.req;
  // runs and jobs as every front end resolves them (eval::resolve_request), for the report
  req.runs = eval::resolved_runs({req.jobs, req.runs, false}, *models.config);
  req.jobs = eval::resolved_jobs({req.jobs, req.runs, false}, *models.config);
  // Refs reach git's command line: one that looks like an option is refused, not passed.
  for (const std::string* ref : {&req.base_ref, &req.head_ref})
    if (ref->starts_with("-"))
      return fail(Error::usage(fmt::format("'{}' is not a git ref", *ref)));
  if (req.base_ref.empty() || req.base_ref.find_first_not_of('0') == std::string::npos)
    req.base_ref = req.head_ref + "~1";  // a push of a new branch: GitHub's before is all zeros
  UPSKILL_RETURN_IF_ERROR(git(run.repo, {"rev-parse", "--verify", req.base_ref + "^{commit}"}));
  UPSKILL_ASSIGN_OR_RETURN(run.student, models.resolve(req.eval_model.value_or(
                                            models.config->model_for(config::ModelRole::student))));

  CiOutcome out;
  out.generated_at = timefmt::iso8601(std::chrono::system_clock::now(), timefmt::Zone::utc);
  auto head = git(run.repo, {"rev-parse", req.head_ref});
  out.commit = head ? text::trim(*head) : req.head_ref;
  out.model = run.student.name;
  out.base_ref = req.base_ref;
  out.runs = req.runs.value_or(1);
  UPSKILL_ASSIGN_OR_RETURN(std::vector<const Scenario*> selected, select(run, manifest, out));
  for (const auto* s : selected) {
    ScenarioResult r;
    r.id = s->id;
    r.skill = s->skills.empty() ? "" : s->skills[0];
    out.results.push_back(std::move(r));
  }
  observer.planned(out);
  bool interrupted = false;
  for (std::size_t i = 0; i < selected.size() && !interrupted; ++i) {
    evaluate_scenario(run, *selected[i], out.results[i]);
    interrupted = out.results[i].status == "INTERRUPTED";
    observer.scenario_done(out.results[i]);
  }

  // Outputs, then the exit status: interrupted > error > regression > persist failed > ok.
  bool any_error = false, any_fail = false;
  for (const auto& r : out.results) {
    any_error = any_error || r.status == "ERROR";
    any_fail = any_fail || r.status == "FAIL";
  }
  out.exit = interrupted ? ExitCode::interrupted
             : any_error ? ExitCode::usage
             : any_fail  ? ExitCode::gate_failed
                         : ExitCode::ok;
  if (req.persist) {
    out.persist_failed = !persist(run, out);
    if (out.persist_failed && out.exit == ExitCode::ok) out.exit = ExitCode::infrastructure;
  }
  const fs::path reports = run.in_repo(req.report_dir);
  out.report_json =
      req.report_json ? run.in_repo(*req.report_json) : reports / "upskill-ci-report.json";
  out.summary_md = reports / "upskill-ci-summary.md";
  UPSKILL_RETURN_IF_ERROR(files::write_atomic(out.report_json, to_json(out, req).dump(2) + "\n"));
  const std::string markdown = render_markdown(out, req);
  UPSKILL_RETURN_IF_ERROR(files::write_atomic(out.summary_md, markdown));
  if (req.step_summary)
    if (auto appended = files::append_line(*req.step_summary, markdown, true); !appended)
      out.step_summary_error = appended.error();
  return out;
}

}  // namespace upskill::ci
