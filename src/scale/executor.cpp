// What every executor shares (see executor.hpp).
#include "upskill/scale/executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "upskill/cases/test_suite.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/json.hpp"
#include "upskill/core/sandbox.hpp"
#include "upskill/core/text.hpp"
#include "upskill/core/timefmt.hpp"
#include "upskill/eval/batch.hpp"
#include "upskill/eval/evaluation.hpp"
#include "upskill/eval/run_log.hpp"
#include "upskill/scale/hf_jobs.hpp"
#include "upskill/skill/skill_bundle.hpp"

extern char** environ;

namespace upskill::scale {

namespace fs = std::filesystem;

Result<std::vector<cases::TestCase>> load_task_cases(const TaskCommand& task) {
  std::vector<cases::TestCase> cases;
  const eval::SessionRequest& r = task.request;
  if (r.tests) {
    UPSKILL_ASSIGN_OR_RETURN(cases::TestSuite suite, cases::load_test_suite(*r.tests));
    cases = std::move(suite.cases);
  } else {
    UPSKILL_ASSIGN_OR_RETURN(skill::SkillBundle bundle, skill::SkillBundle::load(r.skill_dir));
    cases = bundle.tests();
  }
  if (cases.empty())
    return fail(Error::usage(fmt::format(
        "{}: no test cases. Shards that wrote tests each on their own would disagree: write them "
        "once with a local `upskill eval {} --test-gen-model M` (or pass -t FILE), then run the "
        "shards",
        r.tests ? r.tests->string() : r.skill_dir.string(), r.skill_dir.string())));
  return cases;
}

Status check_plan(const ShardPlan& plan) {
  if (plan.shards < 1 || plan.gpu_shards < 0 || plan.gpu_shards > plan.shards)
    return fail(
        Error::usage(fmt::format("--gpu-shards {} with {} shard(s): at most the number of "
                                 "shards",
                                 plan.gpu_shards, plan.shards)));
  return {};
}

int default_gpu_shards(const std::vector<cases::TestCase>& cases, int shards) {
  const auto kernel = static_cast<int>(std::count_if(
      cases.begin(), cases.end(), [](const auto& c) { return eval::has_kernel_check(c); }));
  const int total = static_cast<int>(cases.size());
  if (kernel == 0) return 0;
  if (kernel == total) return shards;
  const int share = static_cast<int>(std::lround(static_cast<double>(shards) * kernel / total));
  return std::clamp(share, 1, std::max(1, shards - 1));
}

std::string task_shell_arguments(const TaskCommand& task, const ShardPlan& plan,
                                 const std::string& shard, const std::string& runs_dir) {
  std::vector<std::string> args = task.global_options;
  if (task.config) {
    args.push_back("--config");
    args.push_back(task.config->string());
  }
  args.insert(args.end(), {"eval", "--request", task.request_file.string()});
  std::string words;
  for (const auto& arg : args) words += " " + shell_quote(arg);
  words += " --shard " + shard;
  if (plan.gpu_shards > 0) words += fmt::format(" --gpu-shards={}", plan.gpu_shards);
  return words + " --runs-dir " + runs_dir + " --executor=local";
}

std::string shell_quote(const std::string& word) {
  const bool safe = !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("/._-+=:,@%").find(static_cast<char>(c)) != std::string_view::npos;
  });
  if (safe) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Result<Submission> new_submission(config::Executor executor, const fs::path& runs_dir,
                                  const ShardPlan& plan) {
  Submission s;
  s.executor = executor;
  s.plan = plan;
  const auto now = std::chrono::system_clock::now();
  s.created = timefmt::iso8601(now, timefmt::Zone::utc);
  const std::string stem = fmt::format("{}-{}", to_string(executor), eval::make_batch_id(now));
  std::error_code ec;
  fs::create_directories(runs_dir, ec);
  // A second submission in the same second gets its own folder.
  for (int n = 1;; ++n) {
    s.dir = runs_dir / (n == 1 ? stem : fmt::format("{}-{}", stem, n));
    if (fs::create_directory(s.dir, ec)) break;
    if (ec || n > 100)
      return fail(Error::usage(fmt::format("cannot create a submission folder under {}: {}",
                                           runs_dir.string(),
                                           ec ? ec.message() : "too many in one second")));
  }
  for (const char* sub : {"logs", "shards", "status"}) fs::create_directories(s.dir / sub, ec);
  if (ec) return fail(Error::usage(fmt::format("{}: {}", s.dir.string(), ec.message())));
  s.dir = fs::absolute(s.dir, ec);
  return s;
}

Status write_task_request(TaskCommand& task, const fs::path& file) {
  UPSKILL_RETURN_IF_ERROR(eval::write_request_file(task.request, file));
  task.request_file = file;
  return {};
}

Status write_submission(const Submission& s) {
  Json j{{"schema", "upskill.submission/1"},
         {"executor", to_string(s.executor)},
         {"job_ids", s.job_ids},
         {"shards", s.plan.shards},
         {"gpu_shards", s.plan.gpu_shards},
         {"created", s.created}};
  if (s.remote) j["remote"] = *s.remote;
  if (s.jobs_namespace) j["jobs_namespace"] = *s.jobs_namespace;
  return files::write_atomic(s.dir / "submission.json", j.dump(1) + "\n");
}

Result<Submission> read_submission(const fs::path& dir) {
  const fs::path file = dir / "submission.json";
  UPSKILL_ASSIGN_OR_RETURN(std::string text, files::read_text(file));
  UPSKILL_ASSIGN_OR_RETURN(JsonDocument doc, parse_json_document(text, file.string()));
  Submission s;
  // Absolute: the engine's tools run in this folder, so a relative path would be read twice over.
  std::error_code absolute_ec;
  s.dir = fs::absolute(dir, absolute_ec).lexically_normal();
  if (absolute_ec) s.dir = dir;
  try {
    const Json& j = doc.value;
    const auto executor = config::executor_from_string(j.at("executor").get<std::string>());
    if (!executor || executor == config::Executor::local)
      return fail(Error::usage(
          fmt::format("{}: \"executor\" must be \"slurm\" or \"jobs\"", file.string())));
    s.executor = *executor;
    s.job_ids = j.at("job_ids").get<std::vector<std::string>>();
    s.plan.shards = j.at("shards").get<int>();
    s.plan.gpu_shards = j.value("gpu_shards", 0);
    s.created = j.value("created", "");
    if (j.contains("remote") && j["remote"].is_string()) s.remote = j["remote"].get<std::string>();
    if (j.contains("jobs_namespace") && j["jobs_namespace"].is_string())
      s.jobs_namespace = j["jobs_namespace"].get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return fail(Error::usage(
        fmt::format("{}: not a submission upskill wrote: {}", file.string(), e.what())));
  }
  if (s.plan.shards < 1 || s.plan.gpu_shards < 0 || s.plan.gpu_shards > s.plan.shards)
    return fail(Error::usage(fmt::format("{}: {} shards ({} GPU) is not a plan", file.string(),
                                         s.plan.shards, s.plan.gpu_shards)));
  return s;
}

bool TaskOutcome::failed() const {
  return !batch || !exit || (*exit != 0 && *exit != 3);
}

std::string TaskOutcome::describe() const {
  std::vector<std::string> what;
  if (!state.empty()) what.push_back(state);
  what.push_back(exit ? fmt::format("exit status {}", *exit) : "exit status not written");
  if (!batch) what.push_back("no batch");
  return fmt::format("shard {}/{}: {} (log: {})", shard, of, text::join(what, ", "), log.string());
}

namespace {

// The one batch a task wrote under shards/K (a batch folder holds plan.json).
std::optional<fs::path> task_batch(const fs::path& shard_dir) {
  std::error_code ec;
  std::optional<fs::path> found;
  for (fs::directory_iterator it(shard_dir, ec), end; !ec && it != end; it.increment(ec))
    if (std::error_code e; fs::exists(it->path() / "plan.json", e)) {
      // Resumed or rerun by hand: the newest batch (ids sort by time).
      if (!found || it->path().filename() > found->filename()) found = it->path();
    }
  return found;
}

}  // namespace

std::vector<TaskOutcome> task_outcomes(const Submission& s,
                                       const std::map<int, std::string>& states) {
  std::vector<TaskOutcome> out;
  for (int k = 1; k <= s.plan.shards; ++k) {
    TaskOutcome t;
    t.shard = k;
    t.of = s.plan.shards;
    t.log = s.dir / "logs" / fmt::format("shard-{}.log", k);
    if (auto it = states.find(k); it != states.end()) t.state = it->second;
    if (auto rc = files::read_text(s.dir / "status" / fmt::format("shard-{}.rc", k)); rc) {
      try {
        t.exit = std::stoi(text::trim(*rc));
      } catch (const std::exception&) {
      }
    }
    t.batch = task_batch(s.dir / "shards" / std::to_string(k));
    out.push_back(std::move(t));
  }
  return out;
}

Result<std::vector<fs::path>> merge_inputs(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir / "submission.json", ec)) return std::vector<fs::path>{dir};
  UPSKILL_ASSIGN_OR_RETURN(Submission s, read_submission(dir));
  if (s.executor == config::Executor::jobs) UPSKILL_RETURN_IF_ERROR(fetch_jobs_outputs(s));
  std::vector<fs::path> batches;
  bool all_ended = true;
  for (const auto& t : task_outcomes(s, {})) {
    if (t.batch) batches.push_back(*t.batch);
    all_ended = all_ended && t.exit.has_value();
  }
  // Every task has read its secrets (a Slurm submission's): the file goes.
  if (all_ended) fs::remove(secrets_file(dir), ec);
  // A shard without a batch is named by the merge as missing.
  return batches;
}

Result<ToolResult> run_tool(const std::vector<std::string>& argv, const fs::path& workdir,
                            std::chrono::seconds timeout, const std::vector<std::string>& without) {
  sandbox::Options o;
  o.workdir = workdir;
  o.argv = argv;
  o.isolate_network = false;
  o.isolate_pids = false;
  o.confine_writes = false;
  o.limits.wall = timeout;
  o.limits.cpu_seconds = static_cast<int>(timeout.count());
  o.limits.output_bytes = 16 << 20;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv(*e);
    if (const auto eq = kv.find('='); eq != std::string_view::npos)
      o.env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  for (const auto& name : without) o.env.erase(name);
  // Not the sandbox's own HOME and TMPDIR (the working folder): the user's, as for any tool.
  std::error_code ec;
  if (!o.env.contains("TMPDIR")) o.env["TMPDIR"] = fs::temp_directory_path(ec).string();
  if (!o.env.contains("HOME")) {
    if (auto home = files::home_directory()) o.env["HOME"] = home->string();
  }
  UPSKILL_ASSIGN_OR_RETURN(sandbox::RunResult r, sandbox::run(o));
  return ToolResult{r.exit_code, r.timed_out, std::move(r.output)};
}

fs::path this_binary() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("upskill") : self;
}

}  // namespace upskill::scale
