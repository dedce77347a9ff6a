// Generation against our scripted teacher on loopback: reading replies, the repair round-trip,
// test generation and binding to shipped specs, screening, and the refinement loop (keeps the best
// attempt, no plateau stop on the first attempt, baseline run once, full failure reasons sent).
#include <gtest/gtest.h>

#include "scripted_server.hpp"
#include "support/temp_dir.hpp"
#include "upskill/cases/test_suite.hpp"
#include "upskill/gen/case_writer.hpp"
#include "upskill/gen/refine.hpp"
#include "upskill/gen/screening.hpp"

namespace upskill::gen {
namespace {

using testing::ScriptedServer;

llm::ResolvedModel model_at(const ScriptedServer& server, const std::string& name) {
  llm::ResolvedModel m;
  m.name = name;
  m.spec = name;
  m.base_url = server.base_url();
  m.model = name;
  return m;
}

Json skill_json(const std::string& body, const std::string& description = "Does X. Use when X.") {
  return {{"name", "demo-skill"},
          {"description", description},
          {"body", body},
          {"references", Json::array({{{"path", "details.md"}, {"content", "# Details\n"}}})},
          {"scripts", Json::array({{{"path", "scripts/run.sh"}, {"content", "#!/bin/sh\n"}}})}};
}

TEST(SkillReply, JsonFencedJsonSkillMdAndGarbage) {
  std::vector<std::string> notes;
  Json j = skill_json("Do it.");
  j["name"] = "Bad Name!";
  j["references"].push_back({{"path", "../escape.md"}, {"content", "x"}});
  auto b = parse_skill_reply(j.dump(), notes);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->name(), "bad-name");
  EXPECT_EQ(b->files.count("references/details.md"), 1u);
  EXPECT_TRUE(b->files.at("scripts/run.sh").executable);
  EXPECT_EQ(b->files.size(), 2u);  // the escaping path was dropped
  EXPECT_EQ(notes.size(), 2u);

  notes.clear();
  b = parse_skill_reply("Here you go:\n```json\n" + skill_json("Fenced.").dump(2) + "\n```\n",
                        notes);
  ASSERT_TRUE(b);
  EXPECT_NE(b->body.find("Fenced."), std::string::npos);

  notes.clear();
  b = parse_skill_reply(
      "Sure!\n````markdown\n---\nname: text-skill\ndescription: From text. Use when testing.\n---\n"
      "# Body\n````\n",
      notes);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->name(), "text-skill");
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.back().find("SKILL.md text"), std::string::npos);

  EXPECT_FALSE(parse_skill_reply("I cannot help with that.", notes));
}

TEST(GenerateSkill, RepairsAnInvalidSkillOnceAndSendsTheDigest) {
  ScriptedServer server(
      Json{{"rules",
            Json::array({{{"name", "repair"},
                          {"match", {{"message", "fails validation"}}},
                          {"reply", {{"content", skill_json("Fixed body.").dump()}}}},
                         {{"name", "draft"},
                          {"match", {{"message", "Create a skill document"}}},
                          {"reply",
                           {{"content", skill_json("Draft.", std::string(1100, 'd')).dump()},
                            {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 50}}}}}}})}});
  server.start();
  llm::CurlTransport transport;
  llm::ChatClient client(transport);
  const llm::ResolvedModel teacher_model = model_at(server, "teacher");
  Teacher teacher{&teacher_model, &client, nullptr, {}};
  trace::TraceDigest digest;
  digest.text = "# Digest\nFINAL-FACT: cuda-capabilities per kernel\n";
  SkillRequest request;
  request.task = "write kernel-builder projects";
  request.examples = {"an RMSNorm kernel"};
  request.digest = &digest;
  auto out = generate_skill(request, teacher);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->repairs, 1);
  EXPECT_EQ(out->requests, 2);
  EXPECT_TRUE(out->validation.empty());
  EXPECT_NE(out->bundle.body.find("Fixed body."), std::string::npos);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  const std::string first = requests[0].body;
  EXPECT_NE(first.find("FINAL-FACT"), std::string::npos);
  EXPECT_NE(first.find("an RMSNorm kernel"), std::string::npos);
  EXPECT_NE(first.find("json_schema"), std::string::npos);  // structured output was asked for
  // The repair request carries the validator's words.
  EXPECT_NE(requests[1].body.find("Description exceeds 1024 character limit"), std::string::npos);
}

TEST(GenerateSkill, InvalidAfterRepairIsReportedNotHidden) {
  const std::string bad = skill_json("Body.", std::string(1100, 'd')).dump();
  ScriptedServer server(Json{{"rules", Json::array({{{"reply", {{"content", bad}}}}})}});
  server.start();
  llm::CurlTransport transport;
  llm::ChatClient client(transport);
  const llm::ResolvedModel teacher_model = model_at(server, "teacher");
  auto out = generate_skill({"task", {}, nullptr, nullptr}, {&teacher_model, &client, nullptr, {}});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->repairs, 1);
  ASSERT_FALSE(out->validation.empty());
  EXPECT_NE(out->validation[0].find("1024"), std::string::npos);
}

TEST(GenerateTests, BindsShippedSpecsAndDropsWhatCannotRun) {
  const Json cases = {
      {"cases",
       Json::array(
           {{{"id", "rms"},
             {"input", "write rms_norm"},
             {"checks", Json::array({{{"type", "kernel"},
                                      {"stages", Json::array({"extract", "layout"})},
                                      {"backend", "cpu"},
                                      {"spec", "kernels/specs/rmsnorm.py"}}})}},
            {{"id", "own-spec"},
             {"input", "write my_op"},
             {"checks", Json::array({{{"type", "kernel"},
                                      {"stages", Json::array({"extract"})},
                                      {"spec", "specs/my_op.py"}}})}},
            {{"id", "lost-spec"},
             {"input", "write x"},
             {"checks", Json::array({{{"type", "kernel"},
                                      {"stages", Json::array({"extract"})},
                                      {"spec", "specs/nowhere.py"}}})}},
            {{"id", "text"},
             {"input", "q"},
             {"expected", {{"contains", Json::array({"a"})}}},
             {"rationale", "an extra key"}},
            {{"id", "text"}, {"input", "q2"}, {"expected", {{"contains", Json::array({"b"})}}}},
            {{"id", "nothing"}, {"input", "q3"}},
            "not an object"})},
      {"spec_files", Json::array({{{"path", "my_op.py"}, {"content", "# spec\n"}}})}};
  ScriptedServer server(Json{{"rules", Json::array({{{"reply", {{"content", cases.dump()}}}}})}});
  server.start();
  llm::CurlTransport transport;
  llm::ChatClient client(transport);
  const llm::ResolvedModel m = model_at(server, "teacher");
  TestRequest request;
  request.task = "CUDA kernels with kernel-builder";
  auto out = generate_tests(request, {&m, &client, nullptr, {}});
  ASSERT_TRUE(out) << out.error().message;
  std::vector<std::string> ids;
  for (const auto& c : out->cases) ids.push_back(c.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"rms", "own-spec", "text", "text-2"}));
  EXPECT_EQ(out->spec_files.count("specs/rmsnorm.py"), 1u);
  EXPECT_EQ(out->spec_files.at("specs/my_op.py"), "# spec\n");
  const auto& k = std::get<cases::KernelParams>(out->cases[0].checks[0].params);
  EXPECT_EQ(*k.spec, "specs/rmsnorm.py");
  ASSERT_EQ(out->dropped.size(), 3u);
  EXPECT_NE(out->dropped[0].find("specs/nowhere.py"), std::string::npos);
  // Kernel work: the shipped cases were offered to the teacher.
  EXPECT_NE(server.requests()[0].body.find("rmsnorm-bf16-sm90"), std::string::npos);

  ScriptedServer empty(Json{{"rules", Json::array({{{"reply", {{"content", "no tests"}}}}})}});
  empty.start();
  const llm::ResolvedModel e = model_at(empty, "teacher");
  EXPECT_FALSE(generate_tests(request, {&e, &client, nullptr, {}}));
}

TEST(ScreenTests, DropsWhatTheSolutionFailsOrAnEmptyAnswerPasses) {
  auto suite = cases::parse_test_suite(R"({"cases": [
    {"id": "right", "input": "q", "expected": {"contains": ["cuda-capabilities"]}},
    {"id": "wrong", "input": "q", "expected": {"contains": ["setup.py"]}},
    {"id": "trivial", "input": "q", "checks": [{"type": "not_contains", "value": "zebra"}]}]})",
                                       "t.json");
  ASSERT_TRUE(suite);
  std::vector<cases::TestCase> tests = suite->cases;
  Solution solution;
  solution.answer.text = "Put cuda-capabilities under [kernel.x].";
  const auto verdicts = screen_tests(tests, &solution, checks::CheckEnvironment{});
  ASSERT_EQ(verdicts.size(), 3u);
  EXPECT_TRUE(verdicts[0].kept);
  EXPECT_FALSE(verdicts[1].kept);
  EXPECT_NE(verdicts[1].reason.find("solution fails it"), std::string::npos);
  EXPECT_NE(verdicts[1].reason.find("setup.py"), std::string::npos);
  EXPECT_FALSE(verdicts[2].kept);
  EXPECT_EQ(verdicts[2].reason, "an empty answer passes it");
  ASSERT_EQ(tests.size(), 1u);
  EXPECT_EQ(tests[0].id, "right");
}

TEST(SolutionFromTrace, FinalFilesAndLastWords) {
  auto t = trace::parse_trace_text(
      R"([{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"a/b.txt\",\"content\":\"B\"}"}}]},{"role":"tool","tool_call_id":"c","content":"ok"},{"role":"assistant","content":"All done."}])",
      "t.json");
  ASSERT_TRUE(t);
  testing::TempDir ws;
  auto s = solution_from_trace(*t, ws / "solution");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->files, 1u);
  EXPECT_EQ(testing::read_file(ws / "solution/a/b.txt"), "B");
  EXPECT_TRUE(s->answer.text.starts_with("All done."));
  auto nothing = trace::parse_trace_text(R"([{"role":"user","content":"go"}])", "u.json");
  ASSERT_TRUE(nothing);
  EXPECT_FALSE(solution_from_trace(*nothing, ws / "none"));
}

// Three cases. The baseline passes A and B. VERSION-1 of the skill passes A and B (no lift),
// VERSION-2 only A (worse), VERSION-3 only A again (a plateau): the loop must keep VERSION-1.
Json refine_script() {
  Json rules = Json::array();
  auto student = [&](const std::string& version, const std::string& c, bool pass) {
    Json match = {{"model", "student"}, {"message", "^case " + c + "$"}};
    if (!version.empty()) match["any_message"] = "## Skill:[\\s\\S]*" + version;
    rules.push_back({{"match", match},
                     {"reply",
                      {{"content", pass ? "MAGIC-" + c : "no idea"},
                       {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}}}});
  };
  for (const std::string c : {"A", "B", "C"}) {
    student("VERSION-1", c, c != "C");
    student("VERSION-2", c, c == "A");
    student("VERSION-3", c, c == "A");
    student("", c, c != "C");
  }
  rules.push_back({{"match", {{"model", "teacher"}, {"any_message", "VERSION-2"}}},
                   {"reply", {{"content", skill_json("VERSION-3 body").dump()}}}});
  rules.push_back({{"match", {{"model", "teacher"}, {"any_message", "VERSION-1"}}},
                   {"reply", {{"content", skill_json("VERSION-2 body").dump()}}}});
  return {{"rules", rules}};
}

TEST(RefineLoop, KeepsTheBestNotTheLastAndReusesTheBaseline) {
  ScriptedServer server(refine_script());
  server.start();
  llm::CurlTransport transport;
  llm::ChatClient client(transport);
  const llm::ResolvedModel teacher_model = model_at(server, "teacher");
  const llm::ResolvedModel student = model_at(server, "student");
  std::vector<std::string> notes;
  auto initial = parse_skill_reply(skill_json("VERSION-1 body").dump(), notes);
  ASSERT_TRUE(initial);
  auto suite = cases::parse_test_suite(R"([
    {"id": "A", "input": "case A", "expected": {"contains": ["MAGIC-A"]}},
    {"id": "B", "input": "case B", "expected": {"contains": ["MAGIC-B"]}},
    {"id": "C", "input": "case C", "expected": {"contains": ["MAGIC-C"]}}])",
                                       "t.json");
  ASSERT_TRUE(suite);
  RefineOptions options;
  options.max_attempts = 3;
  options.eval.models = {student};
  options.eval.jobs = 2;
  int callbacks = 0;
  options.on_attempt = [&](const AttemptRecord&, const eval::Evaluation&,
                           const eval::EvalSummary&) {
    return "batch" + std::to_string(++callbacks);
  };
  auto r = refine_loop(*initial, suite->cases, {"task", {}, nullptr, nullptr},
                       {&teacher_model, &client, nullptr, {}}, client, checks::CheckEnvironment{},
                       options);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->attempts.size(), 3u) << r->stopped_because;
  EXPECT_EQ(r->stopped_because, "plateau");  // attempts 2 and 3 both pass a third
  EXPECT_EQ(r->best_attempt, 1);
  EXPECT_NE(r->best.body.find("VERSION-1"), std::string::npos);
  EXPECT_NEAR(*r->attempts[0].lift, 0.0, 1e-9);
  EXPECT_NEAR(*r->attempts[1].lift, -1.0 / 3, 1e-9);
  EXPECT_EQ(r->attempts[2].batch_id, "batch3");
  int baseline_requests = 0, refine_requests = 0;
  for (const auto& req : server.requests()) {
    if (req.body.find("Students using it still fail") != std::string::npos) {
      ++refine_requests;
      // The whole skill and every failing check's reason, not an excerpt.
      EXPECT_NE(req.body.find("references/details.md"), std::string::npos);
      EXPECT_NE(req.body.find("missing \\\"MAGIC"), std::string::npos);
      EXPECT_NE(req.body.find("MAGIC-C"), std::string::npos);
    } else if (req.body.find("## Skill:") == std::string::npos) {
      ++baseline_requests;
    }
  }
  EXPECT_EQ(baseline_requests, 3);  // once, not once per attempt
  EXPECT_EQ(refine_requests, 2);
}

TEST(RefineLoop, ZeroPercentFirstAttemptIsNoPlateau) {
  // Every arm fails at first: upskill stops at once (its previous rate starts at 0); we refine.
  Json rules = Json::array({{{"match", {{"model", "student"}, {"any_message", "VERSION-2"}}},
                             {"reply", {{"content", "MAGIC"}}}},
                            {{"match", {{"model", "student"}}}, {"reply", {{"content", "no"}}}},
                            {{"match", {{"model", "teacher"}}},
                             {"reply", {{"content", skill_json("VERSION-2").dump()}}}}});
  ScriptedServer server(Json{{"rules", rules}});
  server.start();
  llm::CurlTransport transport;
  llm::ChatClient client(transport);
  const llm::ResolvedModel teacher_model = model_at(server, "teacher");
  const llm::ResolvedModel student = model_at(server, "student");
  std::vector<std::string> notes;
  auto initial = parse_skill_reply(skill_json("VERSION-1").dump(), notes);
  auto suite = cases::parse_test_suite(
      R"([{"id": "a", "input": "q", "expected": {"contains": ["MAGIC"]}}])", "t.json");
  ASSERT_TRUE(initial && suite);
  RefineOptions options;
  options.max_attempts = 2;
  options.eval.models = {student};
  auto r = refine_loop(*initial, suite->cases, {"task", {}, nullptr, nullptr},
                       {&teacher_model, &client, nullptr, {}}, client, checks::CheckEnvironment{},
                       options);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->attempts.size(), 2u);
  EXPECT_EQ(r->best_attempt, 2);
  EXPECT_EQ(r->stopped_because, "beneficial");
  EXPECT_TRUE(better_attempt(r->attempts[1], r->attempts[0]));
}

}  // namespace
}  // namespace upskill::gen
