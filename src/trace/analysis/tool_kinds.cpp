// Tool classification: what a tool call did (shell, write, edit, patch, read), whatever the agent
// called the tool, and the shell command a shell call ran.
#include "tool_kinds.hpp"

#include <algorithm>

#include "upskill/core/enum_names.hpp"
#include "upskill/core/text.hpp"

namespace upskill::trace {

namespace {
constexpr enum_names::Table<ToolKind, 7> kToolKinds{{{ToolKind::shell, "shell"},
                                                     {ToolKind::write, "write"},
                                                     {ToolKind::edit, "edit"},
                                                     {ToolKind::multi_edit, "multi_edit"},
                                                     {ToolKind::patch, "patch"},
                                                     {ToolKind::read, "read"},
                                                     {ToolKind::other, "other"}}};
}  // namespace

std::string_view to_string(ToolKind kind) {
  return enum_names::name(kToolKinds, kind, "other");
}

namespace detail {

const Json* input_field(const Json& input, std::initializer_list<const char*> names) {
  if (!input.is_object()) return nullptr;
  for (const char* n : names) {
    auto it = input.find(n);
    if (it != input.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

std::string input_string(const Json& input, std::initializer_list<const char*> names) {
  const Json* v = input_field(input, names);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

}  // namespace detail

namespace {

using detail::input_field;
using detail::input_string;

bool is_shell_name(const std::string& n) {
  static const std::vector<std::string> names = {"bash",
                                                 "shell",
                                                 "shell_command",
                                                 "exec_command",
                                                 "local_shell",
                                                 "run_command",
                                                 "execute_command",
                                                 "execute",
                                                 "run_terminal_cmd",
                                                 "terminal",
                                                 "run_shell",
                                                 "run_shell_command",
                                                 "powershell",
                                                 "container.exec",
                                                 "run"};
  return std::find(names.begin(), names.end(), n) != names.end();
}

}  // namespace

ToolKind classify_tool(const ToolCall& call) {
  const std::string n = text::to_lower_ascii(call.name);
  if (is_shell_name(n)) return ToolKind::shell;
  if (n == "apply_patch" || n == "patch") return ToolKind::patch;
  // codex exec --json's record of a patch applied: which files, and how, without the contents.
  if (n == "file_change" && call.input.is_object() && call.input.contains("changes"))
    return ToolKind::patch;
  if (n == "multiedit" || n == "multi_edit") return ToolKind::multi_edit;
  if (n == "str_replace_editor" || n == "str_replace_based_edit_tool") {
    const std::string command = input_string(call.input, {"command"});
    if (command == "create") return ToolKind::write;
    if (command == "str_replace") return ToolKind::edit;
    if (command == "view") return ToolKind::read;
    return ToolKind::other;
  }
  if (n == "write" || n == "write_file" || n == "create_file" || n == "write_to_file")
    return ToolKind::write;
  if (n == "edit" || n == "edit_file" || n == "str_replace" || n == "replace_in_file" ||
      n == "update" || n == "replace")
    return ToolKind::edit;
  if (n == "read" || n == "read_file" || n == "view" || n == "cat") return ToolKind::read;
  // A JSON patch argument to an unknown tool still reads as a patch.
  if (call.input.is_string() && call.input.get<std::string>().starts_with("*** Begin Patch"))
    return ToolKind::patch;
  return ToolKind::other;
}

std::string shell_command_of(const ToolCall& call) {
  if (classify_tool(call) != ToolKind::shell) return {};
  const Json& in = call.input;
  if (in.is_string()) return in.get<std::string>();
  const Json* cmd = input_field(in, {"command", "cmd", "script", "commands"});
  if (!cmd) {
    if (const Json* action = input_field(in, {"action"})) cmd = input_field(*action, {"command"});
  }
  if (!cmd) return {};
  if (cmd->is_string()) return cmd->get<std::string>();
  if (cmd->is_array()) {
    std::vector<std::string> parts;
    for (const auto& p : *cmd)
      if (p.is_string()) parts.push_back(p.get<std::string>());
    // ["bash", "-lc", "make -j"] is the command "make -j".
    if (parts.size() == 3 &&
        (parts[0] == "bash" || parts[0] == "sh" || parts[0] == "zsh" ||
         parts[0].ends_with("/bash") || parts[0].ends_with("/sh")) &&
        (parts[1] == "-lc" || parts[1] == "-c"))
      return parts[2];
    return text::join(parts, " ");
  }
  return {};
}

}  // namespace upskill::trace
