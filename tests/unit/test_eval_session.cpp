// The evaluation session called as a library (eval::run_session), with no CLI in between: loading,
// the student role's default, run logs, result files written before verdicts, gates, resume, and
// the order of exit statuses.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <thread>

#include "model_access.hpp"
#include "scripted_server.hpp"
#include "support/temp_dir.hpp"
#include "upskill/eval/batch.hpp"
#include "upskill/eval/merge.hpp"
#include "upskill/eval/session.hpp"

namespace upskill::eval {
namespace {

namespace fs = std::filesystem;
using testing::ScriptedServer;

class Counter : public SessionObserver {
 public:
  std::size_t trials = 0, started_cases = 0, resumed_with = 0;
  bool finished_seen = false;
  void resumed(const fs::path&, std::size_t done) override { resumed_with = done; }
  void started(const Evaluation& plan) override { started_cases = plan.cases.size(); }
  void trial_done(const Evaluation&, const TrialResult&, std::size_t, std::size_t) override {
    ++trials;
  }
  void finished() override { finished_seen = true; }
};

// Students answer MAGIC only with the skill in the prompt. While `failing`, no rule matches case
// "down", so the server answers it with a 400 (a failed call, not retried).
Json script(bool failing) {
  const Json only = failing ? Json{{"message", "case up"}} : Json::object();
  Json magic = only;
  magic["any_message"] = "Say MAGIC";
  return Json{{"rules", Json::array({{{"match", magic}, {"reply", {{"content", "MAGIC"}}}},
                                     {{"match", only}, {"reply", {{"content", "no"}}}}})}};
}

struct Fixture {
  testing::TempDir tmp;
  config::Config config;
  llm::CurlTransport transport;
  llm::ChatClient client{transport};
  int connects = 0;  // how often a pipeline opened the client
  Fixture() {
    tmp.write("skill/SKILL.md",
              "---\nname: magic\ndescription: Says the word. Use when asked for it.\n---\n"
              "Say MAGIC.\n");
    tmp.write("skill/skill_meta.json",
              R"({"metadata": {}, "tests": [
                {"id": "up", "input": "case up", "expected": {"contains": ["MAGIC"]}},
                {"id": "down", "input": "case down", "expected": {"contains": ["MAGIC"]}}]})");
  }
  void use(const ScriptedServer& server) {
    config = *config::parse_config(
        fmt::format("eval_model: student\nmodels:\n  student: {{provider: generic, base_url: "
                    "\"{}\"}}\n",
                    server.base_url()),
        "upskill.config.yaml");
    config.runs_dir = tmp / "runs";
  }
  SessionRequest request() const {
    SessionRequest r;
    r.skill_dir = tmp / "skill";
    return r;
  }
  llm::ModelAccess access() { return testing::counted_access(config, client, connects); }
};

// The skill's delivery to coding agents is named in flags, request files and plans by one table.
TEST(EvalSession, SkillDeliveryNamesRoundTrip) {
  EXPECT_EQ(skill_delivery_names(), (std::vector<std::string>{"install", "inline"}));
  for (const std::string& name : skill_delivery_names())
    EXPECT_EQ(to_string(*skill_delivery_from_string(name)), name);
  EXPECT_FALSE(skill_delivery_from_string("prompt"));
  SessionRequest request;
  request.skill_delivery = SkillDelivery::inline_prompt;
  request.mode = cases::Mode::agent;
  const Json j = to_json(request);
  EXPECT_EQ(j["skill_delivery"], "inline");
  EXPECT_EQ(j["mode"], "agent");
}

TEST(EvalSession, RunsWritesResultFilesAndAppliesGates) {
  ScriptedServer server(script(false));
  server.start();
  Fixture f;
  f.use(server);
  SessionRequest request = f.request();  // no model named: the config's eval_model
  request.gates = {0.5, 0.9};
  request.result_files.push_back(
      {f.tmp / "out/summary.txt", false, [](const EvalSummary& s, const Evaluation&) {
         return fmt::format("with {:.2f}\n", s.models.at(0).with_skill.pass_rate);
       }});
  Counter counter;
  auto out = run_session(request, f.access(), counter);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(counter.started_cases, 2u);
  EXPECT_EQ(counter.trials, 4u);  // 2 cases × 2 arms
  EXPECT_TRUE(counter.finished_seen);
  EXPECT_EQ(out->evaluation.models.at(0).name, "student");
  EXPECT_EQ(testing::read_file(f.tmp / "out/summary.txt"), "with 1.00\n");
  EXPECT_TRUE(out->logged);
  EXPECT_TRUE(fs::exists(out->batch_dir / "batch_summary.json"));
  EXPECT_EQ(out->batch_dir.parent_path(), f.tmp / "runs");
  ASSERT_EQ(out->gates.size(), 2u);
  EXPECT_EQ(out->gates[0].kind, GateResult::Kind::min_lift);
  EXPECT_TRUE(out->gates[0].passed) << out->gates[0].value;
  EXPECT_EQ(out->gates[1].kind, GateResult::Kind::fail_under);
  EXPECT_TRUE(out->gates[1].passed);
  EXPECT_EQ(out->exit, ExitCode::ok);

  request.gates = {std::nullopt, 1.01};  // unreachable
  request.log_runs = false;
  f.config.runs_dir = f.tmp / "unused";  // batch ids are to the second: a fresh folder to check
  out = run_session(request, f.access(), counter);
  ASSERT_TRUE(out);
  EXPECT_FALSE(out->logged);
  EXPECT_FALSE(fs::exists(out->batch_dir));
  EXPECT_FALSE(out->gates.at(0).passed);
  EXPECT_EQ(out->exit, ExitCode::gate_failed);

  request.baseline = false;
  request.gates = {0.0, std::nullopt};
  out = run_session(request, f.access(), counter);
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->gates.at(0).no_baseline);
  EXPECT_EQ(out->exit, ExitCode::gate_failed);
}

TEST(EvalSession, ResumeRunsOnlyWhatIsMissing) {
  Fixture f;
  std::string batch;
  {
    ScriptedServer failing(script(true));
    failing.start();
    f.use(failing);
    Counter counter;
    auto out = run_session(f.request(), f.access(), counter);
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_EQ(out->summary.errors, 2);  // case "down" in both arms
    EXPECT_EQ(out->exit, ExitCode::infrastructure);
    batch = out->batch_id;
  }
  ScriptedServer healthy(script(false));
  healthy.start();
  f.use(healthy);
  SessionRequest request = f.request();
  request.resume = batch;
  Counter counter;
  auto out = run_session(request, f.access(), counter);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(counter.resumed_with, 2u);
  EXPECT_EQ(healthy.requests().size(), 2u);  // only the two errored trials were asked again
  EXPECT_EQ(out->batch_id, batch);
  EXPECT_EQ(out->summary.errors, 0);
  EXPECT_EQ(out->exit, ExitCode::ok);
  EXPECT_DOUBLE_EQ(out->summary.models.at(0).with_skill.pass_rate, 1.0);
}

// Batch ids: the time to the second, then a random part; folders created exclusively, so that
// batches started at once — here 8 threads × 25 — never share a folder.
TEST(Batches, IdsSortByTimeAndConcurrentCreationNeverCollides) {
  const auto when = std::chrono::system_clock::now();
  const std::string id = make_batch_id(when);
  EXPECT_TRUE(
      std::regex_match(id, std::regex(R"(\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}_[a-z0-9]{6})")))
      << id;
  EXPECT_EQ(id.substr(0, 19), make_batch_id(when).substr(0, 19));
  EXPECT_NE(id, make_batch_id(when));
  testing::TempDir tmp;
  std::vector<std::vector<std::string>> made(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < made.size(); ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 25; ++k)
        if (auto b = create_batch(tmp / "runs")) made[i].push_back(b->id);
    });
  for (auto& t : threads) t.join();
  std::set<std::string> ids;
  for (const auto& list : made) ids.insert(list.begin(), list.end());
  EXPECT_EQ(ids.size(), 200u);
  for (const auto& b : ids) EXPECT_TRUE(fs::exists(tmp / "runs" / b / kBatchLockFile)) << b;
  auto taken = create_named_batch(tmp / "runs", *ids.begin());
  ASSERT_FALSE(taken);
  EXPECT_NE(taken.error().message.find("exists already"), std::string::npos);
}

// --resume takes the batch's lock: while another writer holds it the resume is refused, naming
// the holder, and nothing is run or written.
TEST(EvalSession, ResumeRefusedWhileAnotherProcessWritesTheBatch) {
  Fixture f;
  ScriptedServer server(script(true));
  server.start();
  f.use(server);
  Counter counter;
  auto first = run_session(f.request(), f.access(), counter);
  ASSERT_TRUE(first) << first.error().message;
  auto held = files::FileLock::try_acquire(first->batch_dir / kBatchLockFile, "batch");
  ASSERT_TRUE(held);
  const std::size_t asked = server.request_count();
  SessionRequest request = f.request();
  request.resume = first->batch_id;
  auto second = run_session(request, f.access(), counter);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ExitCode::usage);
  EXPECT_NE(second.error().message.find("is in use by another upskill process (pid "),
            std::string::npos)
      << second.error().message;
  EXPECT_EQ(server.request_count(), asked);
  held->release();
  EXPECT_TRUE(run_session(request, f.access(), counter));
}

// --resume of a batch with another evaluation's arguments is refused, every difference named.
TEST(EvalSession, ResumeRefusesAnotherEvaluationNamingWhatDiffers) {
  Fixture f;
  ScriptedServer server(script(true));
  server.start();
  f.use(server);
  Counter counter;
  auto first = run_session(f.request(), f.access(), counter);
  ASSERT_TRUE(first) << first.error().message;
  SessionRequest request = f.request();
  request.resume = first->batch_id;
  request.runs = 3;
  request.seed = 7;
  request.baseline = false;
  f.tmp.write("other.json",
              R"([{"id": "up", "input": "case up", "expected": {"contains": ["MAGIC!"]}},
                               {"id": "new", "input": "x", "expected": {"contains": ["y"]}}])");
  request.tests = f.tmp / "other.json";
  const std::size_t asked = server.request_count();
  auto refused = run_session(request, f.access(), counter);
  ASSERT_FALSE(refused);
  const std::string& m = refused.error().message;
  EXPECT_EQ(refused.error().code, ExitCode::usage);
  for (const char* part :
       {"this request is not the batch's evaluation", "tests: only the batch has case(s) down",
        "tests: only this request has case(s) new",
        "tests: case(s) changed since the batch began: up", "runs: 1 in the batch, 3 requested",
        "seed: 20261202 in the batch, 7 requested (--seed 20261202)",
        "arms: baseline and with skill in the batch, with skill only (--no-baseline) requested"})
    EXPECT_NE(m.find(part), std::string::npos) << part << "\n" << m;
  EXPECT_EQ(server.request_count(), asked);
  // The plan it was started with stays the batch's.
  auto plan = read_plan(first->batch_dir);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->shape.runs, 1);
}

// A skill whose SKILL.md changed since its batch began is another evaluation, and so is one with
// other agent settings; a folder that holds no run logs is not resumed (nor written into).
TEST(EvalSession, ResumeRefusesAChangedSkillAndAFolderThatIsNoBatch) {
  Fixture f;
  ScriptedServer server(script(true));
  server.start();
  f.use(server);
  Counter counter;
  auto first = run_session(f.request(), f.access(), counter);
  ASSERT_TRUE(first) << first.error().message;
  f.tmp.write("skill/SKILL.md",
              "---\nname: magic\ndescription: Says the word. Use when asked for it.\n---\n"
              "Say MAGIC, loudly.\n");
  SessionRequest request = f.request();
  request.resume = first->batch_id;
  request.max_turns = 3;
  auto refused = run_session(request, f.access(), counter);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("skill content: the skill's SKILL.md or files changed"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("--max-turns: 12 in the batch, 3 requested"),
            std::string::npos)
      << refused.error().message;
  request.resume = (f.tmp / "skill").string();
  auto not_a_batch = run_session(request, f.access(), counter);
  ASSERT_FALSE(not_a_batch);
  EXPECT_NE(not_a_batch.error().message.find("not a batch of run logs"), std::string::npos);
  EXPECT_FALSE(fs::exists(f.tmp / "skill" / kBatchLockFile));
}

// Shards are merged only once nobody writes them: a shard whose lock is held is refused, naming
// its holder.
TEST(EvalSession, AMergeRefusesAShardStillBeingWritten) {
  Fixture f;
  ScriptedServer server(script(false));
  server.start();
  f.use(server);
  Counter counter;
  SessionRequest request = f.request();
  request.shard = Shard{1, 1};
  auto shard = run_session(request, f.access(), counter);
  ASSERT_TRUE(shard) << shard.error().message;
  MergeRequest merge;
  merge.shards = {shard->batch_dir};
  merge.runs_dir = f.tmp / "merged";
  {
    auto held = files::FileLock::try_acquire(shard->batch_dir / kBatchLockFile, "batch");
    ASSERT_TRUE(held);
    auto refused = merge_shards(merge);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("is still being written by an upskill process (pid "),
              std::string::npos)
        << refused.error().message;
  }
  auto merged = merge_shards(merge);
  ASSERT_TRUE(merged) << merged.error().message;
  EXPECT_EQ(merged->exit, ExitCode::ok);
  EXPECT_TRUE(merged->logged);
}

TEST(EvalSession, InMemorySkillAndCasesAndBadInput) {
  ScriptedServer server(script(false));
  server.start();
  Fixture f;
  f.use(server);
  SessionRequest request;
  request.skill = *skill::SkillBundle::load(f.tmp / "skill");
  request.cases = std::vector<cases::TestCase>{request.skill->tests().at(0)};
  request.log_runs = false;
  Counter counter;
  auto out = run_session(request, f.access(), counter);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->evaluation.cases.size(), 1u);

  request.cases = std::vector<cases::TestCase>{};
  out = run_session(request, f.access(), counter);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, ExitCode::usage);
  EXPECT_NE(out.error().message.find("no test cases"), std::string::npos);

  // Bad input never opens the client (a --record cassette stays as it was).
  const int connects = f.connects;
  request = f.request();
  request.models = {"no-such-model"};
  const std::size_t before = server.requests().size();
  out = run_session(request, f.access(), counter);
  ASSERT_FALSE(out);
  EXPECT_EQ(server.requests().size(), before);

  request = f.request();
  request.resume = "no-such-batch";
  out = run_session(request, f.access(), counter);
  ASSERT_FALSE(out);
  EXPECT_EQ(f.connects, connects);
}

TEST(EvalSession, ExitOrder) {
  SessionOutcome o;
  GateResult gate;
  gate.kind = GateResult::Kind::fail_under;
  gate.model = "m";
  gate.threshold = 1.0;
  o.gates.push_back(gate);
  EXPECT_EQ(session_exit(o), ExitCode::gate_failed);
  o.write_errors.push_back(Error::usage("x: cannot write"));
  EXPECT_EQ(session_exit(o), ExitCode::usage);
  o.summary.errors = 1;
  EXPECT_EQ(session_exit(o), ExitCode::infrastructure);
  o.summary.errors = 0;
  o.gpu_required_missing = true;
  EXPECT_EQ(session_exit(o), ExitCode::infrastructure);
  o.evaluation.interrupted = true;
  EXPECT_EQ(session_exit(o), ExitCode::interrupted);
}

}  // namespace
}  // namespace upskill::eval
