// Run logs in upskill's layout, written as trials complete and read back for --resume and
// `upskill runs` (see run_log.hpp).
#include "upskill/eval/run_log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "upskill/core/files.hpp"
#include "upskill/core/lenient.hpp"
#include "upskill/core/text.hpp"
#include "upskill/core/timefmt.hpp"
#include "upskill/eval/batch.hpp"

namespace upskill::eval {

namespace fs = std::filesystem;

int run_number(const Evaluation& e, std::size_t model, Arm arm, int run) {
  const int slot = static_cast<int>(model) * e.runs + run;
  if (!e.baseline) return slot + 1;
  return slot * 2 + (arm == Arm::baseline ? 1 : 2);
}

namespace {

// A CSV cell: as it is, unless it needs quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Where a column's value is in run_result.json, and how a number in it is written.
struct CsvColumn {
  const char* name;
  const char* section;  // "", "metadata" or "stats"
  const char* key;
  const char* number_format;  // for a floating-point value; integers are written whole
};
constexpr CsvColumn kCsvColumns[] = {
    {"batch_id", "metadata", "batch_id", ""},
    {"run_number", "metadata", "run_number", ""},
    {"model", "metadata", "model", ""},
    {"task", "metadata", "task", ""},
    {"timestamp", "metadata", "timestamp", ""},
    {"passed", "", "passed", ""},
    {"assertions_passed", "", "assertions_passed", ""},
    {"assertions_total", "", "assertions_total", ""},
    {"input_tokens", "stats", "input_tokens", ""},
    {"output_tokens", "stats", "output_tokens", ""},
    {"total_tokens", "stats", "total_tokens", ""},
    {"conversation_span_ms", "stats", "conversation_span_ms", "{:.0f}"},
    {"llm_time_ms", "stats", "llm_time_ms", "{:.0f}"},
    {"tool_time_ms", "stats", "tool_time_ms", "{:.0f}"},
    {"turns", "stats", "turns", ""},
    {"tool_calls", "stats", "tool_calls", ""},
    {"tool_errors", "stats", "tool_errors", ""},
    {"mcp_calls", "stats", "mcp_calls", ""},
    {"execute_calls", "stats", "execute_calls", ""},
    {"error_message", "", "error_message", ""},
    {"session_id", "", "session_id", ""},
    {"session_history_file", "", "session_history_file", ""},
    {"run_type", "", "run_type", ""},
    {"skill_name", "", "skill_name", ""},
    {"run_index", "metadata", "run_index", ""},
    {"pass_rate", "", "pass_rate", "{:.4f}"},
    {"cached_tokens", "stats", "cached_tokens", ""},
    {"reasoning_tokens", "stats", "reasoning_tokens", ""},
    {"cost_usd", "", "cost_usd", "{:.6f}"},
    {"errors", "", "errors", ""},
    {"reported_model", "", "reported_models", ""},
    {"not_run", "", "not_run", ""},
};

// A JSON value as a cell: text as it is, true/false as Python writes them (upskill's CSV), numbers
// whole or in the column's format, a list of strings joined with ';', null or missing as nothing.
std::string csv_cell(const Json* v, const char* number_format) {
  if (v == nullptr || v->is_null()) return {};
  if (v->is_string()) return v->get<std::string>();
  if (v->is_boolean()) return v->get<bool>() ? "True" : "False";
  if (v->is_number_integer() || v->is_number_unsigned()) return v->dump();
  if (v->is_number_float())
    return *number_format ? fmt::format(fmt::runtime(number_format), v->get<double>()) : v->dump();
  if (v->is_array()) {
    std::vector<std::string> parts;
    for (const auto& item : *v)
      parts.push_back(item.is_string() ? item.get<std::string>() : item.dump());
    return text::join(parts, ";");
  }
  return v->dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

const std::vector<std::string>& results_csv_columns() {
  // upskill's 22, in its order, then ours (kCsvColumns says where each is read from).
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> out;
    for (const auto& c : kCsvColumns) out.emplace_back(c.name);
    return out;
  }();
  return columns;
}

std::string results_csv_row(const Json& result) {
  std::vector<std::string> cells;
  for (const CsvColumn& c : kCsvColumns) {
    const Json& from = *c.section ? lenient::object_field(result, c.section) : result;
    cells.push_back(csv_field(csv_cell(lenient::field(from, c.key), c.number_format)));
  }
  return text::join(cells, ",") + "\n";
}

namespace {

std::string now_iso() {
  return timefmt::iso8601(std::chrono::system_clock::now(), timefmt::Zone::local);
}

// Where a coding agent's transcript is kept, relative to the batch folder.
std::string transcript_file(const TrialKey& k) {
  return fmt::format("transcripts/model{}-{}-run{}-case{}.log", k.model + 1, to_string(k.arm),
                     k.run + 1, k.test_case + 1);
}

// Where a coding agent's own session record is kept (`upskill trace` reads it).
std::string session_file(const TrialKey& k) {
  return fmt::format("transcripts/model{}-{}-run{}-case{}.session.jsonl", k.model + 1,
                     to_string(k.arm), k.run + 1, k.test_case + 1);
}

Json trial_json(const TrialResult& t) {
  Json j = {{"completed", t.completed}};
  if (t.failure) {
    j["error"] = {{"kind", std::string(llm::to_string(t.failure->kind))},
                  {"message", t.failure->message}};
    if (!t.transcript.empty()) j["transcript_file"] = transcript_file(t.key);
    if (!t.agent_session.empty()) j["session_file"] = session_file(t.key);
    return j;
  }
  if (!t.completed) return j;
  j["status"] = std::string(checks::to_string(t.verdict.status));
  j["passed"] = t.verdict.passed;
  j["score"] = t.verdict.score;
  j["checks_run"] = t.verdict.ran;
  j["checks_passed"] = t.verdict.passed_checks;
  j["checks_not_run"] = t.verdict.not_run;
  Json checks = Json::array();
  for (const auto& c : t.verdict.checks) checks.push_back(checks::to_json(c));
  j["checks"] = std::move(checks);
  j["validation_result"] = checks::validation_result(t.verdict);
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
  if (!t.cost_source.empty()) j["cost_source"] = t.cost_source;
  j["reported_model"] = t.reported_model;
  if (t.tokens_unavailable) j["tokens_unavailable"] = true;
  if (t.skill_use)
    j["skill_use"] = {{"known", t.skill_use->known},
                      {"loaded", t.skill_use->loaded},
                      {"skill_reads", t.skill_use->skill_reads},
                      {"reference_reads", t.skill_use->reference_reads}};
  if (!t.transcript.empty()) j["transcript_file"] = transcript_file(t.key);
  if (!t.agent_session.empty()) j["session_file"] = session_file(t.key);
  j["answer"] = t.answer;
  if (!t.reasoning.empty()) j["reasoning"] = t.reasoning;
  return j;
}

// One run folder (a model × arm × run index): its cases' entries and their totals, as
// run_result.json and results.csv report them.
struct RunTotals {
  long long input = 0, output = 0, cached = 0, reasoning = 0, passed_cases = 0, scored = 0,
            errors = 0, not_run = 0;
  long long assertions_passed = 0, assertions_total = 0;  // every check of the scored cases
  double latency = 0, cost = 0;
  int tool_calls = 0, turns = 0, tool_errors = 0, run_calls = 0;
  Json tool_call_map = Json::object(), tool_error_map = Json::object();
  std::vector<std::string> case_entries;  // each case's entry, compact JSON text
  std::string first_error;
  std::set<std::string> reported;

  double rate() const {
    return scored ? static_cast<double>(passed_cases) / static_cast<double>(scored) : 0;
  }
  std::vector<std::string> reported_models() const { return {reported.begin(), reported.end()}; }
};

// A trial's entry in run_result.json ("excluded" is added when it is left out): its log entry
// with the case id, as compact JSON text.
std::string entry_text(const TrialResult& t, const cases::TestCase& test_case) {
  Json entry = trial_json(t);
  entry["id"] = test_case.id;
  entry["input"] = test_case.input;  // what the student was asked, for reports
  return entry.dump();
}

// Adds one trial's log entry (`text`: entry_text of it) and, when it was answered, its counts.
void add_trial(RunTotals& r, const TrialResult& t, std::string text, bool excluded) {
  if (excluded) text.insert(text.size() - 1, ",\"excluded\":true");
  r.case_entries.push_back(std::move(text));
  if (!t.completed) return;
  if (t.unanswered_error()) {
    ++r.errors;
    if (r.first_error.empty())
      r.first_error = t.failure
                          ? t.failure->message
                          : "the judge could not score the answer: " + t.judge_failure()->reason;
    return;
  }
  // Not run here or in the paired trial: answered, but left out of the pass rate.
  r.not_run += t.not_run();
  if (!excluded) {
    ++r.scored;
    r.passed_cases += t.verdict.passed;
    r.assertions_total += static_cast<long long>(t.verdict.checks.size());
    r.assertions_passed += t.verdict.passed_checks;
  }
  r.input += t.usage.input;
  r.output += t.usage.output;
  r.cached += t.usage.cached;
  r.reasoning += t.usage.reasoning;
  r.latency += t.latency_ms;
  r.cost += t.cost_usd;
  r.tool_calls += t.tool_calls;
  r.tool_errors += t.tool_errors;
  r.run_calls += t.run_calls;
  r.turns += t.turns;
  for (const auto& [name, n] : t.tool_call_map)
    r.tool_call_map[name] = r.tool_call_map.value(name, 0) + n;
  for (const auto& [name, n] : t.tool_error_map)
    r.tool_error_map[name] = r.tool_error_map.value(name, 0) + n;
  if (!t.reported_model.empty()) r.reported.insert(t.reported_model);
}

// One run folder as logged: what it holds and what the batch files repeat of it.
struct LoggedRun {
  std::size_t model = 0;
  Arm arm = Arm::baseline;
  int run = 0;
  int number = 0;
  std::string timestamp;
  bool passed = false;
  RunTotals totals;
};

LoggedRun tally_run(const RunLogWriter& w, const Evaluation& e, const ModelSummary& ms,
                    std::size_t m, Arm arm, int run) {
  LoggedRun r{m, arm, run, run_number(e, m, arm, run), {}, false, {}};
  for (std::size_t c = 0; c < e.cases.size(); ++c) {
    const TrialKey key{m, arm, run, c};
    const TrialResult& t = e.at(key);
    add_trial(r.totals, t, w.entries->get(e.index(key), t, e.cases[c]),
              excluded_as_not_run(e, key));
  }
  // upskill: a baseline run passes above 50%; a with-skill run when the skill is beneficial.
  r.passed = r.totals.rate() > 0.5;
  if (arm == Arm::with_skill && ms.lift) r.passed = ms.lift->is_beneficial;
  r.timestamp = now_iso();
  return r;
}

Json metadata_json(const RunLogWriter& w, const Evaluation& e, const LoggedRun& r) {
  return {{"model", e.models[r.model].name},
          {"task", w.task},
          {"batch_id", w.batch_id},
          {"run_number", r.number},
          {"timestamp", r.timestamp},
          {"run_type", to_string(r.arm)},
          {"run_index", r.run},
          {"model_id", e.models[r.model].model}};
}

Json stats_json(const RunTotals& t) {
  return {{"conversation_span_ms", t.latency},
          {"llm_time_ms", t.latency},
          {"tool_time_ms", 0},
          {"turns", t.turns},
          {"tool_calls", t.tool_calls},
          {"tool_errors", t.tool_errors},
          {"mcp_calls", 0},
          {"execute_calls", t.run_calls},
          {"tool_call_map", t.tool_call_map},
          {"tool_error_map", t.tool_error_map},
          {"input_tokens", t.input},
          {"output_tokens", t.output},
          {"total_tokens", t.input + t.output},
          {"cached_tokens", t.cached},
          {"reasoning_tokens", t.reasoning},
          {"usage_summaries", Json::array()},
          {"timing_summaries", Json::array()}};
}

// A run's counts as run_result.json holds them: written with the run, and put back by
// read_logged_runs when the logs hold newer trials than the file.
void put_counts(Json& result, const RunTotals& t) {
  result["assertions_passed"] = t.assertions_passed;
  result["assertions_total"] = t.assertions_total;
  result["cases_passed"] = t.passed_cases;
  result["cases_scored"] = t.scored;
  result["pass_rate"] = t.scored ? Json(t.rate()) : Json(nullptr);  // null: nothing scored
  result["errors"] = t.errors;
  result["not_run"] = t.not_run;
  result["cost_usd"] = t.cost;
  result["error_message"] = t.first_error.empty() ? Json(nullptr) : Json(t.first_error);
  if (!result.contains("stats") || !result["stats"].is_object()) result["stats"] = Json::object();
  result["stats"]["input_tokens"] = t.input;
  result["stats"]["output_tokens"] = t.output;
  result["stats"]["total_tokens"] = t.input + t.output;
}

// run_result.json: upskill's fields, then ours.
Json result_json(const RunLogWriter& w, const Evaluation& e, const LoggedRun& r) {
  const RunTotals& t = r.totals;
  Json result = {{"metadata", metadata_json(w, e, r)},
                 {"stats", stats_json(t)},
                 {"passed", r.passed},
                 {"session_id", nullptr},
                 {"session_history_file", nullptr},
                 {"run_type", to_string(r.arm)},
                 {"skill_name", e.skill_name},
                 {"reported_models", Json(t.reported_models())}};
  put_counts(result, t);
  return result;
}

// run_result.json's text: its fields indented, then "cases", one compact entry a line.
std::string result_text(const Json& result, const std::vector<std::string>& cases) {
  std::string out = result.dump(2);
  out.pop_back();  // the closing brace
  out += ",\n  \"cases\": [";
  for (std::size_t i = 0; i < cases.size(); ++i) out += (i ? ",\n    " : "\n    ") + cases[i];
  out += cases.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

// What batch_summary.json and results.csv repeat of the run folders written so far.
struct BatchLog {
  Json results = Json::array();
  std::string csv = text::join(results_csv_columns(), ",") + "\n";
  int passed_runs = 0;
};

// One run's files: run_<n>/run_metadata.json and run_<n>/run_result.json; the batch files' share
// of it goes into `batch`.
Status write_run_folder(const RunLogWriter& w, const Evaluation& e, const LoggedRun& r,
                        BatchLog& batch) {
  Json result = result_json(w, e, r);
  const fs::path dir = w.batch_dir / fmt::format("run_{}", r.number);
  UPSKILL_RETURN_IF_ERROR(
      files::write_atomic(dir / "run_metadata.json", result["metadata"].dump(2) + "\n"));
  UPSKILL_RETURN_IF_ERROR(
      files::write_atomic(dir / "run_result.json", result_text(result, r.totals.case_entries)));
  // The batch summary repeats each run's result but not its cases (run_result.json has them):
  // upskill's own batch results carry none, and this halves what every rewrite serialises.
  batch.csv += results_csv_row(result);
  batch.results.push_back(std::move(result));
  batch.passed_runs += r.passed;
  return {};
}

// The batch's files: batch_summary.json (every run's result and the evaluation's summary, its cases
// without their trials: the run folders have them), then
// results.csv.
Status write_batch_files(const RunLogWriter& w, const Evaluation& e, const EvalSummary& summary,
                         const BatchLog& log) {
  std::vector<std::string> model_names;
  for (const auto& m : e.models) model_names.push_back(m.name);
  const Json batch = {{"batch_id", w.batch_id},
                      {"model", text::join(model_names, ",")},
                      {"task", w.task},
                      {"total_runs", static_cast<int>(log.results.size())},
                      {"passed_runs", log.passed_runs},
                      {"results", log.results},
                      {"summary", to_json(summary, e, CaseDetail::totals)}};
  UPSKILL_RETURN_IF_ERROR(
      files::write_atomic(w.batch_dir / "batch_summary.json", batch.dump(2) + "\n"));
  return files::write_atomic(w.batch_dir / "results.csv", log.csv);
}

}  // namespace

std::string RunLogWriter::Entries::get(std::size_t index, const TrialResult& t,
                                       const cases::TestCase& test_case) {
  {
    std::lock_guard lock(mutex);
    if (auto it = text.find(index); it != text.end()) return it->second;
  }
  return entry_text(t, test_case);
}

Status RunLogWriter::write_trial(const Evaluation& e, const TrialResult& t) const {
  const TrialKey& k = t.key;
  if (!t.transcript.empty())
    UPSKILL_RETURN_IF_ERROR(files::write_atomic(batch_dir / transcript_file(k), t.transcript));
  if (!t.agent_session.empty())
    UPSKILL_RETURN_IF_ERROR(files::write_atomic(batch_dir / session_file(k), t.agent_session));
  std::string entry = entry_text(t, e.cases[k.test_case]);
  // trials.jsonl's line: the same entry, and where it belongs.
  std::string line = entry;
  line.pop_back();
  line += fmt::format(
      ",\"case_index\":{},\"model\":{},\"run_type\":\"{}\",\"run_index\":{},"
      "\"run_number\":{}}}\n",
      k.test_case, Json(e.models[k.model].name).dump(), to_string(k.arm), k.run,
      run_number(e, k.model, k.arm, k.run));
  std::lock_guard lock(entries->mutex);
  // run_result.json's entry for it, kept for the rewrites of the run files.
  entries->text[e.index(k)] = std::move(entry);
  if (!entries->trials_file) {
    auto opened = files::LineAppender::open(batch_dir / "trials.jsonl");
    if (!opened) return fail(opened.error());
    entries->trials_file = std::move(*opened);
  }
  return entries->trials_file->append(line);
}

Status RunLogWriter::write(const Evaluation& e, const EvalSummary& summary) const {
  BatchLog batch;
  for (std::size_t m = 0; m < e.models.size(); ++m)
    for (Arm arm : e.arms())
      for (int run = 0; run < e.runs; ++run)
        UPSKILL_RETURN_IF_ERROR(
            write_run_folder(*this, e, tally_run(*this, e, summary.models[m], m, arm, run), batch));
  return write_batch_files(*this, e, summary, batch);
}

namespace {

// A "status" as a run log spells it (checks::to_string). Absent: nullopt. Present but not one of
// those strings (a newer or foreign writer, a damaged file): an error, and the trial is not taken.
Result<std::optional<checks::Status>> logged_status(const Json& j) {
  auto it = j.find("status");
  if (it == j.end()) return std::optional<checks::Status>();
  if (it->is_string())
    if (auto s = checks::status_from_string(it->get<std::string>())) return std::optional(*s);
  return fail(Error::usage(fmt::format("unknown status {}", it->dump())));
}

// A check as logged; one without a status reads as not run (never as passed).
Result<checks::CheckResult> check_from_json(const Json& j) {
  checks::CheckResult r;
  r.kind = cases::check_kind_from_string(j.value("type", "icontains"))
               .value_or(cases::CheckKind::icontains);
  UPSKILL_ASSIGN_OR_RETURN(std::optional<checks::Status> status, logged_status(j));
  r.status = status.value_or(checks::Status::not_run);
  r.weight = j.value("weight", 1.0);
  r.label = j.value("label", "");
  r.expected = j.value("expected", "");
  r.found = j.value("found", "");
  r.reason = j.value("reason", "");
  if (j.contains("details")) r.details = j["details"];
  return r;
}

// A case's verdict when its entry has no "status": derived from its checks as score_case orders
// them (failed, error, not run).
checks::Status derived_status(const checks::CaseResult& verdict) {
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

// A completed trial read back from its case entry; nullopt when the entry holds a status we do not
// know, so that --resume runs the trial again rather than guess its verdict.
std::optional<TrialResult> trial_from_entry(const Json& entry, const TrialKey& key) {
  TrialResult t;
  t.key = key;
  t.completed = true;
  t.verdict.case_id = entry.value("id", "");
  t.verdict.passed = entry.value("passed", false);
  t.verdict.score = entry.value("score", 0.0);
  t.verdict.ran = entry.value("checks_run", 0);
  t.verdict.passed_checks = entry.value("checks_passed", 0);
  t.verdict.not_run = entry.value("checks_not_run", 0);
  for (const auto& cj : entry.value("checks", Json::array())) {
    auto check = check_from_json(cj);
    if (!check) return std::nullopt;
    t.verdict.checks.push_back(std::move(*check));
    t.verdict.has_errors =
        t.verdict.has_errors || t.verdict.checks.back().status == checks::Status::error;
  }
  auto status = logged_status(entry);
  if (!status) return std::nullopt;
  t.verdict.status = status->value_or(derived_status(t.verdict));
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
  t.cost_source = entry.value("cost_source", "");
  t.reported_model = entry.value("reported_model", "");
  t.answer = entry.value("answer", "");
  t.reasoning = entry.value("reasoning", "");
  t.tokens_unavailable = entry.value("tokens_unavailable", false);
  if (entry.contains("skill_use") && entry["skill_use"].is_object()) {
    const Json& u = entry["skill_use"];
    t.skill_use = agent::SkillUse{u.value("known", true), u.value("loaded", false),
                                  u.value("skill_reads", 0), u.value("reference_reads", 0)};
  }
  return t;
}

// The case a logged entry belongs to: the one at `hint` when its id matches (a trial file's
// index), else the first with that id; nullopt when the cases changed and none has it.
std::optional<std::size_t> case_of(const Evaluation& e, const std::string& id,
                                   std::optional<std::size_t> hint) {
  if (hint && *hint < e.cases.size() && e.cases[*hint].id == id) return hint;
  for (std::size_t c = 0; c < e.cases.size(); ++c)
    if (e.cases[c].id == id) return c;
  return std::nullopt;
}

// One run_result.json's completed trials of model `m`, by key.
// A trial whose model call failed, read back (for merging shards: it counts as an error).
std::optional<TrialResult> failed_trial_from_entry(const Json& entry, const TrialKey& key) {
  const Json& error = entry.value("error", Json::object());
  if (!error.is_object()) return std::nullopt;
  TrialResult t;
  t.key = key;
  t.completed = true;
  const llm::FailureKind kind = llm::failure_kind_from_string(error.value("kind", ""))
                                    .value_or(llm::FailureKind::server_error);
  t.failure = llm::LlmFailure(kind, 0, error.value("message", ""));
  return t;
}

// A logged entry as a trial: a completed one, or (with `with_errors`) one whose call failed or
// whose judge could not judge it (without, such a trial is run again).
std::optional<TrialResult> logged_trial(const Json& entry, const TrialKey& key, bool with_errors) {
  if (!entry.value("completed", false)) return std::nullopt;
  if (entry.contains("error"))
    return with_errors ? failed_trial_from_entry(entry, key) : std::nullopt;
  auto t = trial_from_entry(entry, key);
  if (t && t->judge_failure() && !with_errors) return std::nullopt;
  return t;
}

Status load_run_file(const fs::path& file, const Evaluation& e, std::size_t m, Arm arm, int run,
                     std::map<std::size_t, TrialResult>& out, bool with_errors) {
  UPSKILL_ASSIGN_OR_RETURN(std::string text, files::read_text(file));
  try {
    const Json j = Json::parse(text);
    if (j.value("metadata", Json::object()).value("model", "") != e.models[m].name) return {};
    for (const auto& entry : j.value("cases", Json::array())) {
      const std::string id = entry.value("id", "");
      for (std::size_t c = 0; c < e.cases.size(); ++c) {
        if (e.cases[c].id != id) continue;
        if (auto t = logged_trial(entry, {m, arm, run, c}, with_errors))
          out[e.index(t->key)] = std::move(*t);
      }
    }
  } catch (const nlohmann::json::parse_error& err) {
    return fail(Error::usage(fmt::format("{}: invalid JSON: {}", file.string(), err.what())));
  } catch (const nlohmann::json::exception& err) {
    return fail(Error::usage(fmt::format("{}: not a run log: {}", file.string(), err.what())));
  }
  return {};
}

// trials.jsonl: every trial as it completed, one line each, later lines (a resumed batch) over
// earlier ones. A line that cannot be read back (cut by a power loss, a foreign writer) is left
// out: its trial runs again.
void load_trial_lines(const fs::path& file, const Evaluation& e,
                      std::map<std::size_t, TrialResult>& out, bool with_errors) {
  std::ifstream in(file, std::ios::binary);
  for (std::string line; std::getline(in, line);) {
    try {
      const Json entry = Json::parse(line);
      if (!entry.value("completed", false)) continue;
      const auto arm = arm_from_string(entry.value("run_type", ""));
      const int run = entry.value("run_index", -1);
      std::optional<std::size_t> m;
      for (std::size_t i = 0; i < e.models.size() && !m; ++i)
        if (e.models[i].name == entry.value("model", "")) m = i;
      if (!arm || !m || run < 0 || run >= e.runs || (*arm == Arm::baseline && !e.baseline))
        continue;
      const auto c = case_of(e, entry.value("id", ""), entry.value("case_index", std::size_t{0}));
      if (!c) continue;
      if (auto t = logged_trial(entry, {*m, *arm, run, *c}, with_errors))
        out[e.index(t->key)] = std::move(*t);
    } catch (const nlohmann::json::exception&) {
    }
  }
}

}  // namespace

Result<std::map<std::size_t, TrialResult>> load_completed_trials(const fs::path& batch_dir,
                                                                 const Evaluation& e,
                                                                 bool with_errors) {
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
        UPSKILL_RETURN_IF_ERROR(load_run_file(file, e, m, arm, run, out, with_errors));
      }
  load_trial_lines(batch_dir / "trials.jsonl", e, out, with_errors);
  return out;
}

namespace {

// A run's counts taken again from its case entries (after trial lines replaced some, or for a run
// rebuilt from them): scored are the answered entries not left out as not run.
void recount(Json& result) {
  long long passed = 0, scored = 0, checks = 0, checks_passed = 0, not_run = 0, errors = 0,
            input = 0, output = 0;
  for (const auto& e : result.value("cases", Json::array())) {
    if (!e.is_object() || !e.value("completed", false)) continue;
    if (e.contains("error")) {
      ++errors;
      continue;
    }
    const Json tokens = e.value("tokens", Json::object());
    input += tokens.is_object() ? tokens.value("input_tokens", 0LL) : 0;
    output += tokens.is_object() ? tokens.value("output_tokens", 0LL) : 0;
    const std::string status = e.value("status", "");
    not_run += status == "not run";
    if (status == "not run" || e.value("excluded", false)) continue;
    ++scored;
    passed += status == "passed";
    checks += e.value("checks_run", 0LL);
    checks_passed += e.value("checks_passed", 0LL);
  }
  result["cases_passed"] = passed;
  result["cases_scored"] = scored;
  result["assertions_passed"] = checks_passed;
  result["assertions_total"] = checks;
  result["not_run"] = not_run;
  result["errors"] = errors;
  result["pass_rate"] =
      scored ? Json(static_cast<double>(passed) / static_cast<double>(scored)) : Json(nullptr);
  if (!result.contains("stats") || !result["stats"].is_object()) result["stats"] = Json::object();
  result["stats"]["input_tokens"] = input;
  result["stats"]["output_tokens"] = output;
  result["stats"]["total_tokens"] = input + output;
}

// plan.json's skill, when it can be read: what a rebuilt run is of.
std::string planned_skill(const fs::path& batch_dir) {
  auto text = files::read_text(batch_dir / "plan.json");
  if (!text) return {};
  try {
    const Json plan = Json::parse(*text);
    return plan.is_object() ? plan.value("skill", "") : "";
  } catch (const nlohmann::json::exception&) {
    return {};
  }
}

// A run made from its first trial line: upskill's metadata, and no cases yet.
Json rebuilt_result(const fs::path& batch_dir, const Json& line, int number) {
  const std::string skill = planned_skill(batch_dir);
  return {{"metadata",
           {{"model", line.value("model", "")},
            {"task", skill},
            {"batch_id", batch_dir.filename().string()},
            {"run_number", number},
            {"run_type", line.value("run_type", "with_skill")},
            {"run_index", line.value("run_index", 0)}}},
          {"skill_name", skill},
          {"run_type", line.value("run_type", "with_skill")},
          {"passed", false},
          {"cases", Json::array()}};
}

}  // namespace

namespace {

// Each run's counts made again by the writer's own rule (add_trial over the run's trials, a pair
// left out as summarize() leaves it out), and each case entry's "excluded" set by it: a trial line
// is written when its trial completes, before its pair's fate is known, so the entries it replaces
// cannot carry the flag themselves.
void retally(std::vector<RunFile>& runs, const Evaluation& e) {
  std::map<int, TrialKey> by_number;
  for (std::size_t m = 0; m < e.models.size(); ++m)
    for (Arm arm : e.arms())
      for (int run = 0; run < e.runs; ++run)
        by_number[run_number(e, m, arm, run)] = TrialKey{m, arm, run, 0};
  for (RunFile& file : runs) {
    const std::string name = file.dir.filename().string();
    const int number = name.starts_with("run_") ? std::atoi(name.c_str() + 4) : 0;
    const auto key = by_number.find(number);
    if (key == by_number.end()) continue;
    RunTotals totals;
    std::map<std::string, bool> excluded;  // by case id
    for (std::size_t c = 0; c < e.cases.size(); ++c) {
      TrialKey k = key->second;
      k.test_case = c;
      const bool out = excluded_as_not_run(e, k);
      add_trial(totals, e.at(k), "{}", out);
      excluded[e.cases[c].id] = out;
    }
    put_counts(file.result, totals);
    if (!file.result.contains("cases") || !file.result["cases"].is_array()) continue;
    for (Json& entry : file.result["cases"]) {
      if (!entry.is_object()) continue;
      const auto it = excluded.find(entry.value("id", ""));
      if (it != excluded.end() && it->second)
        entry["excluded"] = true;
      else
        entry.erase("excluded");
    }
  }
}

}  // namespace

std::vector<RunFile> read_logged_runs(const fs::path& batch_dir, std::vector<std::string>& problems,
                                      const Evaluation* logged) {
  std::map<int, RunFile> runs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(batch_dir, ec)) {
    const fs::path file = entry.path() / "run_result.json";
    if (!entry.is_directory() || !fs::exists(file, ec)) continue;
    auto text = files::read_text(file);
    if (!text) {
      problems.push_back(text.error().message);
      continue;
    }
    Json j;
    try {
      j = Json::parse(*text);
    } catch (const nlohmann::json::exception& e) {
      problems.push_back(fmt::format("{}: invalid JSON: {}", file.string(), e.what()));
      continue;
    }
    if (!j.is_object()) {
      problems.push_back(fmt::format("{}: not a run result (no JSON object)", file.string()));
      continue;
    }
    const std::string name = entry.path().filename().string();
    int number = 0;
    if (name.starts_with("run_")) number = std::atoi(name.c_str() + 4);
    runs[number > 0 ? number : -static_cast<int>(runs.size()) - 1] = {entry.path(), std::move(j)};
  }
  // Later lines of trials.jsonl over the entries of the run files.
  std::set<int> changed;
  std::ifstream in(batch_dir / "trials.jsonl", std::ios::binary);
  for (std::string text; std::getline(in, text);) {
    Json line;
    try {
      line = Json::parse(text);
    } catch (const nlohmann::json::exception&) {
      continue;  // a line cut by a power loss
    }
    if (!line.is_object() || !line.value("completed", false)) continue;
    const int number = line.value("run_number", 0);
    if (number < 1) continue;
    auto it = runs.find(number);
    if (it == runs.end())
      it = runs.emplace(number, RunFile{batch_dir / fmt::format("run_{}", number),
                                        rebuilt_result(batch_dir, line, number), true})
               .first;
    Json& result = it->second.result;
    if (!result.contains("cases") || !result["cases"].is_array()) result["cases"] = Json::array();
    Json entry = line;
    for (const char* key : {"case_index", "model", "run_type", "run_index", "run_number"})
      entry.erase(key);
    Json& cases = result["cases"];
    auto same = std::find_if(cases.begin(), cases.end(), [&](const Json& c) {
      return c.is_object() && c.value("id", "") == entry.value("id", "");
    });
    if (same != cases.end() && *same == entry) continue;
    if (same != cases.end())
      *same = std::move(entry);
    else
      cases.push_back(std::move(entry));
    changed.insert(number);
  }
  std::vector<RunFile> out;
  for (auto& [number, run] : runs) {
    if (changed.contains(number) && logged == nullptr) recount(run.result);
    out.push_back(std::move(run));
  }
  if (logged) retally(out, *logged);
  return out;
}

std::optional<LoggedEvaluation> load_logged_evaluation(const fs::path& batch_dir) {
  if (!has_plan(batch_dir)) return std::nullopt;
  auto plan = read_plan(batch_dir);
  if (!plan) return std::nullopt;
  LoggedEvaluation out;
  out.evaluation = plan->shape;
  auto trials = load_completed_trials(batch_dir, out.evaluation, true);
  if (!trials) return std::nullopt;
  for (auto& [index, trial] : *trials) out.evaluation.trials[index] = std::move(trial);
  out.summary = summarize(out.evaluation, plan->seed);
  return out;
}

std::optional<Completeness> logged_completeness(const fs::path& batch_dir,
                                                const std::vector<RunFile>& runs) {
  if (!has_plan(batch_dir)) return std::nullopt;
  auto plan = read_plan(batch_dir);
  if (!plan) return std::nullopt;
  const Evaluation& e = plan->shape;
  // Each run's entries by case id (pointers into `runs`, which outlives them).
  std::map<int, std::map<std::string, const Json*>> entries;
  for (const auto& run : runs) {
    const auto number =
        lenient::integer_field(lenient::object_field(run.result, "metadata"), "run_number", 0);
    for (const auto& entry : lenient::array_field(run.result, "cases"))
      if (entry.is_object())
        entries[static_cast<int>(number)][lenient::string_field(entry, "id")] = &entry;
  }
  Completeness c;
  const ShardDeal deal(e);
  for (const auto& t : e.trials) {
    if (!deal.holds(t.key)) continue;
    ++c.planned;
    const auto run = entries.find(run_number(e, t.key.model, t.key.arm, t.key.run));
    const Json* entry = nullptr;
    if (run != entries.end())
      if (auto it = run->second.find(e.cases[t.key.test_case].id); it != run->second.end())
        entry = it->second;
    if (entry == nullptr || !entry->value("completed", false)) {
      ++c.missing;
      continue;
    }
    std::string cause;
    if (const Json error = entry->value("error", Json()); error.is_object())
      cause = error.value("message", "a model call failed");
    for (const auto& check : entry->value("checks", Json::array()))
      if (cause.empty() && check.is_object() && check.value("type", "") == "judge" &&
          check.value("status", "") == "error")
        cause = "the judge could not score the answer: " + check.value("reason", "");
    if (cause.empty()) continue;
    ++c.errors;
    if (c.first_cause.empty()) c.first_cause = cause;
  }
  if (c.first_cause.empty() && c.missing)
    c.first_cause =
        fmt::format("{} trial(s) never ran (the batch was stopped before they ran)", c.missing);
  return c;
}

}  // namespace upskill::eval
