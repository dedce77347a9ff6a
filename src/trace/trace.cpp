// The entry points that read a trace (a file or text in memory): detection (formats/detect.cpp),
// the format's reader from the registry (formats/registry.cpp), Claude sessions' subagent files,
// and the analysis (analysis/analysis.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "formats/claude.hpp"
#include "formats/detect.hpp"
#include "formats/registry.hpp"
#include "reading/line_source.hpp"
#include "reading/records.hpp"
#include "upskill/core/hash.hpp"
#include "upskill/core/temp_dir.hpp"
#include "upskill/core/text.hpp"
#include "upskill/core/unicode.hpp"

namespace upskill::trace {

namespace {

constexpr std::size_t kHeadBytes = 64 * 1024;

}  // namespace

namespace {

// A document whose lone surrogate escapes were read as U+FFFD says so.
void note_repaired(Trace& trace, const std::string& name, std::size_t repaired) {
  if (repaired == 0) return;
  trace.stats.repaired_surrogates += repaired;
  trace.stats.note(
      fmt::format("{}: {} lone surrogate escape(s) (a string cut inside a character) "
                  "read as U+FFFD",
                  name, repaired));
}

bool is_document_format(Format f) {
  return detail::entry_of(f).read_document != nullptr;
}

void parse_document(const Json& doc, Format format, Trace& trace) {
  if (const auto read = detail::entry_of(format).read_document) read(doc, trace);
}

Status parse_stream(std::istream& in, const std::string& name, Format format, Trace& trace) {
  detail::LineSource lines(in, name);
  if (const auto read = detail::entry_of(format).read_lines) {
    read(lines, trace);
    return {};
  }
  return fail(Error::usage(name + ": a document format cannot be read line by line"));
}

// Reads a trace whose whole text is in memory: the document formats from `doc` (already parsed,
// or JSON lines of messages), the others line by line.
Status parse_all(const std::string& all, Json doc, const std::string& name, Format format,
                 Trace& trace) {
  if (!is_document_format(format)) {
    std::istringstream in(all);
    return parse_stream(in, name, format, trace);
  }
  if (doc.is_discarded()) {
    // JSON lines of a document format (chat messages a line each), gathered record by record as
    // a file's are (reading/records.hpp).
    std::istringstream again(all);
    detail::LineSource lines(again, name);
    doc = detail::gather_records(lines, trace);
    if (doc.empty()) {
      auto parsed = parse_json_document(all, name);  // for the line and column of the error
      return fail(parsed ? Error::usage(name + ": not a readable trace")
                         : Error::usage(parsed.error().message));
    }
  }
  parse_document(doc, format, trace);
  return {};
}

// The session's subagent files: <dir>/<session>/subagents/agent-*.jsonl, and agent-*.jsonl
// beside the session whose records name the same session.
std::vector<fs::path> subagent_files(const fs::path& session) {
  std::vector<fs::path> out;
  std::error_code ec;
  const fs::path nested = session.parent_path() / session.stem() / "subagents";
  for (const fs::path& dir : {nested, session.parent_path()}) {
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (!name.starts_with("agent-") || !name.ends_with(".jsonl")) continue;
      if (dir != nested) {
        std::ifstream in(entry.path());
        std::string first;
        std::getline(in, first);
        const Json r = parse_json_lenient(first);
        if (r.is_discarded() || detail::str_field(r, "sessionId") != session.stem().string())
          continue;
      }
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// No trace format holds a NUL byte: a file with one in its first 64 KB is binary (or UTF-16) and
// is refused rather than read as one long user message.
Status refuse_binary(std::string_view head, const std::string& name) {
  const std::size_t nul = unicode::first_nul(head);
  if (nul == head.size()) return {};
  return fail(Error::usage(fmt::format(
      "{}: binary data, not a trace (a NUL byte at offset {}); a UTF-16 file must be converted "
      "to UTF-8 first",
      name, nul)));
}

Status finish(Trace& trace, const std::string& name) {
  analyse(trace);
  if (trace.turns.empty() && trace.stats.records == 0)
    return fail(Error::usage(fmt::format(
        "{}: nothing readable as a trace in the {} format ({} line(s), {} malformed{})", name,
        to_string(trace.format), trace.stats.lines, trace.stats.malformed,
        trace.stats.notes.empty() ? "" : "; first problem: " + trace.stats.notes.front())));
  return {};
}

}  // namespace

namespace {

Result<Trace> parse_text(std::string_view text, const std::string& name,
                         const ParseOptions& options) {
  Trace trace;
  trace.source = name;
  trace.bytes = text.size();
  trace.sha256 = hash::sha256_hex(text);
  if (!options.format) UPSKILL_RETURN_IF_ERROR(refuse_binary(text.substr(0, kHeadBytes), name));
  Detection d = options.format
                    ? Detection{*options.format, "--format"}
                    : detect_format(text.substr(0, kHeadBytes), text.size() <= kHeadBytes);
  const std::string all(text);
  Json doc(Json::value_t::discarded);
  std::size_t repaired = 0;
  if (is_document_format(d.format)) {
    if (options.format)
      doc = parse_json_lenient(all, &repaired);
    else
      d = detail::settle_document(all, d, doc, &repaired);
  }
  trace.format = d.format;
  trace.detected_by = d.reason;
  note_repaired(trace, name, repaired);
  UPSKILL_RETURN_IF_ERROR(parse_all(all, std::move(doc), name, d.format, trace));
  UPSKILL_RETURN_IF_ERROR(finish(trace, name));
  return trace;
}

// The session's subagent files, read after the main conversation and marked as sidechain work.
void add_subagents(Trace& trace, const fs::path& path) {
  for (const fs::path& agent : subagent_files(path)) {
    std::ifstream sub(agent, std::ios::binary);
    if (!sub) continue;
    detail::LineSource lines(sub, agent.string());
    Trace part;
    part.cwd = trace.cwd;
    detail::parse_claude_jsonl(lines, part, true);
    for (auto& t : part.turns) trace.turns.push_back(std::move(t));
    trace.usage.input += part.usage.input;
    trace.usage.output += part.usage.output;
    trace.usage.cache_read += part.usage.cache_read;
    trace.usage.cache_write += part.usage.cache_write;
    trace.stats.malformed += part.stats.malformed;
    trace.stats.lines += part.stats.lines;
    trace.stats.records += part.stats.records;
    trace.stats.shortened += part.stats.shortened;
    for (const auto& n : part.stats.notes) trace.stats.note(n);
    for (const auto& m : part.models)
      if (std::find(trace.models.begin(), trace.models.end(), m) == trace.models.end())
        trace.models.push_back(m);
    trace.subagent_files.push_back(agent);
  }
}

// Detects the format of an open trace file and parses it into `trace`.
Status read_file(std::istream& in, const fs::path& path, const ParseOptions& options,
                 Trace& trace) {
  std::string head(kHeadBytes, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const bool whole = trace.bytes <= kHeadBytes;
  if (!options.format) UPSKILL_RETURN_IF_ERROR(refuse_binary(head, path.string()));
  Detection d =
      options.format ? Detection{*options.format, "--format"} : detect_format(head, whole);
  in.clear();
  in.seekg(0);
  const std::string name = path.string();
  // A file whose first line is longer than the head, an object: read that line as lines are read
  // (a huge string in it cut as it is read, reading/line_source.hpp) rather than the whole file at
  // once; the line decides the kind.
  const std::string_view start = detail::skip_bom_and_space(head);
  if (!options.format && !whole && head.find('\n') == std::string::npos && start.starts_with('{')) {
    detail::LineSource first_lines(in, name);
    std::string first;
    Json object = first_lines.next(first) ? parse_json_lenient(first) : Json();
    in.clear();
    in.seekg(0);
    if (!object.is_discarded() && object.is_object()) {
      d = detail::detect_one_object(object);
      d.reason += " (its first line read alone: longer than 64 KB)";
      if (is_document_format(d.format)) {
        trace.format = d.format;
        trace.detected_by = d.reason;
        return parse_all(first, std::move(object), name, d.format, trace);
      }
    }
  }
  if (is_document_format(d.format) && d.json_lines) {
    // JSON lines of a document format (Gemini CLI's session-*.jsonl, chat messages a line each):
    // gathered record by record, never the whole text at once.
    trace.format = d.format;
    trace.detected_by = d.reason;
    detail::LineSource lines(in, name);
    const Json records = detail::gather_records(lines, trace);
    if (records.empty()) return fail(Error::usage(name + ": not a readable trace"));
    parse_document(records, d.format, trace);
  } else if (is_document_format(d.format)) {
    // Read once: the whole document decides the format and is parsed from the same text.
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Json doc(Json::value_t::discarded);
    std::size_t repaired = 0;
    if (options.format)
      doc = parse_json_lenient(all, &repaired);
    else
      d = detail::settle_document(all, d, doc, &repaired);
    trace.format = d.format;
    trace.detected_by = d.reason;
    note_repaired(trace, name, repaired);
    UPSKILL_RETURN_IF_ERROR(parse_all(all, std::move(doc), name, d.format, trace));
  } else {
    trace.format = d.format;
    trace.detected_by = d.reason;
    UPSKILL_RETURN_IF_ERROR(parse_stream(in, name, d.format, trace));
  }
  if (trace.format == Format::claude_jsonl && options.subagents) add_subagents(trace, path);
  return {};
}

// The trace in `file`, named `path` in the trace and in every message.
Result<Trace> parse_regular_file(const fs::path& file, const fs::path& path,
                                 const ParseOptions& options) {
  // The file's hash is taken from the bytes as the parse reads them: one read of the file
  // (docs/PERFORMANCE.md). A failure to hash it comes first.
  hash::HashingFile hashed(file);
  std::istream in(&hashed);
  if (!hashed.is_open())
    return fail(Error::usage(fmt::format("{}: cannot read the trace", path.string())));
  Trace trace;
  trace.source = path;
  std::error_code ec;
  trace.bytes = fs::file_size(file, ec);
  const Status read = read_file(in, path, options, trace);
  UPSKILL_ASSIGN_OR_RETURN(trace.sha256, hashed.sha256());
  UPSKILL_RETURN_IF_ERROR(read);
  UPSKILL_RETURN_IF_ERROR(finish(trace, path.string()));
  return trace;
}

// A pipe or a device (`upskill trace /dev/stdin`, `<(zcat session.jsonl.gz)`) is read once and
// cannot be sought in: it is copied into `copy` first. Binary data (a NUL byte in the first 64 KB,
// unless --format says how to read it) and more than kMaxPiped bytes stop the copy.
constexpr std::uintmax_t kMaxPiped = std::uintmax_t{2} << 30;

Status copy_piped(const fs::path& path, const fs::path& copy, const ParseOptions& options) {
  std::ifstream in(path, std::ios::binary);
  std::ofstream out(copy, std::ios::binary);
  if (!in) return fail(Error::usage(fmt::format("{}: cannot read the trace", path.string())));
  if (!out)
    return fail(Error::infrastructure(
        fmt::format("{}: cannot write a copy of {}", copy.string(), path.string())));
  std::string block(1 << 20, '\0');
  std::uintmax_t copied = 0;
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    if (copied < kHeadBytes && !options.format)
      UPSKILL_RETURN_IF_ERROR(refuse_binary(
          std::string_view(block).substr(0, std::min<std::size_t>(got, kHeadBytes - copied)),
          path.string()));
    copied += got;
    if (copied > kMaxPiped)
      return fail(
          Error::usage(fmt::format("{}: more than {} GiB through a pipe; give the trace as a file",
                                   path.string(), kMaxPiped >> 30)));
    out.write(block.data(), static_cast<std::streamsize>(got));
    if (!out)
      return fail(Error::infrastructure(
          fmt::format("{}: cannot write a copy of {}", copy.string(), path.string())));
  }
  if (in.bad()) return fail(Error::usage(fmt::format("{}: read error", path.string())));
  out.close();
  if (!out)
    return fail(Error::infrastructure(
        fmt::format("{}: cannot write a copy of {}", copy.string(), path.string())));
  return {};
}

Result<Trace> parse_file(const fs::path& path, const ParseOptions& options) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status))
    return fail(Error::usage(fmt::format("{}: is a directory, not a trace file", path.string())));
  if (ec || !fs::exists(status) || fs::is_regular_file(status))
    return parse_regular_file(path, path, options);
  UPSKILL_ASSIGN_OR_RETURN(TempDir scratch, TempDir::create("upskill-trace"));
  const fs::path copy = scratch.path() / "trace";
  UPSKILL_RETURN_IF_ERROR(copy_piped(path, copy, options));
  return parse_regular_file(copy, path, options);
}

// The last line of defence: a reader that throws on input it did not foresee turns into a usage
// error naming the file, never an exception escaping into a front end (records are contained one
// by one before this; see contain_record).
template <class F>
Result<Trace> guarded(const std::string& name, F&& parse) {
  try {
    return parse();
  } catch (const std::exception& e) {
    return fail(Error::usage(fmt::format("{}: cannot be read as a trace: {}", name, e.what())));
  }
}

}  // namespace

Result<Trace> parse_trace_text(std::string_view text, const std::string& name,
                               const ParseOptions& options) {
  return guarded(name, [&] { return parse_text(text, name, options); });
}

Result<Trace> parse_trace_file(const fs::path& path, const ParseOptions& options) {
  return guarded(path.string(), [&] { return parse_file(path, options); });
}

}  // namespace upskill::trace
