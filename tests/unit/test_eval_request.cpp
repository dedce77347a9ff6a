// A session request's JSON form (eval::to_json, eval::request_from_json), written and read over the
// one field list (request_fields.hpp): every field survives the round trip, each one on its own;
// bad files are refused with the file, line and field; relative paths follow the file.
#include <gtest/gtest.h>

#include <utility>

#include "support/temp_dir.hpp"
#include "upskill/eval/request_fields.hpp"

namespace upskill::eval {
namespace {

namespace fs = std::filesystem;

// A value unlike the default for every type a request field may have. A field of a new type stops
// this test's build until it has a line here (and a JSON form in request.cpp).
struct Perturb {
  void operator()(fs::path& p) const { p = "/elsewhere/x"; }
  void operator()(std::string& s) const { s = "other 'value' \"quoted\""; }
  void operator()(std::vector<std::string>& v) const { v = {"a", "b c"}; }
  void operator()(int& v) const { v += 7; }
  void operator()(bool& v) const { v = !v; }
  void operator()(std::uint64_t& v) const { v = v + 12345678901234ULL; }
  void operator()(double& v) const { v = 0.25; }
  void operator()(cases::Mode& m) const { m = cases::Mode::agent; }
  void operator()(SkillDelivery& d) const { d = SkillDelivery::inline_prompt; }
  void operator()(Shard& s) const { s = {2, 3, 1}; }
  template <class T>
  void operator()(std::optional<T>& o) const {
    T value{};
    (*this)(value);
    o = value;
  }
};

SessionRequest base() {
  SessionRequest r;
  r.skill_dir = "/skills/demo";
  return r;
}

Result<SessionRequest> reread(const Json& j, const std::string& file = "task.json") {
  auto doc = parse_json_document(j.dump(2), file);
  if (!doc) return fail(doc.error());
  return request_from_json(*doc);
}

std::vector<std::string> field_keys() {
  std::vector<std::string> keys;
  SessionRequest r;
  for_each_request_field(r, [&](const RequestField& f, auto&) { keys.push_back(f.key); });
  return keys;
}

// How many members an aggregate has: the most initialisers it takes (a member of any type takes
// one that converts to anything).
struct AnyMember {
  template <class T>
  operator T&() const&&;  // never defined: only asked whether it would convert
};
template <class T, std::size_t... I>
constexpr bool takes(std::index_sequence<I...>) {
  return requires {
    T{(void(I), AnyMember{})...};
  };
}
template <class T, std::size_t N = 0>
constexpr std::size_t member_count() {
  if constexpr (takes<T>(std::make_index_sequence<N + 1>{}))
    return member_count<T, N + 1>();
  else
    return N;
}

// Every member of the request is visited, but the four kept in memory: a member counted in the
// list's bindings but given no visit (so missing from the JSON form) fails here.
TEST(EvalRequest, EveryMemberIsVisited) {
  static_assert(member_count<Gates>() == kGatesMembers);
  static_assert(member_count<Shard>() == 3);
  EXPECT_EQ(field_keys().size(),
            member_count<SessionRequest>() - kRequestMembersInMemory - 1 + kGatesMembers);
}

// Each field set by its member's name: its value shows under its own key (a list that visited
// members in the wrong order would put one member's value under another's key).
TEST(EvalRequest, EachMemberUnderItsOwnKey) {
  SessionRequest r = base();
  r.tests = "/t.json";
  r.spec_dir = "/specs";
  r.models = {"m"};
  r.runs = 2;
  r.jobs = 3;
  r.seed = 4;
  r.baseline = false;
  r.mode = cases::Mode::agent;
  r.skill_delivery = SkillDelivery::inline_prompt;
  r.inline_references = true;
  r.max_turns = 5;
  r.allow_run = true;
  r.judge_models = {"j"};
  r.judge_criteria = {"c"};
  r.judge_threshold = 0.5;
  r.log_runs = false;
  r.runs_dir = "/runs";
  r.resume = "batch";
  r.require_gpu = true;
  r.gates.min_lift = 0.1;
  r.gates.fail_under = 0.8;
  r.shard = Shard{2, 3, 1};
  const Json expected = {{"skill_dir", "/skills/demo"},
                         {"tests", "/t.json"},
                         {"spec_dir", "/specs"},
                         {"models", {"m"}},
                         {"runs", 2},
                         {"jobs", 3},
                         {"seed", 4},
                         {"baseline", false},
                         {"mode", "agent"},
                         {"skill_delivery", "inline"},
                         {"inline_references", true},
                         {"max_turns", 5},
                         {"allow_run", true},
                         {"judge_models", {"j"}},
                         {"judge_criteria", {"c"}},
                         {"judge_threshold", 0.5},
                         {"log_runs", false},
                         {"runs_dir", "/runs"},
                         {"resume", "batch"},
                         {"require_gpu", true},
                         {"min_lift", 0.1},
                         {"fail_under", 0.8},
                         {"shard", {{"index", 2}, {"count", 3}, {"gpu", 1}}}};
  EXPECT_EQ(to_json(r), expected);
}

// Each field alone set to a value unlike its default: it shows in the JSON form, and the form read
// back is the same request.
TEST(EvalRequest, EveryFieldRoundTripsOnItsOwn) {
  const Json plain = to_json(base());
  const auto keys = field_keys();
  ASSERT_EQ(keys.size(), plain.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    SessionRequest r = base();
    std::size_t at = 0;
    for_each_request_field(r, [&](const RequestField&, auto& member) {
      if (at++ == i) Perturb{}(member);
    });
    const Json j = to_json(r);
    EXPECT_NE(j[keys[i]], plain[keys[i]]) << keys[i] << " is not written";
    auto back = reread(j);
    ASSERT_TRUE(back) << keys[i] << ": " << back.error().message;
    EXPECT_EQ(to_json(*back), j) << keys[i] << " is not read back";
  }
}

TEST(EvalRequest, EveryFieldTogetherAndLeftOut) {
  SessionRequest r = base();
  for_each_request_field(r, [](const RequestField&, auto& member) { Perturb{}(member); });
  auto back = reread(to_json(r));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(to_json(*back), to_json(r));
  // A file naming only the skill is the default request.
  auto minimal = reread(Json{{"skill_dir", "/skills/demo"}});
  ASSERT_TRUE(minimal) << minimal.error().message;
  EXPECT_EQ(to_json(*minimal), to_json(base()));
}

// The plan keeps, and a resume compares, exactly the fields marked as shaping the trials.
TEST(EvalRequest, TrialSettingsAreTheMarkedFields) {
  SessionRequest r = base();
  std::vector<std::string> marked;
  for_each_request_field(r, [&](const RequestField& f, auto&) {
    if (f.shapes_trials) marked.push_back(f.key);
  });
  std::vector<std::string> kept;
  const Json settings = trial_settings(r);
  for (const auto& [key, value] : settings.items()) kept.push_back(key);
  EXPECT_EQ(kept, marked);
  EXPECT_EQ(marked, (std::vector<std::string>{"mode", "skill_delivery", "inline_references",
                                              "max_turns", "allow_run"}));
}

TEST(EvalRequest, RelativePathsFollowTheFile) {
  testing::TempDir tmp;
  const fs::path file =
      tmp.write("bundle/task.json",
                R"({"skill_dir": "skill", "tests": "tests.json", "runs_dir": "/abs/runs"})");
  auto r = read_request_file(file);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->skill_dir, (tmp / "bundle/skill").lexically_normal());
  EXPECT_EQ(*r->tests, (tmp / "bundle/tests.json").lexically_normal());
  EXPECT_EQ(*r->runs_dir, fs::path("/abs/runs"));
}

// Bad files: refused with the file, the line and what is wrong, never a default in its place.
TEST(EvalRequest, BadFilesAreRefusedWithFileLineAndField) {
  struct Bad {
    std::string text, expected;
  };
  const std::vector<Bad> bad{
      {R"([1])", "task.json:1:1: a request is a JSON object, not array"},
      {R"({})", "a request names its skill_dir"},
      {"{\"skill_dir\": \"s\",\n \"runs\": \"3\"}",
       "task.json:2:10: runs: expected a whole number"},
      {"{\"skill_dir\": \"s\",\n \"runs\": 2.5}", "runs: expected a whole number"},
      {"{\"skill_dir\": \"s\", \"runs\": 99999999999}", "runs: expected a whole number"},
      {"{\"skill_dir\": \"s\", \"seed\": -1}", "seed: expected a whole number, 0 or more"},
      {"{\"skill_dir\": \"s\", \"mode\": \"shell\"}", "mode: expected chat or agent, got string"},
      {"{\"skill_dir\": \"s\", \"skill_delivery\": 1}",
       "skill_delivery: expected install or inline"},
      {"{\"skill_dir\": \"s\", \"models\": [\"a\", 2]}", "models: expected a list of strings"},
      {"{\"skill_dir\": \"\"}", "skill_dir: expected a path"},
      {"{\"skill_dir\": \"s\", \"shard\": {\"index\": 4, \"count\": 3, \"gpu\": 0}}",
       "shard: 4/3 (gpu 0) is not a shard"},
      {"{\"skill_dir\": \"s\", \"shard\": {\"index\": 1, \"count\": 3}}", "shard: expected {"},
      {"{\"skill_dir\": \"s\", \"shard\": {\"index\": 1, \"count\": \"3\", \"gpu\": 0}}",
       "shard/count: expected a whole number"},
      {"{\"skill_dir\": \"s\",\n  \"run\": 3}", "task.json:2:3: 'run' is not a request field"},
      {"{\"request\": {\"skill_dir\": \"s\"}}", "--dry-run's \"request\" member"},
      {"{\"skill_dir\": \"s\"", "task.json:1"},
      {"{\"skill_dir\": \"s\", \"runs\": 18446744073709551615}", "runs: expected a whole number"},
      {"{\"skill_dir\": \"s\", \"runs\": 0}", "task.json:1:28: runs: at least 1, not 0"},
      {"{\"skill_dir\": \"s\", \"jobs\": -3}", "jobs: at least 1, not -3"},
      {"{\"skill_dir\": \"s\", \"max_turns\": 0}", "max_turns: at least 1"},
      {"{\"skill_dir\": \"s\", \"judge_threshold\": 2.5}", "judge_threshold: between 0 and 1"},
      {"{\"skill_dir\": \"s\", \"judge_threshold\": 1e309}", "invalid JSON"},
      {"{\"skill_dir\": \"s\", \"x\": " + std::string(3000, '[') + std::string(3000, ']') + "}",
       "invalid JSON: nested deeper than 512 levels"},
  };
  for (const auto& b : bad) {
    auto doc = parse_json_document(b.text, "task.json");
    Result<SessionRequest> r = doc ? request_from_json(*doc) : fail(doc.error());
    ASSERT_FALSE(r) << b.text;
    EXPECT_NE(r.error().message.find(b.expected), std::string::npos) << b.text << "\n"
                                                                     << r.error().message;
    EXPECT_EQ(r.error().code, ExitCode::usage) << b.text;
  }
}

}  // namespace
}  // namespace upskill::eval
