// A ci report appended to a Hub dataset's history (see hub_history.hpp).
#include "upskill/scale/hub_history.hpp"

#include <fmt/format.h>

#include <regex>

#include "upskill/core/files.hpp"
#include "upskill/core/temp_dir.hpp"
#include "upskill/core/text.hpp"
#include "upskill/core/timefmt.hpp"
#include "upskill/scale/hf_cli.hpp"

namespace upskill::scale {

namespace fs = std::filesystem;

namespace {

// Whether hf's failure says the file is not there (a history not started yet: hf 1.x prints "File
// not found in repository", older ones the EntryNotFound error), not that it could not be read.
bool says_missing(const std::string& message) {
  const std::string lower = text::to_lower_ascii(message);
  for (const char* words : {"file not found in repository", "entry not found", "entrynotfound"})
    if (lower.find(words) != std::string::npos) return true;
  return false;
}

}  // namespace

Status append_hub_history(const HubHistory& h) {
  static const std::regex repo(R"([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)");
  if (!std::regex_match(h.repo, repo))
    return fail(
        Error::usage(fmt::format("--history-repo {:?}: a dataset, <owner>/<name>", h.repo)));
  UPSKILL_ASSIGN_OR_RETURN(TempDir scratch, TempDir::create("upskill-history"));
  const fs::path dir = scratch.path();
  UPSKILL_RETURN_IF_ERROR(
      hf_do({"repos", "create", h.repo, "--repo-type", "dataset", "--private", "--exist-ok"}, dir));
  std::string existing;
  if (auto got = hf({"download", h.repo, "data/history.jsonl", "--repo-type", "dataset",
                     "--local-dir", (dir / "old").string()},
                    dir)) {
    UPSKILL_ASSIGN_OR_RETURN(existing, files::read_text(dir / "old" / "data" / "history.jsonl"));
  } else if (!says_missing(got.error().message)) {
    return fail(got.error());
  }
  std::string content = text::trim(existing);
  for (const auto& row : h.rows) {
    if (!content.empty()) content += "\n";
    content += row.dump();  // nlohmann's objects keep their keys sorted, as json.dumps(sort_keys)
  }
  long long rows = 0;
  for (const auto& line : text::split_lines(content)) rows += !text::trim(line).empty();
  const Json metadata = {
      {"updated_at", timefmt::iso8601(std::chrono::system_clock::now(), timefmt::Zone::utc)},
      {"total_rows", rows},
      {"latest_sha", h.commit},
      {"latest_scenarios", h.scenarios}};
  const fs::path staged = dir / "new";
  UPSKILL_RETURN_IF_ERROR(files::write_atomic(staged / "data" / "history.jsonl", content));
  UPSKILL_RETURN_IF_ERROR(
      files::write_atomic(staged / "data" / "metadata.json", metadata.dump(2) + "\n"));
  UPSKILL_ASSIGN_OR_RETURN(std::string report, files::read_text(h.report));
  UPSKILL_RETURN_IF_ERROR(files::write_atomic(staged / "reports" / (h.commit + ".json"), report));
  return hf_do(
      {"upload", h.repo, staged.string(), ".", "--repo-type", "dataset", "--commit-message",
       fmt::format("Update skill performance history for {}", h.commit.substr(0, 8))},
      dir);
}

}  // namespace upskill::scale
