// The object cache's keys: what a source may include (src/kernel/cache.cpp).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <thread>

#include "../../src/kernel/build_internal.hpp"
#include "support/temp_dir.hpp"
#include "upskill/core/files.hpp"
#include "upskill/kernel/build.hpp"
#include "upskill/kernel/extract.hpp"
#include "upskill/kernel/layout.hpp"
#include "upskill/kernel/toolchain.hpp"

namespace upskill::kernel {
namespace {

Extraction project(std::vector<std::pair<std::string, std::string>> files) {
  Extraction e;
  for (auto& [path, content] : files) e.files.push_back({path, content, "cpp", 0, "test"});
  return e;
}

std::vector<std::string> closure(const Extraction& e, const std::string& source) {
  std::vector<std::string> out;
  for (const auto* f : detail::include_closure(e, source)) out.push_back(f->path);
  return out;
}

const Extraction kProject = project({
    {"torch-ext/torch_binding.cpp",
     "#include <torch/library.h>\n#include \"registration.h\"\n#  include \"torch_binding.h\"\n"},
    {"torch-ext/torch_binding.h", "#pragma once\n#include <torch/torch.h>\n#include \"types.h\"\n"},
    {"common/types.h", "#pragma once\nusing f32 = float;\n"},
    {"rmsnorm_cuda/rmsnorm.cu", "/* vector types */ #include \"vec.cuh\"\n// #include \"old.h\"\n"},
    {"rmsnorm_cuda/vec.cuh", "#pragma once\n"},
    {"rmsnorm_cuda/old.h", "#pragma once\n"},
    {"rmsnorm_cuda/unused.h", "#pragma once\n"},
});

// Two checks that compile the same object at once both publish it: the second must leave the
// first's file in place, since a link step already granted that file (the sandbox's rules hold the
// file, not its path) is refused a file renamed over it ("cannot find …o: Permission denied", seen
// when the GPU check's rehearsal ran its cases at once).
TEST(ObjectCache, APublishedObjectIsNeverReplaced) {
  testing::TempDir tmp;
  tmp.write("objects/ab/key.o", "first");
  tmp.write("objects/ab/key.o.tmp1", "second");
  struct stat before {
  }, after{};
  ASSERT_EQ(::stat((tmp / "objects/ab/key.o").c_str(), &before), 0);
  EXPECT_FALSE(detail::publish_object(tmp / "objects/ab/key.o.tmp1", tmp / "objects/ab/key.o"));
  ASSERT_EQ(::stat((tmp / "objects/ab/key.o").c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(*files::read_text(tmp / "objects/ab/key.o"), "first");
  EXPECT_FALSE(std::filesystem::exists(tmp / "objects/ab/key.o.tmp1"));
  // Where nothing is yet, the object is put in place.
  tmp.write("objects/cd/other.o.tmp2", "only");
  EXPECT_FALSE(detail::publish_object(tmp / "objects/cd/other.o.tmp2", tmp / "objects/cd/other.o"));
  EXPECT_EQ(*files::read_text(tmp / "objects/cd/other.o"), "only");
  EXPECT_FALSE(std::filesystem::exists(tmp / "objects/cd/other.o.tmp2"));
}

TEST(IncludeClosure, FollowsIncludesTransitivelyAndLeavesTheRestOut) {
  EXPECT_EQ(closure(kProject, "torch-ext/torch_binding.cpp"),
            (std::vector<std::string>{"common/types.h", "torch-ext/torch_binding.h"}));
  // An include after a comment counts, and so does one in a comment (never too small); an
  // unrelated header does not.
  EXPECT_EQ(closure(kProject, "rmsnorm_cuda/rmsnorm.cu"),
            (std::vector<std::string>{"rmsnorm_cuda/old.h", "rmsnorm_cuda/vec.cuh"}));
  EXPECT_TRUE(closure(kProject, "missing.cpp").empty());
}

TEST(IncludeClosure, AMacroIncludeTakesEveryFile) {
  Extraction e = kProject;
  e.files.push_back({"k/macro.cpp", "#define H \"vec.cuh\"\n#include H\n", "cpp", 0, "test"});
  EXPECT_EQ(closure(e, "k/macro.cpp").size(), kProject.files.size());
  e.files.push_back({"k/next.cpp", "#include_next <vec.cuh>\n", "cpp", 0, "test"});
  EXPECT_EQ(closure(e, "k/next.cpp").size(), kProject.files.size() + 1);
}

// Model-written text: megabyte lines, blanks before and after `include`, cut and odd directives,
// random bytes. Never a crash; an include that cannot be read takes every file.
TEST(IncludeClosure, LongLinesAndOddDirectivesNeverShrinkItOrCrash) {
  const auto with = [](const std::string& text) {
    Extraction p = kProject;
    p.files.push_back({"k/x.cpp", text, "cpp", 0, "test"});
    return closure(p, "k/x.cpp");
  };
  const std::size_t all = kProject.files.size();
  const std::string mb(1 << 20, 'a');
  EXPECT_EQ(with("#include \"" + mb + "\n").size(), all);  // a cut name
  EXPECT_EQ(with("#include \"" + mb).size(), all);         // the text ends inside the name
  EXPECT_EQ(with("//" + mb + "\n#" + std::string(100000, ' ') + "include\t \"vec.cuh\""),
            (std::vector<std::string>{"rmsnorm_cuda/vec.cuh"}));
  EXPECT_EQ(with("#include\n").size(), all);
  EXPECT_EQ(with("#").size(), 0u);
  EXPECT_EQ(with("#include").size(), all);
  EXPECT_EQ(with("# /* */ include <vec.cuh>").size(), 0u);  // not a directive: no name either
  std::mt19937 rng(11);
  // Random text of directive pieces: every file when an include cannot be read, else only files
  // it names (no name here can reach the binding's files); an include appended is always found.
  for (int round = 0; round < 200; ++round) {
    std::string text(rng() % 4096, '\0');
    for (auto& c : text) c = "#include<>\"\n \tvec.cuhtypes"[rng() % 27];
    EXPECT_EQ(with(text).size() == all, !detail::included_names(text)) << text;
    const auto appended = with(text + "\n#include \"vec.cuh\"\n");
    EXPECT_NE(std::find(appended.begin(), appended.end(), "rmsnorm_cuda/vec.cuh"), appended.end())
        << text;
  }
}

// The key of a source changes with any file it may include and with nothing else.
TEST(IncludeClosure, TheKeyCoversExactlyTheClosure) {
  const Toolchain toolchain;
  BuildRequest req;
  req.toolchain = &toolchain;
  req.project = &kProject;
  const std::string binding = "torch-ext/torch_binding.cpp";
  const std::string key = detail::object_key_material(req, binding, true);
  std::mt19937 rng(7);
  for (std::size_t i = 0; i < kProject.files.size(); ++i) {
    Extraction changed = kProject;
    changed.files[i].content += "// changed " + std::to_string(rng()) + "\n";
    req.project = &changed;
    const bool in_closure = i == 0 || i == 1 || i == 2;
    EXPECT_EQ(detail::object_key_material(req, binding, true) != key, in_closure)
        << kProject.files[i].path;
  }
  req.project = &kProject;
  EXPECT_NE(detail::object_key_material(req, binding, false), key);  // registration.h
}

// A compiler that writes what it was run with (arguments, environment) as the precompiled header.
std::string fake_compiler(const testing::TempDir& dir) {
  const auto path = dir / "fake-g++";
  std::ofstream(path) << "#!/bin/sh\n"
                         "out=\n"
                         "for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
                         "sleep 1\n"
                         "{ echo \"$@\"; env; } > \"$out\"\n";
  ::chmod(path.c_str(), 0755);
  return path.string();
}

bool wait_for(const std::filesystem::path& path, bool present) {
  for (int i = 0; i < 200; ++i) {
    if (std::filesystem::exists(path) == present) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Not built: the candidate goes on without it; its build starts in the background once, detached,
// with no secret of upskill's environment, and the next candidate finds it ready.
TEST(PrecompiledHeader, BuiltOnceInTheBackgroundAndReadyForTheNextCandidate) {
  testing::TempDir dir;
  Toolchain toolchain;
  toolchain.cxx = fake_compiler(dir);
  BuildRequest req;
  req.toolchain = &toolchain;
  req.cache_dir = dir / "cache";
  ::setenv("UPSKILL_TEST_SECRET", "hunter2", 1);
  const std::vector<std::string> flags{"-std=c++17", "-O2"};
  detail::Pch first = detail::find_pch(req, flags, false);
  EXPECT_FALSE(first.ready);
  EXPECT_FALSE(first.step.cached);
  EXPECT_TRUE(first.step.ok);  // a header not built yet never fails a candidate
  detail::start_pch_build(req, first);
  EXPECT_NE(first.step.diagnostics.find("building in the background"), std::string::npos)
      << first.step.diagnostics;
  const auto marker = first.header.parent_path() / "building";
  EXPECT_TRUE(std::filesystem::exists(marker));
  // A second candidate meanwhile neither waits nor starts another build.
  detail::Pch second = detail::find_pch(req, flags, false);
  EXPECT_FALSE(second.ready);
  detail::start_pch_build(req, second);
  EXPECT_NE(second.step.diagnostics.find("being built"), std::string::npos)
      << second.step.diagnostics;
  ASSERT_TRUE(wait_for(first.step.output, true));
  ASSERT_TRUE(wait_for(marker, false));
  ::unsetenv("UPSKILL_TEST_SECRET");
  const std::string built = *files::read_text(first.step.output);
  EXPECT_NE(built.find("-x c++-header " + first.header.string()), std::string::npos) << built;
  EXPECT_EQ(built.find("hunter2"), std::string::npos) << built;
  EXPECT_EQ(built.find("UPSKILL_"), std::string::npos) << built;  // only PATH and LANG given
  detail::Pch third = detail::find_pch(req, flags, false);
  EXPECT_TRUE(third.ready);
  EXPECT_TRUE(third.step.cached);
  // Another flag set is another header.
  EXPECT_NE(detail::find_pch(req, {"-std=c++17", "-O3"}, false).header, third.header);
}

// A build that fails leaves no header and frees its marker; a marker left by a killed build is
// taken over once it is stale.
TEST(PrecompiledHeader, AFailedOrAbandonedBuildDoesNotBlockTheNext) {
  testing::TempDir dir;
  Toolchain toolchain;
  toolchain.cxx = "/bin/false";
  BuildRequest req;
  req.toolchain = &toolchain;
  req.cache_dir = dir / "cache";
  detail::Pch pch = detail::find_pch(req, {"-O2"}, false);
  detail::start_pch_build(req, pch);
  const auto marker = pch.header.parent_path() / "building";
  ASSERT_TRUE(wait_for(marker, false));
  EXPECT_FALSE(std::filesystem::exists(pch.step.output));
  EXPECT_FALSE(detail::find_pch(req, {"-O2"}, false).ready);
  // Stale: older than a build can take.
  std::ofstream(marker).put('x');
  std::filesystem::last_write_time(
      marker, std::filesystem::file_time_type::clock::now() - std::chrono::hours(1));
  toolchain.cxx = fake_compiler(dir);
  detail::Pch retried = detail::find_pch(req, {"-O2"}, false);
  detail::start_pch_build(req, retried);
  EXPECT_NE(retried.step.diagnostics.find("building in the background"), std::string::npos)
      << retried.step.diagnostics;
  EXPECT_TRUE(wait_for(retried.step.output, true));
  // A cache that cannot be written (another user's, read-only): no build, and the step says why.
  std::ofstream(dir / "a-file") << "x";
  req.cache_dir = dir / "a-file";
  detail::Pch unwritable = detail::find_pch(req, {"-O2"}, false);
  detail::start_pch_build(req, unwritable);
  EXPECT_FALSE(unwritable.ready);
  EXPECT_TRUE(unwritable.step.ok);
  EXPECT_NE(unwritable.step.diagnostics.find("cannot be written"), std::string::npos)
      << unwritable.step.diagnostics;
}

// A compiler that writes its arguments to its output at once.
std::string quick_compiler(const testing::TempDir& dir) {
  const auto path = dir / "quick-g++";
  std::ofstream(path) << "#!/bin/sh\n"
                         "out=\n"
                         "for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
                         "echo \"$@\" > \"$out\"\n";
  ::chmod(path.c_str(), 0755);
  return path.string();
}

const BuildStep* pch_step(const CompileReport& r) {
  for (const auto& s : r.steps)
    if (s.tool == "pch") return &s;
  return nullptr;
}

// The header's build is started by a candidate that compiled a source without it, never by one
// whose objects all came from the cache (nothing it compiled would have gained from it), and
// never with the headers turned off.
TEST(PrecompiledHeader, StartedOnlyByACandidateThatCompiledWithoutIt) {
  testing::TempDir dir;
  Toolchain toolchain;
  toolchain.cxx = quick_compiler(dir);
  toolchain.torch.include_dirs = {dir.path().string()};  // where compilers may read: the stand-in
  const auto answer_text = files::read_text(std::filesystem::path(UPSKILL_SOURCE_DIR) /
                                            "tests/data/kernel-answers/rmsnorm-cpu-good.md");
  ASSERT_TRUE(answer_text);
  Extraction answer = extract_files(*answer_text);
  const LayoutReport layout = check_layout(answer);
  ASSERT_TRUE(layout.passed());
  BuildRequest req;
  req.project = &answer;
  req.layout = &layout;
  req.toolchain = &toolchain;
  req.backend = "cpu";
  req.cache_dir = dir / "cache";
  const auto build = [&](const std::string& name) {
    req.work_dir = dir / name;
    return compile_kernels(req);
  };
  const auto pch_dir = dir / "cache" / "pch";

  const CompileReport first = build("first");
  for (const auto& s : first.steps) EXPECT_TRUE(s.ok) << s.source << ": " << s.diagnostics;
  ASSERT_TRUE(first.passed) << (first.problems.empty() ? "" : first.problems.front());
  ASSERT_NE(pch_step(first), nullptr);
  EXPECT_NE(pch_step(first)->diagnostics.find("building in the background"), std::string::npos)
      << pch_step(first)->diagnostics;
  ASSERT_TRUE(wait_for(pch_step(first)->output, true));
  ASSERT_TRUE(wait_for(pch_step(first)->output.parent_path() / "building", false));

  // The headers pruned from the cache, the same candidate again: its objects are cached.
  std::filesystem::remove_all(pch_dir);
  const CompileReport again = build("again");
  ASSERT_TRUE(again.passed);
  for (const auto& s : again.steps) {
    if (s.tool != "pch") {
      EXPECT_TRUE(s.cached) << s.source;
    }
  }
  ASSERT_NE(pch_step(again), nullptr);
  EXPECT_NE(pch_step(again)->diagnostics.find("came from the cache"), std::string::npos)
      << pch_step(again)->diagnostics;
  EXPECT_FALSE(std::filesystem::exists(pch_dir));

  // A changed kernel source with the headers turned off: compiled, no header asked for or built.
  const auto change_kernel = [&](const std::string& comment) {
    for (auto& f : answer.files)
      if (f.path == "rmsnorm_cpu/rmsnorm.cpp") f.content += "// " + comment + "\n";
  };
  change_kernel("changed");
  req.use_pch = false;
  const CompileReport off = build("off");
  ASSERT_TRUE(off.passed);
  EXPECT_EQ(pch_step(off), nullptr);
  EXPECT_FALSE(std::filesystem::exists(pch_dir));

  // Changed again, headers on: this one compiles without the header, so it starts its build.
  change_kernel("changed again");
  req.use_pch = true;
  const CompileReport changed = build("changed");
  ASSERT_TRUE(changed.passed);
  ASSERT_NE(pch_step(changed), nullptr);
  EXPECT_NE(pch_step(changed)->diagnostics.find("building in the background"), std::string::npos)
      << pch_step(changed)->diagnostics;
  EXPECT_TRUE(wait_for(pch_step(changed)->output, true));
  EXPECT_TRUE(wait_for(pch_step(changed)->output.parent_path() / "building", false));
}

TEST(PrecompiledHeader, TurnedOffByTheEnvironment) {
  const char* before = std::getenv("UPSKILL_PCH");
  const std::optional<std::string> saved =
      before ? std::optional<std::string>(before) : std::nullopt;
  for (const char* off : {"0", "off", "OFF", " no ", "false"}) {
    ::setenv("UPSKILL_PCH", off, 1);
    EXPECT_FALSE(precompiled_headers_enabled()) << off;
  }
  for (const char* on : {"1", "on", "yes", ""}) {
    ::setenv("UPSKILL_PCH", on, 1);
    EXPECT_TRUE(precompiled_headers_enabled()) << on;
  }
  ::unsetenv("UPSKILL_PCH");
  EXPECT_TRUE(precompiled_headers_enabled());
  if (saved) ::setenv("UPSKILL_PCH", saved->c_str(), 1);
}

TEST(PrecompiledHeader, OnlySourcesThatIncludeTorchUseIt) {
  EXPECT_TRUE(detail::includes_torch(kProject, "torch-ext/torch_binding.cpp"));  // via its header
  EXPECT_FALSE(detail::includes_torch(kProject, "rmsnorm_cuda/rmsnorm.cu"));
  const Extraction aten = project({{"k.cpp", "#include <ATen/Dispatch.h>\n"}});
  EXPECT_TRUE(detail::includes_torch(aten, "k.cpp"));
  const Extraction plain = project({{"k.cpp", "#include <vector>  // not torch/torch.h\n"}});
  EXPECT_FALSE(detail::includes_torch(plain, "k.cpp"));
  // A macro include may be torch's; a megabyte of blanks is read without trouble.
  const Extraction macro = project({{"k.cpp", "#define H <torch/torch.h>\n#include H\n"}});
  EXPECT_TRUE(detail::includes_torch(macro, "k.cpp"));
  const Extraction blanks =
      project({{"k.cpp", "#" + std::string(1 << 20, ' ') + "include <c10/util/Half.h>\n"}});
  EXPECT_TRUE(detail::includes_torch(blanks, "k.cpp"));
}

}  // namespace
}  // namespace upskill::kernel

namespace upskill::kernel {
namespace {

// Sets an environment variable for one scope and puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// UPSKILL_PYTHON=python3 means the python3 the user's shell finds, not the sandbox's PATH's: on a
// GPU machine the one with torch is first on the user's PATH (/opt/.../venv/bin), not /usr/bin.
TEST(Toolchain, APythonNamedWithoutAPathIsTheOneOnTheUsersPath) {
  testing::TempDir dir;
  const auto python = dir.path() / "python3";
  std::ofstream(python) << "#!/bin/sh\n";
  ::chmod(python.c_str(), 0755);
  ScopedEnv path("PATH", dir.path().string() + ":/usr/bin:/bin");
  {
    ScopedEnv env("UPSKILL_PYTHON", "python3");
    EXPECT_EQ(default_python(std::nullopt), python.string());
    EXPECT_EQ(default_python("/usr/bin/python3"), "/usr/bin/python3");  // a path stays as it is
  }
  EXPECT_EQ(default_python("python3"), python.string());
  EXPECT_EQ(default_python("no-such-python"), "no-such-python");  // its error names it later
}

// The driver's library folder and the chosen devices cross the scrubbed environment; nothing else.
TEST(Toolchain, TheDriverEnvironmentIsThePathToTheDriverAndTheDevicesOnly) {
  ScopedEnv lib("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64");
  ScopedEnv devices("CUDA_VISIBLE_DEVICES", std::nullopt);
  ScopedEnv key("OPENAI_API_KEY", "sk-canary");
  const auto env = driver_environment();
  EXPECT_EQ(env.size(), 1u);
  EXPECT_EQ(env.at("LD_LIBRARY_PATH"), "/usr/local/nvidia/lib64");
  ScopedEnv chosen("CUDA_VISIBLE_DEVICES", "1");
  EXPECT_EQ(driver_environment().at("CUDA_VISIBLE_DEVICES"), "1");
}

// The probe runs `python -c` in a folder of its own: a json.py or http.py left in the shared
// temporary folder (by anyone) is not imported in place of the standard library's. With the probe
// in TMPDIR itself, torch's import failed on such a file.
TEST(Toolchain, AModuleLeftInTheSharedTemporaryFolderIsNotImported) {
  testing::TempDir shared;
  for (const char* module : {"json.py", "http.py", "sysconfig.py"})
    shared.write(module, "raise SystemExit('a planted module was imported')\n");
  ScopedEnv tmp("TMPDIR", shared.path().string());
  const auto t = probe_toolchain(default_python(std::nullopt));
  if (!t && t.error().message.find("cannot import torch") != std::string::npos &&
      t.error().message.find("planted") == std::string::npos)
    GTEST_SKIP() << "no torch for the default Python here: " << t.error().message;
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_FALSE(t->torch.version.empty());
  // Its own folder is gone afterwards; the shared one holds only what was planted.
  std::size_t left = 0;
  for (const auto& e : std::filesystem::directory_iterator(shared.path())) {
    (void)e;
    ++left;
  }
  EXPECT_EQ(left, 3u);
}

}  // namespace
}  // namespace upskill::kernel
