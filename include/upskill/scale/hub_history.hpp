#pragma once
// `upskill ci --persist --history-repo REPO`: the report appended to a Hub dataset's history, the
// layout huggingface/skills' upskill_ci.py writes (docs/ci.md): data/history.jsonl (one row a
// scenario, appended), data/metadata.json (updated_at, total_rows, latest_sha, latest_scenarios)
// and reports/<sha>.json (the whole report), in one commit through the `hf` client.
#include <filesystem>
#include <string>
#include <vector>

#include "upskill/core/error.hpp"
#include "upskill/core/json.hpp"

namespace upskill::scale {

struct HubHistory {
  std::string repo;                    // a dataset, "<owner>/<name>"; created private when missing
  std::vector<Json> rows;              // this run's rows, appended in order
  std::string commit;                  // the evaluated commit: names the report
  std::vector<std::string> scenarios;  // the scenarios evaluated (latest_scenarios)
  std::filesystem::path report;        // the report JSON to upload as reports/<commit>.json
};

// Errors (3, hf's words): no access to the repository, a history that cannot be read (anything but
// its absence), an upload refused. A repository name that is not <owner>/<name> is a usage error.
Status append_hub_history(const HubHistory& history);

}  // namespace upskill::scale
