// The correct and bench stages: the shipped Python harness run in its three processes (prepare,
// the sandboxed candidate, compare), and its verdict read back (see harness.hpp).
#include "upskill/kernel/harness.hpp"

#include <fmt/format.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <map>
#include <random>

#include "upskill/core/files.hpp"
#include "upskill/core/sandbox.hpp"
#include "upskill/core/text.hpp"

namespace upskill::kernel {

namespace fs = std::filesystem;

namespace {

std::unexpected<Error> infra(std::string message) {
  return fail(Error::infrastructure(std::move(message)));
}

// The folders of one harness run, below the candidate's work folder:
//   judge/    the judge's harness.py and its cwd, HOME and TMPDIR: no candidate process reads or
//             writes it
//   harness/  the candidate's copy of harness.py: readable by the candidate, not writable
//   run/      inputs and outputs: the candidate's cwd and HOME, the one folder it may write
struct Folders {
  fs::path judge, harness, run;
  explicit Folders(const fs::path& work)
      : judge(work / "judge"), harness(work / "harness"), run(work / "run") {}
};

// A Python process of the harness: isolated (-I: no user site, no script folder or cwd on
// sys.path, no PYTHON* variables) and without bytecode files (-B).
sandbox::Options python_process(const HarnessRequest& req, const fs::path& script,
                                const fs::path& dir, std::vector<std::string> args) {
  sandbox::Options o;
  o.workdir = dir;
  o.argv = {req.toolchain->torch.python, "-I", "-B", script.string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.limits.wall = std::chrono::duration_cast<std::chrono::milliseconds>(req.timeout);
  o.limits.cpu_seconds = static_cast<int>(req.timeout.count()) * 4;  // torch uses several threads
  // CUDA reserves terabytes of virtual address space; only the CPU path can be bounded.
  o.limits.address_space_mb = req.device == "cuda" ? kCudaAddressSpaceMb : 16384;
  o.limits.file_size_mb = 2048;
  o.env = driver_environment();
  o.env["OMP_NUM_THREADS"] = "2";
  // Threads waiting at an OpenMP barrier sleep instead of spinning: checks run beside other
  // checks and compilers, where spinning threads take the cores the working ones need (two CPU
  // checks at once on two cores: 45.9 s each, 20.8 s with it; alone, and in what bench measures,
  // it changes little: docs/PERFORMANCE.md, bench/kernel_check.py).
  o.env["OMP_WAIT_POLICY"] = "PASSIVE";
  // Memory torch frees stays with the process instead of going back to the system (no trimming,
  // no mmap'd blocks): otherwise every call's outputs and temporaries are fresh pages, and what is
  // timed is the page faults, not the kernel, and whether a call faults depends on what small
  // allocations came before it (the rmsnorm spec's reference at 8192x4096: 1,223 ms a call with
  // the defaults, 35.6 ms with these: docs/PERFORMANCE.md, bench/harness_allocator.py).
  o.env["GLIBC_TUNABLES"] = "glibc.malloc.trim_threshold=17179869184:glibc.malloc.mmap_max=0";
  return o;
}

// A fresh copy before every process, so a candidate that replaced it changes nothing.
Status write_harness(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  return files::write_atomic(dir / "harness.py", harness_source());
}

// Why the candidate process stopped, in words: the limit it hit where one is known. `calling` is
// the call it was in when it stopped (calling.json, written by the harness around each
// correctness call), or empty.
std::string candidate_stopped(const sandbox::RunResult& r, const sandbox::Options& o,
                              const std::string& calling) {
  const std::string out = text::trim(r.output);
  if ((r.signal == SIGSEGV || r.signal == SIGBUS) && !calling.empty()) {
    const Json at = Json::parse(calling, nullptr, false);
    const std::string which = at.is_object() && at.value("case", -1) >= 0
                                  ? fmt::format(" (case {}, inputs {})", at.value("case", 0) + 1,
                                                at.value("trial", 0) + 1)
                                  : "";
    return fmt::format(
        "the candidate crashed (signal {}) in a call{}: its inputs are read-only during the call, "
        "so a kernel that writes to them, even one that restores them, crashes there, as does "
        "one that reads or writes out of bounds",
        r.signal, which);
  }
  if (r.timed_out)
    return fmt::format("the candidate ran past {} s and was killed", o.limits.wall.count() / 1000);
  if (r.signal == SIGXFSZ)
    return fmt::format("the candidate hit the file-size limit ({} MiB per file)",
                       o.limits.file_size_mb);
  if (r.signal == SIGXCPU)
    return fmt::format("the candidate hit the CPU-time limit ({} s)", o.limits.cpu_seconds);
  for (const char* oom : {"MemoryError", "std::bad_alloc", "can't allocate memory",
                          "CUDA out of memory", "Cannot allocate memory"})
    if (out.find(oom) != std::string::npos)
      return fmt::format("the candidate hit the memory limit ({} MiB of address space): {}",
                         o.limits.address_space_mb, text::excerpt(out, 300));
  if (r.signal) return fmt::format("the candidate was killed by signal {}", r.signal);
  return fmt::format("the candidate process exited {}: {}", r.exit_code, text::excerpt(out, 400));
}

std::string shape_text(const Json& shape) {
  std::vector<std::string> dims;
  for (const auto& d : shape) dims.push_back(d.dump());
  return "(" + text::join(dims, ", ") + ")";
}

std::optional<double> number(const Json& j, const char* key) {
  if (j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

}  // namespace

namespace {

// What upskill's clock saw of the candidate's clocked calls, for the compare process, from the
// timestamps of the lines "UPSKILL-CLOCK <bench> <segment> begin" and "... end <calls>":
// {"segments": {"<bench>": [[segment, ms, calls]...]}, "forged": {"<bench>": why}}. A mark seen
// twice, or an end without its begin, was not printed by the harness alone: the bench shape's
// timings are then not used. Written into the judge's folder, which the candidate cannot reach.
Status write_judge_clock(const std::vector<std::pair<std::string, double>>& stamps,
                         const fs::path& path) {
  std::map<std::pair<int, int>, double> begun;
  std::map<std::pair<int, int>, std::pair<double, long>> ended;
  Json forged = Json::object();
  for (const auto& [line, seconds] : stamps) {
    int bench = -1, segment = -1;
    long calls = 0;
    char what[8] = {};
    const int fields =
        std::sscanf(line.c_str(), "UPSKILL-CLOCK %d %d %7s %ld", &bench, &segment, what, &calls);
    if (fields < 3 || bench < 0 || segment < 0) continue;
    const std::pair key{bench, segment};
    const std::string name = std::to_string(bench);
    if (std::string_view(what) == "begin") {
      if (!begun.try_emplace(key, seconds).second) forged[name] = "a segment began twice";
    } else if (std::string_view(what) == "end") {
      if (fields != 4 || calls <= 0 || !begun.contains(key) || ended.contains(key))
        forged[name] = "a segment ended twice, or without beginning";
      else
        ended[key] = {(seconds - begun[key]) * 1e3, calls};
    }
  }
  Json segments = Json::object();
  for (const auto& [key, value] : ended) {
    Json& list = segments[std::to_string(key.first)];
    if (list.is_null()) list = Json::array();
    list.push_back(Json::array({key.second, value.first, value.second}));
  }
  return files::write_atomic(path, Json{{"segments", segments}, {"forged", forged}}.dump());
}

// The candidate's process: it reads only the system, Python and torch, its harness copy, its
// package and its run folder, and writes only the run folder. Why it stopped, if it did not end
// well, is a failure; what its Python code was refused is noted.
Status run_candidate(const HarnessRequest& req, const Folders& dirs,
                     const std::vector<std::string>& timing, HarnessResult& out) {
  std::vector<std::string> cand{
      "candidate", "--dir",        dirs.run.string(), "--package", req.package_parent.string(),
      "--name",    req.python_name};
  cand.insert(cand.end(), timing.begin(), timing.end());
  UPSKILL_RETURN_IF_ERROR(write_harness(dirs.harness));
  sandbox::Options options = python_process(req, dirs.harness / "harness.py", dirs.run, cand);
  options.confine_reads = true;
  options.readable = req.toolchain->read_roots();
  options.readable.push_back(dirs.harness);
  options.readable.push_back(req.package_parent);
  options.stamp_prefix = "UPSKILL-CLOCK ";
  UPSKILL_ASSIGN_OR_RETURN(auto candidate, sandbox::run(options));
  out.protections = candidate.protections.summary();
  out.unenforced = candidate.protections.missing(options);
  UPSKILL_RETURN_IF_ERROR(write_judge_clock(candidate.stamps, dirs.judge / "clock.json"));
  // The marks are for upskill's clock, not for the reader.
  std::string printed;
  for (const auto& line : text::split_lines(candidate.output))
    if (!line.starts_with("UPSKILL-CLOCK ")) printed += line + "\n";
  out.candidate_output = text::excerpt(text::trim(printed), 2000);
  if (!candidate.ok())
    out.failures.push_back(candidate_stopped(
        candidate, options, files::read_text(dirs.run / "calling.json").value_or("")));
  if (auto claimed = files::read_text(dirs.run / "candidate.json")) {
    // What the candidate's Python code tried and was refused: information, never a verdict.
    const Json j = Json::parse(*claimed, nullptr, false);
    if (j.is_object() && j.contains("denied") && j["denied"].is_array())
      for (const auto& d : j["denied"])
        if (d.is_string() && out.denied.size() < 50) out.denied.push_back(d.get<std::string>());
  }
  return {};
}

// The verdict's cases: each failed one in words (shape, dtype, input set), the weak ones, and
// whether the candidate is correct.
void read_cases(HarnessResult& out) {
  for (const auto& c : out.verdict.value("cases", Json::array())) {
    ++out.cases;
    if (c.value("passed", false)) continue;
    const std::string inputs =
        c.contains("input_set") && c["input_set"].is_string()
            ? fmt::format("input set '{}', inputs {}", c["input_set"].get<std::string>(),
                          c.value("trial", 0) + 1)
        : c.value("drawn", false)
            ? fmt::format("a shape drawn for this run, inputs {}", c.value("trial", 0) + 1)
            : fmt::format("inputs {}", c.value("trial", 0) + 1);
    out.failures.push_back(fmt::format("{} {} ({}): {}", shape_text(c["shape"]),
                                       c.value("dtype", ""), inputs, c.value("problem", "failed")));
  }
  for (const auto& w : out.verdict.value("weak_cases", Json::array()))
    out.weak_cases.push_back(w.get<std::string>());
  out.correct = out.failures.empty() && out.cases > 0 && out.verdict.value("passed", false);
}

// The verdict's timings, one entry a bench shape, and their geometric mean speedup.
void read_bench(HarnessResult& out) {
  double log_sum = 0;
  int timed = 0;
  for (const auto& b : out.verdict.value("bench", Json::array())) {
    BenchEntry e;
    e.shape = shape_text(b.value("shape", Json::array()));
    e.dtype = b.value("dtype", "");
    e.reference_ms = number(b, "reference_ms");
    e.candidate_ms = number(b, "candidate_ms");
    e.candidate_in_process_ms = number(b, "candidate_in_process_ms");
    e.overhead_ms = number(b, "overhead_ms");
    e.unmeasured = b.value("unmeasured", "");
    e.speedup = number(b, "speedup");
    e.achieved_gbps = number(b, "achieved_gbps");
    e.compiled_ms = number(b, "compiled_ms");
    e.speedup_vs_compile = number(b, "speedup_vs_compile");
    e.copy_gbps = number(b, "copy_gbps");
    e.bandwidth_fraction = number(b, "bandwidth_fraction");
    for (const auto& f : b.value("implausible", Json::array())) e.implausible.push_back(f);
    e.problem = b.value("problem", "");
    if (e.speedup && *e.speedup > 0 && std::isfinite(*e.speedup)) {
      log_sum += std::log(*e.speedup);
      ++timed;
    }
    out.bench.push_back(std::move(e));
  }
  if (timed) out.speedup = std::exp(log_sum / timed);
}

}  // namespace

Result<HarnessResult> run_harness(const HarnessRequest& req) {
  HarnessResult out;
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  if (!fs::is_regular_file(req.spec, ec))
    return infra(fmt::format("the op spec {} does not exist", req.spec.string()));
  const Folders dirs(req.work_dir);
  for (const auto& d : {dirs.run, dirs.judge}) {
    fs::remove_all(d, ec);
    fs::create_directories(d, ec);
  }
  const std::string seed = std::to_string(req.seed);
  const std::string spec = fs::absolute(req.spec).string();
  const fs::path judge_script = dirs.judge / "harness.py";
  // The judge may write the run folder (inputs) and its own; it reads the spec, so its reads are
  // not confined. It loads no candidate code.
  const auto judge = [&](std::vector<std::string> args) {
    sandbox::Options o = python_process(req, judge_script, dirs.judge, std::move(args));
    o.writable = {dirs.run};
    return o;
  };

  UPSKILL_RETURN_IF_ERROR(write_harness(dirs.judge));
  std::vector<std::string> prep{"prepare", "--spec",         spec, "--seed", seed,
                                "--dir",   dirs.run.string()};
  if (req.bench) prep.push_back("--bench");
  UPSKILL_ASSIGN_OR_RETURN(auto prepared, sandbox::run(judge(prep)));
  if (!prepared.ok())
    return infra(fmt::format("the op spec {} failed to make inputs: {}", req.spec.string(),
                             text::excerpt(text::trim(prepared.output), 600)));

  // The seed of the refreshes before each timed call, drawn apart from the input seed (which it
  // must not reveal): the candidate is told it, the judge replays them to check the outputs kept.
  const std::vector<std::string> timing{
      "--device",       req.device,
      "--warmup",       std::to_string(req.warmup),
      "--repeats",      std::to_string(req.repeats),
      "--refresh-seed", std::to_string(std::random_device{}() % 1000000007U)};
  UPSKILL_RETURN_IF_ERROR(run_candidate(req, dirs, timing, out));

  UPSKILL_RETURN_IF_ERROR(write_harness(dirs.judge));
  std::vector<std::string> cmp{"compare", "--spec",         spec, "--seed", seed,
                               "--dir",   dirs.run.string()};
  cmp.insert(cmp.end(), timing.begin(), timing.end());
  if (req.bench) {
    cmp.push_back("--bench");
    cmp.push_back("--clock");
    cmp.push_back((dirs.judge / "clock.json").string());
  }
  UPSKILL_ASSIGN_OR_RETURN(auto compared, sandbox::run(judge(cmp)));
  const auto at = compared.output.rfind("UPSKILL-VERDICT ");
  if (!compared.ok() || at == std::string::npos)
    return infra(fmt::format("the reference process failed: {}",
                             text::excerpt(text::trim(compared.output), 600)));
  out.verdict =
      Json::parse(text::split_lines(compared.output.substr(at + 16)).front(), nullptr, false);
  if (out.verdict.is_discarded() || !out.verdict.is_object())
    return infra("the reference process printed a malformed verdict");
  read_cases(out);
  read_bench(out);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace upskill::kernel
