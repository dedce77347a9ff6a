#pragma once
// What the files of the compile and bind stages (include/upskill/kernel/build.hpp) share; private
// to src/kernel/. One concept per file:
//   build_commands.cpp  running compilers and the linker sandboxed and read-confined
//   cache.cpp    the content-addressed cache: the keys of objects, modules and the PCH, the object
//                cache, published modules and their load records
//   pch.cpp      generated headers: the precompiled torch header and the CUDA stand-in header
//   ptxas.cpp    the `ptxas -v` parser
//   compile.cpp  compiler command lines and the compile stage
//   bind.cpp     registration.h, the binding plan, the link, the package and its load check
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "upskill/core/error.hpp"
#include "upskill/core/sandbox.hpp"
#include "upskill/kernel/build.hpp"

namespace upskill::kernel::detail {

inline bool has_ext(std::string_view path, std::initializer_list<std::string_view> exts) {
  return std::any_of(exts.begin(), exts.end(), [&](auto e) { return path.ends_with(e); });
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// "" or "<root>/": where the project's build.toml sits.
inline std::string root_prefix(const LayoutReport& layout) {
  return layout.root.empty() ? "" : layout.root + "/";
}

inline const ExtractedFile* find_file(const Extraction& project, const std::string& path) {
  for (const auto& f : project.files)
    if (f.path == path) return &f;
  return nullptr;
}

// --- build_commands.cpp ---

// A command line with `@W` standing for the candidate's folder (so cache keys do not depend on it).
// `pch` (-include <header> -Winvalid-pch) is left out of the key: a source compiles to the same
// object with the precompiled header or without it, so either build serves both.
struct Command {
  std::vector<std::string> argv;
  std::vector<std::string> pch;
  std::vector<std::string> resolved(const std::filesystem::path& work) const;
  std::string key() const;
};

struct Run {
  bool ok = false;
  bool timed_out = false;
  std::string output;
  double seconds = 0;
};

// Compilers and the linker read the system, the toolchain, this candidate's folder, upskill's own
// generated headers in the cache (PCH, stand-ins) and `readable` (the objects a link needs) — not
// other candidates' builds, the reference kernels' artefacts or the tests' specs — and write only
// `dir` and this candidate's folder.
Run run_tool(const std::vector<std::string>& argv, const std::filesystem::path& dir,
             const BuildRequest& req, const std::vector<std::filesystem::path>& readable = {},
             std::size_t file_mb = 2048);

// --- pch.cpp ---

// `@STANDIN` in a flag stands for the stand-in headers' folder in the cache.
std::filesystem::path standin_dir(const std::filesystem::path& cache);
Status ensure_standin(const std::filesystem::path& cache);
std::string replace_standin(std::string s, const std::filesystem::path& cache);

// The precompiled torch header for `flags`, one per key. When it is not built yet, it is not waited
// for: the candidate compiles without it, and once its own compiles are done (the cores are free)
// start_pch_build builds it in the background — detached and niced, at most one build per key at
// a time, with nothing of the candidate's — so a first candidate costs what a build without it
// costs, and the next ones find it ready.
struct Pch {
  std::filesystem::path header;    // pass as -include; its .gch sits next to it
  std::string content;             // what the header includes
  std::vector<std::string> flags;  // what it is compiled with
  bool ready = false;
  BuildStep step;                    // "pch": cached when ready, else what became of its build
  std::vector<std::string> sources;  // the candidate's sources that would include it
};
Pch find_pch(const BuildRequest& req, const std::vector<std::string>& flags, bool extension);
void start_pch_build(const BuildRequest& req, Pch& pch);

// Whether a source (with the project files it includes) includes a torch, ATen or c10 header:
// only those gain from the precompiled torch header (the others would only pay for loading it).
bool includes_torch(const Extraction& project, const std::string& source);

// --- cache.cpp ---

// The PCH's key: the toolchain, the header's text and the flags.
std::string pch_key(const Toolchain& toolchain, const std::string& content,
                    const std::vector<std::string>& flags);

// The names a file #includes, as written ("a/b.h" of `#include "a/b.h"` or `#include <a/b.h>`);
// nullopt when an #include is not such a name on its line (a macro, `#include_next`, a cut line).
std::optional<std::vector<std::string>> included_names(std::string_view text);
// The project's files `source` may include, directly or through each other, sorted by path: every
// file named (by file name, from any folder) in an #include of the source or of a file already in
// the closure, and every file of the project when an include is a macro. Never too small, so two
// candidates that share a source and what it includes share its object.
std::vector<const ExtractedFile*> include_closure(const Extraction& project,
                                                  const std::string& source);
// What an object's key covers besides its command line: the toolchain, the source's path and
// content, the include closure's paths and contents (and registration.h for a binding source).
std::string object_key_material(const BuildRequest& req, const std::string& source, bool binding);
// Runs `cmd` unless the cache has its output; stores output (and the step's record) under the key
// of `key_material` and the command line.
// `before_run` is called just before the compiler starts (not when the cache has the object).
BuildStep cached_compile(const BuildRequest& req, const Command& cmd, const std::string& source,
                         const std::string& tool, const std::string& key_material,
                         const std::filesystem::path& object_name,
                         const std::function<void()>& before_run = {});

// A linked module's key: the toolchain, binding style and namespace, the package's Python files
// and the objects' content keys.
// Puts a compiled object (`tmp`, in the cache's folder) at its place in the cache without ever
// replacing one that is there: another check may have published the same object (same key, same
// content) first, and a link step already granted that file keeps it — the sandbox's rules hold
// the file, not its path, so a file renamed over it would be refused to that linker. `tmp` is gone
// after. The error only when nothing is at `object`.
std::error_code publish_object(const std::filesystem::path& tmp,
                               const std::filesystem::path& object);
std::string module_key(const Toolchain& toolchain, const std::string& style,
                       const std::string& op_namespace, const std::string& package_files,
                       const std::vector<std::string>& objects);
std::filesystem::path module_dir(const BuildRequest& req, const std::string& key);
// Copies a freshly linked module into the cache under `key`.
void publish_module(const BuildRequest& req, const std::string& key,
                    const std::filesystem::path& built, const std::string& so_name);
// The ops a cached module registered when it was last loaded; nullopt when not recorded.
std::optional<std::vector<std::string>> cached_load(const std::filesystem::path& module_dir);
void record_load(const std::filesystem::path& module_dir, const std::vector<std::string>& ops);

// --- bind.cpp (the part the compile stage needs) ---

struct BindingPlan {
  bool extension_style = false;
  std::vector<std::string> sources;  // the .cpp files of [torch] src, project-relative
  std::string op_namespace;
};
BindingPlan plan_binding(const BuildRequest& req);

// The bind stage's import check, started while the sources compile (Python and torch take seconds
// to load): a sandboxed child that loads them and waits in <work>/load-check for its order — the
// package to import — which finish() gives it. Dropped unused, it is told to quit and joined.
class WarmImport {
 public:
  explicit WarmImport(const BuildRequest& req);
  ~WarmImport();
  WarmImport(const WarmImport&) = delete;
  WarmImport& operator=(const WarmImport&) = delete;
  // Gives the order (JSON) and waits for the import; nullopt when the child never took it (the
  // caller then runs the import afresh).
  std::optional<Result<sandbox::RunResult>> finish(const std::string& order);

 private:
  std::filesystem::path scratch_;
  std::optional<Result<sandbox::RunResult>> result_;
  std::thread thread_;
};
// Started only when the request asks for it and the module could be loaded here.
std::shared_ptr<WarmImport> start_warm_import(const BuildRequest& req);

}  // namespace upskill::kernel::detail
