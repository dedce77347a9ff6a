// The JSON `upskill trace --json` prints (schema upskill.trace/1): format, counts, tools, commands,
// files, fixes, tokens and parse problems. Field names and order are part of the output format.
#include "upskill/trace/trace.hpp"

namespace upskill::trace {

Json summary_json(const Trace& trace) {
  const TraceCounts c = count(trace);
  Json j;
  j["schema"] = "upskill.trace/1";
  j["source"] = trace.source.string();
  j["bytes"] = trace.bytes;
  j["sha256"] = trace.sha256;
  j["format"] = std::string(to_string(trace.format));
  j["detected_by"] = trace.detected_by;
  j["format_version"] = trace.format_version;
  j["cwd"] = trace.cwd;
  j["models"] = trace.models;
  j["counts"] = {{"turns", c.turns},
                 {"user_prompts", c.user_prompts},
                 {"assistant_messages", c.assistant_messages},
                 {"tool_calls", c.tool_calls},
                 {"tool_errors", c.tool_errors},
                 {"refused_calls", c.refused_calls},
                 {"commands", c.commands},
                 {"failed_commands", c.failed_commands},
                 {"files", c.files},
                 {"sidechain_turns", c.sidechain_turns}};
  j["tools"] = Json::object();
  for (const auto& [name, n] : trace.tool_counts) j["tools"][name] = n;
  j["run_errors"] = trace.run_errors;
  j["commands"] = Json::array();
  for (const CommandRun& r : trace.commands) {
    Json cmd{{"command", r.command}, {"turn", r.turn + 1}, {"failed", r.failed}};
    cmd["exit_code"] = r.exit_code ? Json(*r.exit_code) : Json();
    if (r.sidechain) cmd["subagent"] = true;
    if (!r.answered) cmd["result_recorded"] = false;
    j["commands"].push_back(std::move(cmd));
  }
  j["files"] = Json::array();
  for (const FileTouch& f : trace.files) {
    Json file{{"path", f.path},
              {"writes", f.writes},
              {"edits", f.edits},
              {"deleted", f.deleted},
              {"last_turn", f.last_turn + 1}};
    file["final_size"] = f.content ? Json(f.content->size()) : Json();
    if (!f.content && !f.deleted) file["unknown_reason"] = f.unknown_reason;
    if (!f.content && !f.shown.empty()) file["missing"] = f.missing;
    j["files"].push_back(std::move(file));
  }
  j["fixes"] = Json::array();
  for (const ErrorFix& fx : trace.fixes) {
    Json fix{{"failed", trace.commands[fx.failed].command},
             {"turn", trace.commands[fx.failed].turn + 1},
             {"files_changed", fx.files_changed},
             {"explanation", fx.explanation}};
    fix["fixed_by"] = fx.fixed_by ? Json(trace.commands[*fx.fixed_by].command) : Json();
    j["fixes"].push_back(std::move(fix));
  }
  j["usage"] = {{"reported", trace.usage.reported},       {"input", trace.usage.input},
                {"output", trace.usage.output},           {"cache_read", trace.usage.cache_read},
                {"cache_write", trace.usage.cache_write}, {"reasoning", trace.usage.reasoning}};
  Json stats{{"lines", trace.stats.lines},
             {"records", trace.stats.records},
             {"malformed", trace.stats.malformed},
             {"truncated_last_line", trace.stats.truncated_last_line},
             {"duplicates", trace.stats.duplicates},
             {"unknown_types", Json::object()},
             {"skipped", Json::object()},
             {"notes", trace.stats.notes}};
  for (const auto& [t, n] : trace.stats.unknown_types) stats["unknown_types"][t] = n;
  for (const auto& [t, n] : trace.stats.skipped) stats["skipped"][t] = n;
  // Texts of older turns shortened for the memory budget (docs/traces.md, "Bounded memory").
  if (trace.stats.shortened > 0) stats["shortened"] = trace.stats.shortened;
  if (trace.stats.repaired_surrogates > 0)
    stats["repaired_surrogates"] = trace.stats.repaired_surrogates;
  j["parse"] = std::move(stats);
  j["subagent_files"] = Json::array();
  for (const auto& p : trace.subagent_files) j["subagent_files"].push_back(p.string());
  return j;
}

}  // namespace upskill::trace
