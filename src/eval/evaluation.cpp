#include "upskill/eval/evaluation.hpp"

#include <fmt/format.h>

#include <mutex>

namespace upskill::eval {

const char* const kBaseSystemPrompt =
    "You are an expert software engineer. Solve the user's task completely and correctly. When the "
    "task "
    "asks for files, give each file in its own fenced code block and name its path on the line "
    "before the "
    "block.";

std::string_view to_string(Arm arm) {
  return arm == Arm::baseline ? "baseline" : "with_skill";
}

std::vector<llm::Message> build_prompt(const cases::TestCase& test_case,
                                       const skill::SkillBundle* skill,
                                       const PromptOptions& options) {
  std::string system = kBaseSystemPrompt;
  if (skill) {
    system += fmt::format("\n\n## Skill: {}\n\n{}", skill->name(), skill->body);
    if (!skill->files.empty()) {
      system += "\n\n### Files bundled with the skill\n";
      for (const auto& [path, file] : skill->files) {
        if (options.inline_references && path.starts_with("references/"))
          system += fmt::format("\n#### {}\n\n{}\n", path, file.content);
        else
          system += fmt::format("- {}\n", path);
      }
    }
  }
  std::string user = test_case.input;
  // upskill appends context files to the task as fenced blocks.
  for (const auto& [name, content] : test_case.context_files)
    user += fmt::format("\n\n{}:\n```\n{}\n```", name, content);
  return {llm::Message::system(std::move(system)), llm::Message::user(std::move(user))};
}

double cost_of(const llm::Usage& usage, const config::ModelConfig& model) {
  if (!model.prices) return 0;
  const auto& p = *model.prices;
  const double cached = static_cast<double>(usage.cached);
  const double uncached = static_cast<double>(usage.input) - cached;
  const double cached_price = p.cached_input.value_or(p.input.value_or(0));
  return (uncached * p.input.value_or(0) + cached * cached_price +
          static_cast<double>(usage.output) * p.output.value_or(0)) /
         1e6;
}

std::vector<Arm> Evaluation::arms() const {
  if (baseline) return {Arm::baseline, Arm::with_skill};
  return {Arm::with_skill};
}

std::size_t Evaluation::index(const TrialKey& key) const {
  const std::size_t arm_count = baseline ? 2 : 1;
  const std::size_t arm = baseline ? static_cast<std::size_t>(key.arm) : 0;
  return ((key.model * arm_count + arm) * static_cast<std::size_t>(runs) +
          static_cast<std::size_t>(key.run)) *
             cases.size() +
         key.test_case;
}

Evaluation evaluate(const skill::SkillBundle& skill, const std::vector<cases::TestCase>& test_cases,
                    const EvalOptions& options, llm::ChatClient& client,
                    const checks::CheckEnvironment& checks_env, const Checkpoint& checkpoint) {
  Evaluation e;
  e.skill_name = skill.name();
  e.cases = test_cases;
  e.models = options.models;
  e.runs = std::max(1, options.runs);
  e.baseline = options.baseline;
  std::vector<TrialKey> keys;
  for (std::size_t m = 0; m < e.models.size(); ++m)
    for (Arm arm : e.arms())
      for (int run = 0; run < e.runs; ++run)
        for (std::size_t c = 0; c < e.cases.size(); ++c) keys.push_back({m, arm, run, c});
  e.trials.resize(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) e.trials[i].key = keys[i];

  std::mutex progress_mutex;
  std::size_t done = 0;
  parallel_for(
      keys.size(), options.jobs,
      [&](std::size_t i) {
        const TrialKey& key = keys[i];
        TrialResult
            t;  // filled here, published under the lock so checkpoints never see half a trial
        t.key = key;
        if (options.previous) {
          if (auto previous = options.previous(key)) {
            t = *previous;
            t.key = key;
          }
        }
        if (!t.completed) {
          const auto& model = e.models[key.model];
          const auto& test_case = e.cases[key.test_case];
          llm::ChatRequest request;
          request.messages = build_prompt(test_case, key.arm == Arm::with_skill ? &skill : nullptr,
                                          options.prompt);
          request.sampling = options.sampling;
          llm::CallOptions call;
          call.repeat = key.run;
          call.cancel = options.cancel;
          auto response = client.complete(model, request, call);
          if (!response && response.error().kind == llm::FailureKind::cancelled)
            return;  // not run: not counted
          t.completed = true;
          t.turns = 1;
          if (!response) {
            t.failure = response.error();
          } else {
            t.usage = response->usage;
            t.latency_ms = response->latency_ms;
            t.reported_model = response->model;
            t.answer = response->content;
            t.reasoning = response->reasoning;
            t.tool_calls = static_cast<int>(response->tool_calls.size());
            t.cost_usd = cost_of(response->usage, model.options);
            t.verdict = checks::score_case(
                test_case, checks::Answer{response->content, response->reasoning, {}}, checks_env);
          }
        }
        std::lock_guard lock(progress_mutex);
        e.trials[i] = t;
        if (options.on_trial) options.on_trial(t, ++done, keys.size());
        if (checkpoint) checkpoint(e);
      },
      options.cancel);
  e.interrupted = options.cancel && options.cancel->cancelled();
  for (const auto& t : e.trials) e.interrupted = e.interrupted || !t.completed;
  return e;
}

}  // namespace upskill::eval
