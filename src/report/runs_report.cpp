#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "upskill/checks/stage_report.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/json_fields.hpp"
#include "upskill/core/text.hpp"
#include "upskill/report/eval_report.hpp"
#include "upskill/report/runs_report.hpp"

namespace upskill::report {

namespace fs = std::filesystem;

namespace {

// Run logs come from disk, written by us, by upskill or by hand: every field is read leniently.
using lenient::array_field;
using lenient::bool_field;
using lenient::field;
using lenient::integer_field;
using lenient::number_field;
using lenient::object_field;
using lenient::string_field;

// An "interval": [low, high] of two numbers, if `j` has one.
std::optional<std::pair<double, double>> interval_field(const Json& j) {
  const Json& i = array_field(j, "interval");
  if (i.size() < 2 || !i[0].is_number() || !i[1].is_number()) return std::nullopt;
  return std::pair{i[0].get<double>(), i[1].get<double>()};
}

// A field as CSV text: a string as it is, null or missing as nothing, anything else as JSON.
std::string str(const Json& j, const char* key) {
  const Json* f = field(j, key);
  if (f == nullptr || f->is_null()) return {};
  return f->is_string() ? f->get<std::string>() : f->dump();
}

bool wanted(const std::vector<std::string>& filter, const std::string& value) {
  return filter.empty() || std::find(filter.begin(), filter.end(), value) != filter.end();
}

std::string pct(double x) {
  return fmt::format("{:.0f}%", x * 100);
}

}  // namespace

Result<std::vector<RunRecord>> load_runs(const fs::path& runs_dir,
                                         std::vector<std::string>& problems) {
  std::error_code ec;
  if (!fs::is_directory(runs_dir, ec))
    return fail(Error::usage(fmt::format("{}: no such runs directory", runs_dir.string())));
  std::vector<RunRecord> runs;
  for (const auto& batch : fs::directory_iterator(runs_dir, ec)) {
    if (!batch.is_directory()) continue;
    for (const auto& run : fs::directory_iterator(batch.path(), ec)) {
      const fs::path file = run.path() / "run_result.json";
      if (!run.is_directory() || !fs::exists(file, ec)) continue;
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
      const Json& meta = object_field(j, "metadata");
      const Json& stats = object_field(j, "stats");
      RunRecord r;
      r.dir = run.path();
      r.batch_id =
          meta.contains("batch_id") ? str(meta, "batch_id") : batch.path().filename().string();
      r.run_number = static_cast<int>(integer_field(meta, "run_number", 0));
      r.model = str(meta, "model");
      r.task = str(meta, "task");
      r.timestamp = str(meta, "timestamp");
      r.skill =
          j.contains("skill_name") && !j["skill_name"].is_null() ? str(j, "skill_name") : r.task;
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
      runs.push_back(std::move(r));
    }
  }
  std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) {
    return std::tie(a.batch_id, a.run_number) < std::tie(b.batch_id, b.run_number);
  });
  return runs;
}

std::vector<SkillModelResult> best_results(const std::vector<RunRecord>& runs,
                                           const RunsFilter& filter, const fs::path& runs_dir) {
  std::map<std::pair<std::string, std::string>, SkillModelResult> best;
  for (const auto& r : runs) {
    if (r.run_type != "with_skill" || !wanted(filter.skills, r.skill) ||
        !wanted(filter.models, r.model))
      continue;
    SkillModelResult candidate{r.skill, r.model, r, std::nullopt, Json()};
    // upskill: the latest baseline of the same batch and model numbered at or below this run.
    for (const auto& b : runs)
      if (b.run_type == "baseline" && b.batch_id == r.batch_id && b.model == r.model &&
          b.run_number <= r.run_number &&
          (!candidate.baseline || b.run_number > candidate.baseline->run_number))
        candidate.baseline = b;
    auto key = std::make_pair(r.skill, r.model);
    auto it = best.find(key);
    const bool better =
        it == best.end() || r.rate() > it->second.with_skill.rate() ||
        (r.rate() == it->second.with_skill.rate() && r.batch_id > it->second.with_skill.batch_id);
    if (better) best[key] = std::move(candidate);
  }
  std::vector<SkillModelResult> out;
  for (auto& [key, result] : best) {
    // Our batch summary, when the batch has one, carries intervals and per-case reasons.
    std::error_code ec;
    const fs::path summary_file = runs_dir / result.with_skill.batch_id / "batch_summary.json";
    if (fs::exists(summary_file, ec)) {
      if (auto text = files::read_text(summary_file)) {
        try {
          const Json batch = Json::parse(*text);
          for (const auto& m : array_field(object_field(batch, "summary"), "models"))
            if (m.is_object() && string_field(m, "name") == result.model) result.summary = m;
        } catch (const nlohmann::json::exception&) {
        }
      }
    }
    out.push_back(std::move(result));
  }
  return out;
}

std::string render_runs_terminal(const std::vector<SkillModelResult>& results, bool tokens_metric,
                                 bool color) {
  if (results.empty()) return "No evaluation runs found.\n";
  std::string out;
  std::string current;
  long long max_tokens = 1;
  for (const auto& r : results) {
    max_tokens = std::max(max_tokens, r.with_skill.tokens());
    if (r.baseline) max_tokens = std::max(max_tokens, r.baseline->tokens());
  }
  for (const auto& r : results) {
    if (r.skill != current) {
      current = r.skill;
      out += color ? fmt::format("\033[1m{}\033[0m\n", r.skill) : r.skill + "\n";
    }
    out += fmt::format("  {}  (batch {})\n", r.model, r.with_skill.batch_id);
    auto line = [&](const char* label, const RunRecord& run, const std::string& extra) {
      if (tokens_metric)
        out += fmt::format("    {:<11} {} {:>8} tokens{}\n", label,
                           bar(static_cast<double>(run.tokens()) / static_cast<double>(max_tokens)),
                           run.tokens(), extra);
      else
        out += fmt::format("    {:<11} {} {:>4}{}{}\n", label, bar(run.rate()), pct(run.rate()),
                           extra, run.not_run ? fmt::format(" · {} not run", run.not_run) : "");
    };
    if (r.baseline) line("baseline", *r.baseline, "");
    std::string extra;
    if (r.baseline && !tokens_metric)
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
        if (it != results.end())
          cell = it->baseline
                     ? fmt::format("{} → {}", pct(it->baseline->rate()), pct(it->with_skill.rate()))
                     : pct(it->with_skill.rate());
        out += fmt::format(" {:>16}", cell);
      }
      out += "\n";
    }
  }
  return out;
}

std::string render_runs_csv(const std::vector<RunRecord>& runs, const RunsFilter& filter) {
  static const std::vector<std::string> columns{"batch_id",
                                                "run_number",
                                                "model",
                                                "task",
                                                "timestamp",
                                                "passed",
                                                "assertions_passed",
                                                "assertions_total",
                                                "input_tokens",
                                                "output_tokens",
                                                "total_tokens",
                                                "conversation_span_ms",
                                                "llm_time_ms",
                                                "tool_time_ms",
                                                "turns",
                                                "tool_calls",
                                                "tool_errors",
                                                "mcp_calls",
                                                "execute_calls",
                                                "error_message",
                                                "session_id",
                                                "session_history_file",
                                                "run_type",
                                                "skill_name",
                                                "pass_rate"};
  auto field = [](std::string s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::string out = text::join(columns, ",") + "\n";
  for (const auto& r : runs) {
    if (!wanted(filter.skills, r.skill) || !wanted(filter.models, r.model)) continue;
    const Json& stats = object_field(r.raw, "stats");
    auto stat = [&](const char* key) { return str(stats, key); };
    std::vector<std::string> row{r.batch_id,
                                 std::to_string(r.run_number),
                                 r.model,
                                 r.task,
                                 r.timestamp,
                                 r.passed ? "True" : "False",
                                 std::to_string(r.assertions_passed),
                                 std::to_string(r.assertions_total),
                                 std::to_string(r.input_tokens),
                                 std::to_string(r.output_tokens),
                                 std::to_string(r.tokens()),
                                 stat("conversation_span_ms"),
                                 stat("llm_time_ms"),
                                 stat("tool_time_ms"),
                                 stat("turns"),
                                 stat("tool_calls"),
                                 stat("tool_errors"),
                                 stat("mcp_calls"),
                                 stat("execute_calls"),
                                 str(r.raw, "error_message"),
                                 str(r.raw, "session_id"),
                                 str(r.raw, "session_history_file"),
                                 r.run_type,
                                 r.skill,
                                 fmt::format("{:.4f}", r.rate())};
    for (auto& f : row) f = field(f);
    out += text::join(row, ",") + "\n";
  }
  return out;
}

namespace {

std::string svg_rate_chart(const SkillModelResult& r) {
  // Two horizontal bars (baseline, with skill) with their 95% intervals as whiskers.
  const int width = 470, bar_h = 22, left = 90, span = 300;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"pass rate\">",
      width, 2 * (bar_h + 14) + 24);
  const Json& arms = object_field(r.summary, "arms");
  int row = 0;
  auto draw = [&](const char* label, const char* key, double rate, const char* color) {
    const int y = 8 + row * (bar_h + 14);
    svg += fmt::format("<text x=\"0\" y=\"{}\" font-size=\"13\">{}</text>", y + 16, label);
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#e5e7eb\"/>",
                       left, y, span, bar_h);
    svg += fmt::format(
        "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>", left,
        y, rate * span, bar_h, color);
    const Json& arm = object_field(arms, key);
    if (const auto interval = interval_field(arm)) {
      const auto [lo, hi] = *interval;
      const double x1 = left + lo * span, x2 = left + hi * span, mid = y + bar_h / 2.0;
      svg += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#111\" "
          "stroke-width=\"2\"/>",
          x1, mid, x2, mid);
      svg +=
          fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#111\"/>",
                      x1, y + 4, y + bar_h - 4);
      svg +=
          fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#111\"/>",
                      x2, y + 4, y + bar_h - 4);
    }
    const long long not_run = integer_field(arm, "not_run", 0);
    svg +=
        fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\">{}{}</text>", left + span + 8, y + 16,
                    pct(rate), not_run ? fmt::format(" · {} not run", not_run) : std::string());
    ++row;
  };
  if (r.baseline) draw("baseline", "baseline", r.baseline->rate(), "#9ca3af");
  draw("with skill", "with_skill", r.with_skill.rate(), "#2563eb");
  return svg + "</svg>";
}

std::string svg_token_chart(const SkillModelResult& r) {
  const int left = 90, span = 300, bar_h = 18;
  const double max =
      std::max<double>(1, std::max(r.with_skill.tokens(), r.baseline ? r.baseline->tokens() : 0));
  std::string svg =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"480\" height=\"72\" role=\"img\" "
      "aria-label=\"tokens\">";
  int row = 0;
  auto draw = [&](const char* label, long long tokens, const char* color) {
    const int y = 6 + row * (bar_h + 12);
    svg += fmt::format("<text x=\"0\" y=\"{}\" font-size=\"13\">{}</text>", y + 14, label);
    svg += fmt::format(
        "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>", left,
        y, static_cast<double>(tokens) / max * span, bar_h, color);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\">{} tokens</text>", left + span + 8,
                       y + 14, tokens);
    ++row;
  };
  if (r.baseline) draw("baseline", r.baseline->tokens(), "#9ca3af");
  draw("with skill", r.with_skill.tokens(), "#2563eb");
  return svg + "</svg>";
}

// The lift line, when the summary has a lift.
std::string lift_paragraph(const Json& summary) {
  const Json* lift = field(summary, "lift");
  if (lift == nullptr || !lift->is_object()) return {};
  const Json& l = *lift;
  const long long not_run_pairs = integer_field(l, "not_run_pairs", 0);
  const auto interval = interval_field(l);
  return fmt::format(
      "<p class=\"lift\">lift <b>{:+.0f}%</b>{} · McNemar p = {:.3g} · <b>{}</b>{}</p>",
      number_field(l, "lift", 0.0) * 100,
      interval ? fmt::format(" [{:+.0f}%, {:+.0f}%]", interval->first * 100, interval->second * 100)
               : std::string(),
      number_field(l, "mcnemar_p", 1.0), xml_escape(string_field(l, "verdict")),
      not_run_pairs ? fmt::format(" · {} not run pair{} left out of both arms", not_run_pairs,
                                  not_run_pairs == 1 ? "" : "s")
                    : std::string());
}

// One case's cell for one arm: passes of runs, not run, or left out with its pair.
std::string case_cell(const Json& arms, const char* arm) {
  const Json* found = field(arms, arm);
  if (found == nullptr) return "<td>-</td>";  // a cell of its own, so the columns stay aligned
  const Json& a = object_field(arms, arm);
  const long long passes = integer_field(a, "passes", 0), runs = integer_field(a, "runs", 0),
                  not_run = integer_field(a, "not_run", 0);
  if (runs == 0 && (not_run > 0 || integer_field(a, "excluded", 0) > 0))
    return fmt::format("<td class=\"notrun\">{}</td>",
                       not_run ? "not run" : "left out (pair not run)");
  return fmt::format("<td class=\"{}\">{}/{}{}</td>", runs && passes == runs ? "pass" : "fail",
                     passes, runs, not_run ? fmt::format(" ({} not run)", not_run) : std::string());
}

// The per-case table, when the summary lists cases.
std::string cases_table(const Json& summary) {
  const Json* cases = field(summary, "cases");
  if (cases == nullptr) return {};
  std::string out =
      "<table><thead><tr><th>case</th><th>baseline</th><th>with skill</th><th>why it "
      "failed</th></tr></thead><tbody>";
  for (const auto& c : array_field(summary, "cases")) {
    const Json& arms = object_field(c, "arms");
    std::string why;
    for (const char* arm : {"baseline", "with_skill"}) {
      const Json& a = object_field(arms, arm);
      if (a.contains("failure"))
        why += fmt::format("<div><i>{}</i>: {}</div>", arm, xml_escape(str(a, "failure")));
      if (a.contains("not_run_reason"))
        why += fmt::format("<div><i>{}</i>: not run: {}</div>", arm,
                           xml_escape(str(a, "not_run_reason")));
    }
    out += fmt::format("<tr><td><code>{}</code></td>{}{}<td>{}</td></tr>",
                       xml_escape(string_field(c, "id")), case_cell(arms, "baseline"),
                       case_cell(arms, "with_skill"), why);
  }
  return out + "</tbody></table>";
}

constexpr std::size_t kTranscriptLimit = 200000;  // bytes of one transcript shown

// Text for a <pre>: escaped, and cut (with a note) beyond `limit` bytes.
std::string pre(const std::string& text, std::size_t limit = 100000) {
  if (text.size() <= limit) return "<pre>" + xml_escape(text) + "</pre>";
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return "<pre>" + xml_escape(text.substr(0, cut)) +
         fmt::format("\n[… {} more bytes in the run logs]", text.size() - cut) + "</pre>";
}

// Every check of a trial: status, what it expected and found, why; its details (kernel stages with
// their logs and ptxas tables, command output, judges) folded below.
std::string checks_table(const Json& entry) {
  std::string out =
      "<table class=\"checks\"><thead><tr><th>check</th><th>status</th><th>expected</th>"
      "<th>found</th><th>why</th></tr></thead><tbody>";
  for (const auto& c : array_field(entry, "checks")) {
    const std::string status = string_field(c, "status");
    const char* cls = status == "passed" ? "pass" : status == "not run" ? "notrun" : "fail";
    std::string why = xml_escape(string_field(c, "reason"));
    const Json* d = field(c, "details");
    if (string_field(c, "type") == "kernel" && d && d->is_object()) {
      if (auto kernel = checks::kernel_check_details_from_json(*d)) {
        // The pipeline's stages in view; each stage's own output (files, compiler steps with
        // their logs, ptxas tables, cases) folded below it.
        why +=
            "<table class=\"stages\"><tr><th>stage</th><th>status</th><th>seconds</th>"
            "<th>notes</th></tr>";
        for (const auto& st : kernel->stages) {
          const std::string status(checks::to_string(st.status));
          why += fmt::format(
              "<tr><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}{}</td></tr>",
              cases::to_string(st.stage),
              status == "passed"    ? "pass"
              : status == "not run" ? "notrun"
                                    : "fail",
              status, st.seconds ? fmt::format("{:.1f}", *st.seconds) : std::string("—"),
              xml_escape(st.reason),
              st.details.empty() ? std::string()
                                 : "<details><summary>output</summary>" +
                                       pre(st.details.dump(2), 60000) + "</details>");
        }
        why += "</table>";
        d = nullptr;
      }
    }
    if (d && !d->is_null())
      why += "<details><summary>details</summary>" + pre(d->dump(2), 60000) + "</details>";
    out += fmt::format(
        "<tr><td>{}{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>",
        xml_escape(string_field(c, "type")),
        c.contains("label") ? " <small>" + xml_escape(str(c, "label")) + "</small>" : std::string(),
        cls, xml_escape(status), xml_escape(string_field(c, "expected")),
        xml_escape(string_field(c, "found")), why);
  }
  return out + "</tbody></table>";
}

// One trial, as a filterable row: its outcome in the summary, then the prompt, the answer or the
// agent's transcript, every check, tokens.
std::string trial_row(const SkillModelResult& r, const RunRecord& run, const Json& entry,
                      bool open) {
  const std::string arm = run.run_type;
  std::string outcome = string_field(entry, "status", "error");
  if (entry.contains("error")) outcome = "error";
  if (!bool_field(entry, "completed", true)) outcome = "not run";
  const std::string id = string_field(entry, "id");
  const Json& tokens = object_field(entry, "tokens");
  std::string summary = fmt::format("<b>{}</b> · {} · <span class=\"o-{}\">{}</span>",
                                    xml_escape(id), arm == "baseline" ? "baseline" : "with skill",
                                    outcome == "passed"    ? "pass"
                                    : outcome == "not run" ? "notrun"
                                                           : "fail",
                                    xml_escape(outcome));
  if (entry.contains("score"))
    summary += fmt::format(" · score {:.2f}", number_field(entry, "score", 0));
  if (bool_field(entry, "tokens_unavailable", false))
    summary += " · tokens unavailable";
  else if (!tokens.empty())
    summary += fmt::format(" · {} tokens", integer_field(tokens, "input_tokens", 0) +
                                               integer_field(tokens, "output_tokens", 0));
  if (const Json* use = field(entry, "skill_use"); use && use->is_object())
    summary += bool_field(*use, "loaded", false) ? " · <b>loaded the skill</b>"
                                                 : " · did not load the skill";
  std::string body;
  if (entry.contains("input")) body += "<h4>prompt</h4>" + pre(str(entry, "input"), 20000);
  if (const Json* error = field(entry, "error"); error && error->is_object())
    body += "<h4>error</h4>" + pre(string_field(*error, "message"), 20000);
  if (entry.contains("answer")) body += "<h4>answer</h4>" + pre(str(entry, "answer"));
  if (entry.contains("transcript_file")) {
    const fs::path file = run.dir.parent_path() / str(entry, "transcript_file");
    auto text = files::read_text(file);
    body +=
        "<details><summary>agent transcript</summary>" +
        (text ? pre(*text, kTranscriptLimit) : "<p>" + xml_escape(text.error().message) + "</p>") +
        "</details>";
  }
  if (entry.contains("checks")) body += "<h4>checks</h4>" + checks_table(entry);
  return fmt::format(
      "<details class=\"trial\"{} data-model=\"{}\" data-case=\"{}\" data-arm=\"{}\" "
      "data-outcome=\"{}\"><summary>{} · run {}</summary>{}</details>",
      open ? " open" : "", xml_escape(r.model), xml_escape(id), xml_escape(arm),
      xml_escape(outcome), summary,
      integer_field(object_field(run.raw, "metadata"), "run_index", 0) + 1, body);
}

// Every trial of the report's runs, with filters by model, case, arm and outcome.
std::string trials_section(const std::vector<SkillModelResult>& results) {
  std::set<std::string> models, case_ids;
  std::string rows;
  // A short report opens every trial; a long one leaves them folded for the filters.
  std::size_t count = 0;
  for (const auto& r : results)
    for (const RunRecord* run : {r.baseline ? &*r.baseline : nullptr, &r.with_skill})
      if (run) count += array_field(run->raw, "cases").size();
  const bool open = count <= 40;
  for (const auto& r : results) {
    models.insert(r.model);
    for (const RunRecord* run : {r.baseline ? &*r.baseline : nullptr, &r.with_skill}) {
      if (run == nullptr) continue;
      for (const auto& entry : array_field(run->raw, "cases")) {
        if (!entry.is_object()) continue;
        case_ids.insert(string_field(entry, "id"));
        rows += trial_row(r, *run, entry, open);
      }
    }
  }
  if (rows.empty()) return {};
  auto select = [](const char* id, const char* label, const std::set<std::string>& values) {
    std::string out =
        fmt::format("<label>{} <select id=\"{}\"><option value=\"\">all</option>", label, id);
    for (const auto& v : values) out += fmt::format("<option>{}</option>", xml_escape(v));
    return out + "</select></label> ";
  };
  return "<section id=\"trials\"><h2>Trials</h2><p class=\"filters\">" +
         select("f-model", "model", models) + select("f-case", "case", case_ids) +
         select("f-arm", "arm", {"baseline", "with_skill"}) +
         select("f-outcome", "outcome", {"passed", "failed", "error", "not run"}) + "</p>" + rows +
         "</section><script>"
         "const f=['model','case','arm','outcome'];"
         "function apply(){for(const t of document.querySelectorAll('details.trial')){"
         "t.style.display=f.every(k=>{const v=document.getElementById('f-'+k).value;"
         "return !v||t.dataset[k]===v;})?'':'none';}}"
         "for(const k of f)document.getElementById('f-'+k).addEventListener('change',apply);"
         "</script>";
}

}  // namespace

std::string render_runs_html(const std::vector<SkillModelResult>& results) {
  std::string body;
  for (const auto& r : results) {
    body +=
        fmt::format("<section><h2>{} <small>· {}</small></h2><p class=\"meta\">batch {}</p>",
                    xml_escape(r.skill), xml_escape(r.model), xml_escape(r.with_skill.batch_id));
    body += "<div class=\"charts\"><figure><figcaption>pass rate (95% interval)</figcaption>" +
            svg_rate_chart(r) + "</figure><figure><figcaption>tokens</figcaption>" +
            svg_token_chart(r) + "</figure></div>";
    body += lift_paragraph(r.summary) + cases_table(r.summary);
    body += "</section>";
  }
  if (results.empty()) body = "<p>No evaluation runs found.</p>";
  body += trials_section(results);
  return "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>upskill "
         "runs</title><style>"
         "body{font-family:system-ui,sans-serif;margin:2rem;color:#111}section{margin-bottom:2."
         "5rem}"
         "h2 "
         "small{font-weight:normal;color:#555}.meta{color:#666;margin-top:-.5rem}.charts{display:"
         "flex;gap:2rem;"
         "flex-wrap:wrap}figure{margin:0}figcaption{font-size:.85rem;color:#555;margin-bottom:."
         "3rem}"
         "table{border-collapse:collapse;margin-top:1rem}td,th{border:1px solid #ddd;padding:.3rem "
         ".6rem;"
         "text-align:left;vertical-align:top;font-size:.9rem}td.pass{background:#dcfce7}td.fail{"
         "background:#fee2e2}td.notrun{background:#f3f4f6;color:#555}"
         "details.trial{border:1px solid #ddd;margin:.3rem 0;padding:.3rem .6rem}"
         "pre{white-space:pre-wrap;max-height:30rem;overflow:auto;background:#f9fafb;padding:.5rem}"
         ".o-pass{color:#15803d}.o-fail{color:#b91c1c}.o-notrun{color:#555}"
         "</style></head><body><h1>upskill runs</h1>" +
         body + "</body></html>\n";
}

}  // namespace upskill::report
