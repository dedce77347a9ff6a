#include "upskill/kernel/harness.hpp"

#include <fmt/format.h>

#include <cmath>

#include "upskill/core/files.hpp"
#include "upskill/core/sandbox.hpp"
#include "upskill/core/text.hpp"

namespace upskill::kernel {

namespace fs = std::filesystem;

namespace {

std::unexpected<Error> infra(std::string message) {
  return fail(Error::infrastructure(std::move(message)));
}

sandbox::Options python_process(const HarnessRequest& req, const fs::path& dir,
                                std::vector<std::string> args) {
  sandbox::Options o;
  o.workdir = dir;
  o.argv = {req.toolchain->torch.python, (req.work_dir / "harness" / "harness.py").string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.limits.wall = std::chrono::duration_cast<std::chrono::milliseconds>(req.timeout);
  o.limits.cpu_seconds = static_cast<int>(req.timeout.count()) * 4;  // torch uses several threads
  // CUDA reserves terabytes of virtual address space; only the CPU path can be bounded.
  o.limits.address_space_mb = req.device == "cuda" ? (std::size_t{1} << 26) : 16384;
  o.limits.file_size_mb = 2048;
  o.env["OMP_NUM_THREADS"] = "2";
  return o;
}

// A fresh copy before every process, so a candidate that rewrote it changes nothing.
Status write_harness(const HarnessRequest& req) {
  std::error_code ec;
  fs::create_directories(req.work_dir / "harness", ec);
  return files::write_atomic(req.work_dir / "harness" / "harness.py", harness_source());
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

Result<HarnessResult> run_harness(const HarnessRequest& req) {
  HarnessResult out;
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  if (!fs::is_regular_file(req.spec, ec))
    return infra(fmt::format("the op spec {} does not exist", req.spec.string()));
  const fs::path run_dir = req.work_dir / "run";
  fs::remove_all(run_dir, ec);
  fs::create_directories(run_dir, ec);
  const std::string seed = std::to_string(req.seed);
  const std::string spec = fs::absolute(req.spec).string();

  UPSKILL_RETURN_IF_ERROR(write_harness(req));
  std::vector<std::string> prep{"prepare", "--spec",        spec, "--seed", seed,
                                "--dir",   run_dir.string()};
  if (req.bench) prep.push_back("--bench");
  UPSKILL_ASSIGN_OR_RETURN(auto prepared, sandbox::run(python_process(req, req.work_dir, prep)));
  if (!prepared.ok())
    return infra(fmt::format("the op spec {} failed to make inputs: {}", req.spec.string(),
                             text::excerpt(text::trim(prepared.output), 600)));

  const std::vector<std::string> timing{"--device",  req.device,
                                        "--warmup",  std::to_string(req.warmup),
                                        "--repeats", std::to_string(req.repeats)};
  std::vector<std::string> cand{
      "candidate", "--dir",        run_dir.string(), "--package", req.package_parent.string(),
      "--name",    req.python_name};
  cand.insert(cand.end(), timing.begin(), timing.end());
  UPSKILL_ASSIGN_OR_RETURN(auto candidate, sandbox::run(python_process(req, run_dir, cand)));
  out.protections = candidate.protections.summary();
  out.candidate_output = text::excerpt(text::trim(candidate.output), 2000);
  if (!candidate.ok())
    out.failures.push_back(
        candidate.timed_out
            ? fmt::format("the candidate ran past {} s and was killed", req.timeout.count())
        : candidate.signal ? fmt::format("the candidate was killed by signal {}", candidate.signal)
                           : fmt::format("the candidate process exited {}: {}", candidate.exit_code,
                                         text::excerpt(text::trim(candidate.output), 400)));

  UPSKILL_RETURN_IF_ERROR(write_harness(req));
  std::vector<std::string> cmp{"compare", "--spec",        spec, "--seed", seed,
                               "--dir",   run_dir.string()};
  cmp.insert(cmp.end(), timing.begin(), timing.end());
  if (req.bench) cmp.push_back("--bench");
  UPSKILL_ASSIGN_OR_RETURN(auto compared, sandbox::run(python_process(req, req.work_dir, cmp)));
  const auto at = compared.output.rfind("UPSKILL-VERDICT ");
  if (!compared.ok() || at == std::string::npos)
    return infra(fmt::format("the reference process failed: {}",
                             text::excerpt(text::trim(compared.output), 600)));
  out.verdict =
      Json::parse(text::split_lines(compared.output.substr(at + 16)).front(), nullptr, false);
  if (out.verdict.is_discarded() || !out.verdict.is_object())
    return infra("the reference process printed a malformed verdict");

  for (const auto& c : out.verdict.value("cases", Json::array())) {
    ++out.cases;
    if (!c.value("passed", false))
      out.failures.push_back(fmt::format("{} {} (inputs {}): {}", shape_text(c["shape"]),
                                         c.value("dtype", ""), c.value("trial", 0) + 1,
                                         c.value("problem", "failed")));
  }
  for (const auto& w : out.verdict.value("weak_cases", Json::array()))
    out.weak_cases.push_back(w.get<std::string>());
  out.correct = out.failures.empty() && out.cases > 0 && out.verdict.value("passed", false);

  double log_sum = 0;
  int timed = 0;
  for (const auto& b : out.verdict.value("bench", Json::array())) {
    BenchEntry e;
    e.shape = shape_text(b.value("shape", Json::array()));
    e.dtype = b.value("dtype", "");
    e.reference_ms = number(b, "reference_ms");
    e.candidate_ms = number(b, "candidate_ms");
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
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace upskill::kernel
