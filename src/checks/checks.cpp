// Executing a test case's checks against an answer (docs/test-cases.md) (see checks.hpp).
#include "upskill/checks/checks.hpp"

#include <fmt/format.h>

#include <regex>

#include "upskill/cases/json_path.hpp"
#include "upskill/checks/stage_report.hpp"
#include "upskill/core/enum_names.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/core/unicode.hpp"

namespace upskill::checks {

namespace fs = std::filesystem;
using cases::CheckKind;

namespace {
constexpr enum_names::Table<Status, 4> kStatuses{{{Status::passed, "passed"},
                                                  {Status::failed, "failed"},
                                                  {Status::not_run, "not run"},
                                                  {Status::error, "error"}}};
}  // namespace

std::string_view to_string(Status status) {
  return enum_names::name(kStatuses, status, "error");
}

std::optional<Status> status_from_string(std::string_view text) {
  return enum_names::parse(kStatuses, text);
}

std::string strip_reasoning(std::string_view text) {
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t open = text.find("<think>", pos);
    if (open == std::string_view::npos) {
      out += text.substr(pos);
      break;
    }
    out += text.substr(pos, open - pos);
    const std::size_t close = text.find("</think>", open + 7);
    if (close == std::string_view::npos) break;  // an unclosed block runs to the end
    pos = close + 8;
  }
  return out;
}

namespace {

CheckResult base(const cases::Check& check) {
  CheckResult r;
  r.kind = check.kind;
  r.label = check.label;
  r.weight = check.weight;
  return r;
}

// A result produced elsewhere (a runner, a validator) labelled as this check.
CheckResult adopt(CheckResult out, const cases::Check& check, const std::string& expected) {
  out.kind = check.kind;
  out.label = check.label;
  out.weight = check.weight;
  if (out.expected.empty()) out.expected = expected;
  return out;
}

CheckResult verdict(CheckResult r, bool ok, std::string found, std::string reason) {
  r.status = ok ? Status::passed : Status::failed;
  r.found = std::move(found);
  if (!ok) r.reason = std::move(reason);
  return r;
}

std::string quote_all(const std::vector<std::string>& values) {
  std::vector<std::string> quoted;
  for (const auto& v : values) quoted.push_back("\"" + v + "\"");
  return text::join(quoted, ", ");
}

// A workspace file's text (with `read`) or its size, for file checks and validators.
Result<std::string> workspace_file(const fs::path& workspace, const std::string& path, bool read) {
  auto target = files::resolve_inside(workspace, path);
  if (!target) return fail(target.error());
  std::error_code ec;
  if (!fs::is_regular_file(*target, ec))
    return fail(Error::usage(fmt::format("expected file does not exist: {}", path)));
  if (!read) return fmt::format("{} ({} bytes)", path, fs::file_size(*target, ec));
  return files::read_text(*target);
}

// The text around the first occurrence of `needle` (or the start), for the report.
std::string around(std::string_view haystack, std::size_t at, std::size_t length) {
  if (at == std::string_view::npos) return text::excerpt(haystack, 80);
  const std::size_t start = at > 30 ? at - 30 : 0;
  return text::excerpt(haystack.substr(start, length + 60), 100);
}

std::size_t find_folded(const std::string& folded_haystack, const std::string& needle) {
  return folded_haystack.find(unicode::lower(needle));
}

// The answer as JSON: the whole text, or the one fenced block it consists of.
std::optional<Json> answer_json(const std::string& answer, std::string& problem) {
  const std::string trimmed = text::trim(answer);
  try {
    return Json::parse(trimmed);
  } catch (const nlohmann::json::exception& e) {
    problem = e.what();
  }
  static const std::regex kFence(R"(^```[A-Za-z0-9_-]*[ \t]*\r?\n([\s\S]*?)\r?\n```$)");
  std::smatch m;
  if (std::regex_match(trimmed, m, kFence)) {
    try {
      return Json::parse(m[1].str());
    } catch (const nlohmann::json::exception& e) {
      problem = e.what();
    }
  }
  return std::nullopt;
}

CheckResult text_match(const cases::Check& check, const cases::TextMatchParams& p,
                       const std::string& answer) {
  CheckResult r = base(check);
  const std::string folded = unicode::lower(answer);
  switch (check.kind) {
    case CheckKind::contains: {
      r.expected = fmt::format("contains \"{}\"", p.values[0]);
      const std::size_t at = answer.find(p.values[0]);
      return verdict(r, at != std::string::npos, around(answer, at, p.values[0].size()),
                     fmt::format("\"{}\" does not appear (case-sensitive)", p.values[0]));
    }
    case CheckKind::icontains: {
      r.expected = fmt::format("contains \"{}\" (any case)", p.values[0]);
      const std::size_t at = find_folded(folded, p.values[0]);
      return verdict(r, at != std::string::npos, around(answer, at, p.values[0].size()),
                     fmt::format("\"{}\" does not appear", p.values[0]));
    }
    case CheckKind::not_contains: {
      r.expected = fmt::format("does not contain \"{}\" (any case)", p.values[0]);
      const std::size_t at = find_folded(folded, p.values[0]);
      return verdict(r, at == std::string::npos, around(answer, at, p.values[0].size()),
                     fmt::format("\"{}\" appears", p.values[0]));
    }
    case CheckKind::contains_all: {
      r.expected = fmt::format("contains all of: {}", text::join(p.values, ", "));
      std::vector<std::string> missing, quoted;
      for (const auto& v : p.values)
        if (find_folded(folded, v) == std::string::npos) {
          missing.push_back(v);
          quoted.push_back("\"" + v + "\"");
        }
      if (!missing.empty()) r.details = {{"missing", missing}};
      return verdict(r, missing.empty(), text::excerpt(answer, 80),
                     "missing " + text::join(quoted, ", "));
    }
    case CheckKind::contains_any: {
      r.expected = fmt::format("contains one of: {}", text::join(p.values, ", "));
      for (const auto& v : p.values)
        if (const std::size_t at = find_folded(folded, v); at != std::string::npos)
          return verdict(r, true, around(answer, at, v.size()), "");
      return verdict(r, false, text::excerpt(answer, 80), "none of them appears");
    }
    default:
      break;
  }
  r.status = Status::error;
  r.reason = "not a text check";
  return r;
}

CheckResult regex_check(const cases::Check& check, const cases::RegexParams& p,
                        const std::string& answer) {
  CheckResult r = base(check);
  r.expected = fmt::format("matches /{}/{}", p.pattern, p.flags);
  try {
    auto options = std::regex::ECMAScript;
    if (p.flags.find('i') != std::string::npos) options |= std::regex::icase;
    if (p.flags.find('m') != std::string::npos) options |= std::regex::multiline;
    const std::regex re(p.pattern, options);
    std::smatch m;
    const bool ok = std::regex_search(answer, m, re);
    return verdict(r, ok, ok ? text::excerpt(m.str(0), 80) : text::excerpt(answer, 80), "no match");
  } catch (const std::regex_error& e) {
    r.status = Status::error;
    r.reason = fmt::format("the pattern could not be evaluated: {}", e.what());
    return r;
  }
}

CheckResult file_check(const cases::Check& check, const std::string& path,
                       const std::vector<std::string>* values, bool ignore_case,
                       const Answer& answer) {
  CheckResult r = base(check);
  r.expected = values ? fmt::format("{} contains {}", path, quote_all(*values))
                      : fmt::format("{} exists", path);
  if (!answer.workspace) {
    r.status = Status::not_run;
    r.reason = "there is no workspace (file checks need agent mode)";
    return r;
  }
  auto content = workspace_file(*answer.workspace, path, values != nullptr);
  if (!content) return verdict(r, false, "", content.error().message);
  if (!values) return verdict(r, true, *content, "");
  const std::string folded = ignore_case ? unicode::lower(*content) : std::string();
  std::vector<std::string> missing;
  std::size_t first = std::string::npos;
  for (const auto& v : *values) {
    const std::size_t at = ignore_case ? folded.find(unicode::lower(v)) : content->find(v);
    if (at == std::string::npos)
      missing.push_back(v);
    else if (first == std::string::npos)
      first = at;
  }
  if (!missing.empty()) r.details = {{"missing", missing}};
  return verdict(r, missing.empty(), around(*content, first, values->front().size()),
                 fmt::format("{} does not appear in {}", quote_all(missing), path));
}

// A validator's input: the answer, or the workspace file it names (upskill's output_file) when
// the student worked in a workspace.
Result<Answer> validator_input(const cases::ValidatorParams& p, const Answer& answer) {
  if (!p.file || !answer.workspace) return answer;
  UPSKILL_ASSIGN_OR_RETURN(std::string content, workspace_file(*answer.workspace, *p.file, true));
  Answer file = answer;
  file.text = std::move(content);
  return file;
}

// The hard checks' outcome as a judge reads it.
std::string hard_checks_summary(const std::vector<CheckResult>& results) {
  int ran = 0, passed = 0;
  std::vector<std::string> failures;
  for (const auto& r : results) {
    if (r.kind == CheckKind::judge || !r.ran()) continue;
    ++ran;
    if (r.status == Status::passed)
      ++passed;
    else
      failures.push_back(fmt::format("- {}: {}", r.expected, r.reason));
  }
  if (ran == 0) return "";
  std::string out = fmt::format("{} of {} checks passed.", passed, ran);
  for (const auto& f : failures) out += "\n" + f;
  return out;
}

CheckResult run_judge(const cases::Check& check, const cases::JudgeParams& p, const Answer& answer,
                      const std::string& text, const CheckEnvironment& env,
                      std::string hard_checks) {
  CheckResult r = base(check);
  r.expected = fmt::format("judged ≥ {:.3g} of {:.3g}", p.threshold * p.scale, p.scale);
  if (!env.judges) {
    r.reason = "judge checks are not run here (no judge model)";
    return r;
  }
  return adopt(env.judges->judge({p, answer.task, text, std::move(hard_checks)}), check,
               r.expected);
}

}  // namespace

CheckResult run_check(const cases::Check& check, const Answer& answer,
                      const CheckEnvironment& env) {
  const std::string text = strip_reasoning(answer.text);
  Answer stripped = answer;
  stripped.text = text;
  return std::visit(
      [&](const auto& p) -> CheckResult {
        using P = std::decay_t<decltype(p)>;
        CheckResult r = base(check);
        if constexpr (std::is_same_v<P, cases::TextMatchParams>) {
          return text_match(check, p, text);
        } else if constexpr (std::is_same_v<P, cases::RegexParams>) {
          return regex_check(check, p, text);
        } else if constexpr (std::is_same_v<P, cases::EqualsParams>) {
          std::string got = p.trim ? text::trim(text) : text;
          std::string want = p.trim ? text::trim(p.value) : p.value;
          if (p.ignore_case) {
            got = unicode::lower(got);
            want = unicode::lower(want);
          }
          r.expected = fmt::format("equals \"{}\"", text::excerpt(p.value, 60));
          return verdict(r, got == want, text::excerpt(text, 80), "the answer is different");
        } else if constexpr (std::is_same_v<P, cases::IsJsonParams>) {
          r.expected = "valid JSON";
          std::string problem;
          const bool ok = answer_json(text, problem).has_value();
          return verdict(r, ok, text::excerpt(text, 80),
                         "not JSON: " + text::excerpt(problem, 120));
        } else if constexpr (std::is_same_v<P, cases::JsonPathParams>) {
          r.expected = p.equals ? fmt::format("{} == {}", p.path, p.equals->dump())
                                : fmt::format("{} exists", p.path);
          std::string problem;
          auto doc = answer_json(text, problem);
          if (!doc)
            return verdict(r, false, text::excerpt(text, 80),
                           "not JSON: " + text::excerpt(problem, 120));
          auto tokens = cases::parse_json_path(p.path);
          if (!tokens) {
            r.status = Status::error;
            r.reason = tokens.error().message;
            return r;
          }
          const Json* value = cases::resolve_json_path(*doc, *tokens);
          if (!value)
            return verdict(r, false, text::excerpt(doc->dump(), 80),
                           fmt::format("{} is missing", p.path));
          const bool ok = !p.equals || *value == *p.equals;
          return verdict(r, ok, text::excerpt(value->dump(), 80),
                         fmt::format("{} is {}", p.path, text::excerpt(value->dump(), 60)));
        } else if constexpr (std::is_same_v<P, cases::FileExistsParams>) {
          return file_check(check, p.path, nullptr, false, answer);
        } else if constexpr (std::is_same_v<P, cases::FileContainsParams>) {
          return file_check(check, p.path, &p.values, p.ignore_case, answer);
        } else if constexpr (std::is_same_v<P, cases::CommandParams>) {
          r.expected = fmt::format("`{}` exits {}", p.run, p.expect_exit);
          if (!answer.workspace) {
            r.reason = "there is no workspace (command checks need agent mode)";
            return r;
          }
          if (!env.commands) {
            r.reason = "commands are not run here (no sandbox available)";
            return r;
          }
          return adopt(env.commands->run(p, *answer.workspace), check, r.expected);
        } else if constexpr (std::is_same_v<P, cases::ValidatorParams>) {
          r.expected = fmt::format("validator {}", p.name);
          const ValidatorFn* fn = env.validators ? env.validators->find(p.name) : nullptr;
          if (!fn) {
            r.status = Status::error;
            r.reason =
                fmt::format("unknown validator '{}' (built in: {})", p.name,
                            env.validators ? text::join(env.validators->names(), ", ") : "none");
            return r;
          }
          auto input = validator_input(p, stripped);
          if (!input) return verdict(r, false, "", input.error().message);
          return adopt((*fn)(*input, p.config), check, r.expected);
        } else if constexpr (std::is_same_v<P, cases::KernelParams>) {
          r.expected = "kernel pipeline passes";
          if (!env.kernels) {
            r.reason = "kernel checks are not run here (no kernel pipeline in this build)";
            return r;
          }
          return adopt(env.kernels->check(p, stripped), check, r.expected);
        } else if constexpr (std::is_same_v<P, cases::JudgeParams>) {
          return run_judge(check, p, answer, text, env, "");
        } else if constexpr (std::is_same_v<P, cases::UnsupportedParams>) {
          r.expected = "a verifier this version can run";
          r.status = Status::error;
          r.reason = p.message;
          return r;
        }
      },
      check.params);
}

CaseResult score_case(const cases::TestCase& test_case, const Answer& answer,
                      const CheckEnvironment& env) {
  CaseResult result;
  result.case_id = test_case.id;
  Answer asked = answer;
  asked.task = test_case.input;
  // Judges run last, shown how the other checks went; results keep the checks' order.
  const std::vector<cases::Check> effective = test_case.effective_checks();
  std::vector<CheckResult> results(effective.size());
  for (std::size_t i = 0; i < effective.size(); ++i)
    if (effective[i].kind != CheckKind::judge) results[i] = run_check(effective[i], asked, env);
  const std::string summary = hard_checks_summary(results);
  const std::string text = strip_reasoning(answer.text);
  for (std::size_t i = 0; i < effective.size(); ++i)
    if (effective[i].kind == CheckKind::judge)
      results[i] = run_judge(effective[i], std::get<cases::JudgeParams>(effective[i].params), asked,
                             text, env, summary);
  double ran_weight = 0, passed_weight = 0, error_weight = 0, not_run_weight = 0;
  bool every_weighted_passed = true, weighted_failed = false, weighted_not_run = false;
  for (auto& r : results) {
    if (r.ran()) {
      ++result.ran;
      ran_weight += r.weight;
      if (r.status == Status::passed) {
        ++result.passed_checks;
        passed_weight += r.weight;
      } else if (r.weight > 0) {
        every_weighted_passed = false;  // weight 0 checks are informational
        if (r.status == Status::failed) weighted_failed = true;
      }
      if (r.status == Status::error) {
        result.has_errors = true;
        error_weight += r.weight;
      }
    } else {
      ++result.not_run;
      not_run_weight += r.weight;
      if (r.weight > 0) weighted_not_run = true;
    }
    result.checks.push_back(std::move(r));
  }
  result.score = ran_weight > 0 ? passed_weight / ran_weight : (result.ran > 0 ? 1.0 : 0.0);
  // `passed` is certain: a check that did not run counts as failed. `could_pass` is the best case:
  // every check that did not run or could not be evaluated counts as passed.
  bool could_pass = false;
  if (test_case.threshold) {
    const double total = ran_weight + not_run_weight;
    const double worst = total > 0 ? passed_weight / total : result.score;
    const double best = total > 0 ? (passed_weight + error_weight + not_run_weight) / total : 1.0;
    result.passed = result.ran > 0 && worst + 1e-12 >= *test_case.threshold;
    could_pass = best + 1e-12 >= *test_case.threshold;
  } else {
    result.passed = result.ran > 0 && every_weighted_passed && !weighted_not_run;
    could_pass = !weighted_failed;
  }
  if (result.passed)
    result.status = Status::passed;
  else if (!could_pass)
    result.status = Status::failed;
  else if (result.has_errors)
    result.status = Status::error;
  else if (result.not_run > 0)
    result.status = Status::not_run;
  else
    result.status = Status::failed;  // no check at all
  return result;
}

Json to_json(const CheckResult& r) {
  Json j = {{"type", std::string(cases::to_string(r.kind))},
            {"status", std::string(to_string(r.status))},
            {"weight", r.weight},
            {"expected", r.expected},
            {"found", r.found}};
  if (!r.label.empty()) j["label"] = r.label;
  if (!r.reason.empty()) j["reason"] = r.reason;
  if (!r.details.is_null()) j["details"] = r.details;
  return j;
}

Json validation_result(const CaseResult& result) {
  int total = 0, passed = 0;
  std::vector<std::string> messages;
  Json details = Json::array();
  for (const auto& c : result.checks) {
    ++total;
    if (c.status == Status::passed) {
      ++passed;
      continue;
    }
    if (!c.reason.empty()) messages.push_back(c.reason);
    if (c.details.is_object() && c.details.contains("missing") && c.details["missing"].is_array()) {
      for (const auto& m : c.details["missing"])
        if (m.is_string()) details.push_back("missing: " + m.get<std::string>());
    } else if (!c.reason.empty()) {
      details.push_back(c.reason);
    }
  }
  return {{"passed", result.passed},
          {"assertions_passed", passed},
          {"assertions_total", total},
          {"metrics_count", 0},
          {"benchmarks_found", 0},
          {"error_message", messages.empty() ? Json(nullptr) : Json(text::join(messages, "; "))},
          {"details", details}};
}

Json to_json(const CaseResult& r) {
  Json checks = Json::array();
  for (const auto& c : r.checks) checks.push_back(to_json(c));
  return {{"id", r.case_id},
          {"status", std::string(to_string(r.status))},
          {"passed", r.passed},
          {"score", r.score},
          {"checks_run", r.ran},
          {"checks_passed", r.passed_checks},
          {"checks_not_run", r.not_run},
          {"has_errors", r.has_errors},
          {"checks", checks}};
}

int checks_needing_gpu(const CaseResult& result) {
  int n = 0;
  for (const auto& c : result.checks)
    if (needs_gpu(c)) ++n;
  return n;
}

}  // namespace upskill::checks
