// Skill generation, improvement and refinement by a teacher model (see generate.hpp).
#include "upskill/gen/generate.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <regex>

#include "upskill/core/files.hpp"
#include "upskill/core/temp_dir.hpp"
#include "upskill/core/text.hpp"
#include "upskill/skill/validator.hpp"

namespace upskill::gen {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSystem =
    R"(You write Agent Skills: folders with a SKILL.md that teach an AI coding agent one job well.
Rules:
- name: lowercase letters, digits and single hyphens, at most 64 characters, naming the job.
- description: at most 1024 characters; what the skill does and when to use it ("Use when ...").
  No angle brackets.
- body: markdown for the agent, about 500-800 tokens: the steps that work, the exact commands,
  file layouts and API names, the checks to run, and the pitfalls seen in practice with their fix.
  Imperative and specific; no filler, no history of how it was learned.
- references: longer material the agent loads only when needed (one topic per file, under
  references/); link each from the body by its relative path.
- scripts: small runnable helpers (under scripts/) the body tells the agent when to run.
- Never include secrets, API keys, usernames or machine-specific absolute paths.
Reply with one JSON object: {"name", "description", "body", "references": [{"path", "content"}],
"scripts": [{"path", "content"}]} and nothing else.)";

const char* const kSchemaText = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "description": {"type": "string"},
    "body": {"type": "string"},
    "references": {"type": "array", "items": {"type": "object",
      "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
      "required": ["path", "content"], "additionalProperties": false}},
    "scripts": {"type": "array", "items": {"type": "object",
      "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
      "required": ["path", "content"], "additionalProperties": false}}
  },
  "required": ["name", "description", "body", "references", "scripts"],
  "additionalProperties": false
})";

// The whole bundle as the teacher should see it: SKILL.md and every file.
std::string render_bundle(const skill::SkillBundle& bundle) {
  std::string out = "### SKILL.md\n````markdown\n" + bundle.render_skill_md() + "````\n";
  for (const auto& [path, file] : bundle.files) {
    if (path.starts_with("specs/")) continue;  // test machinery, not part of the skill's teaching
    out += fmt::format("\n### {}\n````\n{}{}````\n", path, file.content,
                       file.content.ends_with('\n') ? "" : "\n");
  }
  return out;
}

std::string request_text(const SkillRequest& r) {
  std::string out;
  if (r.existing) {
    out = fmt::format(
        "Improve this existing skill so that it teaches an AI agent better how to: {}\n\nThe "
        "skill as it is now (every file):\n\n{}\nKeep what is right, fix what is wrong or "
        "missing, keep the name unless it breaks the rules.\n",
        r.task.empty() ? r.existing->description() : r.task, render_bundle(*r.existing));
  } else {
    out = "Create a skill document that teaches an AI agent how to: " + r.task + "\n";
  }
  if (!r.examples.empty()) {
    out += "\nRequests the skill must serve, for example:\n";
    for (const auto& e : r.examples) out += "- " + e + "\n";
  }
  if (r.digest) {
    out +=
        "\nBased on this agent trace. It is a digest of an expert agent's whole session: the "
        "user's goals, what broke and how it was fixed, and the final versions of the files. "
        "Teach what made the final version work and the mistakes to avoid; the final files are "
        "the ground truth.\n\n" +
        r.digest->text;
  }
  return out;
}

std::string strip_fence(const std::string& reply, const std::regex& fence) {
  std::smatch m;
  if (std::regex_search(reply, m, fence)) return m[1].str();
  return reply;
}

// A file path from the teacher, under `folder` unless it already names one of the bundle folders.
std::optional<std::string> bundle_path(std::string path, const std::string& folder,
                                       std::vector<std::string>& notes) {
  while (path.starts_with("./")) path = path.substr(2);
  if (files::relative_path_problem(path)) {
    notes.push_back(fmt::format("dropped a file with an unsafe path '{}'", path));
    return std::nullopt;
  }
  if (!path.starts_with("references/") && !path.starts_with("scripts/") &&
      !path.starts_with("assets/"))
    path = folder + "/" + path;
  return path;
}

std::string valid_name(const std::string& wanted, const std::string& fallback_text,
                       std::vector<std::string>& notes) {
  static const std::regex ok(R"(^[a-z0-9]+(-[a-z0-9]+)*$)");
  if (std::regex_match(wanted, ok) && wanted.size() <= 64) return wanted;
  std::string name = text::slugify(wanted.empty() ? fallback_text : wanted);
  if (name.empty()) name = "generated-skill";
  notes.push_back(fmt::format("name '{}' is not a valid skill name; using '{}'", wanted, name));
  return name;
}

Result<GeneratedSkill> ask(const std::vector<llm::Message>& messages, const Teacher& teacher,
                           const std::string& fallback_name) {
  GeneratedSkill out;
  llm::ChatRequest request;
  request.messages = messages;
  request.sampling = teacher.sampling;
  request.response_format.kind = llm::ResponseFormat::Kind::json_schema;
  request.response_format.name = "skill";
  request.response_format.schema = skill_schema();
  llm::CallOptions call;
  call.cancel = teacher.cancel;
  auto reply = teacher.client->complete(*teacher.model, request, call);
  if (!reply) return fail(Error::infrastructure("teacher: " + reply.error().message));
  out.usage += reply->usage;
  ++out.requests;
  auto bundle = parse_skill_reply(reply->content, out.notes);
  if (!bundle) return fail(bundle.error());
  out.bundle = std::move(*bundle);
  if (out.bundle.frontmatter.name.empty()) out.bundle.frontmatter.name = fallback_name;
  out.validation = validation_errors(out.bundle);
  if (out.validation.empty()) return out;

  // One repair round-trip: the teacher sees its reply and the validator's errors.
  std::vector<llm::Message> repair = messages;
  repair.push_back(llm::Message::assistant(reply->content));
  std::string errors;
  for (const auto& e : out.validation) errors += "- " + e + "\n";
  repair.push_back(
      llm::Message::user("The skill fails validation:\n" + errors +
                         "Return the corrected skill, complete, as the same JSON object."));
  request.messages = repair;
  auto fixed = teacher.client->complete(*teacher.model, request, call);
  ++out.repairs;
  if (!fixed) return fail(Error::infrastructure("teacher (repair): " + fixed.error().message));
  out.usage += fixed->usage;
  ++out.requests;
  std::vector<std::string> notes;
  auto repaired = parse_skill_reply(fixed->content, notes);
  if (!repaired) {
    out.notes.push_back("the repair reply was unreadable: " + repaired.error().message);
    return out;  // the first draft, with its validation errors
  }
  out.notes.insert(out.notes.end(), notes.begin(), notes.end());
  out.bundle = std::move(*repaired);
  out.validation = validation_errors(out.bundle);
  out.notes.push_back(out.validation.empty() ? "repaired after a validation failure"
                                             : "still invalid after the repair round-trip");
  return out;
}

}  // namespace

const Json& skill_schema() {
  static const Json schema = Json::parse(kSchemaText);
  return schema;
}

Result<skill::SkillBundle> parse_skill_reply(const std::string& reply,
                                             std::vector<std::string>& notes) {
  static const std::regex json_fence(R"(```(?:json)?\s*\n([\s\S]*?)\n```)");
  static const std::regex md_fence(R"(````?(?:markdown|md)?\s*\n(---\n[\s\S]*?)\n````?)");
  skill::SkillBundle bundle;
  std::string text = text::trim(reply);
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) j = Json::parse(strip_fence(text, json_fence), nullptr, false);
  if (j.is_discarded() && text.find('{') != std::string::npos) {
    // Prose around one object.
    const auto first = text.find('{'), last = text.rfind('}');
    if (last != std::string::npos && last > first)
      j = Json::parse(text.substr(first, last - first + 1), nullptr, false);
  }
  if (j.is_object() && j.contains("body")) {
    auto str = [&](const char* key) {
      return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
    };
    bundle.frontmatter.description = text::trim(str("description"));
    bundle.frontmatter.name =
        valid_name(text::trim(str("name")), bundle.frontmatter.description, notes);
    bundle.frontmatter.key_order = {"name", "description"};
    bundle.body = str("body");
    if (!bundle.body.starts_with("\n")) bundle.body = "\n" + bundle.body;
    if (!bundle.body.ends_with("\n")) bundle.body += "\n";
    for (const auto& [key, folder, executable] :
         {std::tuple{"references", "references", false}, std::tuple{"scripts", "scripts", true},
          std::tuple{"assets", "assets", false}}) {
      if (!j.contains(key) || !j[key].is_array()) continue;
      for (const auto& f : j[key]) {
        if (!f.is_object() || !f.contains("path") || !f["path"].is_string()) continue;
        auto path = bundle_path(f["path"].get<std::string>(), folder, notes);
        if (!path) continue;
        bundle.files[*path] = {f.value("content", ""), executable};
      }
    }
    return bundle;
  }
  // SKILL.md text, bare or fenced.
  std::string md = text;
  if (!md.starts_with("---")) md = strip_fence(text, md_fence);
  if (!md.starts_with("---")) {
    if (const auto at = text.find("\n---\n"); at != std::string::npos) md = text.substr(at + 1);
  }
  auto parsed = skill::parse_skill_md(md, "teacher reply");
  if (!parsed)
    return fail(Error::usage(fmt::format(
        "the teacher's reply is neither the JSON skill object nor a SKILL.md ({}); it began: {}",
        parsed.error().message, text::excerpt(text, 160))));
  notes.push_back("the teacher answered with SKILL.md text instead of the JSON object");
  bundle.frontmatter = parsed->frontmatter;
  bundle.frontmatter.name =
      valid_name(bundle.frontmatter.name, bundle.frontmatter.description, notes);
  bundle.body = parsed->body;
  return bundle;
}

std::vector<std::string> validation_errors(const skill::SkillBundle& bundle) {
  auto staging = TempDir::create("upskill-validate");
  if (!staging) return {staging.error().message};
  const fs::path& root = staging->path();
  const std::string name = bundle.name().empty() ? "unnamed" : bundle.name();
  std::vector<std::string> errors;
  skill::SkillBundle copy = bundle;
  copy.directory.clear();
  if (auto saved = copy.save(root / name); !saved) {
    errors.push_back(saved.error().message);
  } else {
    errors = skill::validate_skill(root / name).errors;
  }
  return errors;
}

Result<GeneratedSkill> generate_skill(const SkillRequest& request, const Teacher& teacher) {
  std::vector<llm::Message> messages{llm::Message::system(kSystem),
                                     llm::Message::user(request_text(request))};
  const std::string fallback =
      request.existing ? request.existing->name() : text::slugify(request.task);
  UPSKILL_ASSIGN_OR_RETURN(GeneratedSkill out, ask(messages, teacher, fallback));
  if (request.existing) {
    // An improved skill keeps its tests, metadata and any files the teacher did not rewrite.
    out.bundle.meta = request.existing->meta;
    for (const auto& [path, file] : request.existing->files)
      out.bundle.files.try_emplace(path, file);
  }
  return out;
}

Result<GeneratedSkill> refine_skill(const skill::SkillBundle& current,
                                    const std::vector<FailureReport>& failures,
                                    const SkillRequest& context, const Teacher& teacher) {
  std::string report;
  for (const FailureReport& f : failures) {
    report += fmt::format(
        "\n#### Case {}\nInput:\n{}\n\nThe student's answer:\n````\n{}\n````\n"
        "Why it failed:\n",
        f.case_id, f.input, f.answer);
    for (const auto& r : f.reasons) report += "- " + r + "\n";
  }
  std::string prompt = fmt::format(
      "This skill is meant to teach an AI agent how to: {}\n\nThe skill now (every file):\n\n{}\n"
      "Students using it still fail these test cases:\n{}\n"
      "Rewrite the skill so that an agent following it passes them: fix wrong or missing "
      "instructions, add the exact details the failures show are needed, keep what works. "
      "Do not mention the test cases themselves.",
      context.task.empty() ? current.description() : context.task, render_bundle(current), report);
  if (context.digest)
    prompt += "\n\nThe expert trace the skill came from (digest):\n\n" + context.digest->text;
  std::vector<llm::Message> messages{llm::Message::system(kSystem), llm::Message::user(prompt)};
  UPSKILL_ASSIGN_OR_RETURN(GeneratedSkill out, ask(messages, teacher, current.name()));
  out.bundle.meta = current.meta;
  for (const auto& [path, file] : current.files) out.bundle.files.try_emplace(path, file);
  return out;
}

}  // namespace upskill::gen
