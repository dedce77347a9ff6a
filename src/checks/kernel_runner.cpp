#include "upskill/checks/kernel_runner.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <random>

#include "upskill/core/text.hpp"
#include "upskill/kernel/build.hpp"
#include "upskill/kernel/extract.hpp"
#include "upskill/kernel/harness.hpp"
#include "upskill/kernel/layout.hpp"
#include "upskill/kernel/lint.hpp"

namespace upskill::checks {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Json step_json(const kernel::BuildStep& s) {
  Json j = {{"source", s.source},
            {"tool", s.tool},
            {"ok", s.ok},
            {"cached", s.cached},
            {"seconds", s.seconds}};
  if (!s.diagnostics.empty()) j["diagnostics"] = text::excerpt(s.diagnostics, 4000);
  if (!s.ptxas.empty()) {
    Json kernels = Json::array();
    for (const auto& k : s.ptxas)
      kernels.push_back({{"function", k.function},
                         {"arch", k.arch},
                         {"registers", k.registers},
                         {"spill_stores", k.spill_stores},
                         {"spill_loads", k.spill_loads},
                         {"shared_bytes", k.shared_bytes},
                         {"constant_bytes", k.constant_bytes},
                         {"stack_bytes", k.stack_bytes}});
    j["ptxas"] = kernels;
  }
  return j;
}

Json steps_json(const std::vector<kernel::BuildStep>& steps) {
  Json out = Json::array();
  for (const auto& st : steps) out.push_back(step_json(st));
  return out;
}

// The first compiler error line of a failed step, for the one-line reason.
std::string first_error(const kernel::BuildStep& s) {
  if (const auto lines = text::split_lines(s.diagnostics); s.timed_out && !lines.empty())
    return text::excerpt(text::trim(lines.front()), 200);
  for (const auto& line : text::split_lines(s.diagnostics))
    if (line.find("error") != std::string::npos) return text::excerpt(text::trim(line), 200);
  return text::excerpt(text::trim(s.diagnostics), 200);
}

// Why a build stage failed: the first failed step's first error, else the first problem.
std::string build_failure(const std::vector<kernel::BuildStep>& steps,
                          const std::vector<std::string>& problems) {
  for (const auto& st : steps)
    if (!st.ok) return fmt::format("{} {}: {}", st.tool, st.source, first_error(st));
  return problems.empty() ? "failed" : problems.front();
}

// A header the toolchain should have (torch, ATen, c10, CUDA) that a compiler could not find: the
// machine's problem (an older torch or CUDA than the project needs), not the answer's. Empty when
// the failure is something else, or the header is one the project itself should ship.
std::string missing_toolchain_header(const std::vector<kernel::BuildStep>& steps,
                                     const kernel::Extraction& project) {
  static const std::vector<std::string> kToolchainDirs{"torch/", "ATen/",   "c10/",     "cuda",
                                                       "cub/",   "thrust/", "cusparse", "cublas"};
  for (const auto& st : steps) {
    if (st.ok) continue;
    for (const auto& line : text::split_lines(st.diagnostics)) {
      const auto at = line.find("fatal error: ");
      const auto missing = line.find(": No such file or directory");
      if (at == std::string::npos || missing == std::string::npos || missing < at) continue;
      std::string header = line.substr(at + 13, missing - at - 13);
      if (header.size() > 1 && (header.front() == '"' || header.front() == '<'))
        header = header.substr(1, header.size() - 2);
      const bool shipped = std::any_of(project.files.begin(), project.files.end(),
                                       [&](const auto& f) { return f.path.ends_with(header); });
      const bool toolchain =
          std::any_of(kToolchainDirs.begin(), kToolchainDirs.end(),
                      [&](const std::string& d) { return header.starts_with(d); });
      if (toolchain && !shipped) return header;
    }
  }
  return "";
}

// A temporary folder for one candidate, removed unless kept.
class WorkDir {
 public:
  explicit WorkDir(bool keep) : keep_(keep) {
    std::string pattern = (fs::temp_directory_path() / "upskill-kernel-XXXXXX").string();
    if (::mkdtemp(pattern.data())) path_ = pattern;
  }
  ~WorkDir() {
    std::error_code ec;
    if (!keep_ && !path_.empty()) fs::remove_all(path_, ec);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  bool keep_;
  fs::path path_;
};

}  // namespace

KernelPipelineChecker::KernelPipelineChecker(KernelPipelineOptions options)
    : options_(std::move(options)) {
  if (options_.cache_dir.empty()) options_.cache_dir = kernel::default_cache_dir();
}

Result<kernel::Toolchain> KernelPipelineChecker::toolchain() {
  const std::lock_guard lock(mutex_);
  if (!toolchain_)
    toolchain_ =
        kernel::probe_toolchain_cached(kernel::default_python(options_.python), options_.cache_dir);
  return *toolchain_;
}

CheckResult KernelPipelineChecker::check(const cases::KernelParams& params, const Answer& answer) {
  CheckResult r;
  r.kind = cases::CheckKind::kernel;
  std::vector<std::string> names;
  for (auto s : params.stages) names.emplace_back(cases::to_string(s));
  r.expected = fmt::format("kernel stages {} pass", text::join(names, ", "));
  Json stages = Json::array();
  kernel::Extraction extraction;
  kernel::LayoutReport layout;
  kernel::CompileReport compiled;
  kernel::BindReport bound;
  std::optional<kernel::Toolchain> tools;
  std::optional<kernel::HarnessResult> harness;
  std::vector<std::string> not_run;
  WorkDir work(options_.keep_work);
  const bool wants_bench = std::find(params.stages.begin(), params.stages.end(),
                                     cases::KernelStage::bench) != params.stages.end();
  // timeout_s bounds running the candidate (each harness process); compilers get their own limit,
  // so a slow, busy build machine does not turn into a verdict about the kernel.
  const auto run_limit = params.timeout_s
                             ? std::chrono::seconds(static_cast<long>(*params.timeout_s))
                             : std::chrono::seconds(300);
  constexpr std::chrono::seconds kBuildLimit{900};

  // Each stage fills `s` and returns false to stop the pipeline.
  const auto fail = [&](Json& s, std::string reason, Status status = Status::failed) {
    s["status"] = status == Status::error ? "error" : "failed";
    r.status = status;
    r.reason = std::move(reason);
    return false;
  };
  const auto need_tools = [&](Json& s) {
    if (tools) return true;
    auto t = toolchain();
    if (!t) return fail(s, t.error().message, Status::error);
    tools = *t;
    return true;
  };
  const auto request = [&] {
    kernel::BuildRequest req;
    req.project = &extraction;
    req.layout = &layout;
    req.toolchain = &*tools;
    req.backend = params.backend;
    req.capabilities = params.capabilities;
    req.work_dir = work.path();
    req.cache_dir = options_.cache_dir;
    req.use_pch = options_.use_pch;
    req.jobs = options_.jobs;
    req.timeout = kBuildLimit;
    req.import_timeout = run_limit;
    return req;
  };

  for (const auto stage : params.stages) {
    Json s = {{"stage", std::string(cases::to_string(stage))}};
    const auto start = Clock::now();
    bool go_on = true;
    if (!not_run.empty()) {
      s["status"] = "not run";
      s["reason"] = fmt::format("after {}", not_run.front());
      not_run.push_back(std::string(cases::to_string(stage)));
      stages.push_back(s);
      continue;
    }
    switch (stage) {
      case cases::KernelStage::extract: {
        if (answer.workspace) {
          auto from_workspace = kernel::extract_workspace(*answer.workspace);
          if (!from_workspace) {
            s["diagnostics"] = Json::array({from_workspace.error().message});
            go_on = fail(s, "extract: " + from_workspace.error().message);
            break;
          }
          extraction = std::move(*from_workspace);
        } else {
          extraction = kernel::extract_files(answer.text);
        }
        Json diagnostics = Json::array();
        for (const auto& p : extraction.problems) diagnostics.push_back(p.message);
        Json files = Json::array();
        for (const auto& f : extraction.files) files.push_back(f.path);
        s["files"] = files;
        s["diagnostics"] = diagnostics;
        if (extraction.files.empty()) {
          go_on = fail(s, "extract: the answer names no files (give each file its path)");
          break;
        }
        s["status"] = "passed";
        break;
      }
      case cases::KernelStage::layout: {
        layout = kernel::check_layout(extraction);
        Json findings = Json::array();
        for (const auto& f : layout.findings)
          findings.push_back(fmt::format(
              "{}{}{}", f.error ? "error: " : "warning: ",
              f.line ? fmt::format("build.toml:{}: ", f.line) : std::string(), f.message));
        s["edition"] = layout.edition;
        s["diagnostics"] = findings;
        if (!layout.passed()) {
          std::string reason = "layout failed";
          for (const auto& f : layout.findings)
            if (f.error) {
              reason = "layout: " + f.message;
              break;
            }
          go_on = fail(s, reason);
          break;
        }
        if (params.project && layout.name != *params.project) {
          go_on = fail(s, fmt::format("layout: the project is named '{}', expected '{}'",
                                      layout.name, *params.project));
          break;
        }
        s["status"] = "passed";
        break;
      }
      case cases::KernelStage::lint: {
        const auto profile = kernel::lint_profile_from_string(params.lint);
        const auto report = kernel::lint_project(
            extraction, layout, profile.value_or(kernel::LintProfile::kernel_builder),
            params.backend);
        s["profile"] = std::string(kernel::to_string(report.profile));
        Json findings = Json::array();
        for (const auto& f : report.findings)
          findings.push_back(fmt::format("{}: {}{}[{}] {}{}", f.error ? "error" : "warning",
                                         f.file.empty() ? "" : f.file,
                                         f.line ? fmt::format(":{}", f.line) : "", f.rule,
                                         f.message, f.excerpt.empty() ? "" : ": " + f.excerpt));
        s["diagnostics"] = findings;
        if (!report.passed()) {
          for (const auto& f : report.findings)
            if (f.error) {
              go_on = fail(
                  s, fmt::format("lint [{}]: {}{}", f.rule, f.message,
                                 f.file.empty() ? "" : fmt::format(" ({}:{})", f.file, f.line)));
              break;
            }
          break;
        }
        s["status"] = "passed";
        break;
      }
      case cases::KernelStage::compile: {
        if (!need_tools(s)) {
          go_on = false;
          break;
        }
        if (work.path().empty()) {
          go_on = fail(s, "compile: cannot create a build folder", Status::error);
          break;
        }
        compiled = kernel::compile_kernels(request());
        s["steps"] = steps_json(compiled.steps);
        s["capabilities"] = compiled.capabilities;
        s["diagnostics"] = compiled.problems;
        if (!compiled.passed) {
          if (const auto header = missing_toolchain_header(compiled.steps, extraction);
              !header.empty()) {
            go_on = fail(s,
                         fmt::format("compile: this machine's toolchain lacks the header {} "
                                     "(torch {}, {}): an environment problem, not the answer's",
                                     header, tools->torch.version,
                                     tools->nvcc ? "nvcc " + tools->nvcc_version : "no nvcc"),
                         Status::error);
            break;
          }
          go_on = fail(s, "compile: " + build_failure(compiled.steps, compiled.problems));
          break;
        }
        s["status"] = "passed";
        break;
      }
      case cases::KernelStage::bind: {
        if (!need_tools(s)) {
          go_on = false;
          break;
        }
        bound = kernel::bind_kernels(request(), compiled);
        s["steps"] = steps_json(bound.steps);
        s["style"] = bound.style;
        s["namespace"] = bound.op_namespace;
        s["ops"] = bound.ops;
        s["cached"] = bound.cached;
        s["diagnostics"] = bound.problems;
        if (!bound.passed) {
          go_on = fail(s, "bind: " + build_failure(bound.steps, bound.problems));
          break;
        }
        s["status"] = "passed";
        break;
      }
      case cases::KernelStage::correct:
      case cases::KernelStage::bench: {
        if (!need_tools(s)) {
          go_on = false;
          break;
        }
        if (params.backend == "cuda" && !tools->torch.cuda_device) {
          s["status"] = "not run";
          s["reason"] = fmt::format("no CUDA device for {} (torch {}{})", tools->torch.python,
                                    tools->torch.version,
                                    tools->torch.built_with_cuda ? "" : ", built without CUDA");
          not_run.push_back(std::string(cases::to_string(stage)));
          break;
        }
        if (!harness) {
          kernel::HarnessRequest h;
          h.toolchain = &*tools;
          h.spec = params.spec ? fs::path(*params.spec) : fs::path();
          if (h.spec.is_relative()) h.spec = options_.spec_base / h.spec;
          h.package_parent = bound.package_parent;
          h.python_name = bound.python_name;
          h.device = params.backend == "cuda" ? "cuda" : "cpu";
          h.work_dir = work.path();
          h.seed = options_.seed.value_or(std::random_device{}());
          h.bench = wants_bench;
          h.timeout = run_limit;
          s["seed"] = h.seed;
          auto ran = kernel::run_harness(h);
          if (!ran) {
            go_on = fail(s, fmt::format("{}: {}", cases::to_string(stage), ran.error().message),
                         Status::error);
            break;
          }
          harness = std::move(*ran);
        }
        if (stage == cases::KernelStage::correct) {
          s["cases"] = harness->cases;
          s["failures"] = harness->failures;
          s["sandbox"] = harness->protections;
          if (!harness->unenforced.empty()) s["unenforced"] = harness->unenforced;
          if (!harness->denied.empty()) s["denied"] = harness->denied;
          if (!harness->candidate_output.empty()) s["output"] = harness->candidate_output;
          if (!harness->weak_cases.empty()) {
            s["weak_cases"] = harness->weak_cases;
            go_on = fail(s,
                         fmt::format("correct: the spec cannot tell an all-zero or constant "
                                     "output from the right one for {}",
                                     text::join(harness->weak_cases, ", ")),
                         Status::error);
            break;
          }
          if (!harness->correct) {
            go_on = fail(
                s, fmt::format("correct: {}{}",
                               harness->failures.empty() ? "failed" : harness->failures.front(),
                               harness->failures.size() > 1
                                   ? fmt::format(" (+{} more)", harness->failures.size() - 1)
                                   : ""));
            break;
          }
          s["status"] = "passed";
          break;
        }
        Json entries = Json::array();
        std::vector<std::string> problems, impossible;
        for (const auto& e : harness->bench) {
          Json j = {{"shape", e.shape}, {"dtype", e.dtype}};
          if (e.reference_ms) j["reference_ms"] = *e.reference_ms;
          if (e.candidate_ms) j["candidate_ms"] = *e.candidate_ms;
          if (e.speedup) j["speedup"] = *e.speedup;
          if (e.achieved_gbps) j["achieved_gbps"] = *e.achieved_gbps;
          if (e.copy_gbps) j["copy_gbps"] = *e.copy_gbps;
          if (e.bandwidth_fraction) j["bandwidth_fraction"] = *e.bandwidth_fraction;
          if (e.compiled_ms) j["compiled_ms"] = *e.compiled_ms;
          if (e.speedup_vs_compile) j["speedup_vs_compile"] = *e.speedup_vs_compile;
          if (!e.implausible.empty()) j["implausible"] = e.implausible;
          if (!e.problem.empty()) {
            j["problem"] = e.problem;
            problems.push_back(e.problem);
          }
          for (const auto& f : e.implausible)
            if (f.find("bandwidth") != std::string::npos) impossible.push_back(f);
          entries.push_back(j);
        }
        s["entries"] = entries;
        if (harness->speedup) s["speedup"] = *harness->speedup;
        if (!problems.empty()) {
          go_on = fail(s, "bench: " + problems.front());
          break;
        }
        if (!impossible.empty()) {
          go_on = fail(s, "bench: physically implausible: " + impossible.front());
          break;
        }
        if (params.min_speedup && (!harness->speedup || *harness->speedup < *params.min_speedup)) {
          go_on = fail(s, fmt::format("bench: speedup {:.2f}x is below the required {:.2f}x",
                                      harness->speedup.value_or(0), *params.min_speedup));
          break;
        }
        s["status"] = "passed";
        break;
      }
    }
    s["seconds"] = since(start);
    stages.push_back(s);
    if (!go_on) break;
  }
  r.details = {{"stages", stages}};
  if (options_.keep_work && !work.path().empty()) r.details["work_dir"] = work.path().string();
  if (r.status == Status::failed || r.status == Status::error) {
    r.found = text::excerpt(r.reason, 80);
    return r;
  }
  if (!not_run.empty()) {
    r.status = Status::not_run;
    r.reason = fmt::format("stages {} were not run (no CUDA device); the earlier ones passed",
                           text::join(not_run, ", "));
    r.details["needs_gpu"] = true;
    return r;
  }
  r.status = Status::passed;
  if (harness && harness->speedup)
    r.found = fmt::format("{} files, correct, {:.2f}x", extraction.files.size(), *harness->speedup);
  else
    r.found = fmt::format("{} files", extraction.files.size());
  return r;
}

}  // namespace upskill::checks
