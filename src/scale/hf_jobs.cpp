// Shards as Hugging Face Jobs (see hf_jobs.hpp).
#include "upskill/scale/hf_jobs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>

#include "upskill/cases/test_suite.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/json.hpp"
#include "upskill/core/text.hpp"
#include "upskill/llm/http.hpp"
#include "upskill/scale/hf_cli.hpp"
#include "upskill/skill/skill_bundle.hpp"

namespace upskill::scale {

namespace fs = std::filesystem;

namespace {

// hf's stages of a job that will not run any further.
bool ended_stage(const std::string& stage) {
  return stage == "COMPLETED" || stage == "ERROR" || stage == "CANCELED" || stage == "DELETED";
}

Status check_word(const std::string& what, const std::string& value, const std::regex& allowed) {
  if (!std::regex_match(value, allowed))
    return fail(Error::usage(fmt::format("{} {:?} is not valid here", what, value)));
  return {};
}

}  // namespace

Status check_jobs_options(const JobsOptions& o) {
  if (!o.artifact_repo || o.artifact_repo->empty())
    return fail(Error::usage(
        "--executor jobs needs --artifact-repo <user>/<dataset> (or artifact_repo in the config): "
        "the jobs fetch their inputs from it and leave their results there"));
  static const std::regex repo(R"([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)");
  static const std::regex word(R"([A-Za-z0-9][A-Za-z0-9._:/@-]*)");
  static const std::regex name(R"([A-Za-z_][A-Za-z0-9_]*)");
  UPSKILL_RETURN_IF_ERROR(check_word("--artifact-repo", *o.artifact_repo, repo));
  UPSKILL_RETURN_IF_ERROR(check_word("--jobs-flavor", o.flavor, word));
  UPSKILL_RETURN_IF_ERROR(check_word("--jobs-image", o.image, word));
  if (o.namespace_) UPSKILL_RETURN_IF_ERROR(check_word("--jobs-namespace", *o.namespace_, word));
  for (const auto& s : o.secrets) UPSKILL_RETURN_IF_ERROR(check_word("--jobs-secrets", s, name));
  if (!parse_jobs_duration(o.timeout))
    return fail(Error::usage(
        fmt::format("--jobs-timeout {:?}: a duration such as 90s, 30m, 2h or 1d", o.timeout)));
  return {};
}

namespace {

// The shared libraries the binary loads beyond glibc (which every image has), from ldd: those it
// links, and libcurl, which it opens on its first request (llm/http.hpp), with what libcurl needs.
Result<std::vector<fs::path>> needed_libraries(const fs::path& binary, const fs::path& workdir) {
  UPSKILL_ASSIGN_OR_RETURN(const fs::path curl, llm::http_library_file());
  static const std::regex line(R"(^\s*(\S+)\s+=>\s+(/\S+)\s+\(0x[0-9a-f]+\))");
  static const std::regex glibc(
      R"(^(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux.*)\.so.*)");
  std::vector<fs::path> libs = {curl};
  std::set<std::string> names = {curl.filename().string()};
  for (const fs::path& object : {binary, curl}) {
    UPSKILL_ASSIGN_OR_RETURN(ToolResult r, run_tool({"ldd", object.string()}, workdir));
    if (!r.ok())
      return fail(Error::infrastructure(
          fmt::format("ldd {}: {}", object.string(), text::excerpt(text::trim(r.output), 300))));
    for (const auto& l : text::split_lines(r.output)) {
      std::smatch m;
      if (std::regex_search(l, m, line) && !std::regex_match(m[1].str(), glibc) &&
          names.insert(m[1].str()).second)
        libs.emplace_back(m[2].str());
    }
  }
  return libs;
}

// The op specs of the tests' kernel checks, which resolve against `from` (the request's spec_dir,
// else the tests' folder): copied to the same place relative to the bundle's tests.json. A spec
// outside that folder cannot travel.
Status copy_specs(const fs::path& tests, const fs::path& from, const fs::path& dir) {
  UPSKILL_ASSIGN_OR_RETURN(cases::TestSuite suite, cases::load_test_suite(tests));
  std::error_code ec;
  for (const auto& c : suite.cases)
    for (const auto& check : c.checks) {
      const auto* kernel = std::get_if<cases::KernelParams>(&check.params);
      if (!kernel || !kernel->spec) continue;
      if (auto problem = files::relative_path_problem(*kernel->spec))
        return fail(Error::usage(fmt::format(
            "{}: case {}: the spec {} must lie below the tests' folder to travel with a job ({})",
            tests.string(), c.id, *kernel->spec, *problem)));
      fs::create_directories((dir / *kernel->spec).parent_path(), ec);
      fs::copy_file(from / *kernel->spec, dir / *kernel->spec, fs::copy_options::overwrite_existing,
                    ec);
      if (ec)
        return fail(Error::usage(fmt::format("{}: case {}: the spec {}: {}", tests.string(), c.id,
                                             *kernel->spec, ec.message())));
    }
  return {};
}

// The bundle folder: bin/upskill, lib/, skill/, tests.json, config.yaml and run.sh, which runs
// shard $1 into the folder $2.
Status write_bundle(const TaskCommand& task, const ShardPlan& plan, const JobsOptions& o,
                    const fs::path& dir) {
  const fs::path binary = o.upskill.empty() ? this_binary() : o.upskill;
  std::error_code ec;
  fs::create_directories(dir / "bin", ec);
  fs::create_directories(dir / "lib", ec);
  // Without its debugging sections the binary is a tenth of the size; a plain copy otherwise.
  auto stripped = run_tool(
      {"strip", "--strip-debug", "-o", (dir / "bin" / "upskill").string(), binary.string()}, dir);
  if (!stripped || !stripped->ok()) {
    fs::copy_file(binary, dir / "bin" / "upskill", fs::copy_options::overwrite_existing, ec);
    if (ec)
      return fail(Error::infrastructure(fmt::format("{}: {}", binary.string(), ec.message())));
  }
  UPSKILL_ASSIGN_OR_RETURN(auto libs, needed_libraries(binary, dir));
  for (const auto& lib : libs) {
    fs::copy_file(lib, dir / "lib" / lib.filename(), fs::copy_options::overwrite_existing, ec);
    if (ec) return fail(Error::infrastructure(fmt::format("{}: {}", lib.string(), ec.message())));
  }
  // What the skill's own loading leaves out, and hidden files (.env, .git): never uploaded.
  files::CopyOptions skip;
  skip.skip = [](const fs::path& rel) {
    return skill::is_bundle_junk(rel) || rel.filename().string().starts_with(".");
  };
  const eval::SessionRequest& r = task.request;
  UPSKILL_ASSIGN_OR_RETURN(auto copied, files::copy_tree(r.skill_dir, dir / "skill", skip));
  (void)copied;
  // The request names the bundle's own copies, relative to task.json beside them.
  TaskCommand remote = task;
  remote.request.skill_dir = "skill";
  remote.request.spec_dir.reset();  // the specs are copied beside tests.json
  if (r.tests) {
    fs::copy_file(*r.tests, dir / "tests.json", fs::copy_options::overwrite_existing, ec);
    if (ec) return fail(Error::usage(fmt::format("{}: {}", r.tests->string(), ec.message())));
    remote.request.tests = "tests.json";
    // From where the session resolves them: spec_dir, else the tests' folder.
    UPSKILL_RETURN_IF_ERROR(copy_specs(*r.tests, r.spec_dir.value_or(r.tests->parent_path()), dir));
  }
  UPSKILL_RETURN_IF_ERROR(write_task_request(remote, dir / "task.json"));
  remote.request_file = "task.json";
  if (task.config) {
    fs::copy_file(*task.config, dir / "config.yaml", fs::copy_options::overwrite_existing, ec);
    if (ec) return fail(Error::usage(fmt::format("{}: {}", task.config->string(), ec.message())));
    remote.config = "config.yaml";
  }
  std::string script = fmt::format(
      "#!/bin/sh\n# Written by upskill (docs/scale-out.md): runs shard $1 of {} into the folder "
      "$2.\ncd \"$(dirname \"$0\")\" || exit 94\nexport "
      "LD_LIBRARY_PATH=\"$PWD/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\"\nunset "
      "GITHUB_STEP_SUMMARY\nexec ./bin/upskill",
      plan.shards);
  script += task_shell_arguments(remote, plan, fmt::format("\"$1/{}\"", plan.shards), "\"$2\"");
  script += "\n";
  UPSKILL_RETURN_IF_ERROR(files::write_atomic(dir / "run.sh", script));
  fs::permissions(dir / "run.sh", fs::perms::owner_exec, fs::perm_options::add, ec);
  fs::permissions(dir / "bin" / "upskill", fs::perms::owner_exec, fs::perm_options::add, ec);
  return {};
}

// "REPO@RUN" of a submission.
std::pair<std::string, std::string> remote_of(const Submission& s) {
  const std::string r = s.remote.value_or("");
  const auto at = r.rfind('@');
  if (at == std::string::npos) return {r, s.dir.filename().string()};
  return {r.substr(0, at), r.substr(at + 1)};
}

// The job id `hf jobs run --detach` printed, in any of hf's output modes: human ("✓ Job started"
// then "  id: ID"), agent ("id=ID name=… url=…"), json ({"id": …}), quiet (the id alone) and the
// older "Job started with ID: ID" (hf() took the colours out); else the hub's 24 hex digits
// anywhere, else the last word.
std::optional<std::string> job_id_in(const std::string& output) {
  static const std::regex labelled(R"((?:^|\s)(?:id[:=]|ID:)\s*([A-Za-z0-9_-]{6,}))");
  for (const auto& raw : text::split_lines(output)) {
    const std::string line = text::trim(raw);
    if (line.starts_with("Hint:") || line.starts_with("Warning:")) continue;
    if (line.starts_with("{")) {
      if (auto doc = parse_json_document(line, "hf jobs run"); doc && doc->value.is_object() &&
                                                               doc->value.contains("id") &&
                                                               doc->value["id"].is_string())
        return doc->value["id"].get<std::string>();
      continue;
    }
    std::smatch m;
    if (std::regex_search(line, m, labelled)) return m[1].str();
  }
  static const std::regex hex(R"(\b[0-9a-f]{24}\b)");
  std::smatch m;
  if (std::regex_search(output, m, hex)) return m[0].str();
  const auto lines = text::split_lines(text::trim(output));
  if (lines.empty()) return std::nullopt;
  const std::string last = text::trim(lines.back());
  const auto space = last.rfind(' ');
  const std::string word = space == std::string::npos ? last : last.substr(space + 1);
  static const std::regex id(R"([A-Za-z0-9_-]{6,})");
  if (std::regex_match(word, id)) return word;
  return std::nullopt;
}

// The stage `hf jobs inspect` reports. `--format json` (hf 1.x) and the older default print JSON: a
// list of jobs, each {"status": {"stage": …}}. The table of today's default (the status cell
// {"stage": …}, or {'stage': …} in agent mode) is read too, and a bare stage word as the last
// resort.
std::string stage_in(const std::string& output) {
  if (auto doc = parse_json_document(output, "hf jobs inspect")) {
    std::function<std::string(const Json&)> find = [&](const Json& j) -> std::string {
      if (j.is_object()) {
        if (auto it = j.find("stage"); it != j.end() && it->is_string())
          return it->get<std::string>();
        for (const auto& [k, v] : j.items())
          if (auto s = find(v); !s.empty()) return s;
      } else if (j.is_array()) {
        for (const auto& v : j)
          if (auto s = find(v); !s.empty()) return s;
      }
      return "";
    };
    return find(doc->value);
  }
  static const std::regex cell(R"(['"]stage['"]\s*:\s*['"]([A-Z_]+)['"])");
  std::smatch m;
  if (std::regex_search(output, m, cell)) return m[1].str();
  for (const auto& word : text::words(output))
    for (const char* stage : {"COMPLETED", "ERROR", "CANCELED", "DELETED", "RUNNING", "SCHEDULING"})
      if (word == stage) return word;
  return "";
}

// How long to wait for jobs whose own limit is `timeout`: the hub stops a job at its timeout, so
// the wait ends a margin after it (a quarter of it, between 10 s and 10 minutes: scheduling, the
// bundle's download and the outputs' upload).
std::chrono::seconds wait_limit(std::chrono::seconds timeout) {
  const auto margin = std::clamp<std::chrono::seconds>(timeout / 4, std::chrono::seconds(10),
                                                       std::chrono::minutes(10));
  return timeout + margin;
}

std::vector<std::string> namespace_args(const Submission& s) {
  if (!s.jobs_namespace) return {};
  return {"--namespace", *s.jobs_namespace};
}

}  // namespace

std::optional<std::chrono::seconds> parse_jobs_duration(const std::string& text) {
  static const std::regex form(R"(\s*([0-9]{1,9}(?:\.[0-9]{1,6})?)\s*([smhd]?)\s*)");
  std::smatch m;
  if (!std::regex_match(text, m, form)) return std::nullopt;
  const double n = std::stod(m[1].str());
  const std::string unit = m[2].str();
  const double factor = unit == "m" ? 60 : unit == "h" ? 3600 : unit == "d" ? 86400 : 1;
  if (n * factor < 1 || n * factor > 30 * 86400) return std::nullopt;
  return std::chrono::seconds(static_cast<long long>(n * factor));
}

std::string job_script() {
  return R"SH(set -u
if command -v hf >/dev/null 2>&1; then hf_cli() { hf "$@"; }
else hf_cli() { uvx --from huggingface_hub hf "$@"; }; fi
work="$(mktemp -d)" && cd "$work" || exit 90
hf_cli download "$ARTIFACT_REPO" "inputs/$RUN_ID/bundle.tar.gz" --repo-type dataset --local-dir "$work/in" || exit 91
mkdir -p bundle out && tar -xzf "in/inputs/$RUN_ID/bundle.tar.gz" -C bundle || exit 92
sh bundle/run.sh "$SHARD" "$work/out/batch"
rc=$?
echo "$rc" > out/exit_code.txt
hf_cli upload "$ARTIFACT_REPO" out "outputs/$RUN_ID/shard-$SHARD" --repo-type dataset || exit 93
exit "$rc"
)SH";
}

Result<Submission> submit_jobs(const TaskCommand& task, const ShardPlan& plan, const JobsOptions& o,
                               const fs::path& runs_dir) {
  UPSKILL_RETURN_IF_ERROR(check_plan(plan));
  UPSKILL_RETURN_IF_ERROR(check_jobs_options(o));
  const std::string repo = *o.artifact_repo;
  UPSKILL_ASSIGN_OR_RETURN(Submission s, new_submission(config::Executor::jobs, runs_dir, plan));
  const std::string run = s.dir.filename().string();
  s.remote = repo + "@" + run;
  s.jobs_namespace = o.namespace_;
  // Access first: nothing is built or started for a repository we cannot use. upskill checks with
  // `hf download --dry-run`, which fails on a repository that does not exist yet; creating it
  // (private, as it will hold the skill and its tests) or finding it there checks the same.
  UPSKILL_RETURN_IF_ERROR(
      hf_do({"repos", "create", repo, "--repo-type", "dataset", "--private", "--exist-ok"}, s.dir));
  UPSKILL_RETURN_IF_ERROR(write_bundle(task, plan, o, s.dir / "bundle"));
  const fs::path tarball = s.dir / "bundle.tar.gz";
  UPSKILL_ASSIGN_OR_RETURN(
      ToolResult tar,
      run_tool({"tar", "-czf", tarball.string(), "-C", (s.dir / "bundle").string(), "."}, s.dir));
  if (!tar.ok())
    return fail(Error::infrastructure(fmt::format("tar: {}", text::excerpt(tar.output, 300))));
  UPSKILL_RETURN_IF_ERROR(
      hf_do({"upload", repo, tarball.string(), fmt::format("inputs/{}/bundle.tar.gz", run),
             "--repo-type", "dataset"},
            s.dir));
  // Uploaded: the local copy goes (tens of MB a submission); run.sh stays, to show what ran.
  std::error_code ec;
  fs::copy_file(s.dir / "bundle" / "run.sh", s.dir / "run.sh", fs::copy_options::overwrite_existing,
                ec);
  fs::remove_all(s.dir / "bundle", ec);
  fs::remove(tarball, ec);
  for (int k = 1; k <= plan.shards; ++k) {
    std::vector<std::string> args{"jobs",   "run",       "--detach", "--flavor",
                                  o.flavor, "--timeout", o.timeout};
    const auto ns = namespace_args(s);
    args.insert(args.end(), ns.begin(), ns.end());
    for (const auto& secret : o.secrets) args.insert(args.end(), {"--secrets", secret});
    args.insert(
        args.end(),
        {"--label", "upskill-run=" + run, "--label", fmt::format("upskill-shard={}", k), "--env",
         "ARTIFACT_REPO=" + repo, "--env", "RUN_ID=" + run, "--env", fmt::format("SHARD={}", k),
         // hf's `jobs run` takes options anywhere before `--` (`-lc` would be `-l c`).
         "--", o.image, "bash", "-lc", job_script()});
    auto started = hf(args, s.dir);
    std::optional<std::string> id = started ? job_id_in(*started) : std::nullopt;
    if (!id) {
      (void)write_submission(s);  // the jobs already started stay on record
      return fail(Error::infrastructure(fmt::format(
          "starting the job of shard {}/{} failed: {}{}", k, plan.shards,
          started ? "hf printed no job id" : started.error().message,
          s.job_ids.empty()
              ? ""
              : fmt::format(" (jobs already started: {})", text::join(s.job_ids, " ")))));
    }
    s.job_ids.push_back(*id);
    UPSKILL_RETURN_IF_ERROR(write_submission(s));
  }
  return s;
}

Status fetch_jobs_outputs(const Submission& s) {
  const auto [repo, run] = remote_of(s);
  std::error_code ec;
  for (int k = 1; k <= s.plan.shards && k <= static_cast<int>(s.job_ids.size()); ++k) {
    const fs::path rc = s.dir / "status" / fmt::format("shard-{}.rc", k);
    if (fs::exists(rc, ec)) continue;  // fetched before, log and all
    std::vector<std::string> logs{"jobs", "logs", s.job_ids[static_cast<std::size_t>(k - 1)]};
    const auto ns = namespace_args(s);
    logs.insert(logs.end(), ns.begin(), ns.end());
    if (auto out = hf(logs, s.dir))
      (void)files::write_atomic(s.dir / "logs" / fmt::format("shard-{}.log", k), *out);
    const fs::path fetched = s.dir / "fetched";
    UPSKILL_RETURN_IF_ERROR(
        hf_do({"download", repo, "--repo-type", "dataset", "--include",
               fmt::format("outputs/{}/shard-{}/*", run, k), "--local-dir", fetched.string()},
              s.dir));
    const fs::path out = fetched / "outputs" / run / fmt::format("shard-{}", k);
    if (!fs::exists(out / "exit_code.txt", ec)) continue;  // the job left nothing (yet)
    const fs::path shard_dir = s.dir / "shards" / std::to_string(k);
    fs::create_directories(shard_dir, ec);
    std::vector<fs::path> batches;
    for (fs::directory_iterator it(out / "batch", ec), end; !ec && it != end; it.increment(ec))
      batches.push_back(it->path());
    for (const auto& b : batches) {
      std::error_code moved;
      fs::remove_all(shard_dir / b.filename(), moved);  // a move cut short before
      fs::rename(b, shard_dir / b.filename(), moved);
      if (moved)  // not marked fetched: the next merge tries again
        return fail(Error::infrastructure(
            fmt::format("{}: {}", (shard_dir / b.filename()).string(), moved.message())));
    }
    UPSKILL_ASSIGN_OR_RETURN(std::string code, files::read_text(out / "exit_code.txt"));
    UPSKILL_RETURN_IF_ERROR(files::write_atomic(rc, text::trim(code) + "\n"));
  }
  return {};
}

Result<std::vector<TaskOutcome>> wait_jobs(const Submission& s, const JobsOptions& o,
                                           const CancelToken* cancel,
                                           const std::function<void(int, int)>& progress) {
  const auto timeout = parse_jobs_duration(o.timeout).value_or(std::chrono::hours(2));
  const auto limit = wait_limit(timeout);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::map<int, std::string> states;
  std::map<int, int> failed_polls;  // in a row, a job
  bool legacy_inspect = false;      // an hf without the global --format (it printed JSON anyway)
  int last_reported = -1;
  for (;;) {
    int ended = 0;
    for (std::size_t i = 0; i < s.job_ids.size(); ++i) {
      const int k = static_cast<int>(i) + 1;
      if (ended_stage(states[k])) {
        ++ended;
        continue;
      }
      auto inspect = [&] {
        std::vector<std::string> args{"jobs", "inspect"};
        if (!legacy_inspect) args.insert(args.end(), {"--format", "json"});
        const auto ns = namespace_args(s);
        args.insert(args.end(), ns.begin(), ns.end());
        args.push_back(s.job_ids[i]);
        return hf(args, s.dir, std::chrono::seconds(120));
      };
      auto out = inspect();
      // hf before its global --format: Click's "No such option", or argparse's "unrecognized
      // arguments" in the first releases with `hf jobs`.
      if (!out && !legacy_inspect &&
          (text::to_lower_ascii(out.error().message).find("no such option") != std::string::npos ||
           out.error().message.find("unrecognized arguments") != std::string::npos)) {
        legacy_inspect = true;
        out = inspect();
      }
      if (out) {
        states[k] = stage_in(*out);
        failed_polls[k] = 0;
      } else if (++failed_polls[k] >= 5) {  // one failed poll is retried at the next round
        return fail(Error::infrastructure(fmt::format(
            "{} (5 polls in a row); `upskill runs merge {}` fetches and merges the jobs once "
            "they have ended",
            out.error().message, s.dir.string())));
      }
      ended += ended_stage(states[k]);
    }
    if (progress && ended != last_reported) progress(last_reported = ended, s.plan.shards);
    if (ended == static_cast<int>(s.job_ids.size())) break;
    if (std::chrono::steady_clock::now() > deadline)
      return fail(Error::infrastructure(fmt::format(
          "the jobs have not all ended {} s after the wait began (--jobs-timeout {}, which "
          "the hub enforces, plus {} s to schedule them and move their files); a job still "
          "SCHEDULING waits for hardware: `hf jobs inspect ID` says, `hf jobs cancel ID` stops "
          "it, and `upskill runs merge {}` fetches and merges them once they have ended",
          limit.count(), o.timeout, (limit - timeout).count(), s.dir.string())));
    if (!sleep_unless_cancelled(o.poll, cancel))
      return fail(Error{ExitCode::interrupted,
                        fmt::format("stopped waiting; the jobs go on (`hf jobs cancel ID` stops "
                                    "one; `upskill runs merge {}` fetches and merges them once "
                                    "they have ended)",
                                    s.dir.string())});
  }
  UPSKILL_RETURN_IF_ERROR(fetch_jobs_outputs(s));
  return task_outcomes(s, states);
}

}  // namespace upskill::scale
