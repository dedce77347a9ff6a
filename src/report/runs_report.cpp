// `upskill runs`: the run logs read, paired and summarised on the terminal and as CSV (see
// runs_report.hpp); the HTML page is runs_html.cpp.
#include "upskill/report/runs_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "log_fields.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/eval/run_log.hpp"
#include "upskill/report/eval_report.hpp"

namespace upskill::report {

namespace fs = std::filesystem;

namespace {

// Run logs are read leniently (log_fields.hpp).
using namespace logs;

bool wanted(const std::vector<std::string>& filter, const std::string& value) {
  return filter.empty() || std::find(filter.begin(), filter.end(), value) != filter.end();
}

std::string pct(double x) {
  return fmt::format("{:.0f}%", x * 100);
}

}  // namespace

const eval::ModelSummary* BatchFigures::model(const std::string& name) const {
  for (const auto& m : logged.summary.models)
    if (m.name == name) return &m;
  return nullptr;
}

Result<std::vector<RunRecord>> load_runs(const fs::path& runs_dir,
                                         std::vector<std::string>& problems) {
  std::error_code ec;
  if (!fs::is_directory(runs_dir, ec))
    return fail(Error::usage(fmt::format("{}: no such runs directory", runs_dir.string())));
  std::vector<RunRecord> runs;
  for (const auto& batch : fs::directory_iterator(runs_dir, ec)) {
    if (!batch.is_directory()) continue;
    // A batch with a plan: its figures as `eval` computes them, and its runs counted by the same
    // rule.
    std::shared_ptr<const BatchFigures> figures;
    if (auto loaded = eval::load_logged_evaluation(batch.path())) {
      auto f = std::make_shared<BatchFigures>();
      f->logged = std::move(*loaded);
      f->summary = eval::to_json(f->logged.summary, f->logged.evaluation, eval::CaseDetail::totals);
      figures = std::move(f);
    }
    auto logged = eval::read_logged_runs(batch.path(), problems,
                                         figures ? &figures->logged.evaluation : nullptr);
    const auto completeness = eval::logged_completeness(batch.path(), logged);
    for (auto& run : logged) {
      Json& j = run.result;
      const Json& meta = object_field(j, "metadata");
      const Json& stats = object_field(j, "stats");
      RunRecord r;
      r.dir = run.dir;
      r.batch_id = meta.contains("batch_id") ? text_field(meta, "batch_id")
                                             : batch.path().filename().string();
      r.run_number = static_cast<int>(integer_field(meta, "run_number", 0));
      r.model = text_field(meta, "model");
      r.task = text_field(meta, "task");
      r.timestamp = text_field(meta, "timestamp");
      r.skill = j.contains("skill_name") && !j["skill_name"].is_null() ? text_field(j, "skill_name")
                                                                       : r.task;
      r.run_type = string_field(j, "run_type", "with_skill");
      r.passed = bool_field(j, "passed", false);
      r.assertions_passed = integer_field(j, "assertions_passed", 0);
      r.assertions_total = integer_field(j, "assertions_total", 0);
      r.cases_passed = integer_field(j, "cases_passed", r.assertions_passed);
      r.cases_scored = integer_field(j, "cases_scored", r.assertions_total);
      r.not_run = integer_field(j, "not_run", 0);
      r.input_tokens = integer_field(stats, "input_tokens", 0);
      r.output_tokens = integer_field(stats, "output_tokens", 0);
      r.raw = std::move(j);
      r.batch_completeness = completeness;
      r.figures = figures;
      runs.push_back(std::move(r));
    }
  }
  std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) {
    return std::tie(a.batch_id, a.run_number) < std::tie(b.batch_id, b.run_number);
  });
  return runs;
}

namespace {

// batch_summary.json's "summary" of a batch folder: null when it has none or it cannot be read.
Json batch_summary(const fs::path& batch_dir) {
  std::error_code ec;
  const fs::path file = batch_dir / "batch_summary.json";
  if (!fs::exists(file, ec)) return nullptr;
  auto text = files::read_text(file);
  if (!text) return nullptr;
  try {
    const Json batch = Json::parse(*text);
    const Json* summary = field(batch, "summary");
    return summary && summary->is_object() ? *summary : Json(nullptr);
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

}  // namespace

std::vector<BatchRecord> group_batches(const std::vector<RunRecord>& runs,
                                       const RunsFilter& filter) {
  std::map<fs::path, BatchRecord> by_dir;
  for (const auto& r : runs) {
    if (!wanted(filter.skills, r.skill) || !wanted(filter.models, r.model)) continue;
    const fs::path dir = r.dir.parent_path();
    BatchRecord& b = by_dir[dir];
    if (b.runs.empty()) {
      b.dir = dir;
      b.id = dir.filename().string();
      b.skill = r.skill;
    }
    if (std::find(b.models.begin(), b.models.end(), r.model) == b.models.end())
      b.models.push_back(r.model);
    b.runs.push_back(r);
  }
  std::vector<BatchRecord> out;
  for (auto& [dir, b] : by_dir) {
    std::sort(b.runs.begin(), b.runs.end(),
              [](const RunRecord& x, const RunRecord& y) { return x.run_number < y.run_number; });
    const auto& figures = b.runs.front().figures;
    b.summary = figures ? figures->summary : batch_summary(dir);
    if (const auto& c = b.runs.front().batch_completeness) {  // the logs' word, as above
      b.complete = c->complete();
      b.note = eval::incomplete_note(*c);
    } else if (const Json* complete = field(b.summary, "complete");
               complete && complete->is_boolean()) {
      b.complete = complete->get<bool>();
      b.note = string_field(object_field(b.summary, "incomplete"), "note");
    }
    out.push_back(std::move(b));
  }
  return out;
}

namespace {

// A with-skill run's rate for choosing the best pairing: its batch's with-skill pass rate as
// summarize() computes it (every run of the batch), else the run's own; -1 when none was scored.
double with_skill_rate(const RunRecord& r) {
  if (r.figures) {
    const eval::ModelSummary* m = r.figures->model(r.model);
    return m && m->with_skill.scored() ? m->with_skill.pass_rate : -1;
  }
  return r.scored() ? r.rate() : -1;
}

}  // namespace

std::vector<SkillModelResult> best_results(const std::vector<RunRecord>& runs,
                                           const RunsFilter& filter, const fs::path& runs_dir) {
  std::map<std::pair<std::string, std::string>, SkillModelResult> best;
  for (const auto& r : runs) {
    if (r.run_type != "with_skill" || !wanted(filter.skills, r.skill) ||
        !wanted(filter.models, r.model))
      continue;
    SkillModelResult candidate{r.skill, r.model, r, std::nullopt, Json(), nullptr, nullptr, {}};
    // upskill: the latest baseline of the same batch and model numbered at or below this run (the
    // same batch: the same folder, whatever ids two folders' logs carry).
    for (const auto& b : runs)
      if (b.run_type == "baseline" && b.batch_id == r.batch_id &&
          b.dir.parent_path() == r.dir.parent_path() && b.model == r.model &&
          b.run_number <= r.run_number &&
          (!candidate.baseline || b.run_number > candidate.baseline->run_number))
        candidate.baseline = b;
    auto key = std::make_pair(r.skill, r.model);
    auto it = best.find(key);
    const double rate = with_skill_rate(r),
                 best_rate = it == best.end() ? -2 : with_skill_rate(it->second.with_skill);
    const bool better = it == best.end() || rate > best_rate ||
                        (rate == best_rate && r.batch_id > it->second.with_skill.batch_id);
    if (better) best[key] = std::move(candidate);
  }
  std::vector<SkillModelResult> out;
  for (auto& [key, result] : best) {
    // Our batch summary, when the batch has one, carries intervals and per-case reasons.
    std::error_code ec;
    const fs::path batch_dir = result.with_skill.dir.empty() ? runs_dir / result.with_skill.batch_id
                                                             : result.with_skill.dir.parent_path();
    const auto& figures = result.with_skill.figures;
    const Json summary = figures ? figures->summary : batch_summary(batch_dir);
    for (const auto& m : array_field(summary, "models"))
      if (m.is_object() && string_field(m, "name") == result.model) result.summary = m;
    if (figures) {
      result.figures = figures;
      result.model_figures = figures->model(result.model);
    }
    // The logs say how complete the batch is (its summary may be older, or missing: a batch
    // stopped before its summary was first written); the summary's word for logs without a plan.
    if (const auto& c = result.with_skill.batch_completeness)
      result.incomplete = eval::incomplete_note(*c);
    else if (!bool_field(summary, "complete", true))
      result.incomplete = string_field(object_field(summary, "incomplete"), "note", "incomplete");
    out.push_back(std::move(result));
  }
  return out;
}

std::string render_runs_terminal(const std::vector<SkillModelResult>& results, bool tokens_metric,
                                 bool color) {
  if (results.empty()) return "No evaluation runs found.\n";
  std::string out;
  std::string current;
  // The longest token bar: tokens a trial for batches with figures, a run's tokens for the others.
  double max_tokens = 1;
  for (const auto& r : results) {
    if (r.model_figures) {
      max_tokens = std::max(max_tokens, r.model_figures->with_skill.tokens_per_trial);
      if (r.model_figures->baseline)
        max_tokens = std::max(max_tokens, r.model_figures->baseline->tokens_per_trial);
      continue;
    }
    max_tokens = std::max(max_tokens, static_cast<double>(r.with_skill.tokens()));
    if (r.baseline) max_tokens = std::max(max_tokens, static_cast<double>(r.baseline->tokens()));
  }
  for (const auto& r : results) {
    if (r.skill != current) {
      current = r.skill;
      out += color ? fmt::format("\033[1m{}\033[0m\n", r.skill) : r.skill + "\n";
    }
    out += fmt::format("  {}  (batch {}{})\n", r.model, r.with_skill.batch_id,
                       r.incomplete.empty() ? "" : "; " + r.incomplete);
    if (r.model_figures) {  // eval's own figures and lines, a batch with a plan
      const eval::ModelSummary& ms = *r.model_figures;
      if (tokens_metric) {
        auto tokens_line = [&](const char* label, const eval::ArmSummary& a,
                               const std::string& extra) {
          out += fmt::format("    {:<11} {} {:>8.0f} tokens/trial{}\n", label,
                             bar(a.tokens_per_trial / static_cast<double>(max_tokens)),
                             a.tokens_per_trial, extra);
        };
        if (ms.baseline) tokens_line("baseline", *ms.baseline, "");
        tokens_line("with skill", ms.with_skill,
                    ms.lift && ms.lift->computed()
                        ? fmt::format(" ({:+.0f}%)", -ms.lift->token_savings * 100)
                        : "");
      } else {
        for (const auto& line :
             text::split_lines(render_model_figures(r.figures->logged.summary, ms, color)))
          if (!line.empty()) out += "  " + line + "\n";
      }
      continue;
    }
    auto line = [&](const char* label, const RunRecord& run, const std::string& extra) {
      if (tokens_metric)
        out +=
            fmt::format("    {:<11} {} {:>8} tokens{}\n", label,
                        bar(static_cast<double>(run.tokens()) / max_tokens), run.tokens(), extra);
      else if (!run.scored())
        out += fmt::format("    {:<11} {} {:>4} · nothing scored{}\n", label, bar(0), "—",
                           run.not_run ? fmt::format(" · {} not run", run.not_run) : "");
      else
        out += fmt::format("    {:<11} {} {:>4}{}{}\n", label, bar(run.rate()), pct(run.rate()),
                           extra, run.not_run ? fmt::format(" · {} not run", run.not_run) : "");
    };
    if (r.baseline) line("baseline", *r.baseline, "");
    std::string extra;
    if (r.baseline && !tokens_metric && r.baseline->scored() && r.with_skill.scored())
      extra = fmt::format(" ({:+.0f}%)", (r.with_skill.rate() - r.baseline->rate()) * 100);
    if (r.baseline && tokens_metric && r.baseline->tokens() > 0)
      extra = fmt::format(
          " ({:+.0f}%)",
          (static_cast<double>(r.with_skill.tokens()) / r.baseline->tokens() - 1) * 100);
    line("with skill", r.with_skill, extra);
  }
  // The matrix view: skills down, models across.
  std::set<std::string> skills, models;
  for (const auto& r : results) {
    skills.insert(r.skill);
    models.insert(r.model);
  }
  if (skills.size() > 1 || models.size() > 1) {
    out += "\n" + fmt::format("{:<32}", "skill \\ model");
    for (const auto& m : models) out += fmt::format(" {:>16}", text::excerpt(m, 16));
    out += "\n";
    for (const auto& s : skills) {
      out += fmt::format("{:<32}", text::excerpt(s, 32));
      for (const auto& m : models) {
        auto it = std::find_if(results.begin(), results.end(),
                               [&](const auto& r) { return r.skill == s && r.model == m; });
        std::string cell = "-";
        auto rate = [](const RunRecord& run) { return run.scored() ? pct(run.rate()) : "—"; };
        auto arm_rate = [](const eval::ArmSummary& a) {
          return a.scored() ? pct(a.pass_rate) : "—";
        };
        if (it != results.end() && it->model_figures) {
          const eval::ModelSummary& ms = *it->model_figures;
          cell = ms.baseline
                     ? fmt::format("{} → {}", arm_rate(*ms.baseline), arm_rate(ms.with_skill))
                     : arm_rate(ms.with_skill);
        } else if (it != results.end()) {
          cell = it->baseline ? fmt::format("{} → {}", rate(*it->baseline), rate(it->with_skill))
                              : rate(it->with_skill);
        }
        out += fmt::format(" {:>16}", cell);
      }
      out += "\n";
    }
  }
  return out;
}

std::string render_runs_csv(const std::vector<RunRecord>& runs, const RunsFilter& filter) {
  // The run log's own writer (eval::results_csv_row), over each run's result with what the record
  // read from it (or, for upskill's logs, derived: the rate from the assertions) put back in.
  std::string out = text::join(eval::results_csv_columns(), ",") + "\n";
  for (const auto& r : runs) {
    if (!wanted(filter.skills, r.skill) || !wanted(filter.models, r.model)) continue;
    Json result = r.raw.is_object() ? r.raw : Json::object();
    if (!result["metadata"].is_object()) result["metadata"] = Json::object();
    if (!result["stats"].is_object()) result["stats"] = Json::object();
    Json& meta = result["metadata"];
    meta["batch_id"] = r.batch_id;
    meta["run_number"] = r.run_number;
    meta["model"] = r.model;
    meta["task"] = r.task;
    meta["timestamp"] = r.timestamp;
    result["passed"] = r.passed;
    result["assertions_passed"] = r.assertions_passed;
    result["assertions_total"] = r.assertions_total;
    result["stats"]["input_tokens"] = r.input_tokens;
    result["stats"]["output_tokens"] = r.output_tokens;
    result["stats"]["total_tokens"] = r.tokens();
    result["run_type"] = r.run_type;
    result["skill_name"] = r.skill;
    result["pass_rate"] = r.scored() ? Json(r.rate()) : Json(nullptr);
    out += eval::results_csv_row(result);
  }
  return out;
}

std::string render_unpaired_batches(const std::vector<BatchRecord>& batches) {
  std::string out;
  for (const auto& b : batches) {
    const bool paired = std::any_of(b.runs.begin(), b.runs.end(),
                                    [](const RunRecord& r) { return r.run_type == "with_skill"; });
    if (paired) continue;
    out += fmt::format("{}  (batch {}): no with-skill run logged{}\n", b.skill, b.id,
                       b.note.empty() ? std::string() : "; " + b.note);
  }
  return out;
}

}  // namespace upskill::report
