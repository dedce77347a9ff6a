#pragma once
// Recorded model responses. `--record FILE` writes one JSON line per request (keys never appear:
// requests are stored without headers and scrubbed of the key); `--replay FILE` answers from it
// with no network and fails clearly on a miss. The key of an entry is the SHA-256 of the full
// request — dialect, endpoint, model, body and the run/repeat index, so repeats stay independent.
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "upskill/core/error.hpp"
#include "upskill/core/json.hpp"
#include "upskill/llm/model.hpp"
#include "upskill/llm/types.hpp"

namespace upskill::llm {

std::string request_key(const ResolvedModel& model, const Json& body, int repeat);

class Cassette {
 public:
  enum class Mode { record, replay };

  // Replay: loads every entry; a malformed line is an error naming file:line.
  static Result<std::unique_ptr<Cassette>> open_replay(const std::filesystem::path& path);
  // Record: starts a new file (an existing one is replaced when the run ends).
  static Result<std::unique_ptr<Cassette>> open_record(const std::filesystem::path& path);

  Mode mode() const { return mode_; }
  const std::filesystem::path& path() const { return path_; }
  std::optional<ChatResponse> find(const std::string& key) const;
  // Appends an entry; the file is rewritten atomically with every entry so far.
  Status record(const std::string& key, const ResolvedModel& model, const Json& body, int repeat,
                const ChatResponse& response);
  std::size_t size() const;

 private:
  Mode mode_ = Mode::replay;
  std::filesystem::path path_;
  mutable std::mutex mutex_;
  std::map<std::string, ChatResponse> entries_;
  std::string lines_;
};

}  // namespace upskill::llm
