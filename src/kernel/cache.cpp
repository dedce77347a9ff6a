// The kernel build cache: content-addressed, shared by every candidate and run. Its keys are here —
// an object's (toolchain, the source and the project files it includes, the command line), a linked
// module's (toolchain, binding, the package's Python files, the objects' keys) and the precompiled
// torch header's (toolchain, header, flags) — with the object cache itself, published modules and
// the record of what a module registered when it was loaded. A second build of the same candidate
// does no compiling at all.
//
// Layout under the cache folder: objects/<key[0:2]>/<key>.o + <key>.json, modules/<key>/
// (<namespace>.abi3.so, load.json), pch/<key>/, standin/.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <set>

#include "build_internal.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/hash.hpp"
#include "upskill/core/json.hpp"
#include "upskill/core/text.hpp"

namespace upskill::kernel {

namespace fs = std::filesystem;

fs::path default_cache_dir() {
  if (const char* d = std::getenv("UPSKILL_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "upskill";
  if (auto home = files::home_directory()) return *home / ".cache" / "upskill";
  return fs::temp_directory_path() / "upskill-cache";
}

bool precompiled_headers_enabled() {
  const char* v = std::getenv("UPSKILL_PCH");
  if (!v) return true;
  const std::string value = text::to_lower_ascii(text::trim(v));
  return value != "0" && value != "off" && value != "no" && value != "false";
}

namespace detail {

std::string pch_key(const Toolchain& toolchain, const std::string& content,
                    const std::vector<std::string>& flags) {
  return hash::sha256_hex(toolchain.fingerprint() + "\x1e" + content + "\x1e" +
                          text::join(flags, "\x1f"))
      .substr(0, 24);
}

// The names a file #includes, as written ("a/b.h" of `#include "a/b.h"` or `#include <a/b.h>`);
// nullopt when one is not a name in quotes or angle brackets on its line — a macro
// (`#include KERNEL_HEADER`), `#include_next`, a cut line — which could name any file. Every
// `#include` in the text counts, in comments, strings and disabled `#if` blocks too
// (`/* c */ #include "x"` is a real one): the closure may only be too large. A plain scan, not a
// regex: a model-written line may be megabytes long.
std::optional<std::vector<std::string>> included_names(std::string_view text) {
  std::vector<std::string> names;
  const auto blanks = [&](std::size_t at) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
    return at;
  };
  for (std::size_t hash = text.find('#'); hash != std::string_view::npos;
       hash = text.find('#', hash + 1)) {
    std::size_t at = blanks(hash + 1);
    if (text.substr(at, 7) != "include") continue;
    at = blanks(at + 7);
    if (at >= text.size() || (text[at] != '<' && text[at] != '"')) return std::nullopt;
    const std::size_t end = text.find_first_of(">\"\n", at + 1);
    if (end == std::string_view::npos || text[end] == '\n') return std::nullopt;
    names.emplace_back(text.substr(at + 1, end - at - 1));
  }
  return names;
}

std::vector<const ExtractedFile*> include_closure(const Extraction& project,
                                                  const std::string& source) {
  std::vector<const ExtractedFile*> closure;
  const ExtractedFile* start = find_file(project, source);
  if (start == nullptr) return closure;
  std::set<std::string> seen{source};
  std::vector<const ExtractedFile*> todo{start};
  while (!todo.empty()) {
    const ExtractedFile* f = todo.back();
    todo.pop_back();
    const auto names = included_names(f->content);
    for (const auto& other : project.files) {
      if (seen.contains(other.path)) continue;
      // A project file whatever folder it is found from: same file name as an include (or any
      // file at all when an include is a macro).
      const std::string file_name = fs::path(other.path).filename().string();
      const bool named =
          !names || std::any_of(names->begin(), names->end(), [&](const std::string& n) {
            return fs::path(n).filename().string() == file_name;
          });
      if (!named) continue;
      seen.insert(other.path);
      closure.push_back(&other);
      todo.push_back(&other);
    }
  }
  std::sort(closure.begin(), closure.end(), [](auto* a, auto* b) { return a->path < b->path; });
  return closure;
}

std::string object_key_material(const BuildRequest& req, const std::string& source, bool binding) {
  const ExtractedFile* f = find_file(*req.project, source);
  std::string material =
      req.toolchain->fingerprint() + "\x1e" + source + "\x1e" + (f ? f->content : std::string());
  for (const auto* header : include_closure(*req.project, source))
    material += "\x1e" + header->path + '\0' + header->content;
  if (binding) material += std::string("\x1e") + std::string(registration_header());
  return material;
}

BuildStep cached_compile(const BuildRequest& req, const Command& cmd, const std::string& source,
                         const std::string& tool, const std::string& key_material,
                         const fs::path& object_name, const std::function<void()>& before_run) {
  BuildStep step;
  step.source = source;
  step.tool = tool;
  const std::string key = hash::sha256_hex(key_material + "\x1e" + cmd.key()).substr(0, 32);
  const fs::path dir = req.cache_dir / "objects" / key.substr(0, 2);
  const fs::path object = dir / (key + ".o");
  const fs::path record = dir / (key + ".json");
  std::error_code ec;
  if (fs::exists(object, ec) && fs::exists(record, ec)) {
    if (auto text = files::read_text(record)) {
      const Json j = Json::parse(*text, nullptr, false);
      if (!j.is_discarded()) {
        step.ok = step.cached = true;
        step.diagnostics = j.value("diagnostics", "");
        step.ptxas = parse_ptxas(step.diagnostics);
        step.output = object;
        return step;
      }
    }
  }
  fs::create_directories(dir, ec);
  const fs::path out = req.work_dir / "obj" / object_name;
  fs::create_directories(out.parent_path(), ec);
  std::vector<std::string> argv = cmd.resolved(req.work_dir);
  for (auto& a : argv) a = replace_standin(a, req.cache_dir);
  argv.insert(argv.end(), {"-o", out.string()});
  if (before_run) before_run();
  const Run r = run_tool(argv, req.work_dir / "src", req);
  step.seconds = r.seconds;
  step.timed_out = r.timed_out;
  step.diagnostics = r.output;
  step.ok = r.ok;
  if (tool == "nvcc") step.ptxas = parse_ptxas(r.output);
  if (!r.ok) return step;
  // Publish to the cache: object first, then the record that marks it complete.
  const fs::path tmp = dir / fmt::format("{}.o.tmp{}", key, ::getpid());
  fs::copy_file(out, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) ec = publish_object(tmp, object);
  if (!ec) (void)files::write_atomic(record, Json{{"diagnostics", r.output}}.dump());
  step.output = ec ? out : object;
  return step;
}

std::error_code publish_object(const fs::path& tmp, const fs::path& object) {
  std::error_code ec;
  if (::link(tmp.c_str(), object.c_str()) == 0 || errno == EEXIST) {
    fs::remove(tmp, ec);
    return {};
  }
  // A file system without hard links: renamed into place unless another check got there first.
  if (fs::exists(object, ec)) {
    fs::remove(tmp, ec);
    return {};
  }
  fs::rename(tmp, object, ec);
  if (ec) fs::remove(tmp, ec);
  return ec;
}

std::string module_key(const Toolchain& toolchain, const std::string& style,
                       const std::string& op_namespace, const std::string& package_files,
                       const std::vector<std::string>& objects) {
  std::string link_key =
      toolchain.fingerprint() + style + op_namespace + hash::sha256_hex(package_files);
  for (const auto& o : objects) link_key += "\x1e" + fs::path(o).filename().string();
  return hash::sha256_hex(link_key).substr(0, 32);
}

fs::path module_dir(const BuildRequest& req, const std::string& key) {
  return req.cache_dir / "modules" / key;
}

void publish_module(const BuildRequest& req, const std::string& key, const fs::path& built,
                    const std::string& so_name) {
  std::error_code ec;
  const fs::path tmp = req.cache_dir / "modules" / (key + fmt::format(".tmp{}", ::getpid()));
  fs::create_directories(tmp, ec);
  fs::copy_file(built, tmp / so_name, ec);
  if (!ec) fs::rename(tmp, module_dir(req, key), ec);
  if (ec) fs::remove_all(tmp, ec);
}

std::optional<std::vector<std::string>> cached_load(const fs::path& module_dir) {
  auto text = files::read_text(module_dir / "load.json");
  if (!text) return std::nullopt;
  const Json j = Json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("ops") || !j["ops"].is_array() || j["ops"].empty())
    return std::nullopt;
  std::vector<std::string> ops;
  for (const auto& n : j["ops"]) ops.push_back(n.get<std::string>());
  return ops;
}

void record_load(const fs::path& module_dir, const std::vector<std::string>& ops) {
  std::error_code ec;
  if (fs::exists(module_dir, ec))
    (void)files::write_atomic(module_dir / "load.json", Json{{"ops", ops}}.dump());
}

}  // namespace detail

}  // namespace upskill::kernel
