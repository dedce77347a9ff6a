// kernel/layout: build.toml against kernel-builder's schema and the files it names.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "upskill/kernel/layout.hpp"

namespace upskill::kernel {
namespace {

constexpr const char* kBuildToml = R"([general]
name = "rms-norm"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cuda", "cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

[kernel.rmsnorm]
backend = "cuda"
depends = ["torch"]
src = ["rmsnorm_cuda/rmsnorm.cu"]
cuda-capabilities = ["8.0", "9.0"]

[kernel.rmsnorm_cpu]
backend = "cpu"
depends = ["torch"]
src = ["rmsnorm_cpu/rmsnorm.cpp"]
)";

Extraction project(const std::string& build_toml, std::string prefix = "",
                   bool with_package = true) {
  Extraction e;
  e.files.push_back({prefix + "build.toml", build_toml, "toml", 1, "test"});
  for (const char* f : {"torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h",
                        "rmsnorm_cuda/rmsnorm.cu", "rmsnorm_cpu/rmsnorm.cpp"})
    e.files.push_back({prefix + f, "// code", "", 1, "test"});
  if (with_package)
    e.files.push_back(
        {prefix + "torch-ext/rms_norm/__init__.py", "from ._ops import ops", "", 1, "test"});
  return e;
}

std::string errors(const LayoutReport& r) {
  std::string out;
  for (const auto& f : r.findings)
    if (f.error) out += fmt::format("{}: {}\n", f.line, f.message);
  return out;
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(Layout, CurrentEditionProjectPasses) {
  const LayoutReport r = check_layout(project(kBuildToml));
  EXPECT_TRUE(r.passed()) << errors(r);
  EXPECT_EQ(r.edition, "5");
  EXPECT_EQ(r.name, "rms-norm");
  EXPECT_EQ(r.python_name, "rms_norm");
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].capabilities, (std::vector<std::string>{"8.0", "9.0"}));
  EXPECT_EQ(r.kernels[1].backend, "cpu");
  // The project may sit in a folder of the answer.
  const LayoutReport nested = check_layout(project(kBuildToml, "rms-norm/"));
  EXPECT_TRUE(nested.passed()) << errors(nested);
  EXPECT_EQ(nested.root, "rms-norm/");
}

TEST(Layout, EarlyTwentyTwentySixFormIsRecognised) {
  const std::string old = R"([general]
name = "rms_norm"

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.rmsnorm]
src = ["rmsnorm_cuda/rmsnorm.cu"]
depends = ["torch"]
cuda-capabilities = ["9.0"]
)";
  const LayoutReport r = check_layout(project(old));
  EXPECT_TRUE(r.passed()) << errors(r);
  EXPECT_EQ(r.edition, "early-2026 (no edition)");
  ASSERT_FALSE(r.findings.empty());
  EXPECT_NE(r.findings[0].message.find("edition = 5"), std::string::npos);
}

struct Broken {
  const char* name;
  std::string toml;
  const char* message;
};
void PrintTo(const Broken& b, std::ostream* os) {
  *os << b.name;
}

class LayoutErrors : public ::testing::TestWithParam<Broken> {};

TEST_P(LayoutErrors, AreFound) {
  const LayoutReport r = check_layout(project(GetParam().toml));
  EXPECT_FALSE(r.passed());
  EXPECT_NE(errors(r).find(GetParam().message), std::string::npos) << errors(r);
}

INSTANTIATE_TEST_SUITE_P(
    Schema, LayoutErrors,
    ::testing::Values(
        Broken{
            "capabilities_under_general_cuda",
            replace(kBuildToml, "[torch]", "[general.cuda]\ncapabilities = [\"9.0\"]\n\n[torch]"),
            "[general.cuda] has no 'capabilities' key"},
        Broken{"unknown_kernel_key",
               replace(kBuildToml, "cuda-capabilities", "cuda-arch = [\"9.0\"]\nx"),
               "[kernel.rmsnorm] has no key 'cuda-arch'"},
        Broken{"name_with_underscore",
               replace(kBuildToml, "name = \"rms-norm\"", "name = \"rms_norm\""),
               "must match ^[a-z][-a-z0-9]*[a-z0-9]$"},
        Broken{"missing_license", replace(kBuildToml, "license = \"Apache-2.0\"\n", ""),
               "needs 'license'"},
        Broken{"missing_version", replace(kBuildToml, "version = 1\n", ""),
               "needs an integer 'version'"},
        Broken{"unknown_edition", replace(kBuildToml, "edition = 5", "edition = 9"), "edition 9"},
        Broken{"unknown_backend",
               replace(kBuildToml, "backends = [\"cuda\", \"cpu\"]",
                       "backends = [\"cuda\", \"cpu\", \"opencl\"]"),
               "unknown backend 'opencl'"},
        Broken{"backend_not_declared",
               replace(kBuildToml, "backends = [\"cuda\", \"cpu\"]", "backends = [\"cuda\"]"),
               "backend 'cpu' is not in [general] backends"},
        Broken{"missing_source",
               replace(kBuildToml, "rmsnorm_cuda/rmsnorm.cu", "rmsnorm_cuda/missing.cu"),
               "src names rmsnorm_cuda/missing.cu"},
        Broken{"unsupported_capability", replace(kBuildToml, "\"8.0\", \"9.0\"", "\"9.5\""),
               "cuda-capability '9.5'"},
        Broken{"python_depends",
               replace(kBuildToml, "edition = 5", "edition = 5\npython-depends = [\"numpy\"]"),
               "python-depends 'numpy' is not allowed"},
        Broken{
            "no_torch",
            replace(
                kBuildToml,
                "[torch]\nsrc = [\"torch-ext/torch_binding.cpp\", \"torch-ext/torch_binding.h\"]\n",
                ""),
            "needs a [torch] table"},
        Broken{"no_cpp_binding",
               replace(kBuildToml,
                       "src = [\"torch-ext/torch_binding.cpp\", \"torch-ext/torch_binding.h\"]",
                       "src = [\"torch-ext/torch_binding.h\"]"),
               "names no .cpp binding source"},
        Broken{"invalid_toml", replace(kBuildToml, "version = 1", "version = = 1"),
               "not valid TOML"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Layout, MissingPiecesOfTheProject) {
  const LayoutReport no_package = check_layout(project(kBuildToml, "", false));
  EXPECT_NE(errors(no_package).find("torch-ext/rms_norm/__init__.py is missing"), std::string::npos)
      << errors(no_package);
  const LayoutReport none = check_layout(Extraction{});
  EXPECT_NE(errors(none).find("no build.toml"), std::string::npos);
  const LayoutReport bad_line =
      check_layout(project(replace(kBuildToml, "version = 1", "version = = 1")));
  ASSERT_FALSE(bad_line.findings.empty());
  EXPECT_EQ(bad_line.findings[0].line, 3);
}

}  // namespace
}  // namespace upskill::kernel

namespace upskill::kernel {
namespace {

TEST(KernelLayoutFlags, CompilerFlagsAndIncludesAreReadAndScreened) {
  std::string toml = kBuildToml;
  toml.replace(toml.find("cuda-capabilities = [\"8.0\", \"9.0\"]"),
               std::string("cuda-capabilities = [\"8.0\", \"9.0\"]").size(),
               "cuda-capabilities = [\"8.0\", \"9.0\"]\ncuda-flags = [\"--use_fast_math\", "
               "\"-Xptxas=-v\", \"-DBLOCK=256\"]\ncxx-flags = [\"-O3\"]\ninclude = [\"common\"]");
  const LayoutReport ok = check_layout(project(toml));
  ASSERT_TRUE(ok.passed());
  const KernelEntry& k = ok.kernels.front();
  EXPECT_EQ(k.cuda_flags,
            (std::vector<std::string>{"--use_fast_math", "-Xptxas=-v", "-DBLOCK=256"}));
  EXPECT_EQ(k.cxx_flags, (std::vector<std::string>{"-O3"}));
  EXPECT_EQ(k.include, (std::vector<std::string>{"common"}));

  std::string hostile = toml;
  hostile.replace(hostile.find("\"-O3\""), 5, "\"-fplugin=./evil.so\"");
  const LayoutReport bad = check_layout(project(hostile));
  EXPECT_FALSE(bad.passed());
  bool named = false;
  for (const auto& f : bad.findings)
    named = named || f.message.find("flag '-fplugin=./evil.so' is not one upskill passes") !=
                         std::string::npos;
  EXPECT_TRUE(named);

  std::string escape = toml;
  escape.replace(escape.find("\"common\""), 8, "\"../../etc\"");
  EXPECT_FALSE(check_layout(project(escape)).passed());
}

TEST(KernelLayoutFlags, AllowList) {
  for (const char* f :
       {"-O2", "-O3", "-Ofast", "-DNDEBUG", "-DX=1", "-UX", "-std=c++17", "-Wall", "-ffast-math",
        "-march=native", "--use_fast_math", "-use_fast_math", "--expt-relaxed-constexpr",
        "-lineinfo", "--ftz=true", "-Xptxas=-v,-O3", "--maxrregcount=64", "-fopenmp"})
    EXPECT_TRUE(build_flag_allowed(f)) << f;
  for (const char* f : {"-fplugin=x.so", "-o", "/etc/passwd", "-B/tmp", "-I/", "-include",
                        "-specs=x", "-Wl,-rpath,/tmp", "@args.txt", "-x", "--output-directory=/",
                        "-DX=$(id)", "-L/tmp", "-lfoo", "-save-temps", "-O3 -fplugin=x"})
    EXPECT_FALSE(build_flag_allowed(f)) << f;
}

// kernel-builder passes a CPU kernel's cxx-flags to the compiler as they are; code-generation
// switches such as the ISA extensions a bf16 kernel needs must not be a layout error.
TEST(KernelLayoutFlags, CodeGenerationFlagsOfRealProjectsPass) {
  const std::string toml =
      replace(kBuildToml, "src = [\"rmsnorm_cpu/rmsnorm.cpp\"]",
              "src = [\"rmsnorm_cpu/rmsnorm.cpp\"]\ncxx-flags = [\"-O3\", \"-mavx512f\", "
              "\"-mavx512bf16\", \"-mavx512vl\", \"-mamx-bf16\", \"-march=sapphirerapids\", "
              "\"-fopenmp\", \"-fno-math-errno\"]");
  const LayoutReport r = check_layout(project(toml));
  EXPECT_TRUE(r.passed()) << errors(r);
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[1].cxx_flags.size(), 8u);
  EXPECT_EQ(r.kernels[1].cxx_flags[2], "-mavx512bf16");
}

TEST(KernelLayoutFlags, CodeGenerationFlagsAreAcceptedAndFileOrProgramFlagsRefused) {
  for (const char* f :
       {// x86 ISA extensions and the target CPU
        "-mavx", "-mavx2", "-mavx512f", "-mavx512bf16", "-mavx512fp16", "-mavx512vnni", "-mavxvnni",
        "-mno-avx512f", "-mf16c", "-mfma", "-mbmi", "-mbmi2", "-mamx-tile", "-mamx-int8",
        "-mamx-bf16", "-msse4.2", "-mssse3", "-mpopcnt", "-march=x86-64-v3",
        "-march=sapphirerapids", "-mtune=native", "-mcpu=neoverse-v2", "-mprefer-vector-width=512",
        // optimisation levels and safe -f code generation switches
        "-O0", "-O1", "-Os", "-Og", "-g", "-g1", "-std=gnu++17", "-funroll-loops",
        "-fno-strict-aliasing", "-ftree-vectorize", "-fopenmp-simd", "-ffp-contract=fast",
        "-fvisibility=hidden", "-fPIC", "-fno-math-errno",
        // nvcc: host compiler and ptxas options, each item screened
        "-Xcompiler=-mavx2,-fopenmp", "--compiler-options=-O3", "-Xptxas=-v,--warn-on-spills",
        "--ptxas-options=-O3", "--extra-device-vectorization"})
    EXPECT_TRUE(build_flag_allowed(f)) << f;
  for (const char* f :
       {// plugins, specs, response files, output and program paths
        "-fplugin=./x.so", "-fplugin-arg-x-y=z", "-specs=/tmp/x", "--specs=x", "@flags.txt", "-o",
        "-ofile", "-B/tmp/bin", "-B", "-wrapper", "-wrapper=gdb,--args", "-fuse-ld=/tmp/ld",
        "--sysroot=/", "-isystem/etc", "-include", "--include=/etc/passwd", "-imacros/etc/x",
        // flags that write or read files at compile time
        "-fprofile-generate", "-fprofile-use=/tmp/p", "-fauto-profile=/tmp/p", "-fdump-tree-all",
        "-fopt-info=/tmp/x", "-fstack-usage", "-save-temps=obj", "-MF/tmp/deps", "-MD",
        // look-alikes of allowed flags
        "-march=", "-march=$(id)", "-march=native;id", "-march=../x", "-mavx2 -o x", "-Ox",
        "-Xcompiler=-mavx2,-fplugin=x.so", "-Xcompiler=", "-Xcompiler", "-Xptxas=-o,x.cubin",
        "-Xptxas=--output-file=x", "-Xcompiler=-o,x"})
    EXPECT_FALSE(build_flag_allowed(f)) << f;
}

}  // namespace
}  // namespace upskill::kernel
