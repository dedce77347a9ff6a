// `command` checks run in the sandbox (core/sandbox.hpp), in the answer's workspace (see
// sandbox_runner.hpp).
#include "upskill/checks/sandbox_runner.hpp"

#include <fmt/format.h>

#include "upskill/core/text.hpp"

namespace upskill::checks {

CheckResult SandboxCommandRunner::run(const cases::CommandParams& params,
                                      const std::filesystem::path& workspace) {
  CheckResult r;
  r.kind = cases::CheckKind::command;
  r.expected = fmt::format("`{}` exits {}", params.run, params.expect_exit);
  sandbox::Limits limits = limits_;
  limits.wall = std::chrono::milliseconds(static_cast<long long>(params.timeout_s * 1000));
  limits.cpu_seconds = std::max(1, static_cast<int>(params.timeout_s) + 1);
  auto result = sandbox::run_shell(params.run, workspace, limits);
  if (!result) {
    r.status = Status::error;
    r.reason = result.error().message;
    return r;
  }
  // The tail of the output is where compilers and test runners say what went wrong.
  const std::string& out = result->output;
  const std::string tail = out.size() > 400 ? out.substr(out.size() - 400) : out;
  r.details = {{"exit_code", result->exit_code},
               {"signal", result->signal},
               {"timed_out", result->timed_out},
               {"elapsed_ms", result->elapsed.count()},
               {"output_tail", tail},
               {"protections", result->protections.summary()}};
  if (result->timed_out) {
    r.status = Status::failed;
    r.found = "timed out";
    r.reason = fmt::format("did not finish within {:g} s", params.timeout_s);
    return r;
  }
  r.found = result->signal ? fmt::format("killed by signal {}", result->signal)
                           : fmt::format("exit {}: {}", result->exit_code, text::excerpt(tail, 80));
  r.status =
      !result->signal && result->exit_code == params.expect_exit ? Status::passed : Status::failed;
  if (r.status == Status::failed)
    r.reason = result->signal
                   ? fmt::format("killed by signal {}", result->signal)
                   : fmt::format("exited {} (expected {})", result->exit_code, params.expect_exit);
  return r;
}

}  // namespace upskill::checks
