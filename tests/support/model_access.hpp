#pragma once
// The ModelAccess a pipeline test hands to the library: its configuration and a client, with a
// count of how often the pipeline opened it (bad input must not open it at all).
#include "upskill/llm/client.hpp"
#include "upskill/llm/model.hpp"

namespace upskill::testing {

inline llm::ModelAccess counted_access(const config::Config& config, llm::ChatClient& client,
                                       int& connects) {
  llm::ModelAccess access;
  access.config = &config;
  access.connect = [&client, &connects]() -> Result<llm::Connection> {
    ++connects;
    return llm::Connection{&client};
  };
  return access;
}

}  // namespace upskill::testing
