// `upskill runs --html`: one self-contained page (docs/eval.md, "The HTML report"). At the top, the
// best pairing per skill × model with its charts, lift and per-case table; below, every batch
// given, grouped by skill and labelled (id, models, runs, complete or not), folded. A batch's
// trials — baseline and with skill side by side per case and run — are drawn from data embedded in
// the page only when the batch is opened, and a trial's checks only when it is opened, so that a
// page of 10,000 trials opens at once; a search box looks through prompts, answers and reasons.
// Nothing is loaded from a network. The page's template, stylesheet and script are page/runs.html,
// runs.css and runs.js, built into the library (docs/ARCHITECTURE.md, "report, cli, python").
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "log_fields.hpp"
#include "page/runs_page.hpp"
#include "upskill/checks/stage_report.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/report/eval_report.hpp"
#include "upskill/report/runs_report.hpp"

namespace upskill::report {

namespace fs = std::filesystem;

namespace {

// Run logs are read leniently (log_fields.hpp).
using namespace logs;

std::string pct(double x) {
  return fmt::format("{:.0f}%", x * 100);
}

// The charts' geometry: labels to the left, bars of `kSpan` from `kLeft`, each bar's figure to its
// right and the trials left out under it; wide enough for the longest label they draw.
constexpr int kLeft = 90, kSpan = 300, kChartWidth = 600;

// An arm's pass rate as the page shows it: the summary's (eval's computation) when it has one,
// else — logs with neither plan nor summary — the run's own; nullopt when nothing was scored.
std::optional<double> shown_rate(const Json& arm, const RunRecord& run) {
  if (const Json* rate = field(arm, "pass_rate"))
    return rate->is_number() ? std::optional<double>(rate->get<double>()) : std::nullopt;
  return run.scored() ? std::optional<double>(run.rate()) : std::nullopt;
}

std::string svg_rate_chart(const SkillModelResult& r) {
  // Two horizontal bars (baseline, with skill) with their 95% intervals as whiskers, the rate to
  // the right and, under each bar, what was not run or left out with its pair.
  const int bar_h = 22, row_h = bar_h + 30;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"pass rate\" data-model=\"{}\">",
      kChartWidth, 2 * row_h + 8, xml_escape(r.model));
  const Json& arms = object_field(r.summary, "arms");
  int row = 0;
  auto draw = [&](const char* label, const char* key, const RunRecord& run, const char* color) {
    const Json& arm = object_field(arms, key);
    const std::optional<double> rate = shown_rate(arm, run);  // nothing scored: no bar, and "—"
    const int y = 8 + row * row_h;
    svg += fmt::format("<text x=\"0\" y=\"{}\" font-size=\"13\">{}</text>", y + 16, label);
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#e5e7eb\"/>",
                       kLeft, y, kSpan, bar_h);
    svg += fmt::format(
        "<rect class=\"bar\" data-arm=\"{}\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" "
        "fill=\"{}\"/>",
        key, kLeft, y, rate.value_or(0) * kSpan, bar_h, color);
    if (const auto interval = interval_field(arm)) {
      const auto [lo, hi] = *interval;
      const double x1 = kLeft + lo * kSpan, x2 = kLeft + hi * kSpan, mid = y + bar_h / 2.0;
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
    svg += fmt::format(
        "<text class=\"rate\" data-arm=\"{}\" x=\"{}\" y=\"{}\" font-size=\"13\">{}</text>", key,
        kLeft + kSpan + 8, y + 16, rate ? pct(*rate) : std::string("—"));
    // The same words as the terminal's, without the leading " · ".
    const long long not_run =
        arm.is_object() ? integer_field(arm, "not_run", run.not_run) : run.not_run;
    const long long excluded = integer_field(arm, "excluded", not_run);
    if (std::string note = not_run_note(not_run, excluded); !note.empty())
      svg += fmt::format(
          "<text class=\"left-out\" data-arm=\"{}\" x=\"{}\" y=\"{}\" font-size=\"12\" "
          "fill=\"#6b7280\">{}</text>",
          key, kLeft, y + bar_h + 15, xml_escape(note.substr(std::string(" · ").size())));
    ++row;
  };
  if (r.baseline) draw("baseline", "baseline", *r.baseline, "#9ca3af");
  draw("with skill", "with_skill", r.with_skill, "#2563eb");
  return svg + "</svg>";
}

// Tokens a trial, from the summary (eval's computation) when it has them; else — logs with
// neither plan nor summary — the run's total, labelled as one.
std::string svg_token_chart(const SkillModelResult& r) {
  const int bar_h = 18;
  const Json& arms = object_field(r.summary, "arms");
  struct Row {
    const char* label;
    const char* key;
    double tokens;
    bool per_trial;
    const char* color;
  };
  std::vector<Row> rows;
  auto add = [&](const char* label, const char* key, const RunRecord& run, const char* color) {
    const Json* per_trial = field(object_field(arms, key), "tokens_per_trial");
    if (per_trial && per_trial->is_number())
      rows.push_back({label, key, per_trial->get<double>(), true, color});
    else
      rows.push_back({label, key, static_cast<double>(run.tokens()), false, color});
  };
  if (r.baseline) add("baseline", "baseline", *r.baseline, "#9ca3af");
  add("with skill", "with_skill", r.with_skill, "#2563eb");
  double max = 1;
  for (const auto& row : rows) max = std::max(max, row.tokens);
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"72\" role=\"img\" "
      "aria-label=\"tokens\" data-model=\"{}\">",
      kChartWidth, xml_escape(r.model));
  int y = 6;
  for (const auto& row : rows) {
    svg += fmt::format("<text x=\"0\" y=\"{}\" font-size=\"13\">{}</text>", y + 14, row.label);
    svg += fmt::format(
        "<rect class=\"bar\" data-arm=\"{}\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" "
        "fill=\"{}\"/>",
        row.key, kLeft, y, row.tokens / max * kSpan, bar_h, row.color);
    svg += fmt::format(
        "<text class=\"tokens\" data-arm=\"{}\" x=\"{}\" y=\"{}\" font-size=\"13\">{:.0f} "
        "{}</text>",
        row.key, kLeft + kSpan + 8, y + 14, row.tokens,
        row.per_trial ? "tokens/trial" : "tokens (run total)");
    y += bar_h + 12;
  }
  return svg + "</svg>";
}

// The lift line, when the summary has a lift.
std::string lift_paragraph(const Json& summary) {
  const Json* lift = field(summary, "lift");
  if (lift == nullptr || !lift->is_object()) return {};
  const Json& l = *lift;
  const long long not_run_pairs = integer_field(l, "not_run_pairs", 0);
  // A lift that was not computed is never drawn as a number (logs from before the field existed
  // have none, and were computed).
  if (!bool_field(l, "computed", true))
    return fmt::format("<p class=\"lift\">lift not computed: {}</p>",
                       xml_escape(string_field(l, "not_computed")));
  const auto interval = interval_field(l);
  return fmt::format(
      "<p class=\"lift\">lift <b>{:+.0f}%</b>{}{} · McNemar p = {:.3g} · <b>{}</b>{}</p>",
      number_field(l, "lift", 0.0) * 100,
      interval ? fmt::format(" [{:+.0f}%, {:+.0f}%]", interval->first * 100, interval->second * 100)
               : std::string(),
      bool_field(l, "partial", false) ? " (partial)" : "", number_field(l, "mcnemar_p", 1.0),
      xml_escape(string_field(l, "verdict")),
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
  if (const long long errors = integer_field(a, "errors", 0); runs == 0 && errors > 0)
    return fmt::format("<td class=\"fail\">error{}</td>",  // no answer: no rate to show
                       errors > 1 ? fmt::format(" ×{}", errors) : std::string());
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
        why += fmt::format("<div><i>{}</i>: {}</div>", arm, xml_escape(text_field(a, "failure")));
      if (a.contains("not_run_reason"))
        why += fmt::format("<div><i>{}</i>: not run: {}</div>", arm,
                           xml_escape(text_field(a, "not_run_reason")));
    }
    out += fmt::format("<tr><td><code>{}</code></td>{}{}<td>{}</td></tr>",
                       xml_escape(string_field(c, "id")), case_cell(arms, "baseline"),
                       case_cell(arms, "with_skill"), why);
  }
  return out + "</tbody></table>";
}

constexpr std::size_t kTranscriptLimit = 100000;  // bytes of one transcript kept in the page
constexpr std::size_t kAnswerLimit = 100000;      // bytes of one answer

// `text` cut to at most `limit` bytes on a UTF-8 boundary, with a note of what was left out.
std::string bounded(const std::string& text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) +
         fmt::format("\n[… {} more bytes in the run logs]", text.size() - cut);
}

// Text for a <pre>: escaped, and cut (with a note) beyond `limit` bytes.
std::string pre(const std::string& text, std::size_t limit) {
  return "<pre>" + xml_escape(bounded(text, limit)) + "</pre>";
}

// Every check of a trial as rows of the page's checks table (check, status, expected, found, why;
// the page adds the table around them): its details (kernel stages with their logs and ptxas
// tables, command output, judges) folded below.
std::string check_rows(const Json& entry) {
  std::string out;
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
        c.contains("label") ? " <small>" + xml_escape(text_field(c, "label")) + "</small>"
                            : std::string(),
        cls, xml_escape(status), xml_escape(string_field(c, "expected")),
        xml_escape(string_field(c, "found")), why);
  }
  return out;
}

// A trial's outcome as the page names it: passed, failed, error (the model call failed), not run
// (its checks could not all run here), never ran (not answered: interrupted, a shard stopped).
std::string outcome_of(const Json& entry) {
  if (!bool_field(entry, "completed", true)) return "never ran";
  if (entry.contains("error")) return "error";
  return string_field(entry, "status", "failed");
}

// The reasons a search looks through: every check that did not pass, "expected: reason".
std::string reasons_of(const Json& entry) {
  std::string out;
  for (const auto& c : array_field(entry, "checks"))
    if (string_field(c, "status") != "passed")
      out += string_field(c, "expected") + ": " + string_field(c, "reason") + "\n";
  return out;
}

// One trial as the page's data: where it belongs (model, case, run, arm), its outcome, score,
// tokens and skill loading, the texts a search looks through (answer, error, reasons), its checks
// as rendered HTML and its transcript.
Json trial_data(const Json& entry, std::size_t model, std::size_t case_index, long long run,
                bool with_skill, const fs::path& batch_dir) {
  Json t = {{"m", model},
            {"c", case_index},
            {"r", run},
            {"a", with_skill ? 1 : 0},
            {"o", outcome_of(entry)}};
  if (bool_field(entry, "excluded", false)) t["x"] = 1;  // left out: its pair was not run
  if (const Json* s = field(entry, "score"); s && s->is_number()) t["sc"] = *s;
  const Json& tokens = object_field(entry, "tokens");
  if (bool_field(entry, "tokens_unavailable", false))
    t["tu"] = true;  // the agent reported none
  else if (!tokens.empty())
    t["tk"] = integer_field(tokens, "input_tokens", 0) + integer_field(tokens, "output_tokens", 0);
  if (const Json* use = field(entry, "skill_use"); use && use->is_object())
    t["ld"] = bool_field(*use, "loaded", false);
  if (entry.contains("answer")) t["ans"] = bounded(text_field(entry, "answer"), kAnswerLimit);
  if (const Json* error = field(entry, "error"); error && error->is_object())
    t["err"] = string_field(*error, "message");
  if (std::string why = reasons_of(entry); !why.empty()) t["why"] = std::move(why);
  if (entry.contains("checks")) t["chk"] = check_rows(entry);
  if (entry.contains("transcript_file")) {
    auto text = files::read_text(batch_dir / text_field(entry, "transcript_file"));
    t["tr"] = text ? bounded(*text, kTranscriptLimit) : text.error().message;
  }
  return t;
}

// One batch as the page's data: its models and cases (each case's prompt once) and every trial of
// every run folder it holds.
Json batch_data(const BatchRecord& b) {
  std::vector<std::string> models;
  std::vector<std::string> case_ids;
  std::map<std::string, std::size_t> case_index;
  Json cases = Json::array(), trials = Json::array();
  long long runs = 0;
  for (const RunRecord& run : b.runs) {
    auto m = std::find(models.begin(), models.end(), run.model);
    if (m == models.end()) m = models.insert(models.end(), run.model);
    const long long run_index = integer_field(object_field(run.raw, "metadata"), "run_index", 0);
    runs = std::max(runs, run_index + 1);
    for (const auto& entry : array_field(run.raw, "cases")) {
      if (!entry.is_object()) continue;
      const std::string id = string_field(entry, "id");
      auto [it, added] = case_index.emplace(id, case_index.size());
      if (added) cases.push_back({{"id", id}, {"p", text_field(entry, "input")}});
      trials.push_back(trial_data(entry, static_cast<std::size_t>(m - models.begin()), it->second,
                                  run_index, run.run_type != "baseline", b.dir));
    }
  }
  return {{"models", models}, {"cases", cases}, {"runs", runs}, {"trials", trials}};
}

// A batch's line in the list: id, skill, models, what it holds, complete or not, and each model's
// rates as its summary (or, without one, its runs) give them.
std::string batch_label(const BatchRecord& b) {
  std::size_t trials = 0;
  for (const auto& run : b.runs) trials += array_field(run.raw, "cases").size();
  std::string state = !b.complete.has_value() ? std::string()
                      : *b.complete
                          ? std::string(" · <span class=\"ok\">complete</span>")
                          : " · <span class=\"warn\">" +
                                xml_escape(b.note.empty() ? "incomplete" : b.note) + "</span>";
  std::string rates;
  for (const auto& model : b.models) {
    std::optional<double> base, with;
    for (const auto& m : array_field(b.summary, "models"))
      if (string_field(m, "name") == model) {
        const Json& arms = object_field(m, "arms");
        if (const Json* r = field(object_field(arms, "baseline"), "pass_rate"); r && r->is_number())
          base = r->get<double>();
        if (const Json* r = field(object_field(arms, "with_skill"), "pass_rate");
            r && r->is_number())
          with = r->get<double>();
      }
    if (b.summary.is_null()) {  // logs without a summary: pooled over the model's runs
      long long bp = 0, bs = 0, wp = 0, ws = 0;
      for (const auto& run : b.runs) {
        if (run.model != model) continue;
        (run.run_type == "baseline" ? bp : wp) += run.cases_passed;
        (run.run_type == "baseline" ? bs : ws) += run.cases_scored;
      }
      if (bs) base = static_cast<double>(bp) / static_cast<double>(bs);
      if (ws) with = static_cast<double>(wp) / static_cast<double>(ws);
    }
    rates += fmt::format(" · {}: {}{}", xml_escape(model), base ? pct(*base) + " → " : "",
                         with ? pct(*with) : "—");
  }
  return fmt::format("<b>{}</b> · {} trial{}{}{}", xml_escape(b.id), trials, trials == 1 ? "" : "s",
                     rates, state);
}

// The batches, grouped by skill (newest batch first), each folded until opened.
std::string batches_section(const std::vector<BatchRecord>& batches) {
  if (batches.empty()) return {};
  std::map<std::string, std::vector<std::size_t>> by_skill;
  for (std::size_t i = 0; i < batches.size(); ++i) by_skill[batches[i].skill].push_back(i);
  std::string out = fmt::format(
      "<section id=\"batches\"><h2>Batches <small>· {}</small></h2><p class=\"search\"><input "
      "id=\"q\" type=\"search\" size=\"60\" placeholder=\"Search prompts, answers and reasons "
      "(also outcome:failed, arm:baseline, model:…, case:…)\"> <span id=\"hits\"></span></p>"
      "<ol id=\"results\"></ol>",
      batches.size());
  for (auto& [skill, indices] : by_skill) {
    out += fmt::format("<div class=\"skill\"><h3>{}</h3>", xml_escape(skill));
    std::sort(indices.begin(), indices.end(),
              [&](std::size_t a, std::size_t b) { return batches[a].id > batches[b].id; });
    for (std::size_t i : indices)
      out += fmt::format(
          "<details class=\"batch\" data-b=\"{}\"><summary>{}</summary><div class=\"body\">"
          "</div></details>",
          i, batch_label(batches[i]));
    out += "</div>";
  }
  return out + "</section>";
}

// The page's data as the text of a JSON script element. Inside a script element only "</" (an end
// tag) and "<!" (a comment's start) mean anything to the HTML parser, so every '<' before '/' or
// '!' is written as the JSON escape \u003c: no text of a trial can end the element or open
// another, and the rest of the text stays as it is.
std::string embedded_json(const Json& data) {
  const std::string text = data.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 20);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool opens =
        text[i] == '<' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '!');
    if (opens)
      out += "\\u003c";
    else
      out += text[i];
  }
  return out;
}

// `page` with each "{{name}}" in it replaced by what `fills` gives for that name. Only the page's
// own text is looked through: what a fill holds (the body, with every trial's text) stays as it is.
std::string fill(std::string_view page, const std::map<std::string_view, std::string_view>& fills) {
  std::string out;
  std::size_t at = 0;
  for (std::size_t open; (open = page.find("{{", at)) != std::string_view::npos;) {
    const std::size_t close = page.find("}}", open);
    out += page.substr(at, open - at);
    out += fills.at(page.substr(open + 2, close - open - 2));
    at = close + 2;
  }
  return out += page.substr(at);
}

}  // namespace

std::string render_runs_html(const std::vector<SkillModelResult>& results,
                             const std::vector<BatchRecord>& batches) {
  std::string body;
  for (const auto& r : results) {
    body += fmt::format("<section><h2>{} <small>· {}</small></h2><p class=\"meta\">batch {}{}</p>",
                        xml_escape(r.skill), xml_escape(r.model), xml_escape(r.with_skill.batch_id),
                        r.incomplete.empty()
                            ? std::string()
                            : " · <span class=\"warn\">" + xml_escape(r.incomplete) + "</span>");
    body += "<div class=\"charts\"><figure><figcaption>pass rate (95% interval)</figcaption>" +
            svg_rate_chart(r) + "</figure><figure><figcaption>tokens</figcaption>" +
            svg_token_chart(r) + "</figure></div>";
    body += lift_paragraph(r.summary) + cases_table(r.summary);
    body += "</section>";
  }
  if (results.empty() && batches.empty()) body = "<p>No evaluation runs found.</p>";
  body += batches_section(batches);
  if (!batches.empty()) {
    Json data = {{"batches", Json::array()}};
    for (const auto& b : batches) {
      Json one = batch_data(b);
      one["id"] = b.id;
      data["batches"].push_back(std::move(one));
    }
    body += "<script type=\"application/json\" id=\"upskill-data\">" + embedded_json(data) +
            "</script><script>" + std::string(page::runs_js()) + "</script>";
  }
  // The page's own files (src/report/page/), built into the library.
  return fill(page::runs_html(), {{"style", page::runs_css()}, {"body", body}});
}

}  // namespace upskill::report
