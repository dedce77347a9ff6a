// The evaluation engine: every model × arm × run × case asked and scored, concurrently, with its
// tokens, latency and cost (see evaluation.hpp).
#include "upskill/eval/evaluation.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

#include "upskill/core/enum_names.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/temp_dir.hpp"

namespace upskill::eval {

const char* const kBaseSystemPrompt =
    "You are an expert software engineer. Solve the user's task completely and correctly. When the "
    "task "
    "asks for files, give each file in its own fenced code block and name its path on the line "
    "before the "
    "block.";

namespace {
constexpr enum_names::Table<Arm, 2> kArms{
    {{Arm::baseline, "baseline"}, {Arm::with_skill, "with_skill"}}};
}  // namespace

std::string_view to_string(Arm arm) {
  return enum_names::name(kArms, arm);
}

std::optional<Arm> arm_from_string(std::string_view name) {
  return enum_names::parse(kArms, name);
}

namespace {
constexpr enum_names::Table<SkillDelivery, 2> kDeliveries{
    {{SkillDelivery::install, "install"}, {SkillDelivery::inline_prompt, "inline"}}};
}  // namespace

std::string_view to_string(SkillDelivery delivery) {
  return enum_names::name(kDeliveries, delivery);
}

std::optional<SkillDelivery> skill_delivery_from_string(std::string_view name) {
  return enum_names::parse(kDeliveries, name);
}

const std::vector<std::string>& skill_delivery_names() {
  static const std::vector<std::string> names = enum_names::all(kDeliveries);
  return names;
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
  return {llm::Message::system(std::move(system)), llm::Message::user(task_text(test_case))};
}

std::string task_text(const cases::TestCase& test_case) {
  std::string user = test_case.input;
  // upskill appends context files to the task as fenced blocks.
  for (const auto& [name, content] : test_case.context_files)
    user += fmt::format("\n\n{}:\n```\n{}\n```", name, content);
  return user;
}

void write_context_files(const cases::TestCase& test_case, const std::filesystem::path& workspace) {
  for (const auto& [name, content] : test_case.context_files)
    if (!cases::workspace_path_problem(name)) (void)files::write_atomic(workspace / name, content);
}

void run_agent_trial(TrialResult& t, const cases::TestCase& test_case,
                     std::vector<llm::Message> messages, const llm::ResolvedModel& model,
                     llm::ChatClient& client, const llm::CallOptions& call,
                     const EvalOptions& options, const checks::CheckEnvironment& checks_env) {
  // A fresh workspace per agent trial, removed when the trial has been scored.
  auto created = TempDir::create("upskill-ws");
  t.agent = true;
  if (!created) {
    t.completed = true;
    t.failure = llm::LlmFailure(llm::FailureKind::transport, 0, "cannot create a workspace");
    return;
  }
  const TempDir workspace = std::move(*created);
  write_context_files(test_case, workspace.path());  // in the prompt as well
  agent::AgentOutcome outcome = agent::run_agent(
      client, model, std::move(messages), workspace.path(), options.agent, call, options.sampling);
  if (outcome.failure && outcome.failure->kind == llm::FailureKind::cancelled) return;
  t.completed = true;
  t.usage = outcome.usage;
  t.latency_ms = outcome.latency_ms;
  t.turns = outcome.stats.turns;
  t.tool_calls = outcome.stats.tool_calls;
  t.tool_errors = outcome.stats.tool_errors;
  t.run_calls = outcome.stats.run_calls;
  t.tool_call_map = outcome.stats.call_map;
  t.tool_error_map = outcome.stats.error_map;
  t.hit_turn_limit = outcome.hit_turn_limit;
  t.reported_model = outcome.reported_model;
  t.answer = outcome.final_text;
  t.reasoning = outcome.reasoning;
  t.cost_usd = llm::cost_of(outcome.usage, model.options);
  if (outcome.failure) {
    t.failure = outcome.failure;
    return;
  }
  t.verdict = checks::score_case(
      test_case, checks::Answer{outcome.final_text, outcome.reasoning, workspace.path()},
      checks_env);
}

void run_cli_trial(TrialResult& t, const cases::TestCase& test_case,
                   const skill::SkillBundle& skill, bool with_skill, const agent::CliAgent& agent,
                   const EvalOptions& options, const checks::CheckEnvironment& checks_env) {
  t.agent = true;
  t.completed = true;
  auto created = TempDir::create("upskill-agent");
  if (!created) {
    t.failure = llm::LlmFailure(llm::FailureKind::agent_failed, 0, "cannot create a workspace");
    return;
  }
  const TempDir scratch = std::move(*created);
  const std::filesystem::path workspace = scratch.path() / "workspace";
  std::error_code ec;
  std::filesystem::create_directories(workspace, ec);
  // The case's files are in the workspace and in the prompt, as upskill does.
  write_context_files(test_case, workspace);
  std::string prompt = task_text(test_case);
  if (with_skill) {
    if (options.skill_delivery == SkillDelivery::inline_prompt) {
      prompt = agent::inline_skill_prompt(skill, prompt);
    } else if (auto installed = agent::install_skill_for(agent, skill, workspace); !installed) {
      t.failure = llm::LlmFailure(llm::FailureKind::agent_failed, 0,
                                  "cannot install the skill: " + installed.error().message);
      return;
    }
  }
  agent::CliRun run = agent::run_cli_agent(agent, prompt, workspace, scratch.path());
  t.transcript = std::move(run.transcript);
  t.agent_session = std::move(run.session);
  t.cost_source = run.cost_source;
  t.latency_ms = run.latency_ms;
  t.answer = run.reading.answer;
  t.usage = run.reading.usage;
  t.tokens_unavailable = !run.reading.tokens_available;
  t.cost_usd = run.reading.cost_usd;
  t.turns = run.reading.turns;
  t.tool_calls = run.reading.tool_calls;
  t.tool_call_map = run.reading.tool_call_map;
  t.reported_model = run.reading.model;
  if (agent.output != "text" || run.reading.tool_calls > 0)
    t.skill_use = agent::skill_use(run.reading, skill.name(),
                                   workspace / agent.skills_dir / skill.name(), workspace);
  if (run.failure) {
    // A missing program is the same for every trial of this agent: stop its other trials.
    t.failure = llm::LlmFailure(
        run.not_started ? llm::FailureKind::not_found : llm::FailureKind::agent_failed, 0,
        *run.failure);
    return;
  }
  // The checks see what the agent made, not the skill we installed for it.
  if (with_skill && options.skill_delivery != SkillDelivery::inline_prompt) {
    const std::filesystem::path installed = workspace / agent.skills_dir / skill.name();
    std::filesystem::remove_all(installed, ec);
    for (auto dir = installed.parent_path(); dir != workspace && std::filesystem::is_empty(dir, ec);
         dir = dir.parent_path())
      std::filesystem::remove(dir, ec);
  }
  t.verdict = checks::score_case(test_case, checks::Answer{t.answer, "", workspace}, checks_env);
}

namespace {

// A coding-agent trial of a model the session configured (an unconfigured one is an error).
void run_configured_cli_trial(TrialResult& t, const cases::TestCase& test_case,
                              const skill::SkillBundle& skill, bool with_skill,
                              const std::string& model, const EvalOptions& options,
                              const checks::CheckEnvironment& checks_env) {
  auto found = options.cli_agents.find(model);
  if (found == options.cli_agents.end()) {
    t.completed = true;
    t.failure = llm::LlmFailure(llm::FailureKind::not_found, 0,
                                "coding agent " + model + " is not configured");
    return;
  }
  run_cli_trial(t, test_case, skill, with_skill, found->second, options, checks_env);
}

}  // namespace

std::vector<Arm> Evaluation::arms() const {
  if (baseline) return {Arm::baseline, Arm::with_skill};
  return {Arm::with_skill};
}

Result<Shard> parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  int k = 0, n = 0;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    std::size_t used_k = 0, used_n = 0;
    k = std::stoi(text.substr(0, slash), &used_k);
    n = std::stoi(text.substr(slash + 1), &used_n);
    if (used_k != slash || used_n != text.size() - slash - 1) throw std::invalid_argument("junk");
  } catch (const std::exception&) {
    return fail(Error::usage(fmt::format("--shard {}: expected K/N, e.g. 2/4", text)));
  }
  if (n < 1 || k < 1 || k > n)
    return fail(Error::usage(fmt::format("--shard {}: K must be between 1 and N", text)));
  return Shard{k, n};
}

bool has_kernel_check(const cases::TestCase& test_case) {
  for (const auto& c : test_case.checks)
    if (c.kind == cases::CheckKind::kernel) return true;
  return false;
}

ShardDeal::ShardDeal(const Evaluation& e) : runs_(static_cast<std::size_t>(e.runs)) {
  if (!e.shard || e.shard->count <= 1) return;
  shard_ = e.shard;
  shard_->gpu = std::clamp(shard_->gpu, 0, shard_->count);
  // Kernel pairs among shards 1..gpu, the others among gpu+1..count (all of them when gpu is 0 or
  // count), each class numbered in its own order.
  kernel_.resize(e.cases.size());
  ordinal_.resize(e.cases.size());
  for (std::size_t c = 0; c < e.cases.size(); ++c) {
    kernel_[c] = shard_->gpu > 0 && has_kernel_check(e.cases[c]);
    ordinal_[c] = class_cases_[kernel_[c] ? 1 : 0]++;
  }
}

bool ShardDeal::holds(const TrialKey& key) const {
  if (!shard_) return true;
  const bool kernel = kernel_[key.test_case];
  int first = 1, shards = shard_->count;
  if (kernel) {
    shards = shard_->gpu;
  } else if (shard_->gpu > 0 && shard_->gpu < shard_->count) {
    first = shard_->gpu + 1;
    shards = shard_->count - shard_->gpu;
  }
  // Both arms of a (model, run, case) pair go to the same shard, pairs dealt out in turn.
  const std::size_t pair =
      (key.model * runs_ + static_cast<std::size_t>(key.run)) * class_cases_[kernel ? 1 : 0] +
      ordinal_[key.test_case];
  return static_cast<int>(pair % static_cast<std::size_t>(shards)) == shard_->index - first;
}

std::size_t Evaluation::index(const TrialKey& key) const {
  const std::size_t arm_count = baseline ? 2 : 1;
  const std::size_t arm = baseline ? static_cast<std::size_t>(key.arm) : 0;
  return ((key.model * arm_count + arm) * static_cast<std::size_t>(runs) +
          static_cast<std::size_t>(key.run)) *
             cases.size() +
         key.test_case;
}

void run_chat_trial(TrialResult& t, const cases::TestCase& test_case,
                    std::vector<llm::Message> messages, const llm::ResolvedModel& model,
                    llm::ChatClient& client, const llm::CallOptions& call,
                    const EvalOptions& options, const checks::CheckEnvironment& checks_env) {
  llm::ChatRequest request;
  request.messages = std::move(messages);
  request.sampling = options.sampling;
  auto response = client.complete(model, request, call);
  if (!response && response.error().kind == llm::FailureKind::cancelled)
    return;  // not run: not counted
  t.completed = true;
  t.turns = 1;
  if (!response) {
    t.failure = response.error();
    return;
  }
  t.usage = response->usage;
  t.latency_ms = response->latency_ms;
  t.reported_model = response->model;
  t.answer = response->content;
  t.reasoning = response->reasoning;
  t.tool_calls = static_cast<int>(response->tool_calls.size());
  t.cost_usd = llm::cost_of(response->usage, model.options);
  t.verdict = checks::score_case(
      test_case, checks::Answer{response->content, response->reasoning, {}}, checks_env);
}

namespace {

// The evaluation's shape before any trial: every key, in order (model, arm, run, case).
Evaluation shape_of(const skill::SkillBundle& skill, const std::vector<cases::TestCase>& test_cases,
                    const EvalOptions& options) {
  Evaluation e;
  e.skill_name = skill.name();
  e.cases = test_cases;
  e.models = options.models;
  e.runs = std::max(1, options.runs);
  e.baseline = options.baseline;
  e.shard = options.shard;
  for (std::size_t m = 0; m < e.models.size(); ++m)
    for (Arm arm : e.arms())
      for (int run = 0; run < e.runs; ++run)
        for (std::size_t c = 0; c < e.cases.size(); ++c) {
          TrialResult t;
          t.key = {m, arm, run, c};
          e.trials.push_back(std::move(t));
        }
  return e;
}

// Per model, the first definitive failure (a rejected key, an unknown model, an unreachable
// endpoint): the model's later trials are not sent.
class DefinitiveFailures {
 public:
  explicit DefinitiveFailures(std::size_t models) : first_(models) {}
  std::optional<llm::LlmFailure> of(std::size_t model) {
    std::lock_guard lock(mutex_);
    return first_[model];
  }
  void note(std::size_t model, const std::optional<llm::LlmFailure>& f) {
    if (!f || !f->definitive()) return;
    std::lock_guard lock(mutex_);
    if (!first_[model]) first_[model] = f;
  }

 private:
  std::mutex mutex_;
  std::vector<std::optional<llm::LlmFailure>> first_;
};

// One trial asked and scored, as its model and case say: a coding agent, agent mode or a chat.
// A trial the batch already has is taken as it is; one whose model already failed definitively is
// not sent. Left not completed when cancelled.
void run_trial(TrialResult& t, const Evaluation& e, const skill::SkillBundle& skill,
               const EvalOptions& options, llm::ChatClient& client,
               const checks::CheckEnvironment& checks_env, DefinitiveFailures& failures) {
  const TrialKey key = t.key;
  if (options.previous)
    if (auto previous = options.previous(key)) {
      t = *previous;
      t.key = key;
    }
  if (t.completed) return;
  if (auto cause = failures.of(key.model)) {
    t.completed = true;
    t.not_sent = true;
    t.failure = *cause;
    return;
  }
  const auto& model = e.models[key.model];
  const auto& test_case = e.cases[key.test_case];
  const bool with_skill = key.arm == Arm::with_skill;
  if (model.provider == "cli") {
    run_configured_cli_trial(t, test_case, skill, with_skill, model.name, options, checks_env);
  } else {
    llm::CallOptions call;
    call.repeat = key.run;
    call.cancel = options.cancel;
    auto messages = build_prompt(test_case, with_skill ? &skill : nullptr, options.prompt);
    const cases::Mode mode = options.mode.value_or(test_case.mode.value_or(
        test_case.verifiers_need_workspace() ? cases::Mode::agent : cases::Mode::chat));
    if (mode == cases::Mode::agent)
      run_agent_trial(t, test_case, std::move(messages), model, client, call, options, checks_env);
    else
      run_chat_trial(t, test_case, std::move(messages), model, client, call, options, checks_env);
  }
  failures.note(key.model, t.failure);
}

}  // namespace

Evaluation evaluate(const skill::SkillBundle& skill, const std::vector<cases::TestCase>& test_cases,
                    const EvalOptions& options, llm::ChatClient& client,
                    const checks::CheckEnvironment& checks_env, const Checkpoint& checkpoint) {
  Evaluation e = shape_of(skill, test_cases, options);
  const ShardDeal deal(e);
  std::vector<std::size_t> todo;  // the trials of this shard (all of them without one)
  for (std::size_t i = 0; i < e.trials.size(); ++i)
    if (deal.holds(e.trials[i].key)) todo.push_back(i);
  std::mutex progress_mutex;
  std::size_t done = 0;
  DefinitiveFailures failures(e.models.size());
  parallel_for(
      todo.size(), options.jobs,
      [&](std::size_t j) {
        const std::size_t i = todo[j];
        TrialResult t;  // filled here, published under the lock: checkpoints never see half a trial
        t.key = e.trials[i].key;
        run_trial(t, e, skill, options, client, checks_env, failures);
        if (!t.completed) return;  // cancelled: not run, not counted
        std::lock_guard lock(progress_mutex);
        e.trials[i] = t;
        if (options.on_trial) options.on_trial(t, ++done, todo.size());
        if (checkpoint) checkpoint(e, e.trials[i]);
      },
      options.cancel);
  e.interrupted = options.cancel && options.cancel->cancelled();
  for (const auto& t : e.trials)
    e.interrupted = e.interrupted || (!t.completed && deal.holds(t.key));
  return e;
}

}  // namespace upskill::eval
