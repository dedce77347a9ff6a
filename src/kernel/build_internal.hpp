#pragma once
// What the files of the compile and bind stages (include/upskill/kernel/build.hpp) share; private
// to src/kernel/. One concept per file:
//   tools.cpp    running compilers and the linker sandboxed and read-confined; the file lock
//   cache.cpp    the content-addressed cache: the keys of objects, modules and the PCH, the object
//                cache, published modules and their load records
//   pch.cpp      generated headers: the precompiled torch header and the CUDA stand-in header
//   ptxas.cpp    the `ptxas -v` parser
//   compile.cpp  compiler command lines and the compile stage
//   bind.cpp     registration.h, the binding plan, the link, the package and its load check
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "upskill/core/error.hpp"
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

// --- tools.cpp ---

// A command line with `@W` standing for the candidate's folder (so cache keys do not depend on it).
struct Command {
  std::vector<std::string> argv;
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

// An exclusive lock on a file, released on destruction.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// --- pch.cpp ---

// `@STANDIN` in a flag stands for the stand-in headers' folder in the cache.
std::filesystem::path standin_dir(const std::filesystem::path& cache);
Status ensure_standin(const std::filesystem::path& cache);
std::string replace_standin(std::string s, const std::filesystem::path& cache);

// The precompiled torch header for `flags` (built once per key, under a lock).
struct Pch {
  std::filesystem::path header;  // pass as -include; its .gch sits next to it
  BuildStep step;
};
Pch ensure_pch(const BuildRequest& req, const std::vector<std::string>& flags, bool extension);

// --- cache.cpp ---

// The PCH's key: the toolchain, the header's text and the flags.
std::string pch_key(const Toolchain& toolchain, const std::string& content,
                    const std::vector<std::string>& flags);

// Everything in the project a source could include: the key covers every header's content.
std::string headers_digest(const Extraction& project);
// What an object's key covers besides its command line: the toolchain, every header of the
// project, the source's path and content (and registration.h for a binding source).
std::string object_key_material(const BuildRequest& req, const std::string& headers,
                                const std::string& source, bool binding);
// Runs `cmd` unless the cache has its output; stores output (and the step's record) under the key
// of `key_material` and the command line.
BuildStep cached_compile(const BuildRequest& req, const Command& cmd, const std::string& source,
                         const std::string& tool, const std::string& key_material,
                         const std::filesystem::path& object_name);

// A linked module's key: the toolchain, binding style and namespace, the package's Python files
// and the objects' content keys.
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

}  // namespace upskill::kernel::detail
