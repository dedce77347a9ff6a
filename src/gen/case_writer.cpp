// Test cases written by the teacher (see case_writer.hpp).
#include "upskill/gen/case_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>

#include "upskill/cases/test_suite.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/text.hpp"
#include "upskill/kernel/catalog.hpp"

namespace upskill::gen {

namespace fs = std::filesystem;

namespace {

constexpr const char* kTestSystem =
    R"(You write test cases that tell whether an AI agent learned a skill.
Reply with one JSON object: {"cases": [...], "spec_files": [{"path", "content"}]}.
Each case: {"id": "short-kebab-id", "input": "the request, self-contained", "expected":
{"contains": ["..."]}, "checks": [...]} — expected.contains lists short strings every correct answer
must contain (case-insensitive); checks is optional and may hold:
  {"type": "contains_any", "values": [...]}, {"type": "not_contains", "value": "..."},
  {"type": "regex", "pattern": "..."}, {"type": "json_path", "path": "$.a", "equals": ...},
  {"type": "kernel", "stages": ["extract", "layout", "lint", "compile", "bind", "correct", "bench"],
   "backend": "cuda"|"cpu", "capabilities": ["9.0"], "spec": "specs/<op>.py", "project": "<name>"}.
Test what the skill teaches, not trivia: the exact names, values and steps a correct answer needs.
An empty or generic answer must fail every case. A case's input never reveals its expected strings.)";

std::string strip_json_fence(const std::string& s) {
  static const std::regex fence(R"(```(?:json)?\s*\n([\s\S]*?)\n```)");
  std::smatch m;
  if (std::regex_search(s, m, fence)) return m[1].str();
  return s;
}

const kernel::ShippedFile* shipped_spec_named(const std::string& path) {
  const std::string base = fs::path(path).filename().string();
  for (const auto& spec : kernel::shipped_specs())
    if (fs::path(spec.path).filename().string() == base) return &spec;
  return nullptr;
}

// Binds a case's kernel checks to spec files; false (with `why`) when a spec cannot be found.
bool bind_specs(cases::TestCase& c, GeneratedTests& out, std::string& why) {
  for (auto& check : c.checks) {
    auto* k = std::get_if<cases::KernelParams>(&check.params);
    if (!k || !k->spec) continue;
    if (out.spec_files.contains(*k->spec)) continue;
    if (const auto* shipped = shipped_spec_named(*k->spec)) {
      const std::string path = "specs/" + fs::path(shipped->path).filename().string();
      out.spec_files[path] = shipped->content;
      k->spec = path;
      continue;
    }
    why = fmt::format(
        "its kernel check names the spec '{}', which neither the reply nor "
        "kernels/specs has",
        *k->spec);
    return false;
  }
  return true;
}

}  // namespace

bool looks_like_kernel_work(std::string_view text) {
  static const std::regex re(
      R"(\b(cuda|kernel-builder|nvcc|triton|__global__|sm_[0-9]{2}|build\.toml|torch extension|cutlass|hip|metal kernel|kernel)\b)",
      std::regex::icase);
  const std::string s(text.substr(0, 200000));
  return std::regex_search(s, re);
}

Result<GeneratedTests> generate_tests(const TestRequest& request, const Teacher& teacher) {
  GeneratedTests out;
  std::string prompt = fmt::format("Write {} test cases for a skill that teaches: {}\n",
                                   request.count, request.task);
  if (request.skill)
    prompt += fmt::format("\nThe skill ({}): {}\n\n{}\n", request.skill->name(),
                          request.skill->description(), request.skill->body);
  if (request.digest)
    prompt +=
        "\nThe expert trace the skill was made from (digest); its final files are a "
        "correct solution, so every case must pass on them:\n\n" +
        request.digest->text + "\n";
  const bool kernels = request.kernel_catalog.value_or(
      looks_like_kernel_work(request.task + (request.skill ? request.skill->body : "") +
                             (request.digest ? request.digest->text.substr(0, 20000) : "")));
  if (kernels) {
    prompt +=
        "\nKernel tasks: prefer kernel checks, which build, run and time the answer for real. "
        "These op specs are available (use the path as the check's spec):\n";
    for (const auto& spec : kernel::shipped_specs()) {
      const auto nl = spec.content.find('\n');
      prompt += fmt::format("- {}: {}\n", spec.path, spec.content.substr(0, nl));
    }
    prompt +=
        "Cases that use them, which you may copy verbatim when the op matches (their inputs "
        "state each op's contract exactly as the specs test it):\n" +
        std::string(kernel::shipped_kernel_cases()) +
        "\nFor another op, write its spec yourself in spec_files (same shape as "
        "specs/rmsnorm.py: SHAPES, DTYPES, make_inputs, reference, call).\n";
  }
  llm::ChatRequest chat;
  chat.messages = {llm::Message::system(kTestSystem), llm::Message::user(prompt)};
  chat.sampling = teacher.sampling;
  chat.response_format.kind = llm::ResponseFormat::Kind::json_object;
  llm::CallOptions call;
  call.cancel = teacher.cancel;
  auto reply = teacher.client->complete(*teacher.model, chat, call);
  if (!reply) return fail(Error::infrastructure("test generation: " + reply.error().message));
  out.usage += reply->usage;
  ++out.requests;

  Json doc = Json::parse(strip_json_fence(text::trim(reply->content)), nullptr, false);
  if (doc.is_array()) doc = Json{{"cases", doc}};
  if (!doc.is_object() || !doc.contains("cases") || !doc["cases"].is_array())
    return fail(Error::usage(
        fmt::format("test generation: the teacher's reply has no \"cases\" list; it began: {}",
                    text::excerpt(reply->content, 160))));
  if (doc.contains("spec_files") && doc["spec_files"].is_array()) {
    for (const auto& f : doc["spec_files"]) {
      if (!f.is_object() || !f.contains("path") || !f["path"].is_string()) continue;
      std::string path = f["path"].get<std::string>();
      if (files::relative_path_problem(path)) {
        out.dropped.push_back(fmt::format("spec file '{}': unsafe path", path));
        continue;
      }
      if (!path.starts_with("specs/")) path = "specs/" + fs::path(path).filename().string();
      out.spec_files[path] = f.value("content", "");
    }
  }
  const auto& keys = cases::test_case_keys();
  std::set<std::string> ids;
  const Json& list = doc["cases"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    Json c = list[i];
    if (!c.is_object()) {
      out.dropped.push_back(fmt::format("case {}: not an object", i + 1));
      continue;
    }
    for (auto it = c.begin(); it != c.end();) {
      if (std::find(keys.begin(), keys.end(), it.key()) == keys.end())
        it = c.erase(it);
      else
        ++it;
    }
    auto suite = cases::parse_test_suite(Json{{"cases", Json::array({c})}}.dump(2),
                                         fmt::format("the teacher's case {}", i + 1));
    if (!suite) {
      out.dropped.push_back(suite.error().message);
      continue;
    }
    cases::TestCase tc = std::move(suite->cases.front());
    if (tc.effective_checks().empty()) {
      out.dropped.push_back(fmt::format("case {} ('{}'): no checks", i + 1, tc.id));
      continue;
    }
    std::string why;
    if (!bind_specs(tc, out, why)) {
      out.dropped.push_back(fmt::format("case {} ('{}'): {}", i + 1, tc.id, why));
      continue;
    }
    std::string id = tc.id;
    for (int n = 2; ids.contains(id); ++n) id = fmt::format("{}-{}", tc.id, n);
    if (id != tc.id) {
      tc.id = id;
      tc.id_generated = false;
    }
    ids.insert(id);
    out.cases.push_back(std::move(tc));
  }
  return out;
}

}  // namespace upskill::gen
