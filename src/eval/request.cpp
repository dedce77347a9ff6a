// A session request resolved from what a front end was given and the configuration, and its JSON
// form, written and read over the one field list (request_fields.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>

#include "upskill/core/files.hpp"
#include "upskill/core/json.hpp"
#include "upskill/core/text.hpp"
#include "upskill/eval/batch.hpp"
#include "upskill/eval/request_fields.hpp"
#include "upskill/eval/session.hpp"

namespace upskill::eval {

int resolved_jobs(const RequestSettings& given, const config::Config& cfg) {
  return std::max(1, given.jobs.value_or(cfg.max_parallel.value_or(4)));
}

int resolved_runs(const RequestSettings& given, const config::Config& cfg) {
  return std::max(1, given.runs.value_or(cfg.num_runs.value_or(given.benchmark ? 3 : 1)));
}

std::filesystem::path resume_dir(const std::string& resume, const std::filesystem::path& runs_dir) {
  std::error_code ec;
  return std::filesystem::exists(resume, ec) ? std::filesystem::path(resume) : runs_dir / resume;
}

void complete_request(SessionRequest& request, const config::Config& cfg) {
  if (request.models.empty()) request.models.push_back(cfg.model_for(config::ModelRole::student));
  if (request.judge_models.empty())
    request.judge_models.push_back(cfg.model_for(config::ModelRole::judge));
  if (!request.runs_dir) request.runs_dir = cfg.runs_dir;
}

void resolve_request(SessionRequest& request, const RequestSettings& given,
                     const config::Config& cfg) {
  request.jobs = resolved_jobs(given, cfg);
  request.runs = resolved_runs(given, cfg);
  complete_request(request, cfg);
  const bool upstream_rule = !given.benchmark && request.models.size() <= 1 && request.runs <= 1;
  if (given.baseline) {
    request.baseline = *given.baseline;
  } else if (request.resume) {  // the batch's own arms, whatever the rule says today
    auto plan = read_plan(resume_dir(*request.resume, *request.runs_dir));
    request.baseline = plan ? plan->shape.baseline : upstream_rule;
  } else {
    request.baseline = request.gates.min_lift.has_value() || upstream_rule;
  }
}

namespace {

// Each member type's JSON value (the JSON form's types: docs/eval.md, "A request file").
Json value_json(const std::filesystem::path& p) {
  return p.string();
}
Json value_json(const std::string& s) {
  return s;
}
Json value_json(const std::vector<std::string>& v) {
  return v;
}
Json value_json(int v) {
  return v;
}
Json value_json(bool v) {
  return v;
}
Json value_json(std::uint64_t v) {
  return v;
}
Json value_json(double v) {
  return v;
}
Json value_json(cases::Mode m) {
  return to_string(m);
}
Json value_json(SkillDelivery d) {
  return to_string(d);
}
Json value_json(const Shard& shard) {
  [[maybe_unused]] const auto& [index, count, gpu] = shard;  // a new member stops the build here
  return Json{{"index", shard.index}, {"count", shard.count}, {"gpu", shard.gpu}};
}
template <class T>
Json value_json(const std::optional<T>& v) {
  return v ? value_json(*v) : Json(nullptr);
}

// Reading one value back; the error says what was expected (the caller names where).
struct Reading {
  const JsonDocument& doc;
  std::string pointer;
  std::filesystem::path base;  // relative paths are relative to the request file's folder

  Error wrong(const Json& j, std::string_view expected) const {
    return Error::at(doc.at(pointer), fmt::format("{}: expected {}, got {}", pointer.substr(1),
                                                  expected, json_type_name(j)));
  }
};

Status read_value(const Json& j, std::filesystem::path& out, const Reading& at) {
  if (!j.is_string() || j.get_ref<const std::string&>().empty())
    return fail(at.wrong(j, "a path (a non-empty string)"));
  const std::filesystem::path p = j.get<std::string>();
  out = p.is_relative() && !at.base.empty() ? (at.base / p).lexically_normal() : p;
  return {};
}
Status read_value(const Json& j, std::string& out, const Reading& at) {
  if (!j.is_string()) return fail(at.wrong(j, "a string"));
  out = j.get<std::string>();
  return {};
}
Status read_value(const Json& j, std::vector<std::string>& out, const Reading& at) {
  if (!j.is_array() ||
      !std::all_of(j.begin(), j.end(), [](const Json& e) { return e.is_string(); }))
    return fail(at.wrong(j, "a list of strings"));
  out = j.get<std::vector<std::string>>();
  return {};
}
Status read_value(const Json& j, int& out, const Reading& at) {
  // A number past int64 is unsigned in nlohmann_json: compared as such, never cast first.
  const bool fits =
      j.is_number_unsigned()
          ? j.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<int>::max())
          : j.is_number_integer() && j.get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                j.get<std::int64_t>() <= std::numeric_limits<int>::max();
  if (!fits) return fail(at.wrong(j, "a whole number"));
  out = j.get<int>();
  return {};
}
Status read_value(const Json& j, bool& out, const Reading& at) {
  if (!j.is_boolean()) return fail(at.wrong(j, "true or false"));
  out = j.get<bool>();
  return {};
}
Status read_value(const Json& j, std::uint64_t& out, const Reading& at) {
  if (!j.is_number_unsigned()) return fail(at.wrong(j, "a whole number, 0 or more"));
  out = j.get<std::uint64_t>();
  return {};
}
Status read_value(const Json& j, double& out, const Reading& at) {
  if (!j.is_number()) return fail(at.wrong(j, "a number"));
  out = j.get<double>();
  return {};
}
Status read_value(const Json& j, cases::Mode& out, const Reading& at) {
  const auto m = j.is_string() ? cases::mode_from_string(j.get<std::string>()) : std::nullopt;
  if (!m) return fail(at.wrong(j, text::join(cases::mode_names(), " or ")));
  out = *m;
  return {};
}
Status read_value(const Json& j, SkillDelivery& out, const Reading& at) {
  const auto d = j.is_string() ? skill_delivery_from_string(j.get<std::string>()) : std::nullopt;
  if (!d) return fail(at.wrong(j, text::join(skill_delivery_names(), " or ")));
  out = *d;
  return {};
}
Status read_value(const Json& j, Shard& out, const Reading& at) {
  [[maybe_unused]] auto& [index_, count_, gpu_] = out;  // a new member stops the build here
  auto [index, count, gpu] = std::tie(out.index, out.count, out.gpu);
  const bool shaped = j.is_object() && j.size() == 3 && j.contains("index") &&
                      j.contains("count") && j.contains("gpu");
  if (!shaped) return fail(at.wrong(j, "{\"index\": K, \"count\": N, \"gpu\": G}"));
  for (auto [key, member] : {std::pair{"index", &index}, {"count", &count}, {"gpu", &gpu}})
    UPSKILL_RETURN_IF_ERROR(
        read_value(j[key], *member, Reading{at.doc, at.pointer + "/" + key, at.base}));
  if (count < 1 || index < 1 || index > count || gpu < 0 || gpu > count)
    return fail(Error::at(at.doc.at(at.pointer),
                          fmt::format("shard: {}/{} (gpu {}) is not a shard", index, count, gpu)));
  return {};
}
template <class T>
Status read_value(const Json& j, std::optional<T>& out, const Reading& at) {
  if (j.is_null()) {
    out.reset();
    return {};
  }
  T value{};
  UPSKILL_RETURN_IF_ERROR(read_value(j, value, at));
  out = std::move(value);
  return {};
}

// What the flags refuse, the file refuses too: counts of at least 1, a share between 0 and 1.
Status check_values(const SessionRequest& r, const JsonDocument& doc) {
  const auto at_least_one = [&](const char* key, int value) -> Status {
    if (value >= 1) return {};
    return fail(Error::at(doc.at(json_pointer_append("", key)),
                          fmt::format("{}: at least 1, not {}", key, value)));
  };
  UPSKILL_RETURN_IF_ERROR(at_least_one("runs", r.runs));
  UPSKILL_RETURN_IF_ERROR(at_least_one("jobs", r.jobs));
  UPSKILL_RETURN_IF_ERROR(at_least_one("max_turns", r.max_turns));
  if (r.judge_threshold && !(*r.judge_threshold >= 0 && *r.judge_threshold <= 1))
    return fail(
        Error::at(doc.at("/judge_threshold"),
                  fmt::format("judge_threshold: between 0 and 1, not {}", *r.judge_threshold)));
  return {};
}

}  // namespace

Json to_json(const SessionRequest& request) {
  Json j = Json::object();
  for_each_request_field(request, [&j](const RequestField& field, const auto& member) {
    j[field.key] = value_json(member);
  });
  return j;
}

Json trial_settings(const SessionRequest& request) {
  Json j = Json::object();
  for_each_request_field(request, [&j](const RequestField& field, const auto& member) {
    if (field.shapes_trials) j[field.key] = value_json(member);
  });
  return j;
}

Result<SessionRequest> request_from_json(const JsonDocument& doc) {
  if (!doc.value.is_object())
    return fail(Error::at(
        doc.at(""), fmt::format("a request is a JSON object, not {}", json_type_name(doc.value))));
  SessionRequest request;
  const std::filesystem::path base = std::filesystem::path(doc.file).parent_path();
  std::set<std::string> known;
  Status status;
  for_each_request_field(request, [&](const RequestField& field, auto& member) {
    known.insert(field.key);
    if (!status || !doc.value.contains(field.key)) return;
    status = read_value(doc.value[field.key], member,
                        Reading{doc, json_pointer_append("", field.key), base});
  });
  UPSKILL_RETURN_IF_ERROR(status);
  for (const auto& [key, value] : doc.value.items())
    if (!known.contains(key))
      return fail(Error::at(
          doc.at_key(json_pointer_append("", key)),
          key == "request"
              ? "a request file holds the request itself: --dry-run's \"request\" "
                "member, not the whole plan"
              : fmt::format(
                    "'{}' is not a request field (fields: {})", key,
                    text::join(std::vector<std::string>(known.begin(), known.end()), ", "))));
  if (request.skill_dir.empty())
    return fail(Error::at(doc.at(""), "a request names its skill_dir"));
  UPSKILL_RETURN_IF_ERROR(check_values(request, doc));
  // A batch folder named relative to the file, as its other paths are (a batch id stays an id).
  if (request.resume && std::filesystem::path(*request.resume).is_relative()) {
    std::error_code ec;
    if (const auto near = base / *request.resume;
        !base.empty() && std::filesystem::exists(near, ec))
      request.resume = near.lexically_normal().string();
  }
  return request;
}

SessionRequest with_absolute_paths(SessionRequest request) {
  const auto absolute = [](std::filesystem::path& p) {
    std::error_code ec;
    if (const auto a = std::filesystem::absolute(p, ec); !ec) p = a.lexically_normal();
  };
  absolute(request.skill_dir);
  for (auto* p : {&request.tests, &request.spec_dir, &request.runs_dir})
    if (*p) absolute(**p);
  return request;
}

Result<SessionRequest> read_request_file(const std::filesystem::path& file) {
  UPSKILL_ASSIGN_OR_RETURN(std::string text, files::read_text(file));
  UPSKILL_ASSIGN_OR_RETURN(JsonDocument doc, parse_json_document(text, file.string()));
  return request_from_json(doc);
}

Status write_request_file(const SessionRequest& request, const std::filesystem::path& file) {
  return files::write_atomic(
      file, to_json(request).dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
}

}  // namespace upskill::eval
