// Recorded model responses (see cassette.hpp).
#include "upskill/llm/cassette.hpp"

#include <fmt/format.h>

#include "upskill/core/files.hpp"
#include "upskill/core/hash.hpp"
#include "upskill/core/text.hpp"
#include "upskill/llm/errors.hpp"

namespace upskill::llm {

std::string request_key(const ResolvedModel& model, const Json& body, int repeat) {
  Json stable = body;
  stable.erase("stream");  // streamed or not, it is the same question
  stable.erase("stream_options");
  const Json key = {{"dialect", model.dialect == Dialect::anthropic ? "anthropic" : "openai"},
                    {"endpoint", model.base_url},
                    {"model", model.model},
                    {"body", stable},
                    {"repeat", repeat}};
  return hash::sha256_hex(key.dump());
}

Result<std::unique_ptr<Cassette>> Cassette::open_replay(const std::filesystem::path& path) {
  UPSKILL_ASSIGN_OR_RETURN(std::string text, files::read_text(path));
  auto cassette = std::make_unique<Cassette>();
  cassette->mode_ = Mode::replay;
  cassette->path_ = path;
  int line_number = 0;
  for (const auto& line : text::split_lines(text)) {
    ++line_number;
    if (text::trim(line).empty()) continue;
    try {
      const Json entry = Json::parse(line);
      if (!entry.contains("key") || !entry.contains("response"))
        return fail(Error::at({path.string(), line_number, 0},
                              "cassette entry needs \"key\" and \"response\""));
      ChatResponse response = response_from_json(entry.at("response"));
      response.from_cassette = true;
      cassette->entries_[entry.at("key").get<std::string>()] = std::move(response);
    } catch (const nlohmann::json::exception& e) {
      return fail(Error::at({path.string(), line_number, 0},
                            fmt::format("invalid cassette entry: {}", e.what())));
    }
  }
  return cassette;
}

Result<std::unique_ptr<Cassette>> Cassette::open_record(const std::filesystem::path& path) {
  auto cassette = std::make_unique<Cassette>();
  cassette->mode_ = Mode::record;
  cassette->path_ = path;
  UPSKILL_RETURN_IF_ERROR(files::write_atomic(path, ""));
  return cassette;
}

std::optional<ChatResponse> Cassette::find(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

Status Cassette::record(const std::string& key, const ResolvedModel& model, const Json& body,
                        int repeat, const ChatResponse& response) {
  Json stable = body;
  stable.erase("stream");
  stable.erase("stream_options");
  const Json entry = {{"key", key},       {"model", model.name}, {"endpoint", model.base_url},
                      {"repeat", repeat}, {"request", stable},   {"response", to_json(response)}};
  std::lock_guard lock(mutex_);
  entries_[key] = response;
  lines_ += redact(entry.dump(), model.api_key.reveal()) + "\n";
  return files::write_atomic(path_, lines_);
}

std::size_t Cassette::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace upskill::llm
