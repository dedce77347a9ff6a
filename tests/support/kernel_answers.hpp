#pragma once
// The kernel pipeline's tests on real builds: the fixture answer (a correct CPU RMSNorm, built
// through every stage against tests/data/kernel-answers/specs/rmsnorm.py), ways to splice hostile
// C++ or Python into it, and a check of it run as root or as an ordinary user.
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "upskill/checks/kernel_runner.hpp"
#include "upskill/core/files.hpp"

namespace upskill::checks::kernel_answers {

namespace fs = std::filesystem;
inline const std::string kData = std::string(UPSKILL_SOURCE_DIR) + "/tests/data/kernel-answers";

inline std::string answer(const std::string& name) {
  return *files::read_text(kData + "/" + name);
}

inline std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

inline cases::KernelParams params(std::vector<cases::KernelStage> stages,
                                  std::string lint = "none") {
  cases::KernelParams p;
  p.stages = std::move(stages);
  p.backend = "cpu";
  p.lint = std::move(lint);
  p.spec = "specs/rmsnorm.py";
  p.timeout_s = 120;
  return p;
}

using enum cases::KernelStage;
inline const std::vector<cases::KernelStage> kAll{extract, layout,  lint, compile,
                                                  bind,    correct, bench};
inline const std::vector<cases::KernelStage> kToCorrect{extract, layout, compile, bind, correct};

inline CheckResult run(const std::string& text, const cases::KernelParams& p) {
  KernelPipelineOptions o;
  o.spec_base = kData;
  o.cache_dir = UPSKILL_TEST_KERNEL_CACHE;
  o.jobs = 1;
  o.seed = 1234;
  KernelPipelineChecker checker(o);
  return checker.check(p, Answer{text, "", std::nullopt});
}

inline const Json* stage(const CheckResult& r, const std::string& name) {
  for (const auto& s : r.details["stages"])
    if (s.value("stage", "") == name) return &s;
  return nullptr;
}

// The body of the CPU kernel's entry point, to splice hostile code into.
inline const std::string kEntry = "  const int64_t cols = input.size(-1);\n";

// Runs `candidate` and expects it to fail with `why` in the reason (the details on failure).
inline CheckResult fails_with(const std::string& candidate, const cases::KernelParams& p,
                              std::string_view why) {
  CheckResult r = run(candidate, p);
  EXPECT_EQ(r.status, Status::failed) << r.details.dump(2);
  EXPECT_NE(r.reason.find(why), std::string::npos) << r.reason;
  return r;
}

// The package's Python entry point, to splice hostile Python into: it runs in the bind stage's
// import check and in the candidate process.
inline const std::string kPyImport = "from ._ops import ops\n";
inline const std::string kPyCall =
    "    ops.rmsnorm(out, x.contiguous(), weight.contiguous(), eps)\n";

inline std::string with_python(const std::string& prelude, const std::string& after_call = "") {
  std::string a = replace(answer("rmsnorm-cpu-good.md"), kPyImport, kPyImport + prelude);
  if (!after_call.empty()) a = replace(a, kPyCall, kPyCall + after_call);
  return a;
}

// Whether a user other than the owner can reach `path`: every folder on the way searchable by
// others, the last one readable too (root's access() would say yes to anything).
inline bool others_can_reach(const fs::path& path) {
  fs::path at;
  for (const auto& part : fs::absolute(path)) {
    at /= part;
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0 || !(st.st_mode & S_IXOTH)) return false;
  }
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IROTH);
}

// Runs `check` in a forked child that has become `nobody` (uid and gid 65534, no groups): what it
// returns comes back as the report, and the child's exit status says whether `check` was content.
// Needs root; the answers' data and the kernel cache must be readable by others.
struct AsNobody {
  bool ok = false;
  std::string report;
};
inline AsNobody as_nobody(const std::function<std::pair<bool, std::string>()>& check) {
  // The child's own temporary folder: the system's may not be writable by an ordinary user (CI's
  // is not).
  std::string scratch = (fs::temp_directory_path() / "upskill-nobody-XXXXXX").string();
  if (::mkdtemp(scratch.data()) == nullptr || ::chown(scratch.c_str(), 65534, 65534) != 0)
    return {false, "cannot make a temporary folder for the ordinary user: " + scratch};
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t child = ::fork();
  if (child < 0) return {};
  if (child == 0) {
    ::close(fds[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) _exit(90);
    ::setenv("TMPDIR", scratch.c_str(), 1);
    const auto [ok, report] = check();
    (void)!::write(fds[1], report.data(), report.size());
    _exit(ok ? 0 : 1);
  }
  ::close(fds[1]);
  AsNobody out;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) out.report.append(buffer, n);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  out.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return out;
}

// Why a run as an ordinary user cannot be made here, or empty.
inline std::string cannot_run_as_nobody() {
  if (::geteuid() != 0) return "the test needs root to become another user";
  for (const std::string& p : {kData, std::string(UPSKILL_TEST_KERNEL_CACHE)})
    if (!others_can_reach(p)) return p + " is not readable by other users";
  return "";
}

}  // namespace upskill::checks::kernel_answers
