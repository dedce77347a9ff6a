// The request and response model shared by every dialect (see types.hpp).
#include "upskill/llm/types.hpp"

#include "upskill/core/enum_names.hpp"
#include "upskill/core/text.hpp"

namespace upskill::llm {

namespace {
constexpr enum_names::Table<Role, 4> kRoles{{{Role::system, "system"},
                                             {Role::user, "user"},
                                             {Role::assistant, "assistant"},
                                             {Role::tool, "tool"}}};
}  // namespace

std::string_view to_string(Role role) {
  return enum_names::name(kRoles, role, "user");
}

Usage& Usage::operator+=(const Usage& other) {
  input += other.input;
  output += other.output;
  cached += other.cached;
  reasoning += other.reasoning;
  requests += other.requests;
  estimated = estimated || other.estimated;
  return *this;
}

Json to_json(const Usage& u) {
  return Json{{"input_tokens", u.input},   {"output_tokens", u.output},
              {"cached_tokens", u.cached}, {"reasoning_tokens", u.reasoning},
              {"requests", u.requests},    {"estimated", u.estimated}};
}

Usage usage_from_json(const Json& j) {
  Usage u;
  u.input = j.value("input_tokens", 0LL);
  u.output = j.value("output_tokens", 0LL);
  u.cached = j.value("cached_tokens", 0LL);
  u.reasoning = j.value("reasoning_tokens", 0LL);
  u.requests = j.value("requests", 0);
  u.estimated = j.value("estimated", false);
  return u;
}

Json to_json(const ChatResponse& r) {
  Json calls = Json::array();
  for (const auto& c : r.tool_calls)
    calls.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
  return Json{{"content", r.content},      {"reasoning", r.reasoning},
              {"tool_calls", calls},       {"finish_reason", r.finish_reason},
              {"usage", to_json(r.usage)}, {"model", r.model}};
}

ChatResponse response_from_json(const Json& j) {
  ChatResponse r;
  r.content = j.value("content", "");
  r.reasoning = j.value("reasoning", "");
  for (const auto& c : j.value("tool_calls", Json::array()))
    r.tool_calls.push_back({c.value("id", ""), c.value("name", ""), c.value("arguments", "")});
  r.finish_reason = j.value("finish_reason", "");
  if (j.contains("usage")) r.usage = usage_from_json(j.at("usage"));
  r.model = j.value("model", "");
  return r;
}

std::string take_think_block(std::string& content) {
  std::size_t start = 0;
  while (start < content.size() && std::isspace(static_cast<unsigned char>(content[start])))
    ++start;
  if (content.compare(start, 7, "<think>") != 0) return {};
  const std::size_t end = content.find("</think>", start + 7);
  if (end == std::string::npos) {
    // An unclosed block: everything is reasoning (the answer was cut off while thinking).
    std::string reasoning = text::trim(content.substr(start + 7));
    content.clear();
    return reasoning;
  }
  std::string reasoning = text::trim(content.substr(start + 7, end - start - 7));
  content = text::trim(content.substr(end + 8));
  return reasoning;
}

}  // namespace upskill::llm
