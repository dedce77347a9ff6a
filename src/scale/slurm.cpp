// Shards as a Slurm job array (see slurm.hpp).
#include "upskill/scale/slurm.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"

namespace upskill::scale {

namespace fs = std::filesystem;

namespace {

// Slurm's words for a task it stopped itself: its script was killed, so no exit status will come.
bool killed_state(std::string_view state) {
  static const std::set<std::string_view> killed{"TIMEOUT",   "CANCELLED", "NODE_FAIL",
                                                 "PREEMPTED", "BOOT_FAIL", "OUT_OF_MEMORY",
                                                 "DEADLINE",  "REVOKED"};
  return killed.contains(state.substr(0, state.find(' ')));
}

// Slurm's words for a job that will not run any further: killed, or ended by its script.
bool terminal_state(std::string_view state) {
  const std::string_view word = state.substr(0, state.find(' '));
  return killed_state(word) || word == "COMPLETED" || word == "FAILED" || word == "SPECIAL_EXIT";
}

// A value that goes into a #SBATCH line must stay on it.
Status one_line(const std::string& what, const std::string& value) {
  if (value.find_first_of("\n\r") != std::string::npos || value.find('\0') != std::string::npos)
    return fail(Error::usage(fmt::format("{} must be one line: {:?}", what, value)));
  return {};
}

// A #SBATCH option's value, double-quoted for sbatch's own parser: inside the quotes `#` starts
// no comment, a space or `'` ends nothing, and `\` and `"` are escaped.
std::string directive_value(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A folder in --output, where sbatch expands %-patterns: each % doubled.
std::string literal_pattern(const std::string& path) {
  std::string out;
  for (char c : path) out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

// An environment variable whose value is a secret: named like one (…_API_KEY, …_TOKEN, …), or named
// by the options (a configured model's key variable).
bool is_secret(const std::string& name, const SlurmOptions& o) {
  for (const char* suffix :
       {"_API_KEY", "_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_PASSWD", "_CREDENTIALS"})
    if (name.size() > std::strlen(suffix) && name.ends_with(suffix)) return true;
  return std::find(o.secret_names.begin(), o.secret_names.end(), name) != o.secret_names.end();
}

// The secrets of upskill's environment, by name.
std::vector<std::pair<std::string, std::string>> secrets_of_environment(const SlurmOptions& o) {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(kv.substr(0, eq));
    if (is_secret(name, o)) out.emplace_back(std::move(name), std::string(kv.substr(eq + 1)));
  }
  return out;
}

// secrets.env in the submission folder, readable by the user alone (created 0600, never widened):
// what the tasks need of the secrets, kept out of the environment sbatch sends to slurmctld, which
// saves a job's environment in its state files.
Status write_secrets(const fs::path& file,
                     const std::vector<std::pair<std::string, std::string>>& secrets) {
  std::string text = "# upskill: the tasks' secrets; removed once every task has ended\n";
  for (const auto& [name, value] : secrets)
    text += "export " + name + "=" + shell_quote(value) + "\n";
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return fail(Error::infrastructure(
        fmt::format("{}: cannot create ({})", file.string(), std::strerror(errno))));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (done != text.size())
    return fail(Error::infrastructure(fmt::format("{}: cannot write", file.string())));
  return {};
}

// No task will read the secrets any more: the file goes.
std::vector<TaskOutcome> finished(const Submission& s, std::vector<TaskOutcome> outcomes) {
  std::error_code ec;
  fs::remove(secrets_file(s.dir), ec);
  return outcomes;
}

Status check_options(const SlurmOptions& o, const fs::path& runs_dir) {
  std::error_code ec;
  for (const auto& [what, value] : std::vector<std::pair<std::string, std::optional<std::string>>>{
           {"--slurm-partition", o.partition},
           {"--slurm-time", o.time},
           {"--slurm-mem", o.mem},
           {"--slurm-cpus", o.cpus_per_task},
           {"--slurm-account", o.account},
           {"--slurm-gpu-partition", o.gpu_partition},
           {"--slurm-gpu-gres", o.gpu_gres},
           {"the job name", o.job_name},
           {"the runs folder", runs_dir.string()},
           {"the working folder", fs::current_path(ec).string()}})
    if (value) UPSKILL_RETURN_IF_ERROR(one_line(what, *value));
  for (const auto& line : o.extra) {
    UPSKILL_RETURN_IF_ERROR(one_line("--slurm-option", line));
    if (!line.starts_with("-"))
      return fail(Error::usage(fmt::format(
          "--slurm-option {:?}: an sbatch option, such as --qos=high or --mem=8G", line)));
  }
  return {};
}

}  // namespace

std::string slurm_script(const TaskCommand& task, const SlurmOptions& o, const Submission& s,
                         int first, int last, bool gpu) {
  std::string out = "#!/bin/bash\n";
  // Values from flags, the config or paths are quoted; upskill's own are plain words.
  const auto directive = [&](const std::string& name, const std::string& value) {
    out += fmt::format("#SBATCH --{}={}\n", name, directive_value(value));
  };
  const auto plain = [&](const std::string& name, const std::string& value) {
    out += fmt::format("#SBATCH --{}={}\n", name, value);
  };
  directive("job-name", o.job_name + "-eval");
  plain("array", first == last ? std::to_string(first) : fmt::format("{}-{}", first, last));
  std::error_code ec;
  directive("output", literal_pattern((s.dir / "logs").string()) + "/shard-%a.log");
  directive("chdir", fs::current_path(ec).string());
  plain("ntasks", "1");
  if (gpu ? o.gpu_partition.has_value() : o.partition.has_value())
    directive("partition", gpu ? *o.gpu_partition : *o.partition);
  if (!o.time.empty()) directive("time", o.time);
  if (!o.mem.empty()) directive("mem", o.mem);
  if (!o.cpus_per_task.empty()) directive("cpus-per-task", o.cpus_per_task);
  if (o.account) directive("account", *o.account);
  if (gpu && !o.gpu_gres.empty()) directive("gres", o.gpu_gres);
  for (const auto& line : o.extra) out += "#SBATCH " + line + "\n";
  out += fmt::format(
      "# Written by upskill (docs/scale-out.md): array task K runs shard K of {} of one "
      "evaluation{}.\n# Merge the shards with: upskill runs merge {}\n",
      s.plan.shards, gpu ? ", the kernel cases, on a GPU" : "", shell_quote(s.dir.string()));
  out += "shard=\"$SLURM_ARRAY_TASK_ID\"\n";
  // The keys: from the submission's 0600 file, not from the environment Slurm saved with the job.
  out += fmt::format("secrets={}\nif [ -f \"$secrets\" ]; then . \"$secrets\"; fi\n",
                     shell_quote(secrets_file(s.dir).string()));
  out += "unset GITHUB_STEP_SUMMARY  # the merge writes the summary, once\n";
  // The arguments, with the shard number and its run-log folder taken from the array task.
  out += shell_quote(o.upskill.empty() ? this_binary().string() : o.upskill.string()) +
         task_shell_arguments(task, s.plan, fmt::format("\"$shard/{}\"", s.plan.shards),
                              shell_quote((s.dir / "shards").string() + "/") + "\"$shard\"") +
         "\n";
  const std::string rc = shell_quote((s.dir / "status").string() + "/shard-") + "\"$shard\"";
  out += "rc=$?\n";
  out += fmt::format("printf '%s\\n' \"$rc\" > {0}.rc.tmp && mv -f {0}.rc.tmp {0}.rc\n", rc);
  out += "exit \"$rc\"\n";
  return out;
}

Result<Submission> submit_slurm(const TaskCommand& given, const ShardPlan& plan,
                                const SlurmOptions& options, const fs::path& runs_dir) {
  UPSKILL_RETURN_IF_ERROR(check_plan(plan));
  if (plan.gpu_shards > 0 && !options.gpu_partition)
    return fail(Error::usage("--gpu-shards with --executor slurm needs --slurm-gpu-partition"));
  UPSKILL_RETURN_IF_ERROR(check_options(options, runs_dir));
  UPSKILL_ASSIGN_OR_RETURN(Submission s, new_submission(config::Executor::slurm, runs_dir, plan));
  TaskCommand task = given;
  UPSKILL_RETURN_IF_ERROR(write_task_request(task, s.dir / "task.json"));
  const auto secrets = secrets_of_environment(options);
  std::vector<std::string> secret_names;
  for (const auto& [name, value] : secrets) secret_names.push_back(name);
  if (!secrets.empty()) UPSKILL_RETURN_IF_ERROR(write_secrets(secrets_file(s.dir), secrets));
  // Kernel shards 1..G on the GPU partition; the others, G+1..N, where chat trials run.
  struct Array {
    int first, last;
    bool gpu;
    std::string file;
  };
  std::vector<Array> arrays;
  if (plan.gpu_shards > 0) arrays.push_back({1, plan.gpu_shards, true, "job-gpu.sh"});
  if (plan.gpu_shards < plan.shards)
    arrays.push_back({plan.gpu_shards + 1, plan.shards, false, "job.sh"});
  for (const auto& a : arrays) {
    const fs::path script = s.dir / a.file;
    UPSKILL_RETURN_IF_ERROR(
        files::write_atomic(script, slurm_script(task, options, s, a.first, a.last, a.gpu)));
    std::error_code ec;
    fs::permissions(script, fs::perms::owner_exec, fs::perm_options::add, ec);
    UPSKILL_ASSIGN_OR_RETURN(ToolResult r,
                             run_tool({"sbatch", "--parsable", script.string()}, s.dir,
                                      std::chrono::seconds(120), secret_names));
    if (!r.ok()) {
      (void)write_submission(s);  // the arrays already submitted stay on record
      return fail(Error::infrastructure(fmt::format(
          "sbatch {} failed{}: {}{}", script.string(), r.timed_out ? " (timed out)" : "",
          text::excerpt(text::trim(r.output), 600),
          s.job_ids.empty()
              ? ""
              : fmt::format(" (job {} was submitted already)", text::join(s.job_ids, ", ")))));
    }
    // --parsable prints "JOBID" or "JOBID;CLUSTER" (after any warnings).
    const auto lines = text::split_lines(text::trim(r.output));
    std::string id = lines.empty() ? "" : text::trim(lines.back());
    id = id.substr(0, id.find(';'));
    if (id.empty() || !std::all_of(id.begin(), id.end(), ::isdigit))
      return fail(Error::infrastructure(
          fmt::format("sbatch gave no job id: {}", text::excerpt(text::trim(r.output), 300))));
    s.job_ids.push_back(id);
  }
  UPSKILL_RETURN_IF_ERROR(write_submission(s));
  return s;
}

Result<std::vector<TaskOutcome>> wait_slurm(const Submission& s, const SlurmOptions& options,
                                            const CancelToken* cancel,
                                            const std::function<void(int, int)>& progress) {
  std::map<int, std::string> states;
  int failures = 0, last_reported = -1;
  std::optional<std::chrono::steady_clock::time_point> settling;
  for (;;) {
    // -r: one line per array task, "JOBID_K STATE"; -t all: ended tasks too, while Slurm keeps
    // them (MinJobAge).
    UPSKILL_ASSIGN_OR_RETURN(ToolResult r,
                             run_tool({"squeue", "--noheader", "--array", "--states=all",
                                       "--jobs=" + text::join(s.job_ids, ","), "--format=%i %T"},
                                      s.dir, std::chrono::seconds(60)));
    bool running = false;
    if (r.ok()) {
      failures = 0;
      for (const auto& line : text::split_lines(r.output)) {
        const auto words = text::words(line);
        if (words.size() < 2) continue;
        const auto underscore = words[0].find('_');
        const bool ended = terminal_state(words[1]);
        running = running || !ended;
        if (underscore == std::string::npos) continue;
        try {
          const int k = std::stoi(words[0].substr(underscore + 1));
          if (k >= 1 && k <= s.plan.shards) states[k] = words[1];
        } catch (const std::exception&) {
          // "123_[4-6]": tasks not started yet.
        }
      }
    } else if (r.output.find("Invalid job id") != std::string::npos) {
      running = false;  // purged: every task ended long ago
    } else if (++failures >= 5) {
      return fail(Error::infrastructure(fmt::format(
          "squeue failed 5 times in a row: {} (the jobs may still run; merge them later with "
          "`upskill runs merge {}`)",
          text::excerpt(text::trim(r.output), 300), s.dir.string())));
    } else {
      running = true;
    }
    // Only Slurm's final word is worth reporting: a task whose script has written its exit status
    // may still be listed RUNNING or COMPLETING for a moment.
    std::erase_if(states, [](const auto& kv) { return !terminal_state(kv.second); });
    const auto outcomes = task_outcomes(s, states);
    const int ended = static_cast<int>(std::count_if(
        outcomes.begin(), outcomes.end(), [](const TaskOutcome& t) { return t.exit.has_value(); }));
    if (progress && ended != last_reported) progress(last_reported = ended, s.plan.shards);
    if (ended == s.plan.shards) return finished(s, outcomes);
    // No task is live but some exit status is not here yet: on a shared file system what a node
    // wrote can take a while to show; wait for it up to options.settle — unless Slurm killed
    // every such task itself, and so none will come.
    const bool all_killed = std::all_of(outcomes.begin(), outcomes.end(), [](const TaskOutcome& t) {
      return t.exit.has_value() || killed_state(t.state);
    });
    if (!running && all_killed) return finished(s, outcomes);
    if (!running) {
      if (!settling) settling = std::chrono::steady_clock::now() + options.settle;
      if (std::chrono::steady_clock::now() >= *settling) return finished(s, outcomes);
    }
    if (!sleep_unless_cancelled(options.poll, cancel))
      return fail(Error{
          ExitCode::interrupted,
          fmt::format("stopped waiting; Slurm job {} goes on (scancel {} stops it; "
                      "`upskill runs merge {}` merges it once it has ended)",
                      text::join(s.job_ids, ", "), text::join(s.job_ids, " "), s.dir.string())});
  }
}

}  // namespace upskill::scale
