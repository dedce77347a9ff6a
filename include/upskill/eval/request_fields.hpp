#pragma once
// The one list of a session request's fields (docs/ARCHITECTURE.md, "The request serialised
// once"): each with its JSON key and the flag that sets it. The request's JSON form (eval
// --dry-run, `eval --request FILE`, the shard tasks' task.json, Python's evaluation_request) and
// the batch plan's comparison are all written over this list, never field by field.
//
// A member added to SessionRequest or Gates without its line here stops the build ("wrong number of
// structured bindings"); the round-trip test then checks its serialisation.
#include "upskill/eval/session.hpp"

namespace upskill::eval {

struct RequestField {
  const char* key;   // in the JSON form
  const char* flag;  // what sets it on the command line (for messages)
  // The trials depend on it beyond the skill, cases, models, runs, seed, arms and shard the plan
  // records apart: a batch resumed with another value is refused (plan_differences).
  bool shapes_trials = false;
};

// Calls visit(field, member) for every field of the JSON form, in its order. The fields kept in
// memory only — the loaded skill and cases (a front end's own objects), the result files'
// renderers and the test writer (functions) — are not visited.
//
// Each member is named, not taken by position. The structured bindings only count: they stop the
// build when SessionRequest, Gates or Shard gains a member, and the round-trip test checks that
// every member but the four in memory is visited (a member counted here but never visited).
template <class Request, class Visit>
void for_each_request_field(Request& r, Visit&& visit) {
  [[maybe_unused]] auto& [m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16,
                          m17, m18, m19, m20, m21, m22, m23, m24, m25, m26] = r;
  [[maybe_unused]] auto& [g1, g2] = r.gates;
  visit(RequestField{"skill_dir", "SKILL_DIR"}, r.skill_dir);
  visit(RequestField{"tests", "--tests"}, r.tests);
  visit(RequestField{"spec_dir", "the tests' folder"}, r.spec_dir);
  visit(RequestField{"models", "--model"}, r.models);
  visit(RequestField{"runs", "--runs"}, r.runs);
  visit(RequestField{"jobs", "--jobs"}, r.jobs);
  visit(RequestField{"seed", "--seed"}, r.seed);
  visit(RequestField{"baseline", "--baseline / --no-baseline"}, r.baseline);
  visit(RequestField{"mode", "--mode", true}, r.mode);
  visit(RequestField{"skill_delivery", "--skill-delivery", true}, r.skill_delivery);
  visit(RequestField{"inline_references", "--inline-references", true}, r.inline_references);
  visit(RequestField{"max_turns", "--max-turns", true}, r.max_turns);
  visit(RequestField{"allow_run", "--allow-run", true}, r.allow_run);
  visit(RequestField{"judge_models", "--judge-model"}, r.judge_models);
  visit(RequestField{"judge_criteria", "--judge"}, r.judge_criteria);
  visit(RequestField{"judge_threshold", "--judge-threshold"}, r.judge_threshold);
  visit(RequestField{"log_runs", "--log-runs / --no-log-runs"}, r.log_runs);
  visit(RequestField{"runs_dir", "--runs-dir"}, r.runs_dir);
  visit(RequestField{"resume", "--resume"}, r.resume);
  visit(RequestField{"require_gpu", "--require-gpu"}, r.require_gpu);
  visit(RequestField{"min_lift", "--min-lift"}, r.gates.min_lift);
  visit(RequestField{"fail_under", "--fail-under"}, r.gates.fail_under);
  visit(RequestField{"shard", "--shard / --gpu-shards"}, r.shard);
}

// The members SessionRequest keeps in memory only (skill, cases, result_files, generate_tests),
// and the Gates members the list visits one by one in its place.
inline constexpr std::size_t kRequestMembersInMemory = 4;
inline constexpr std::size_t kGatesMembers = 2;

}  // namespace upskill::eval
