#include "upskill/eval/run_log.hpp"

#include <fmt/format.h>

#include <set>

#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/core/time.hpp"

namespace upskill::eval {

namespace fs = std::filesystem;

std::string make_batch_id(std::chrono::system_clock::time_point when) {
  return timefmt::format(when, timefmt::Zone::local, "%Y_%m_%d_%H_%M_%S");
}

int run_number(const Evaluation& e, std::size_t model, Arm arm, int run) {
  const int slot = static_cast<int>(model) * e.runs + run;
  if (!e.baseline) return slot + 1;
  return slot * 2 + (arm == Arm::baseline ? 1 : 2);
}

const std::vector<std::string>& results_csv_columns() {
  static const std::vector<std::string> columns{
      // upskill's, in its order
      "batch_id", "run_number", "model", "task", "timestamp", "passed", "assertions_passed",
      "assertions_total", "input_tokens", "output_tokens", "total_tokens", "conversation_span_ms",
      "llm_time_ms", "tool_time_ms", "turns", "tool_calls", "tool_errors", "mcp_calls",
      "execute_calls", "error_message", "session_id", "session_history_file",
      // ours
      "run_type", "skill_name", "run_index", "pass_rate", "cached_tokens", "reasoning_tokens",
      "cost_usd", "errors", "reported_model", "not_run"};
  return columns;
}

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string now_iso() {
  return timefmt::iso8601(std::chrono::system_clock::now(), timefmt::Zone::local);
}

Json trial_json(const TrialResult& t) {
  Json j = {{"completed", t.completed}};
  if (t.failure) {
    j["error"] = {{"kind", std::string(llm::to_string(t.failure->kind))},
                  {"message", t.failure->message}};
    return j;
  }
  if (!t.completed) return j;
  j["status"] = std::string(checks::to_string(t.verdict.status));
  j["passed"] = t.verdict.passed;
  j["score"] = t.verdict.score;
  j["checks_run"] = t.verdict.ran;
  j["checks_passed"] = t.verdict.passed_checks;
  j["checks_not_run"] = t.verdict.not_run;
  j["checks"] = checks::to_json(t.verdict)["checks"];
  j["tokens"] = llm::to_json(t.usage);
  j["latency_ms"] = t.latency_ms;
  j["turns"] = t.turns;
  j["tool_calls"] = t.tool_calls;
  if (t.agent) {
    j["mode"] = "agent";
    j["tool_errors"] = t.tool_errors;
    j["tool_call_map"] = t.tool_call_map;
    j["tool_error_map"] = t.tool_error_map;
    j["hit_turn_limit"] = t.hit_turn_limit;
  }
  j["cost_usd"] = t.cost_usd;
  j["reported_model"] = t.reported_model;
  j["answer"] = t.answer;
  if (!t.reasoning.empty()) j["reasoning"] = t.reasoning;
  return j;
}

checks::CheckResult check_from_json(const Json& j) {
  checks::CheckResult r;
  r.kind = cases::check_kind_from_string(j.value("type", "icontains"))
               .value_or(cases::CheckKind::icontains);
  const std::string status = j.value("status", "not run");
  r.status = status == "passed"   ? checks::Status::passed
             : status == "failed" ? checks::Status::failed
             : status == "error"  ? checks::Status::error
                                  : checks::Status::not_run;
  r.weight = j.value("weight", 1.0);
  r.label = j.value("label", "");
  r.expected = j.value("expected", "");
  r.found = j.value("found", "");
  r.reason = j.value("reason", "");
  if (j.contains("details")) r.details = j["details"];
  return r;
}

checks::Status status_from_string(const std::string& status) {
  return status == "passed"    ? checks::Status::passed
         : status == "error"   ? checks::Status::error
         : status == "not run" ? checks::Status::not_run
                               : checks::Status::failed;
}

// A case's verdict read back: its "status" when the log has one, else derived from its checks as
// score_case orders them (failed, error, not run).
checks::Status case_status(const Json& entry, const checks::CaseResult& verdict) {
  if (entry.contains("status")) return status_from_string(entry.value("status", "failed"));
  if (verdict.passed) return checks::Status::passed;
  bool error = false, not_run = false;
  for (const auto& c : verdict.checks) {
    if (c.weight <= 0) continue;
    if (c.status == checks::Status::failed) return checks::Status::failed;
    error = error || c.status == checks::Status::error;
    not_run = not_run || c.status == checks::Status::not_run;
  }
  return error ? checks::Status::error : not_run ? checks::Status::not_run : checks::Status::failed;
}

}  // namespace

Status RunLogWriter::write(const Evaluation& e, const EvalSummary& summary) const {
  Json results = Json::array();
  std::string csv = text::join(results_csv_columns(), ",") + "\n";
  int passed_runs = 0, total_runs = 0;
  std::vector<std::string> model_names;
  for (const auto& m : e.models) model_names.push_back(m.name);
  for (std::size_t m = 0; m < e.models.size(); ++m) {
    const ModelSummary& ms = summary.models[m];
    for (Arm arm : e.arms())
      for (int run = 0; run < e.runs; ++run) {
        const int number = run_number(e, m, arm, run);
        long long input = 0, output = 0, cached = 0, reasoning = 0, passed_cases = 0, scored = 0,
                  errors = 0, not_run = 0;
        double latency = 0, cost = 0;
        int tool_calls = 0, turns = 0, tool_errors = 0, run_calls = 0;
        Json tool_call_map = Json::object(), tool_error_map = Json::object();
        Json case_entries = Json::array();
        std::string first_error;
        std::set<std::string> reported;
        for (std::size_t c = 0; c < e.cases.size(); ++c) {
          const TrialResult& t = e.at({m, arm, run, c});
          const bool excluded = excluded_as_not_run(e, {m, arm, run, c});
          Json entry = trial_json(t);
          entry["id"] = e.cases[c].id;
          if (excluded) entry["excluded"] = true;
          case_entries.push_back(std::move(entry));
          if (!t.completed) continue;
          if (t.failure) {
            ++errors;
            if (first_error.empty()) first_error = t.failure->message;
            continue;
          }
          // Not run here or in the paired trial: answered, but left out of the pass rate.
          not_run += t.not_run();
          if (!excluded) {
            ++scored;
            passed_cases += t.verdict.passed;
          }
          input += t.usage.input;
          output += t.usage.output;
          cached += t.usage.cached;
          reasoning += t.usage.reasoning;
          latency += t.latency_ms;
          cost += t.cost_usd;
          tool_calls += t.tool_calls;
          tool_errors += t.tool_errors;
          run_calls += t.run_calls;
          turns += t.turns;
          for (const auto& [name, n] : t.tool_call_map)
            tool_call_map[name] = tool_call_map.value(name, 0) + n;
          for (const auto& [name, n] : t.tool_error_map)
            tool_error_map[name] = tool_error_map.value(name, 0) + n;
          if (!t.reported_model.empty()) reported.insert(t.reported_model);
        }
        const double rate =
            scored ? static_cast<double>(passed_cases) / static_cast<double>(scored) : 0;
        // upskill: a baseline run passes above 50%; a with-skill run when the skill is beneficial.
        bool passed = rate > 0.5;
        if (arm == Arm::with_skill && ms.lift) passed = ms.lift->is_beneficial;
        const std::string timestamp = now_iso();
        const Json metadata = {{"model", e.models[m].name}, {"task", task},
                               {"batch_id", batch_id},      {"run_number", number},
                               {"timestamp", timestamp},    {"run_type", to_string(arm)},
                               {"run_index", run},          {"model_id", e.models[m].model}};
        const Json stats = {{"conversation_span_ms", latency},
                            {"llm_time_ms", latency},
                            {"tool_time_ms", 0},
                            {"turns", turns},
                            {"tool_calls", tool_calls},
                            {"tool_errors", tool_errors},
                            {"mcp_calls", 0},
                            {"execute_calls", run_calls},
                            {"tool_call_map", tool_call_map},
                            {"tool_error_map", tool_error_map},
                            {"input_tokens", input},
                            {"output_tokens", output},
                            {"total_tokens", input + output},
                            {"cached_tokens", cached},
                            {"reasoning_tokens", reasoning},
                            {"usage_summaries", Json::array()},
                            {"timing_summaries", Json::array()}};
        const Json result = {
            {"metadata", metadata},
            {"stats", stats},
            {"passed", passed},
            {"assertions_passed", passed_cases},
            {"assertions_total", scored},
            {"error_message", first_error.empty() ? Json(nullptr) : Json(first_error)},
            {"session_id", nullptr},
            {"session_history_file", nullptr},
            {"run_type", to_string(arm)},
            {"skill_name", e.skill_name},
            {"pass_rate", rate},
            {"errors", errors},
            {"not_run", not_run},
            {"cost_usd", cost},
            {"reported_models", Json(std::vector<std::string>(reported.begin(), reported.end()))},
            {"cases", case_entries}};
        const fs::path dir = batch_dir / fmt::format("run_{}", number);
        UPSKILL_RETURN_IF_ERROR(
            files::write_atomic(dir / "run_metadata.json", metadata.dump(2) + "\n"));
        UPSKILL_RETURN_IF_ERROR(
            files::write_atomic(dir / "run_result.json", result.dump(2) + "\n"));
        results.push_back(result);
        ++total_runs;
        passed_runs += passed;
        const std::vector<std::string> row{
            batch_id,
            std::to_string(number),
            e.models[m].name,
            task,
            timestamp,
            passed ? "True" : "False",
            std::to_string(passed_cases),
            std::to_string(scored),
            std::to_string(input),
            std::to_string(output),
            std::to_string(input + output),
            fmt::format("{:.0f}", latency),
            fmt::format("{:.0f}", latency),
            "0",
            std::to_string(turns),
            std::to_string(tool_calls),
            std::to_string(tool_errors),
            "0",
            std::to_string(run_calls),
            first_error,
            "",
            "",
            std::string(to_string(arm)),
            e.skill_name,
            std::to_string(run),
            fmt::format("{:.4f}", rate),
            std::to_string(cached),
            std::to_string(reasoning),
            fmt::format("{:.6f}", cost),
            std::to_string(errors),
            text::join(std::vector<std::string>(reported.begin(), reported.end()), ";"),
            std::to_string(not_run)};
        std::vector<std::string> quoted;
        for (const auto& f : row) quoted.push_back(csv_field(f));
        csv += text::join(quoted, ",") + "\n";
      }
  }
  const Json batch = {{"batch_id", batch_id},
                      {"model", text::join(model_names, ",")},
                      {"task", task},
                      {"total_runs", total_runs},
                      {"passed_runs", passed_runs},
                      {"results", results},
                      {"summary", to_json(summary, e)}};
  UPSKILL_RETURN_IF_ERROR(
      files::write_atomic(batch_dir / "batch_summary.json", batch.dump(2) + "\n"));
  return files::write_atomic(batch_dir / "results.csv", csv);
}

Result<std::map<std::size_t, TrialResult>> load_completed_trials(const fs::path& batch_dir,
                                                                 const Evaluation& e) {
  std::map<std::size_t, TrialResult> out;
  std::error_code ec;
  if (!fs::is_directory(batch_dir, ec))
    return fail(Error::usage(fmt::format("{}: no such batch to resume", batch_dir.string())));
  for (std::size_t m = 0; m < e.models.size(); ++m)
    for (Arm arm : e.arms())
      for (int run = 0; run < e.runs; ++run) {
        const fs::path file =
            batch_dir / fmt::format("run_{}", run_number(e, m, arm, run)) / "run_result.json";
        if (!fs::exists(file, ec)) continue;
        UPSKILL_ASSIGN_OR_RETURN(std::string text, files::read_text(file));
        Json j;
        try {
          j = Json::parse(text);
        } catch (const nlohmann::json::exception& err) {
          return fail(Error::usage(fmt::format("{}: invalid JSON: {}", file.string(), err.what())));
        }
        if (j.value("metadata", Json::object()).value("model", "") != e.models[m].name) continue;
        for (const auto& entry : j.value("cases", Json::array())) {
          if (!entry.value("completed", false) || entry.contains("error")) continue;
          const std::string id = entry.value("id", "");
          for (std::size_t c = 0; c < e.cases.size(); ++c) {
            if (e.cases[c].id != id) continue;
            TrialResult t;
            t.key = {m, arm, run, c};
            t.completed = true;
            t.verdict.case_id = id;
            t.verdict.passed = entry.value("passed", false);
            t.verdict.score = entry.value("score", 0.0);
            t.verdict.ran = entry.value("checks_run", 0);
            t.verdict.passed_checks = entry.value("checks_passed", 0);
            t.verdict.not_run = entry.value("checks_not_run", 0);
            for (const auto& cj : entry.value("checks", Json::array())) {
              t.verdict.checks.push_back(check_from_json(cj));
              t.verdict.has_errors =
                  t.verdict.has_errors || t.verdict.checks.back().status == checks::Status::error;
            }
            t.verdict.status = case_status(entry, t.verdict);
            t.usage = llm::usage_from_json(entry.value("tokens", Json::object()));
            t.latency_ms = entry.value("latency_ms", 0.0);
            t.turns = entry.value("turns", 1);
            t.tool_calls = entry.value("tool_calls", 0);
            t.agent = entry.value("mode", "chat") == "agent";
            t.tool_errors = entry.value("tool_errors", 0);
            t.hit_turn_limit = entry.value("hit_turn_limit", false);
            const Json call_map = entry.value("tool_call_map", Json::object());
            const Json error_map = entry.value("tool_error_map", Json::object());
            for (const auto& [name, n] : call_map.items()) t.tool_call_map[name] = n.get<int>();
            for (const auto& [name, n] : error_map.items()) t.tool_error_map[name] = n.get<int>();
            t.cost_usd = entry.value("cost_usd", 0.0);
            t.reported_model = entry.value("reported_model", "");
            t.answer = entry.value("answer", "");
            t.reasoning = entry.value("reasoning", "");
            out[e.index(t.key)] = std::move(t);
          }
        }
      }
  return out;
}

}  // namespace upskill::eval
