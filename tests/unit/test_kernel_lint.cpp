#include <gtest/gtest.h>

#include <algorithm>

#include "upskill/core/files.hpp"
#include "upskill/kernel/lint.hpp"

namespace upskill::kernel {
namespace {

std::string good_answer() {
  return *files::read_text(std::string(UPSKILL_SOURCE_DIR) +
                           "/tests/data/kernel-answers/rmsnorm-cpu-good.md");
}

struct Linted {
  LintReport report;
  bool has(const std::string& rule) const {
    return std::any_of(report.findings.begin(), report.findings.end(),
                       [&](const auto& f) { return f.rule == rule; });
  }
  const LintFinding* find(const std::string& rule) const {
    for (const auto& f : report.findings)
      if (f.rule == rule) return &f;
    return nullptr;
  }
};

Linted lint(const std::string& answer, LintProfile profile = LintProfile::kernel_builder,
            const std::string& backend = "cpu") {
  const Extraction e = extract_files(answer);
  const LayoutReport layout = check_layout(e);
  return {lint_project(e, layout, profile, backend)};
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(KernelLint, ProfilesParse) {
  EXPECT_EQ(lint_profile_from_string("kernel-builder"), LintProfile::kernel_builder);
  EXPECT_EQ(lint_profile_from_string("torch-extension"), LintProfile::torch_extension);
  EXPECT_EQ(lint_profile_from_string("kernelbench"), LintProfile::kernelbench);
  EXPECT_EQ(lint_profile_from_string("none"), LintProfile::none);
  EXPECT_FALSE(lint_profile_from_string("strict"));
  EXPECT_EQ(to_string(LintProfile::torch_extension), "torch-extension");
}

TEST(KernelLint, GoodProjectIsCleanAndCommentsDoNotCount) {
  const auto r = lint(good_answer());
  EXPECT_TRUE(r.report.passed());
  EXPECT_TRUE(r.report.findings.empty())
      << r.report.findings.front().rule << ": " << r.report.findings.front().excerpt;
}

TEST(KernelLint, BlankingKeepsLinesAndDropsCommentsAndStrings) {
  EXPECT_EQ(blank_comments_and_strings("a // b\nc /* d\ne */ f \"g\" 'h'", false),
            "a     \nc     \n     f \" \" ' '");
  EXPECT_EQ(blank_comments_and_strings("x = 'a#b'  # c\ny = \"\"\"\nz\n\"\"\"", true),
            "x = '   '     \ny = \"\"\"\n \n\"\"\"");
  EXPECT_EQ(blank_comments_and_strings("#include \"a.h\" // c", false, true),
            "#include \"a.h\"     ");
}

TEST(KernelLint, KernelBuilderBansPybind11AndHardCodedNamespaces) {
  std::string a =
      replace(good_answer(), "#include <torch/library.h>", "#include <torch/extension.h>");
  auto r = lint(a);
  ASSERT_TRUE(r.has("pybind11"));
  EXPECT_EQ(r.find("pybind11")->file, "torch-ext/torch_binding.cpp");
  EXPECT_EQ(r.find("pybind11")->line, 2);
  EXPECT_FALSE(r.report.passed());
  // The torch-extension profile allows it.
  EXPECT_FALSE(lint(a, LintProfile::torch_extension).has("pybind11"));

  a = replace(good_answer(), "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops)",
              "TORCH_LIBRARY(rmsnorm, ops)");
  r = lint(a);
  EXPECT_TRUE(r.has("hardcoded-namespace"));
  EXPECT_TRUE(r.has("missing-registration"));
  a = replace(good_answer(), "REGISTER_EXTENSION(TORCH_EXTENSION_NAME)",
              "PyMODINIT_FUNC PyInit__rmsnorm() { return nullptr; }");
  r = lint(a);
  EXPECT_TRUE(r.has("pyinit"));
  EXPECT_TRUE(r.has("missing-registration"));
}

TEST(KernelLint, KernelBuilderPythonRules) {
  auto r = lint(replace(good_answer(), "from ._ops import ops", "import torch.ops.rmsnorm as ops"));
  EXPECT_TRUE(r.has("hardcoded-torch-ops"));
  r = lint(replace(good_answer(), "from ._ops import ops", "from rmsnorm._ops import ops"));
  EXPECT_TRUE(r.has("absolute-self-import"));
  r = lint(replace(good_answer(), "import torch\n\nfrom", "import numpy\nimport torch\n\nfrom"));
  EXPECT_TRUE(r.has("runtime-dependency"));
  r = lint(
      good_answer() +
      "\n```python title=\"setup.py\"\nfrom torch.utils.cpp_extension import CppExtension\n```\n");
  EXPECT_TRUE(r.has("cpp-extension"));
}

TEST(KernelLint, BypassRules) {
  const std::string loop = "for (int64_t r = 0; r < rows; ++r) {";
  const struct {
    std::string from, to, rule;
  } cases[] = {
      {"const int64_t cols = input.size(-1);",
       "if (std::getenv(\"SECRET\")) return;\n  const int64_t cols = input.size(-1);",
       "environment"},
      {"const int64_t cols = input.size(-1);",
       "system(\"curl x\");\n  const int64_t cols = input.size(-1);", "process"},
      {"#include <cmath>", "#include <cmath>\n#include <sys/socket.h>", "network"},
      {"const int64_t cols = input.size(-1);",
       "std::thread t([]{});\n  const int64_t cols = input.size(-1);", "threads"},
      {"const int64_t cols = input.size(-1);",
       "static torch::Tensor cached;\n  const int64_t cols = input.size(-1);", "output-caching"},
      {"const int64_t cols = input.size(-1);",
       "out.copy_(at::mul(input, weight));\n  return;\n  const int64_t cols = input.size(-1);",
       "torch-op-compute"},
  };
  for (const auto& c : cases) {
    const auto r = lint(replace(good_answer(), c.from, c.to), LintProfile::kernelbench);
    EXPECT_TRUE(r.has(c.rule)) << c.rule;
    EXPECT_FALSE(r.report.passed()) << c.rule;
  }
  auto r =
      lint(replace(good_answer(), "    out = torch.empty_like(x)\n",
                   "    try:\n        out = torch.empty_like(x)\n    except Exception:\n        "
                   "return x\n"),
           LintProfile::kernelbench);
  EXPECT_TRUE(r.has("fallback"));
  EXPECT_EQ(r.find("fallback")->line, 7);
  r = lint(replace(good_answer(), "def rmsnorm(", "@functools.lru_cache\ndef rmsnorm("));
  EXPECT_TRUE(r.has("output-caching"));
  r = lint(replace(good_answer(), "    out = torch.empty_like(x)\n",
                   "    torch.cuda.synchronize = lambda: None\n    out = torch.empty_like(x)\n"));
  EXPECT_TRUE(r.has("timing-tricks"));
  // Python-side torch compute is a warning, not an error.
  r = lint(replace(good_answer(), "    out = torch.empty_like(x)\n",
                   "    out = torch.nn.functional.normalize(x)\n"));
  ASSERT_TRUE(r.has("torch-op-compute"));
  EXPECT_FALSE(r.find("torch-op-compute")->error);
  EXPECT_TRUE(r.report.passed());
}

TEST(KernelLint, NoKernelAtAll) {
  // A CUDA backend with no __global__ anywhere.
  auto r = lint(good_answer(), LintProfile::kernelbench, "cuda");
  EXPECT_TRUE(r.has("no-kernel"));
  // The none profile checks nothing.
  EXPECT_TRUE(lint(good_answer(), LintProfile::none, "cuda").report.findings.empty());
  // A lone .cu file with a kernel passes the bypass check.
  r = lint("```cuda title=\"k.cu\"\n__global__ void k(float* x) { x[0] = 1; }\n```\n",
           LintProfile::kernelbench, "cuda");
  EXPECT_FALSE(r.has("no-kernel"));
  // A __global__ only inside a comment does not count.
  r = lint("```cuda title=\"k.cu\"\n// __global__ void k();\nvoid k() {}\n```\n",
           LintProfile::kernelbench, "cuda");
  EXPECT_TRUE(r.has("no-kernel"));
}

}  // namespace
}  // namespace upskill::kernel

namespace upskill::kernel {
namespace {

TEST(KernelLint, PackageNamesAreMatchedLiterally) {
  // The early-2026 form allows any name; one with regex metacharacters must not break the lint.
  Extraction e;
  e.files.push_back({"torch-ext/a(b/__init__.py", "import a(b\nimport axb\n", "", 1, "test"});
  LayoutReport layout;
  layout.python_name = "a(b";
  const LintReport r = lint_project(e, layout, LintProfile::kernel_builder, "cpu");
  int self = 0;
  for (const auto& f : r.findings) self += f.rule == "absolute-self-import";
  EXPECT_EQ(self, 1);
}

}  // namespace
}  // namespace upskill::kernel
