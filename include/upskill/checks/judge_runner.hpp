#pragma once
// `judge` checks scored by models (docs/judge.md). Each judge model gets one fixed prompt — the
// task, the criteria, how the case's other checks went, the answer — at temperature 0, and must
// reply with {"score": N, "reasoning": "..."} on the check's scale. With several judge models the
// check takes their mean score and reports how far they agreed. A judge that cannot be reached or
// whose reply has no valid score makes the check an error, never a pass. Replies are cached by the
// content of the request, so scoring the same answer again costs nothing; calls go through the
// session's client, so cassettes record and replay them like any other call.
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "upskill/checks/checks.hpp"
#include "upskill/llm/client.hpp"
#include "upskill/llm/model.hpp"

namespace upskill::checks {

// The version of the prompt and reply format; part of every cache key.
inline constexpr const char* kJudgePromptVersion = "upskill-judge/1";

// The messages a judge gets for one request (exposed for tests and docs).
std::vector<llm::Message> judge_prompt(const JudgeRequest& request);

// A judge's reply read: the score on the check's scale and the reasoning; an error names what is
// wrong with the reply.
struct JudgeVerdict {
  double score = 0;
  std::string reasoning;
};
Result<JudgeVerdict> parse_judge_reply(std::string_view reply, double scale);

// Judge tokens and cost of a scored case, counted apart from the student's: calls answered from the
// cache cost nothing and are counted in `cached`.
struct JudgeTotals {
  llm::Usage usage;
  double cost_usd = 0;
  int calls = 0;
  int cached = 0;
};
JudgeTotals judge_totals(const CaseResult& result);

class LlmJudge : public JudgeRunner {
 public:
  // `models`: every judge model a check may name, resolved, by spec; `default_specs`: the judges
  // of a check that names none. `cache_dir`: replies are kept in its judge/ folder (empty: none).
  LlmJudge(llm::ChatClient& client, std::map<std::string, llm::ResolvedModel> models,
           std::vector<std::string> default_specs, std::filesystem::path cache_dir,
           const CancelToken* cancel = nullptr);

  CheckResult judge(const JudgeRequest& request) override;

 private:
  // One judge's reply to the prompt: from the cache when `cached_file` holds it, else asked.
  struct Reply {
    std::string text;
    llm::Usage usage;
    std::string reported_model;
    bool cached = false;
  };
  Result<Reply> ask(const llm::ResolvedModel& model, const std::vector<llm::Message>& messages,
                    const std::filesystem::path& cached_file);

  llm::ChatClient& client_;
  std::map<std::string, llm::ResolvedModel> models_;
  std::vector<std::string> default_specs_;
  std::filesystem::path cache_dir_;
  const CancelToken* cancel_;
};

}  // namespace upskill::checks
