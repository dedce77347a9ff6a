// The `hf` client (see hf_cli.hpp).
#include "upskill/scale/hf_cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "upskill/core/text.hpp"
#include "upskill/scale/executor.hpp"

namespace upskill::scale {

Result<std::string> hf(const std::vector<std::string>& args, const std::filesystem::path& workdir,
                       std::chrono::seconds timeout) {
  std::vector<std::string> argv{"hf"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_tool(argv, workdir, timeout);
  if (!r || r->exit_code == 127)
    return fail(Error::infrastructure(
        "the `hf` command-line client was not found: install it (`uv tool install "
        "huggingface_hub` or `pip install -U huggingface_hub`) and log in with `hf auth login`"));
  // hf colours its messages (even into a pipe): the codes would only garble ours.
  static const std::regex ansi("\x1b\\[[0-9;]*m");
  std::string output = std::regex_replace(r->output, ansi, "");
  if (!r->ok())
    return fail(Error::infrastructure(fmt::format(
        "hf {} failed{}: {}",
        text::join(std::vector<std::string>(args.begin(),
                                            args.begin() + std::min<std::size_t>(2, args.size())),
                   " "),
        r->timed_out ? " (timed out)" : "", text::excerpt(text::trim(output), 600))));
  return output;
}

Status hf_do(const std::vector<std::string>& args, const std::filesystem::path& workdir) {
  auto r = hf(args, workdir);
  if (!r) return fail(r.error());
  return {};
}

}  // namespace upskill::scale
