#pragma once
// The `hf` command-line client (huggingface_hub), as the Jobs executor and the Hub history of
// `upskill ci --persist` call it: the user's own program with the user's environment and login.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "upskill/core/error.hpp"

namespace upskill::scale {

// `hf ARGS…` in `workdir`; its output (stdout and stderr together) without hf's colour codes.
// Errors (3): the client missing (with how to install it), or hf refusing, with hf's own words
// (the first two arguments name the call: "hf jobs run failed: …").
Result<std::string> hf(const std::vector<std::string>& args, const std::filesystem::path& workdir,
                       std::chrono::seconds timeout = std::chrono::seconds(600));
// The same when only success matters.
Status hf_do(const std::vector<std::string>& args, const std::filesystem::path& workdir);

}  // namespace upskill::scale
