// The `kernel` check on the kernel pipeline: extract → layout → lint → compile → bind → correct →
// bench, in order, each stage's status, duration and diagnostics in the check's details (see
// kernel_runner.hpp).
#include "upskill/checks/kernel_runner.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <functional>
#include <random>
#include <utility>

#include "upskill/checks/stage_report.hpp"
#include "upskill/core/temp_dir.hpp"
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

// What the stages share: the check's inputs, what each stage made for the later ones, and the
// check's verdict, which the stage that stops the pipeline sets.
struct Pipeline {
  Pipeline(const cases::KernelParams& params, const Answer& answer,
           const KernelPipelineOptions& options, CheckResult& result)
      : params(params),
        answer(answer),
        options(options),
        result(result),
        work(TempDir::create("upskill-kernel").value_or(TempDir())) {
    wants_bench = std::find(params.stages.begin(), params.stages.end(),
                            cases::KernelStage::bench) != params.stages.end();
    if (params.timeout_s) run_limit = std::chrono::seconds(static_cast<long>(*params.timeout_s));
  }
  // --keep-build: the candidate's build folder outlives the check (its path is reported).
  ~Pipeline() {
    if (options.keep_work) (void)work.release();
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  const cases::KernelParams& params;
  const Answer& answer;
  const KernelPipelineOptions& options;
  CheckResult& result;
  std::function<Result<kernel::Toolchain>()> probe_toolchain;
  TempDir work;  // the candidate's build folder
  bool wants_bench = false;
  // timeout_s bounds running the candidate (each harness process); compilers get their own limit,
  // so a slow, busy build machine does not turn into a verdict about the kernel.
  std::chrono::seconds run_limit{300};
  static constexpr std::chrono::seconds kBuildLimit{900};

  kernel::Extraction extraction;
  kernel::LayoutReport layout;
  kernel::CompileReport compiled;
  kernel::BindReport bound;
  std::optional<kernel::Toolchain> tools;
  std::optional<kernel::HarnessResult> harness;
  std::vector<std::string> not_run;  // the stages not run, in order
};

// The stage stops the pipeline; its reason is the check's.
void fail(Pipeline& p, StageReport& s, std::string reason, Status status = Status::failed) {
  s.status = status == Status::error ? Status::error : Status::failed;
  p.result.status = status;
  p.result.reason = std::move(reason);
}

bool need_tools(Pipeline& p, StageReport& s) {
  if (p.tools) return true;
  auto t = p.probe_toolchain();
  if (!t) {
    fail(p, s, t.error().message, Status::error);
    return false;
  }
  p.tools = *t;
  return true;
}

kernel::BuildRequest build_request(const Pipeline& p) {
  kernel::BuildRequest req;
  req.project = &p.extraction;
  req.layout = &p.layout;
  req.toolchain = &*p.tools;
  req.backend = p.params.backend;
  req.capabilities = p.params.capabilities;
  req.work_dir = p.work.path();
  req.cache_dir = p.options.cache_dir;
  req.use_pch = p.options.use_pch;
  req.jobs = p.options.jobs;
  req.timeout = Pipeline::kBuildLimit;
  req.import_timeout = p.run_limit;
  req.import_early = std::find(p.params.stages.begin(), p.params.stages.end(),
                               cases::KernelStage::bind) != p.params.stages.end();
  return req;
}

void run_extract(Pipeline& p, StageReport& s) {
  if (p.answer.workspace) {
    auto from_workspace = kernel::extract_workspace(*p.answer.workspace);
    if (!from_workspace) {
      s.details["diagnostics"] = Json::array({from_workspace.error().message});
      return fail(p, s, "extract: " + from_workspace.error().message);
    }
    p.extraction = std::move(*from_workspace);
  } else {
    p.extraction = kernel::extract_files(p.answer.text);
  }
  Json diagnostics = Json::array();
  for (const auto& problem : p.extraction.problems) diagnostics.push_back(problem.message);
  Json files = Json::array();
  for (const auto& f : p.extraction.files) files.push_back(f.path);
  s.details["files"] = files;
  s.details["diagnostics"] = diagnostics;
  if (p.extraction.files.empty())
    return fail(p, s, "extract: the answer names no files (give each file its path)");
  s.status = Status::passed;
}

void run_layout(Pipeline& p, StageReport& s) {
  p.layout = kernel::check_layout(p.extraction);
  Json findings = Json::array();
  for (const auto& f : p.layout.findings)
    findings.push_back(fmt::format("{}{}{}", f.error ? "error: " : "warning: ",
                                   f.line ? fmt::format("build.toml:{}: ", f.line) : std::string(),
                                   f.message));
  s.details["edition"] = p.layout.edition;
  s.details["diagnostics"] = findings;
  if (!p.layout.passed()) {
    const auto error = std::find_if(p.layout.findings.begin(), p.layout.findings.end(),
                                    [](const auto& f) { return f.error; });
    return fail(p, s,
                error == p.layout.findings.end() ? "layout failed" : "layout: " + error->message);
  }
  if (p.params.project && p.layout.name != *p.params.project)
    return fail(p, s,
                fmt::format("layout: the project is named '{}', expected '{}'", p.layout.name,
                            *p.params.project));
  s.status = Status::passed;
}

void run_lint(Pipeline& p, StageReport& s) {
  const auto profile = kernel::lint_profile_from_string(p.params.lint);
  const auto report =
      kernel::lint_project(p.extraction, p.layout,
                           profile.value_or(kernel::LintProfile::kernel_builder), p.params.backend);
  s.details["profile"] = std::string(kernel::to_string(report.profile));
  Json findings = Json::array();
  for (const auto& f : report.findings)
    findings.push_back(fmt::format("{}: {}{}[{}] {}{}", f.error ? "error" : "warning",
                                   f.file.empty() ? "" : f.file,
                                   f.line ? fmt::format(":{}", f.line) : "", f.rule, f.message,
                                   f.excerpt.empty() ? "" : ": " + f.excerpt));
  s.details["diagnostics"] = findings;
  // Not passed means an error finding (kernel::LintReport::passed).
  for (const auto& f : report.findings)
    if (f.error)
      return fail(p, s,
                  fmt::format("lint [{}]: {}{}", f.rule, f.message,
                              f.file.empty() ? "" : fmt::format(" ({}:{})", f.file, f.line)));
  s.status = Status::passed;
}

void run_compile(Pipeline& p, StageReport& s) {
  if (!need_tools(p, s)) return;
  if (p.work.path().empty())
    return fail(p, s, "compile: cannot create a build folder", Status::error);
  p.compiled = kernel::compile_kernels(build_request(p));
  s.details["steps"] = steps_json(p.compiled.steps);
  s.details["capabilities"] = p.compiled.capabilities;
  s.details["diagnostics"] = p.compiled.problems;
  if (p.compiled.passed) {
    s.status = Status::passed;
    return;
  }
  if (const auto header = missing_toolchain_header(p.compiled.steps, p.extraction); !header.empty())
    return fail(p, s,
                fmt::format("compile: this machine's toolchain lacks the header {} "
                            "(torch {}, {}): an environment problem, not the answer's",
                            header, p.tools->torch.version,
                            p.tools->nvcc ? "nvcc " + p.tools->nvcc_version : "no nvcc"),
                Status::error);
  fail(p, s, "compile: " + build_failure(p.compiled.steps, p.compiled.problems));
}

void run_bind(Pipeline& p, StageReport& s) {
  if (!need_tools(p, s)) return;
  p.bound = kernel::bind_kernels(build_request(p), p.compiled);
  s.details["steps"] = steps_json(p.bound.steps);
  s.details["style"] = p.bound.style;
  s.details["namespace"] = p.bound.op_namespace;
  s.details["ops"] = p.bound.ops;
  s.details["cached"] = p.bound.cached;
  s.details["diagnostics"] = p.bound.problems;
  if (!p.bound.passed) return fail(p, s, "bind: " + build_failure(p.bound.steps, p.bound.problems));
  s.status = Status::passed;
}

// correct and bench share one harness run, made by whichever of them comes first. False when the
// stage cannot go on: `s` then says why (not run without a CUDA device, or an error).
bool have_harness(Pipeline& p, StageReport& s) {
  if (!need_tools(p, s)) return false;
  const auto& torch = p.tools->torch;
  if (p.params.backend == "cuda" && !torch.cuda_device) {
    s.status = Status::not_run;
    s.reason = fmt::format("no CUDA device for {} (torch {}{}){}", torch.python, torch.version,
                           torch.built_with_cuda ? "" : ", built without CUDA",
                           torch.cuda_problem.empty() ? "" : ": " + torch.cuda_problem);
    return false;
  }
  if (p.harness) return true;
  kernel::HarnessRequest h;
  h.toolchain = &*p.tools;
  h.spec = p.params.spec ? fs::path(*p.params.spec) : fs::path();
  if (h.spec.is_relative()) h.spec = p.options.spec_base / h.spec;
  h.package_parent = p.bound.package_parent;
  h.python_name = p.bound.python_name;
  h.device = p.params.backend == "cuda" ? "cuda" : "cpu";
  h.work_dir = p.work.path();
  h.seed = p.options.seed.value_or(std::random_device{}());
  h.bench = p.wants_bench;
  h.timeout = p.run_limit;
  s.details["seed"] = h.seed;
  auto ran = kernel::run_harness(h);
  if (!ran) {
    fail(p, s, fmt::format("{}: {}", cases::to_string(s.stage), ran.error().message),
         Status::error);
    return false;
  }
  p.harness = std::move(*ran);
  return true;
}

void run_correct(Pipeline& p, StageReport& s) {
  if (!have_harness(p, s)) return;
  const kernel::HarnessResult& h = *p.harness;
  s.details["cases"] = h.cases;
  s.details["failures"] = h.failures;
  s.details["sandbox"] = h.protections;
  if (!h.unenforced.empty()) s.details["unenforced"] = h.unenforced;
  if (!h.denied.empty()) s.details["denied"] = h.denied;
  if (!h.candidate_output.empty()) s.details["output"] = h.candidate_output;
  if (!h.weak_cases.empty()) {
    s.details["weak_cases"] = h.weak_cases;
    return fail(p, s,
                fmt::format("correct: the spec cannot tell an all-zero or constant output from "
                            "the right one for {}",
                            text::join(h.weak_cases, ", ")),
                Status::error);
  }
  if (!h.correct)
    return fail(
        p, s,
        fmt::format(
            "correct: {}{}", h.failures.empty() ? "failed" : h.failures.front(),
            h.failures.size() > 1 ? fmt::format(" (+{} more)", h.failures.size() - 1) : ""));
  s.status = Status::passed;
}

Json bench_entry_json(const kernel::BenchEntry& e) {
  Json j = {{"shape", e.shape}, {"dtype", e.dtype}};
  if (e.reference_ms) j["reference_ms"] = *e.reference_ms;
  if (e.candidate_ms) j["candidate_ms"] = *e.candidate_ms;
  if (e.candidate_cpu_ms) j["candidate_cpu_ms"] = *e.candidate_cpu_ms;
  if (e.reference_cpu_ms) j["reference_cpu_ms"] = *e.reference_cpu_ms;
  if (e.cores_used) j["cores_used"] = *e.cores_used;
  if (e.overhead_ms) j["overhead_ms"] = *e.overhead_ms;
  if (e.calls) j["calls_per_segment"] = e.calls;
  if (e.segments) j["segments"] = e.segments;
  j["audited_calls"] = e.audited_calls;
  if (!e.unmeasured.empty()) j["unmeasured"] = e.unmeasured;
  if (e.speedup) j["speedup"] = *e.speedup;
  if (e.achieved_gbps) j["achieved_gbps"] = *e.achieved_gbps;
  if (e.copy_gbps) j["copy_gbps"] = *e.copy_gbps;
  if (e.bandwidth_fraction) j["bandwidth_fraction"] = *e.bandwidth_fraction;
  if (e.compiled_ms) j["compiled_ms"] = *e.compiled_ms;
  if (e.speedup_vs_compile) j["speedup_vs_compile"] = *e.speedup_vs_compile;
  if (!e.implausible.empty()) j["implausible"] = e.implausible;
  if (!e.problem.empty()) j["problem"] = e.problem;
  return j;
}

void run_bench(Pipeline& p, StageReport& s) {
  if (!have_harness(p, s)) return;
  const kernel::HarnessResult& h = *p.harness;
  Json entries = Json::array();
  std::vector<std::string> problems, impossible;
  for (const auto& e : h.bench) {
    if (!e.problem.empty()) problems.push_back(e.problem);
    for (const auto& f : e.implausible)
      if (f.find("bandwidth") != std::string::npos) impossible.push_back(f);
    entries.push_back(bench_entry_json(e));
  }
  s.details["entries"] = entries;
  if (h.speedup) s.details["speedup"] = *h.speedup;
  if (!problems.empty()) return fail(p, s, "bench: " + problems.front());
  if (!impossible.empty())
    return fail(p, s, "bench: physically implausible: " + impossible.front());
  if (p.params.min_speedup && !h.speedup)
    return fail(p, s,
                fmt::format("bench: no speedup was measured ({}), so the required {:.2f}x is "
                            "not shown",
                            h.bench.empty() || h.bench.front().unmeasured.empty()
                                ? "no bench shape was timed"
                                : h.bench.front().unmeasured,
                            *p.params.min_speedup));
  if (p.params.min_speedup && *h.speedup < *p.params.min_speedup)
    return fail(p, s,
                fmt::format("bench: speedup {:.2f}x is below the required {:.2f}x", *h.speedup,
                            *p.params.min_speedup));
  s.status = Status::passed;
}

// The pipeline: each stage's function, which fills its report and, when the stage stops the
// pipeline, the check's verdict.
using StageFn = void (*)(Pipeline&, StageReport&);
constexpr std::array<std::pair<cases::KernelStage, StageFn>, 7> kStages{{
    {cases::KernelStage::extract, run_extract},
    {cases::KernelStage::layout, run_layout},
    {cases::KernelStage::lint, run_lint},
    {cases::KernelStage::compile, run_compile},
    {cases::KernelStage::bind, run_bind},
    {cases::KernelStage::correct, run_correct},
    {cases::KernelStage::bench, run_bench},
}};

StageFn stage_function(cases::KernelStage stage) {
  for (const auto& [s, fn] : kStages)
    if (s == stage) return fn;
  return nullptr;
}

// Runs the requested stages in order, up to the first that fails; after one that was not run, the
// rest are not run either.
std::vector<StageReport> run_stages(Pipeline& p) {
  std::vector<StageReport> reports;
  for (const auto stage : p.params.stages) {
    StageReport s;
    s.stage = stage;
    if (!p.not_run.empty()) {
      s.status = Status::not_run;
      s.reason = fmt::format("after {}", p.not_run.front());
      p.not_run.emplace_back(cases::to_string(stage));
      reports.push_back(std::move(s));
      continue;
    }
    const auto start = Clock::now();
    stage_function(stage)(p, s);
    s.seconds = since(start);
    if (s.status == Status::not_run) p.not_run.emplace_back(cases::to_string(stage));
    const bool stop = s.status == Status::failed || s.status == Status::error;
    reports.push_back(std::move(s));
    if (stop) break;
  }
  return reports;
}

// The check's verdict from the stages' reports.
void conclude(Pipeline& p, std::vector<StageReport> reports) {
  CheckResult& r = p.result;
  KernelCheckDetails details;
  details.stages = std::move(reports);
  if (p.options.keep_work && !p.work.path().empty()) details.work_dir = p.work.path().string();
  if (r.status == Status::failed || r.status == Status::error) {
    r.found = text::excerpt(r.reason, 80);
  } else if (!p.not_run.empty()) {
    r.status = Status::not_run;
    r.reason = fmt::format("stages {} were not run (no CUDA device); the earlier ones passed",
                           text::join(p.not_run, ", "));
    details.needs_gpu = true;
  } else {
    r.status = Status::passed;
    if (p.harness && p.harness->speedup)
      r.found =
          fmt::format("{} files, correct, {:.2f}x", p.extraction.files.size(), *p.harness->speedup);
    else
      r.found = fmt::format("{} files", p.extraction.files.size());
  }
  r.details = to_json(details);
}

}  // namespace

KernelPipelineChecker::KernelPipelineChecker(KernelPipelineOptions options)
    : options_(std::move(options)) {
  if (options_.cache_dir.empty()) options_.cache_dir = kernel::default_cache_dir();
  if (!kernel::precompiled_headers_enabled()) options_.use_pch = false;
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
  Pipeline p(params, answer, options_, r);
  p.probe_toolchain = [this] { return toolchain(); };
  conclude(p, run_stages(p));
  return r;
}

}  // namespace upskill::checks
