// kernel/lint: each profile's findings on real and hostile code, comments and strings blanked.
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

// A CPU kernel written with ATen's SIMD vectors: Vectorized<float> has methods named like tensor
// ops (neg, exp), and a static helper returns a fresh tensor; neither is torch compute or a cache.
constexpr const char* kSiluAnswer = R"md(**`build.toml`**
```toml
[general]
name = "silu"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

[kernel.silu_cpu]
backend = "cpu"
depends = ["torch"]
src = ["silu_cpu/silu.cpp"]
cxx-flags = ["-O3", "-mavx2", "-mfma"]
```

```cpp title="torch-ext/torch_binding.h"
#pragma once
#include <torch/torch.h>

torch::Tensor silu(const torch::Tensor& input);
```

```cpp title="torch-ext/torch_binding.cpp"
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("silu(Tensor input) -> Tensor");
  ops.impl("silu", torch::kCPU, &silu);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
```

```cpp title="silu_cpu/silu.cpp"
#include <ATen/cpu/vec/vec.h>
#include <torch/torch.h>

#include <cmath>

#include "torch_binding.h"

namespace {

using Vec = at::vec::Vectorized<float>;

// silu(x) = x / (1 + exp(-x)), Vec::size() floats at a time, then a scalar tail.
void silu_span(float* out, const float* in, int64_t n) {
  int64_t i = 0;
  for (; i + Vec::size() <= n; i += Vec::size()) {
    const Vec a0 = Vec::loadu(in + i);
    const Vec e = a0.neg().exp();
    (a0 / (Vec(1.f) + e)).store(out + i);
  }
  for (; i < n; ++i) out[i] = in[i] / (1.f + std::exp(-in[i]));
}

}  // namespace

static at::Tensor make_output(const at::Tensor& like) { return at::empty_like(like); }

torch::Tensor silu(const torch::Tensor& input) {
  TORCH_CHECK(input.scalar_type() == at::kFloat, "silu: float32 only");
  const torch::Tensor x = input.contiguous();
  at::Tensor out = make_output(x);
  silu_span(out.data_ptr<float>(), x.data_ptr<float>(), x.numel());
  return out;
}
```

```python title="torch-ext/silu/__init__.py"
import torch

from ._ops import ops


def silu(x: torch.Tensor) -> torch.Tensor:
    return ops.silu(x)


__all__ = ["silu"]
```
)md";

TEST(KernelLint, SimdVectorMethodsAndStaticTensorFunctionsAreNotFindings) {
  const auto r = lint(kSiluAnswer);
  EXPECT_TRUE(r.report.passed());
  EXPECT_TRUE(r.report.findings.empty())
      << r.report.findings.front().rule << ": " << r.report.findings.front().excerpt;
  // Functions returning tensors or vectors of tensors are not static tensor objects.
  for (const char* function :
       {"static std::vector<at::Tensor> split_rows(const at::Tensor& x, int64_t n);",
        "static const at::Tensor& pick(const at::Tensor& a, const at::Tensor& b);",
        "static inline torch::Tensor\nmake_like(const torch::Tensor& x);",
        "static std::map<int64_t, at::Tensor> index_rows(const at::Tensor& x);"}) {
    const auto f = lint(replace(kSiluAnswer, "}  // namespace\n",
                                std::string("}  // namespace\n\n") + function + "\n"));
    EXPECT_FALSE(f.has("output-caching")) << function;
  }
}

TEST(KernelLint, TorchComputeOnTensorsIsStillCaught) {
  const std::string body = "  at::Tensor out = make_output(x);\n";
  for (const char* compute : {
           // a method chain on a parameter or local declared as a tensor
           "  return x.neg().exp().add(1).reciprocal().mul(x);\n",
           "  at::Tensor y = x.sigmoid();\n",
           // a tensor bound with auto, from a tensor or from an ATen call
           "  auto xf = input.to(at::kFloat);\n  return xf * xf.sigmoid();\n",
           "  auto t = at::empty_like(x);\n  t.copy_(x).mul_(2);\n",
           // a method on the result of an ATen call, and the free functions
           "  return at::empty_like(x).copy_(x).exp();\n",
           "  return at::mul(x, at::sigmoid(x));\n",
           "  return torch::softmax(x, -1);\n",
       }) {
    const auto r = lint(replace(kSiluAnswer, body, body + compute));
    ASSERT_TRUE(r.has("torch-op-compute")) << compute;
    EXPECT_TRUE(r.find("torch-op-compute")->error) << compute;
  }
  // Plain `Tensor` after a using-declaration is a tensor too.
  const auto r =
      lint(replace(replace(kSiluAnswer, "namespace {\n", "using at::Tensor;\n\nnamespace {\n"),
                   body, body + "  Tensor y = x;\n  return y.pow(2);\n"));
  EXPECT_TRUE(r.has("torch-op-compute"));
}

// A torch fallback beside a kernel is legitimate (kernels-community's rmsnorm: its own AVX kernels,
// and ATen ops where the CPU has neither, and in its backward); the same ops anywhere else are not.
TEST(KernelLint, TorchFallbackBesideAKernelIsANoteNotARefusal) {
  const std::string call =
      "  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, input.scalar_type(), "
      "\"rmsnorm\", "
      "[&] {\n"
      "    rmsnorm_rows<scalar_t>(out.data_ptr<scalar_t>(), input.data_ptr<scalar_t>(),\n"
      "                           weight.data_ptr<scalar_t>(), rows, cols, eps);\n"
      "  });\n";
  const std::string fallback =
      "    auto x32 = input.to(at::kFloat);\n"
      "    out.copy_(at::mul(weight, at::mul(x32, at::rsqrt(at::add("
      "at::mean(at::pow(x32, 2), -1, true), eps)))));\n";
  const struct {
    std::string replacement;
    bool refused;
  } table[] = {
      // The fallback branch of a dispatch on the CPU's features.
      {"  if (__builtin_cpu_supports(\"avx2\")) {\n" + call + "  } else {\n" + fallback + "  }\n",
       false},
      {"  if (CPUFeatures::hasAVX512BF16()) {\n" + call + "  } else if (cpu_has_avx2()) {\n" +
           call + "  } else {\n" + fallback + "  }\n",
       false},
      // Torch ops in the branch the machine takes, or with no dispatch at all: refused.
      {"  if (__builtin_cpu_supports(\"avx2\")) {\n" + fallback + "  } else {\n" + call + "  }\n",
       true},
      {"  if (rows > 1) {\n" + call + "  } else {\n" + fallback + "  }\n", true},
      {"  {\n" + fallback + "  }\n", true},
      // A negated test (the else is where the machine has the feature), and a feature named
      // elsewhere in the function but not in the chain this else closes.
      {"  if (!__builtin_cpu_supports(\"avx2\")) {\n" + call + "  } else {\n" + fallback + "  }\n",
       true},
      {"  const bool fast = __builtin_cpu_supports(\"avx2\");\n  if (rows > 1) {\n" + call +
           "  } else {\n" + fallback + "  }\n",
       true},
  };
  for (const auto& row : table) {
    const auto r = lint(replace(good_answer(), call, row.replacement));
    ASSERT_TRUE(r.has("torch-op-compute")) << row.replacement;
    EXPECT_EQ(r.report.passed(), !row.refused) << row.replacement;
    if (!row.refused)
      EXPECT_NE(r.find("torch-op-compute")->message.find("fallback branch of rmsnorm"),
                std::string::npos)
          << r.find("torch-op-compute")->message;
  }
  // A backward beside the forward kernel.
  const auto r = lint(replace(good_answer(), "}  // namespace\n",
                              "}  // namespace\n\nvoid rmsnorm_backward(torch::Tensor& grad, const "
                              "torch::Tensor& input, const torch::Tensor& weight, double eps) {\n" +
                                  std::string("  auto g = grad.to(at::kFloat);\n") +
                                  "  grad.copy_(g.pow(2).mean(-1, true));\n}\n"));
  ASSERT_TRUE(r.has("torch-op-compute"));
  EXPECT_TRUE(r.report.passed()) << r.find("torch-op-compute")->message;
  EXPECT_NE(r.find("torch-op-compute")->message.find("rmsnorm_backward, a gradient function"),
            std::string::npos);
  // The forward calling its "backward" to do the work: refused.
  const auto called = lint(replace(
      replace(
          good_answer(), "}  // namespace\n",
          "}  // namespace\n\nvoid rmsnorm_backward(torch::Tensor& out, const torch::Tensor& "
          "input, const torch::Tensor& weight, double eps) {\n  auto g = input.to(at::kFloat);\n"
          "  out.copy_(g.pow(2).mean(-1, true));\n}\n"),
      call, "  rmsnorm_backward(out, input, weight, eps);\n"));
  ASSERT_TRUE(called.has("torch-op-compute"));
  EXPECT_FALSE(called.report.passed());
}

TEST(KernelLint, StaticTensorObjectsAreStillCaught) {
  for (const char* cache : {
           "static at::Tensor cached;",
           "static torch::Tensor cached = torch::empty({0});",
           "static thread_local at::Tensor buffer{};",
           "static const at::Tensor ones = at::ones({1});",
           "static std::vector<at::Tensor> outputs;",
           "static std::unordered_map<int64_t, at::Tensor> by_size;",
           "static std::optional<at::Tensor> last;",
           "static at::Tensor a, b;",
       }) {
    const auto r = lint(replace(kSiluAnswer, "}  // namespace\n",
                                std::string("}  // namespace\n\n") + cache + "\n"));
    ASSERT_TRUE(r.has("output-caching")) << cache;
    EXPECT_FALSE(r.report.passed()) << cache;
  }
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
  // ATen's launchers are a kernel when called as at::native::NAME( or with a lambda after the
  // iterator (kernels-community's rotary has no __global__ of its own); the name in a comment or
  // a string, or a function of the answer's own by that name, is not.
  const struct {
    const char* what;
    std::string cu;
    bool kernel;
  } launchers[] = {
      {"rotary's launcher with a device lambda",
       "void rotary(at::TensorIterator& iter) {\n"
       "  at::native::gpu_kernel_multiple_outputs(iter, [] GPU_LAMBDA (float x1, float x2, "
       "float c, float s) -> thrust::tuple<float, float> {\n"
       "    return {x1 * c - x2 * s, x1 * s + x2 * c};\n  });\n}\n",
       true},
      {"ATen's launcher with a functor",
       "void k(at::TensorIteratorBase& iter) {\n  at::native::gpu_kernel(iter, Functor{});\n}\n",
       true},
      {"the name in a comment and a string",
       "// gpu_kernel(iter, f);\nconst char* s = \"gpu_kernel(\";\nvoid k() {}\n", false},
      {"a function of the answer's own by that name",
       "void gpu_kernel(float* x) { x[0] = 1; }\nvoid k(float* x) { gpu_kernel(x); }\n", false},
  };
  for (const auto& c : launchers) {
    r = lint("```cuda title=\"k.cu\"\n" + c.cu + "```\n", LintProfile::kernelbench, "cuda");
    EXPECT_EQ(r.has("no-kernel"), !c.kernel) << c.what;
  }
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
