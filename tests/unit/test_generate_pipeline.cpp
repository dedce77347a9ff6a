// The generate pipeline called as a library (gen::run_generate), with no CLI in between: the order
// of its events, what it saves, screening against the trace's solution, refinement with run logs,
// an invalid draft kept on disk, and write_and_screen_tests on its own.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model_access.hpp"
#include "scripted_server.hpp"
#include "support/temp_dir.hpp"
#include "upskill/gen/pipeline.hpp"

namespace upskill::gen {
namespace {

namespace fs = std::filesystem;
using testing::ScriptedServer;

// Every event, in order, as one short line.
class Recorder : public GenerateObserver {
 public:
  std::vector<std::string> events;
  void source_read(const fs::path&, const SourceInfo& s) override {
    events.push_back(s.trace ? "trace" : "skill");
  }
  void writing_skill(const llm::ResolvedModel& m) override { events.push_back("skill:" + m.name); }
  void skill_written(const GeneratedSkill& g) override {
    events.push_back("wrote:" + g.bundle.name());
  }
  void writing_tests(const llm::ResolvedModel& m) override { events.push_back("tests:" + m.name); }
  void screening(std::size_t n, bool solution) override {
    events.push_back(fmt::format("screening:{}:{}", n, solution));
  }
  void screened(const Screening& s) override {
    events.push_back((s.kept ? "kept:" : "dropped:") + s.case_id);
  }
  void evaluating(const std::vector<llm::ResolvedModel>& m, int attempts) override {
    events.push_back(fmt::format("evaluating:{}:{}", m.front().name, attempts));
  }
  void attempt_done(const AttemptRecord& r) override {
    events.push_back(fmt::format("attempt:{}", r.attempt));
  }
  void refined(const RefineResult& r) override { events.push_back("refined:" + r.stopped_because); }
  void no_tests_left() override { events.push_back("no tests"); }
};

const char* kSkill =
    R"({"name": "table-facts", "description": "Facts about the table. Use when asked about the table.", "body": "# Table\n\nThe answer is MAGIC.\n", "references": [], "scripts": []})";

const char* kTests = R"({"cases": [
  {"id": "magic", "input": "What is the answer?", "expected": {"contains": ["MAGIC"]}},
  {"id": "wrong", "input": "Which file?", "expected": {"contains": ["setup.py"]}},
  {"id": "easy", "input": "Anything.", "checks": [{"type": "not_contains", "value": "zebra"}]}]})";

Json script(const std::string& skill_reply) {
  return Json{
      {"rules",
       Json::array({{{"match", {{"model", "teacher"}}}, {"reply", {{"content", skill_reply}}}},
                    {{"match", {{"model", "writer"}, {"message", "test cases"}}},
                     {"reply", {{"content", kTests}}}},
                    {{"match", {{"model", "student"}, {"any_message", "The answer is MAGIC"}}},
                     {"reply", {{"content", "It is MAGIC."}}}},
                    {{"match", {{"model", "student"}}}, {"reply", {{"content", "No idea."}}}}})}};
}

// A configuration whose three models are the scripted server, and an OpenAI-chat trace whose final
// answer names MAGIC.
struct Fixture {
  ScriptedServer server;
  testing::TempDir tmp;
  config::Config config;
  llm::CurlTransport transport;
  llm::ChatClient client{transport};
  int connects = 0;  // how often a pipeline opened the client
  explicit Fixture(const std::string& skill_reply = kSkill) : server(script(skill_reply)) {
    server.start();
    std::string yaml =
        "skill_generation_model: teacher\ntest_gen_model: writer\n"
        "eval_model: student\nmodels:\n";
    for (const char* name : {"teacher", "writer", "student"})
      yaml +=
          fmt::format("  {}: {{provider: generic, base_url: \"{}\"}}\n", name, server.base_url());
    config = *config::parse_config(yaml, "upskill.config.yaml");
    config.skills_dir = tmp / "skills";
    config.runs_dir = tmp / "runs";
    tmp.write("trace.json", R"([{"role":"user","content":"what is the answer?"},)"
                            R"({"role":"assistant","content":"The answer is MAGIC."}])");
  }
  llm::ModelAccess access() { return testing::counted_access(config, client, connects); }
};

TEST(GeneratePipeline, ReadsTheTraceWritesScreensAndSavesWithoutTheCli) {
  Fixture f;
  GenerateRequest request;
  request.task = "answer questions about the table";
  request.from = f.tmp / "trace.json";
  request.evaluate = false;
  Recorder events;
  auto out = run_generate(request, f.access(), events);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->exit, ExitCode::ok);
  EXPECT_EQ(events.events, (std::vector<std::string>{
                               "trace", "skill:teacher", "wrote:table-facts", "tests:writer",
                               "screening:3:true", "kept:magic", "dropped:wrong", "dropped:easy"}));
  EXPECT_EQ(out->skill_dir, f.tmp / "skills/table-facts");
  EXPECT_EQ(out->tests, 1u);
  EXPECT_TRUE(out->has_digest);
  EXPECT_TRUE(out->validation_errors.empty());
  EXPECT_TRUE(fs::exists(out->skill_dir / "references/trace-digest.md"));
  const Json meta = Json::parse(testing::read_file(out->skill_dir / "skill_meta.json"));
  ASSERT_EQ(meta["tests"].size(), 1u);
  EXPECT_EQ(meta["tests"][0]["id"], "magic");
  const Json& md = meta["metadata"];
  EXPECT_EQ(md["generated_by"], "teacher");
  EXPECT_EQ(md["test_gen_model"], "writer");  // the test writer's role, from the config
  EXPECT_EQ(md["dropped_tests"].size(), 2u);
  EXPECT_EQ(md["dropped_tests"][0]["id"], "wrong");
  EXPECT_NE(md["dropped_tests"][0]["reason"].get<std::string>().find("solution fails it"),
            std::string::npos);
  EXPECT_EQ(md["dropped_tests"][1]["reason"], "an empty answer passes it");
  EXPECT_EQ(md["teacher_tokens"]["requests"], 2);
  EXPECT_EQ(md["source_trace"]["format"], "openai-chat");
  const std::string generated_at = md["generated_at"];
  EXPECT_EQ(generated_at.size(), 20u);  // 2026-12-03T13:46:06Z
  EXPECT_EQ(generated_at.back(), 'Z');
  // No evaluation was asked for: the students were never called.
  for (const auto& r : f.server.requests()) EXPECT_NE(r.json["model"], "student");
}

TEST(GeneratePipeline, EvaluatesRefinesAndLogsEachAttempt) {
  Fixture f;
  GenerateRequest request;
  request.task = "answer questions about the table";
  request.from = f.tmp / "trace.json";
  request.max_attempts = 2;
  Recorder events;
  auto out = run_generate(request, f.access(), events);
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_TRUE(out->refinement);
  EXPECT_EQ(out->refinement->stopped_because, "beneficial");
  const std::vector<std::string> tail(events.events.end() - 3, events.events.end());
  EXPECT_EQ(tail,
            (std::vector<std::string>{"evaluating:student:2", "attempt:1", "refined:beneficial"}));
  const Json meta = Json::parse(testing::read_file(out->skill_dir / "skill_meta.json"));
  EXPECT_EQ(meta["metadata"]["test_pass_rate"], 1.0);
  const std::string batch = meta["metadata"]["refinement"]["attempts"][0]["batch_id"];
  EXPECT_TRUE(fs::exists(f.tmp / "runs" / batch / "batch_summary.json")) << batch;
  EXPECT_EQ(meta["metadata"]["refinement"]["eval_models"], Json::array({"student"}));
}

TEST(GeneratePipeline, AnInvalidDraftIsSavedAndExitsOne) {
  // A description over 1,024 characters stays invalid through the repair round-trip.
  Json bad = Json::parse(kSkill);
  bad["description"] = std::string(1100, 'd');
  Fixture f(bad.dump());
  GenerateRequest request;
  request.task = "answer questions about the table";
  Recorder events;
  auto out = run_generate(request, f.access(), events);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->exit, ExitCode::gate_failed);
  ASSERT_FALSE(out->draft_errors.empty());
  EXPECT_TRUE(fs::exists(out->skill_dir / "SKILL.md"));
  EXPECT_EQ(events.events.back(), "wrote:table-facts");  // no tests were written for it
}

TEST(GeneratePipeline, BadInputIsAnErrorValue) {
  Fixture f;
  GenerateRequest request;
  request.task = "t";
  request.from = f.tmp.path();  // a folder without SKILL.md
  Recorder events;
  auto out = run_generate(request, f.access(), events);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, ExitCode::usage);
  EXPECT_NE(out.error().message.find("without SKILL.md"), std::string::npos);
  request.from.reset();
  request.teacher_model = "no-such-model";
  out = run_generate(request, f.access(), events);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, ExitCode::usage);
  EXPECT_TRUE(f.server.requests().empty());  // nothing was asked before the models resolved
  EXPECT_EQ(f.connects,
            0);  // and the client was never opened (a --record cassette stays as it was)
}

TEST(GeneratePipeline, TheSkillIsOnDiskBeforeTestsAreWritten) {
  Fixture f;
  f.config.test_gen_model = "no-tests";  // not on the server: the test writer's call fails
  f.config.models.push_back(*f.config.find_model("writer"));
  f.config.models.back().name = "no-tests";
  f.config.models.back().model = "no-tests";
  GenerateRequest request;
  request.task = "answer questions about the table";
  Recorder events;
  auto out = run_generate(request, f.access(), events);
  ASSERT_FALSE(out);
  EXPECT_TRUE(fs::exists(f.tmp / "skills/table-facts/SKILL.md"));  // nothing computed is lost
}

TEST(WriteAndScreenTests, ScreensAgainstAnEmptyAnswerAndSavesSpecs) {
  Fixture f;
  const llm::ResolvedModel writer = *f.access().resolve("writer");
  TestsRequest request;
  request.task = "answer questions about the table";
  request.spec_dir = f.tmp / "skill";
  Recorder events;
  auto out = write_and_screen_tests(request, {&writer, &f.client, nullptr, {}},
                                    checks::CheckEnvironment{}, events);
  ASSERT_TRUE(out) << out.error().message;
  // Without a trace only the empty answer screens: "easy" goes, "wrong" cannot be caught.
  std::vector<std::string> ids;
  for (const auto& c : out->cases) ids.push_back(c.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"magic", "wrong"}));
  EXPECT_EQ(events.events, (std::vector<std::string>{"tests:writer", "screening:3:false",
                                                     "kept:magic", "kept:wrong", "dropped:easy"}));
}

TEST(WriteAndScreenTests, SpecFilesNeedAFolder) {
  const Json reply = {
      {"cases", Json::array({{{"id", "k"},
                              {"input", "write my_op"},
                              {"checks", Json::array({{{"type", "kernel"},
                                                       {"stages", Json::array({"extract"})},
                                                       {"spec", "specs/my_op.py"}}})}}})},
      {"spec_files", Json::array({{{"path", "my_op.py"}, {"content", "# spec\n"}}})}};
  ScriptedServer server(Json{{"rules", Json::array({{{"reply", {{"content", reply.dump()}}}}})}});
  server.start();
  llm::CurlTransport transport;
  llm::ChatClient client(transport);
  llm::ResolvedModel m;
  m.name = m.spec = m.model = "writer";
  m.base_url = server.base_url();
  TestsRequest request;
  request.task = "a CUDA kernel";
  Recorder events;
  auto out = write_and_screen_tests(request, {&m, &client, nullptr, {}}, checks::CheckEnvironment{},
                                    events);
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("name a folder"), std::string::npos);
  testing::TempDir tmp;
  request.spec_dir = tmp / "skill";
  out = write_and_screen_tests(request, {&m, &client, nullptr, {}}, checks::CheckEnvironment{},
                               events);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(testing::read_file(tmp / "skill/specs/my_op.py"), "# spec\n");
  EXPECT_EQ(out->spec_files.at("specs/my_op.py"), "# spec\n");
}

}  // namespace
}  // namespace upskill::gen
