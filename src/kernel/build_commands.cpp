// Running compilers and the linker for the compile and bind stages: sandboxed, reads confined, with
// the build limits.
#include <fmt/format.h>
#include <unistd.h>

#include "build_internal.hpp"
#include "upskill/core/sandbox.hpp"
#include "upskill/core/text.hpp"

namespace upskill::kernel::detail {

namespace fs = std::filesystem;

std::vector<std::string> Command::resolved(const fs::path& work) const {
  std::vector<std::string> out;
  std::vector<std::string> all = argv;
  all.insert(all.end(), pch.begin(), pch.end());
  for (const auto& a : all) {
    std::string s = a;
    for (auto at = s.find("@W"); at != std::string::npos; at = s.find("@W"))
      s.replace(at, 2, work.string());
    out.push_back(std::move(s));
  }
  return out;
}

std::string Command::key() const {
  return text::join(argv, "\x1f");
}

Run run_tool(const std::vector<std::string>& argv, const fs::path& dir, const BuildRequest& req,
             const std::vector<fs::path>& readable, std::size_t file_mb) {
  sandbox::Options o;
  o.workdir = dir;
  o.confine_reads = true;
  o.readable = req.toolchain->read_roots();
  o.readable.push_back(req.cache_dir / "pch");
  o.readable.push_back(req.cache_dir / "standin");
  o.readable.insert(o.readable.end(), readable.begin(), readable.end());
  o.argv = argv;
  o.env["PATH"] = fmt::format("{}/bin:/usr/local/bin:/usr/bin:/bin", req.toolchain->cuda_home);
  o.env["CUDA_HOME"] = req.toolchain->cuda_home;
  o.limits.wall = std::chrono::duration_cast<std::chrono::milliseconds>(req.timeout);
  o.limits.cpu_seconds = static_cast<int>(req.timeout.count());
  o.limits.address_space_mb = 32768;
  o.limits.file_size_mb = file_mb;
  o.limits.output_bytes = 256 << 10;
  o.writable = {req.work_dir};
  const auto start = std::chrono::steady_clock::now();
  Run r;
  auto result = sandbox::run(o);
  r.seconds = seconds_since(start);
  if (!result) {
    r.output = result.error().message;
    return r;
  }
  r.ok = result->ok();
  r.timed_out = result->timed_out;
  r.output = text::trim(result->output);
  if (r.timed_out)
    r.output += fmt::format("\n(timed out after {} s)", req.timeout.count());
  else if (result->signal)
    r.output += fmt::format("\n(killed by signal {})", result->signal);
  return r;
}

}  // namespace upskill::kernel::detail
