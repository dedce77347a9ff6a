// The correct and bench stages: the shipped Python harness run in its three processes (prepare,
// the sandboxed candidate, compare), and its verdict read back (see harness.hpp).
#include "upskill/kernel/harness.hpp"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "judge_service.hpp"
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
//   run/      the candidate's cwd and HOME, the one folder it may write (nothing the judge reads)
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
  // The candidate's waits are bounded by the judge (req.timeout in all); the processes live as
  // long as the judge needs them: it times the reference and audits every timed call too.
  o.limits.wall = std::chrono::duration_cast<std::chrono::milliseconds>(req.timeout * 3 +
                                                                        std::chrono::seconds(60));
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

// Where the judge was when it lost the candidate, in words: " in a call (case 3, inputs 1)".
std::string where_lost(const Json& lost) {
  if (!lost.is_object()) return "";
  const std::string stage = lost.value("stage", "");
  if (stage == "correct")
    return fmt::format(" in a call (case {}, inputs {})", lost.value("case", 0) + 1,
                       lost.value("trial", 0) + 1);
  if (stage == "bench")
    return fmt::format(" in a timed call of bench shape {}", lost.value("bench", 0) + 1);
  if (stage == "import") return " while its package was imported";
  if (stage == "settle") return " when its outputs were asked for again after its calls";
  if (stage == "start") return " before it was asked anything";
  return "";
}

// Why the candidate process stopped, in words: the limit it hit where one is known. `lost` is
// where the judge was when the candidate stopped answering (the verdict's "lost"), or null.
std::string candidate_stopped(const sandbox::RunResult& r, const sandbox::Options& o,
                              const Json& lost, std::chrono::seconds budget) {
  const std::string out = text::trim(r.output);
  const std::string why = lost.is_object() ? lost.value("why", "") : "";
  const bool in_a_call = lost.is_object() && lost.value("stage", "") == "correct";
  if ((r.signal == SIGSEGV || r.signal == SIGBUS) && !r.stopped)
    return fmt::format("the candidate crashed (signal {}){}{}", r.signal, where_lost(lost),
                       in_a_call ? ": its inputs are read-only during the call, so a kernel that "
                                   "writes to them, even one that restores them, crashes there, "
                                   "as does one that reads or writes out of bounds"
                                 : "");
  if (r.timed_out || why.starts_with("ran past"))
    return fmt::format("the candidate ran past {} s and was killed{}", budget.count(),
                       where_lost(lost));
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
  if (r.signal && !r.stopped) return fmt::format("the candidate was killed by signal {}", r.signal);
  if (!why.empty() && why != "its process stopped")
    return fmt::format("the candidate's process broke the harness's protocol{}: {}",
                       where_lost(lost), why);
  return fmt::format("the candidate process exited {}{}: {}", r.exit_code, where_lost(lost),
                     text::excerpt(out, 400));
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
    e.candidate_cpu_ms = number(b, "candidate_cpu_ms");
    e.reference_cpu_ms = number(b, "reference_cpu_ms");
    e.cores_used = number(b, "cores_used");
    e.calls = b.value("calls", 0);
    e.segments = b.value("segments", 0);
    e.audited_calls = b.value("audited_calls", 0);
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

namespace {

// The candidate's process, started on its own thread: it reads only the system, Python and
// torch, its harness copy and its package, and writes only its run folder. Its end of the link
// to the judge is its fd 3; upskill's copy is closed as soon as it is started, so that the judge
// sees the link close when the candidate's process ends.
struct CandidateRun {
  sandbox::Options options;
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::condition_variable started;
  pid_t pid = 0;
  bool done = false;
  std::optional<Result<sandbox::RunResult>> result;
  std::thread thread;

  void start(int link_fd) {
    options.pass_fds = {link_fd};
    options.stop = &stop;
    options.on_start = [this, link_fd](pid_t child) {
      ::close(link_fd);
      std::lock_guard lock(mutex);
      pid = child;
      started.notify_all();
    };
    thread = std::thread([this, link_fd] {
      auto r = sandbox::run(options);
      std::lock_guard lock(mutex);
      if (pid == 0) ::close(link_fd);  // never started: on_start did not close it
      result = std::move(r);
      done = true;
      started.notify_all();
    });
  }
  // The candidate's first process, once forked; 0 when it could not be started.
  pid_t wait_started() {
    std::unique_lock lock(mutex);
    started.wait(lock, [this] { return pid != 0 || done; });
    return pid;
  }
  Result<sandbox::RunResult> finish() {
    stop = true;
    if (thread.joinable()) thread.join();
    return std::move(*result);
  }
};

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
  UPSKILL_RETURN_IF_ERROR(write_harness(dirs.judge));
  UPSKILL_RETURN_IF_ERROR(write_harness(dirs.harness));
  // link: the judge's requests and the candidate's replies, with the shared memory's descriptors
  // beside them. service: what upskill does for the judge (judge_service.hpp).
  int link[2], service[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, link) != 0)
    return infra(fmt::format("socketpair: {}", std::strerror(errno)));
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, service) != 0) {
    ::close(link[0]);
    ::close(link[1]);
    return infra(fmt::format("socketpair: {}", std::strerror(errno)));
  }

  CandidateRun candidate;
  candidate.options = python_process(req, dirs.harness / "harness.py", dirs.run,
                                     {"worker", "--package", req.package_parent.string(), "--name",
                                      req.python_name, "--device", req.device});
  candidate.options.confine_reads = true;
  candidate.options.readable = req.toolchain->read_roots();
  candidate.options.readable.push_back(dirs.harness);
  candidate.options.readable.push_back(req.package_parent);
  candidate.start(link[1]);
  const pid_t candidate_pid = candidate.wait_started();
  std::atomic<pid_t> judge_pid{0};
  std::thread service_thread;
  if (candidate_pid != 0)
    service_thread =
        std::thread(detail::serve_judge, service[0], candidate_pid, std::cref(judge_pid));

  // The judge reads the spec, so its reads are not confined; it writes only its own folder. It
  // loads no candidate code.
  std::vector<std::string> args{"judge",
                                "--spec",
                                fs::absolute(req.spec).string(),
                                "--seed",
                                std::to_string(req.seed),
                                "--device",
                                req.device,
                                "--timeout",
                                std::to_string(req.timeout.count()),
                                "--link",
                                "3"};
  if (candidate_pid != 0) {  // the service's end is the judge's fd 4
    args.push_back("--service");
    args.push_back("4");
  }
  if (req.bench) args.push_back("--bench");
  sandbox::Options judge = python_process(req, dirs.judge / "harness.py", dirs.judge, args);
  judge.pass_fds = {link[0], service[1]};
  judge.on_start = [&](pid_t pid) {
    judge_pid = pid;
    ::close(link[0]);
    ::close(service[1]);
    link[0] = service[1] = -1;
  };
  auto judged = sandbox::run(judge);
  if (link[0] >= 0) ::close(link[0]);
  if (service[1] >= 0) ::close(service[1]);
  auto ran = candidate.finish();
  ::shutdown(service[0], SHUT_RDWR);
  if (service_thread.joinable()) service_thread.join();
  ::close(service[0]);
  if (!ran) return fail(ran.error());
  if (!judged) return fail(judged.error());
  const sandbox::RunResult& cand = *ran;
  out.protections = cand.protections.summary();
  out.unenforced = cand.protections.missing(candidate.options);
  out.candidate_output = text::excerpt(text::trim(cand.output), 2000);

  const auto at = judged->output.rfind("UPSKILL-VERDICT ");
  if (!judged->ok() || at == std::string::npos)
    return infra(fmt::format("the reference process failed: {}",
                             text::excerpt(text::trim(judged->output), 600)));
  out.verdict =
      Json::parse(text::split_lines(judged->output.substr(at + 16)).front(), nullptr, false);
  if (out.verdict.is_discarded() || !out.verdict.is_object())
    return infra("the reference process printed a malformed verdict");
  const Json lost = out.verdict.value("lost", Json());
  // A candidate that stopped answering: the first failure, named by the limit it hit where one
  // is known. One whose process ended badly on its own after it had answered everything (a module
  // that crashes while unloading) fails too, after whatever the judge found.
  if (!lost.is_null())
    out.failures.push_back(candidate_stopped(cand, candidate.options, lost, req.timeout));
  for (const auto& d : out.verdict.value("denied", Json::array()))
    if (d.is_string() && out.denied.size() < 50) out.denied.push_back(d.get<std::string>());
  read_cases(out);
  read_bench(out);
  const bool bench_failed = std::any_of(out.bench.begin(), out.bench.end(),
                                        [](const BenchEntry& e) { return !e.problem.empty(); });
  if (lost.is_null() && !cand.ok() && !cand.stopped && out.correct && !bench_failed) {
    out.failures.push_back(candidate_stopped(cand, candidate.options, lost, req.timeout));
    out.correct = false;
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace upskill::kernel
