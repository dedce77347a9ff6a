#pragma once
// The evaluation engine: for each model × arm (with the skill / baseline) × run × case, build the
// prompt, ask the student, score the answer and record tokens, latency and cost. Trials run
// concurrently and are stored by index, so output order never depends on timing; an interrupt keeps
// every trial that finished.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "upskill/agent/agent.hpp"
#include "upskill/agent/cli_agent.hpp"
#include "upskill/cases/test_case.hpp"
#include "upskill/checks/checks.hpp"
#include "upskill/core/cancel.hpp"
#include "upskill/llm/client.hpp"
#include "upskill/skill/skill_bundle.hpp"

namespace upskill::eval {

enum class Arm { baseline, with_skill };
std::string_view to_string(Arm arm);  // "baseline" / "with_skill" (upskill's run_type)
std::optional<Arm> arm_from_string(std::string_view name);

// How a coding-agent student gets the skill: installed where the agent looks for skills, or inlined
// into the prompt as upskill does ("install" / "inline").
enum class SkillDelivery { install, inline_prompt };
std::string_view to_string(SkillDelivery delivery);
std::optional<SkillDelivery> skill_delivery_from_string(std::string_view name);
const std::vector<std::string>& skill_delivery_names();

// The system prompt both arms share; the skill arm appends the skill.
extern const char* const kBaseSystemPrompt;

struct PromptOptions {
  bool inline_references = false;  // include references/ files, not just their names
};

// The messages for one case in one arm.
std::vector<llm::Message> build_prompt(const cases::TestCase& test_case,
                                       const skill::SkillBundle* skill,
                                       const PromptOptions& options = {});

// The task a student is given: the case's input with its context files appended as fenced blocks.
std::string task_text(const cases::TestCase& test_case);
// The case's context files written into a trial's workspace (paths that would leave it skipped).
void write_context_files(const cases::TestCase& test_case, const std::filesystem::path& workspace);

struct TrialKey {
  std::size_t model = 0;
  Arm arm = Arm::baseline;
  int run = 0;
  std::size_t test_case = 0;
};

struct TrialResult {
  TrialKey key;
  bool completed = false;                  // false: not run (interrupted) — never counted
  std::optional<llm::LlmFailure> failure;  // the model call failed (an infrastructure error)
  // Not sent: an earlier call to this model failed definitively (a rejected key, an unknown
  // model, an unreachable endpoint); `failure` is that call's. Counted as an error, rerun by
  // --resume.
  bool not_sent = false;
  checks::CaseResult verdict;  // meaningful when completed and no failure
  llm::Usage usage;
  double latency_ms = 0;
  int turns = 0;
  int tool_calls = 0;
  int tool_errors = 0;
  int run_calls = 0;
  std::map<std::string, int> tool_call_map;
  std::map<std::string, int> tool_error_map;
  bool agent = false;
  bool hit_turn_limit = false;
  std::string reported_model;
  std::string answer;  // the answer text, for logs and reports
  std::string reasoning;
  double cost_usd = 0;
  // Coding-agent students: what the agent printed, whether it loaded the skill, and whether it
  // reported tokens at all.
  std::string transcript;
  std::string agent_session;  // the agent's own session record (Claude Code's project JSONL)
  std::string cost_source;    // agents: "agent" (its own estimate) or "prices" (the models entry)
  std::optional<agent::SkillUse> skill_use;
  bool tokens_unavailable = false;

  bool passed() const { return completed && !failure && verdict.passed; }
  // Answered, and its checks passed as far as they could run, but some could not run here (no
  // CUDA device, no workspace, no sandbox): neither passed nor failed.
  bool not_run() const {
    return completed && !failure && verdict.status == checks::Status::not_run;
  }
  // Answered, but a judge check could not score the answer (its judge's call failed): the first
  // such check, else nullptr. Such a trial has no verdict: it counts with the errors, its cause the
  // judge's, and --resume runs it again.
  const checks::CheckResult* judge_failure() const {
    if (!completed || failure) return nullptr;
    for (const auto& c : verdict.checks)
      if (c.kind == cases::CheckKind::judge && c.status == checks::Status::error) return &c;
    return nullptr;
  }
  // Not answered in a way that can be scored: the model call failed, or a judge could not judge.
  bool unanswered_error() const { return failure.has_value() || judge_failure() != nullptr; }
};

// A share of an evaluation's trials (`--shard K/N`, docs/scale-out.md): the (model, run, case)
// pairs dealt out in key order, pair p to shard p mod N + 1, both arms of a pair together. With
// `gpu` G > 0 (`--gpu-shards G`, so that kernel checks can go to a GPU partition), the pairs of
// cases with a kernel check are dealt among shards 1..G and the other pairs among G+1..N (among
// all N when G = N); each class is dealt in its own key order.
struct Shard {
  int index = 1;  // 1..count
  int count = 1;
  int gpu = 0;  // 0..count
};

// "K/N" (--shard): the shard, or an error naming what is wrong with the text.
Result<Shard> parse_shard(const std::string& text);

// Whether a case has a kernel check (what --gpu-shards sends to the GPU shards).
bool has_kernel_check(const cases::TestCase& test_case);

struct EvalOptions {
  std::vector<llm::ResolvedModel> models;
  int runs = 1;
  bool baseline = true;
  int jobs = 4;
  PromptOptions prompt;
  llm::SamplingOptions sampling;
  std::optional<cases::Mode> mode;  // for every case; default: each case's own mode
  agent::AgentOptions agent;
  // Coding-agent students (models named cli.*), by model name, and how they get the skill:
  // installed (copied where the agent looks for skills) or inlined (in the prompt).
  std::map<std::string, agent::CliAgent> cli_agents;
  SkillDelivery skill_delivery = SkillDelivery::install;
  std::optional<Shard> shard;  // only this share of the trials runs
  const CancelToken* cancel = nullptr;
  // Trials to skip because a previous run of the batch already has them (--resume).
  std::function<std::optional<TrialResult>(const TrialKey&)> previous;
  // Called after each trial finishes (from worker threads, serialised).
  std::function<void(const TrialResult&, std::size_t done, std::size_t total)> on_trial;
};

struct Evaluation;
// Called after each trial with the evaluation so far (serialised; for run logs that survive a
// kill).
// Called, under the evaluation's lock, each time a trial is published: the evaluation so far and
// the trial just completed.
using Checkpoint = std::function<void(const Evaluation&, const TrialResult&)>;

struct Evaluation {
  std::string skill_name;
  std::vector<cases::TestCase> cases;
  std::vector<llm::ResolvedModel> models;
  int runs = 1;
  bool baseline = true;
  std::vector<TrialResult> trials;  // in key order: model, arm (baseline first), run, case
  bool interrupted = false;         // a trial of this shard (or of the whole) did not complete
  std::optional<Shard> shard;       // the trials outside it are not run here
  // What else the trials depend on, recorded in the batch's plan so that --resume can refuse
  // another evaluation: the skill's content hash, the mode, the agent settings, the judges.
  Json settings = Json::object();

  std::size_t index(const TrialKey& key) const;
  const TrialResult& at(const TrialKey& key) const { return trials[index(key)]; }
  std::vector<Arm> arms() const;
};

// Which trials an evaluation's shard holds (all of them without one), each case's place in the
// deal worked out once, so that asking for every trial costs time linear in the trials.
class ShardDeal {
 public:
  explicit ShardDeal(const Evaluation& evaluation);
  bool holds(const TrialKey& key) const;

 private:
  std::optional<Shard> shard_;
  std::size_t runs_ = 1;
  std::vector<bool> kernel_;             // per case: dealt among the GPU shards
  std::vector<std::size_t> ordinal_;     // per case: its number within its class
  std::size_t class_cases_[2] = {0, 0};  // cases of each class: other, kernel
};

// Runs the evaluation. `checks_env` decides how commands and kernels are checked.
Evaluation evaluate(const skill::SkillBundle& skill, const std::vector<cases::TestCase>& test_cases,
                    const EvalOptions& options, llm::ChatClient& client,
                    const checks::CheckEnvironment& checks_env, const Checkpoint& checkpoint = {});

// One coding-agent trial: a fresh workspace with the case's files (and, in the skill arm, the skill
// installed or inlined), the agent run to completion, then the checks on what it left.
void run_cli_trial(TrialResult& trial, const cases::TestCase& test_case,
                   const skill::SkillBundle& skill, bool with_skill, const agent::CliAgent& agent,
                   const EvalOptions& options, const checks::CheckEnvironment& checks_env);

// One chat trial: the prompt sent once, the answer scored.
void run_chat_trial(TrialResult& trial, const cases::TestCase& test_case,
                    std::vector<llm::Message> messages, const llm::ResolvedModel& model,
                    llm::ChatClient& client, const llm::CallOptions& call,
                    const EvalOptions& options, const checks::CheckEnvironment& checks_env);

// One agent-mode trial: a fresh workspace, the tool loop, then the checks on the workspace.
void run_agent_trial(TrialResult& trial, const cases::TestCase& test_case,
                     std::vector<llm::Message> messages, const llm::ResolvedModel& model,
                     llm::ChatClient& client, const llm::CallOptions& call,
                     const EvalOptions& options, const checks::CheckEnvironment& checks_env);

}  // namespace upskill::eval
