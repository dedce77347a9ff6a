// The lint stage: each profile's banned patterns matched on code with comments and string literals
// blanked out (see lint.hpp).
#include "upskill/kernel/lint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "upskill/core/enum_names.hpp"
#include "upskill/core/text.hpp"

namespace upskill::kernel {

namespace {

enum class Lang { cxx, python, other };
enum class Role { binding, kernel, package, other };
enum Profiles : unsigned { kb = 1, te = 2, bench = 4, bypass = kb | te | bench };

struct Rule {
  const char* id;
  unsigned profiles;
  Lang lang;
  bool keep_strings;  // match on code with string literals kept (#include "…")
  bool error;
  const char* pattern;
  const char* message;
  bool kernel_sources_only = false;  // C-like rules that apply to kernel sources, not the binding
  bool tensor_receivers = false;     // the pattern's @TENSOR@ is filled in per file
};

// Per-line rules. A rule reports at most kMaxPerRule lines per file.
const std::vector<Rule>& rules() {
  static const std::vector<Rule> all{
      {"pybind11", kb, Lang::cxx, true, true,
       R"(#\s*include\s*[<"](torch/extension\.h|pybind11/)|\bPYBIND11_MODULE\b|\bpy::)",
       "pybind11 is banned in kernel-builder projects (no torch/extension.h, PYBIND11_MODULE or "
       "py::); include torch/library.h and register ops with TORCH_LIBRARY_EXPAND"},
      {"hardcoded-namespace", kb, Lang::cxx, false, true,
       R"(\bTORCH_LIBRARY(_FRAGMENT|_IMPL)?\s*\()",
       "TORCH_LIBRARY/_FRAGMENT/_IMPL hard-code the op namespace; use "
       "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops)"},
      {"pyinit", kb, Lang::cxx, false, true, R"(\bPyInit_\w*)",
       "a hand-written PyInit_ function; REGISTER_EXTENSION(TORCH_EXTENSION_NAME) creates the "
       "module"},
      {"cpp-extension", kb, Lang::python, false, true,
       R"(\b(load_inline|CUDAExtension|CppExtension|BuildExtension|cpp_extension)\b)",
       "torch.utils.cpp_extension (load_inline, CUDAExtension, setup.py builds) is banned; "
       "kernel-builder builds the extension from build.toml"},
      {"hardcoded-torch-ops", kb, Lang::python, false, true, R"(\btorch\.ops\.\w+)",
       "a hard-coded torch.ops.<namespace>; the namespace changes with every build: use "
       "`from ._ops import ops`"},
      {"runtime-dependency", kb, Lang::python, false, true,
       R"(^\s*(import|from)\s+(numpy|scipy|triton|cupy|numba|pycuda|jax|tensorflow|transformers|diffusers|accelerate|flash_attn|xformers|apex|requests)\b)",
       "a runtime dependency beyond torch and einops"},
      {"environment", bypass, Lang::cxx, false, true, R"(\b(secure_getenv|getenv|environ)\b)",
       "reads environment variables"},
      {"environment", bypass, Lang::python, false, true,
       R"(\bos\.(environ|getenv)\b|\bgetenv\s*\()", "reads environment variables"},
      {"process", bypass, Lang::cxx, false, true,
       R"(\b(fork|vfork|system|popen|execl|execlp|execle|execv|execvp|execve|posix_spawnp?)\s*\()",
       "starts processes"},
      {"process", bypass, Lang::python, false, true,
       R"(\b(subprocess|multiprocessing|os\.system|os\.fork|os\.exec\w*|os\.popen|os\.spawn\w*|pty)\b)",
       "starts processes"},
      {"network", bypass, Lang::cxx, true, true,
       R"(#\s*include\s*<(sys/socket\.h|netinet/|arpa/inet\.h|netdb\.h)|\bsocket\s*\()",
       "opens network sockets"},
      {"network", bypass, Lang::python, false, true,
       R"(\bimport\s+socket\b|\bsocket\.socket\b|\burllib\b|\bhttp\.client\b|\bimport\s+requests\b)",
       "opens network connections"},
      {"threads", bypass, Lang::cxx, false, true,
       R"(\bstd::(thread|jthread|async)\b|\bpthread_create\b)", "starts threads"},
      {"threads", bypass, Lang::python, false, true, R"(\bthreading\b|\bconcurrent\.futures\b)",
       "starts threads"},
      {"timing-tricks", bypass, Lang::cxx, false, true,
       R"(\bcudaStreamCreate\w*\b|\bgetStreamFromPool\b|\bcudaEvent\w+\b|\bcudaDeviceSynchronize\b)",
       "creates streams, events or synchronises itself: work off the current stream hides from "
       "the timer (use at::cuda::getCurrentCUDAStream())"},
      {"timing-tricks", bypass, Lang::python, false, true,
       R"(\btorch\.cuda\.(Stream|Event|synchronize|stream)\b|\btime\.(perf_counter|time|monotonic)\s*=)",
       "touches streams, events or timers: work off the current stream hides from the timer"},
      {"fallback", bypass, Lang::python, false, true, R"(^\s*(try\s*:|except\b))",
       "try/except can fall back to the reference implementation"},
      {"fallback", bypass, Lang::cxx, false, false, R"(\bcatch\s*\()",
       "a catch block can hide a fallback to the reference implementation"},
      {"output-caching", bypass, Lang::cxx, false, true,
       // Objects only (`;`, `=`, `{`, `[` or `,` after the name): `static at::Tensor f(...)` is a
       // function.
       R"(\bstatic\s+((thread_local|inline|const)\s+)*((torch|at)::Tensor|std::(unordered_)?map\s*<[^;(){}]*>|)"
       R"(std::vector\s*<\s*(torch|at)::Tensor\s*>|(std|c10)::optional\s*<\s*(torch|at)::Tensor\s*>))"
       R"(\s*[&*]?\s*\w+\s*(;|=|\{|\[|,))",
       "keeps tensors in a static: outputs can be replayed instead of computed"},
      {"output-caching", bypass, Lang::python, false, true,
       R"(@\s*(functools\.)?(lru_cache|cache)\b|^\s*_cache\w*\s*=\s*\{)",
       "caches results: outputs can be replayed instead of computed"},
      {"tensor-subclass", bypass, Lang::python, false, true,
       R"(class\s+\w+\s*\(\s*torch\.Tensor\s*\))",
       "subclasses torch.Tensor (comparisons and timing can be faked)"},
      {"torch-op-compute", bypass, Lang::cxx, false, true,
       // Free functions, and methods called on a tensor: @TENSOR@ stands for what the file makes
       // a tensor (tensor_names), so a SIMD vector's a0.neg().exp() is not a finding.
       R"(\b(at|torch)::(matmul|mm|bmm|addmm|baddbmm|einsum|softmax|log_softmax|layer_norm|native_layer_norm|rms_norm|group_norm|batch_norm|gelu|silu|relu|sigmoid|tanh|conv\w*|linear|sum|mean|var|std|exp|pow|rsqrt|sqrt|norm|scaled_dot_product_attention|cumsum|mul|add|div|sub|where|clamp|erf)\s*\(|)"
       R"((@TENSOR@)(\s*\.\s*\w+\s*(<[^<>()]*>)?\s*\([^()]*\))*\s*\.\s*(matmul|mm|bmm|addmm|softmax|log_softmax|layer_norm|pow|rsqrt|sqrt|mean|sum|var|exp|log|norm|gelu|silu|relu|sigmoid|tanh|erf|neg|abs|square|clamp|amax|mul|add|div|sub)_?\s*\()",
       "computes with a PyTorch op instead of the kernel", true, true},
      {"torch-op-compute", bypass, Lang::python, false, false,
       R"(\bF\.\w+\s*\(|\btorch\.nn\.functional\.|\btorch\.(matmul|mm|bmm|einsum|softmax|layer_norm|rms_norm|rsqrt|mean|sum|exp|pow|tanh|erf)\s*\()",
       "computes with PyTorch ops in Python; the kernel should do the work"},
  };
  return all;
}

// What a C++ file makes a tensor: a call of an at::/torch:: function, or a name the file declares
// with the type at::Tensor / torch::Tensor (or plain Tensor after a using-declaration), as a
// parameter or variable, or binds with `auto` to such an expression. Names are collected per file,
// not per scope: a name declared as a tensor anywhere in the file counts everywhere in it.
std::set<std::string> tensor_names(const std::string& code) {
  static const std::regex using_tensor(
      R"(\busing\s+(namespace\s+(at|torch)\s*;|(at|torch)::Tensor\s*;|Tensor\s*=\s*(at|torch)::Tensor\b))");
  static const std::regex qualified(R"(\b(at|torch)::Tensor\b\s*(const\b\s*)?[&*]*\s*(\w+))");
  static const std::regex plain(R"((^|[^\w:])Tensor\b\s*(const\b\s*)?[&*]*\s*(\w+))");
  static const std::regex bound(R"(\bauto\s*&{0,2}\s*(\w+)\s*=\s*(\w+)\s*(::\s*(\w+)\s*\(|[.\[]))");
  std::set<std::string> names;
  const auto collect = [&](const std::regex& re) {
    for (auto it = std::sregex_iterator(code.begin(), code.end(), re); it != std::sregex_iterator();
         ++it)
      if ((*it)[3] != "const") names.insert((*it)[3]);
  };
  collect(qualified);
  if (std::regex_search(code, using_tensor)) collect(plain);
  // auto y = x.to(at::kFloat); auto z = at::empty_like(x); (until no new name appears)
  for (bool grew = true; grew;) {
    grew = false;
    for (auto it = std::sregex_iterator(code.begin(), code.end(), bound);
         it != std::sregex_iterator(); ++it) {
      const std::string root = (*it)[2];
      const bool tensor = (*it)[4].matched ? (root == "at" || root == "torch")
                                           : names.contains(root) && !(*it)[3].str().empty();
      if (tensor && names.insert((*it)[1]).second) grew = true;
    }
  }
  return names;
}

// A rule's pattern with @TENSOR@ replaced by what is a tensor in the file: at::/torch:: calls and
// the given names (not as members: `v.x.exp()` is not `x.exp()`).
std::string with_tensor_receivers(std::string_view pattern, const std::set<std::string>& names) {
  std::string receiver = R"(\b(?:at|torch)::\w+\s*\([^()]*\))";
  if (!names.empty())
    receiver += R"(|(?:^|[^\w.:>])(?:)" + text::join({names.begin(), names.end()}, "|") + R"()\b)";
  std::string out(pattern);
  const std::string placeholder = "@TENSOR@";
  out.replace(out.find(placeholder), placeholder.size(), receiver);
  return out;
}

// The rules' patterns, compiled once per process (linting runs once per answer in an eval).
const std::vector<std::regex>& compiled_rules() {
  static const std::vector<std::regex> compiled = [] {
    std::vector<std::regex> out;
    for (const auto& rule : rules())
      out.emplace_back(rule.tensor_receivers ? with_tensor_receivers(rule.pattern, {})
                                             : std::string(rule.pattern));
    return out;
  }();
  return compiled;
}

constexpr int kMaxPerRule = 5;

// The early-2026 build.toml form allows any project name; it must match literally.
std::string regex_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view(R"(\^$.|?*+()[]{})").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

Lang language_of(std::string_view path) {
  static const std::set<std::string> cxx{".cu", ".cuh", ".cpp", ".cc",  ".cxx", ".c",
                                         ".h",  ".hpp", ".hh",  ".hxx", ".inl"};
  const auto dot = path.rfind('.');
  const std::string ext = dot == std::string_view::npos ? "" : std::string(path.substr(dot));
  if (cxx.contains(ext)) return Lang::cxx;
  if (ext == ".py" || ext == ".pyi") return Lang::python;
  return Lang::other;
}

std::string basename(std::string_view path) {
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

unsigned mask_of(LintProfile p) {
  switch (p) {
    case LintProfile::kernel_builder:
      return kb;
    case LintProfile::torch_extension:
      return te;
    case LintProfile::kernelbench:
      return bench;
    case LintProfile::none:
      return 0;
  }
  return 0;
}

}  // namespace

namespace {
constexpr enum_names::Table<LintProfile, 4> kProfiles{
    {{LintProfile::kernel_builder, "kernel-builder"},
     {LintProfile::torch_extension, "torch-extension"},
     {LintProfile::kernelbench, "kernelbench"},
     {LintProfile::none, "none"}}};
}  // namespace

std::optional<LintProfile> lint_profile_from_string(std::string_view name) {
  return enum_names::parse(kProfiles, name);
}

std::string_view to_string(LintProfile profile) {
  return enum_names::name(kProfiles, profile, "none");
}

bool LintReport::passed() const {
  return std::none_of(findings.begin(), findings.end(), [](const auto& f) { return f.error; });
}

std::string blank_comments_and_strings(std::string_view code, bool python, bool keep_strings) {
  std::string out(code);
  const auto blank = [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to && k < out.size(); ++k)
      if (out[k] != '\n') out[k] = ' ';
  };
  std::size_t i = 0;
  const std::size_t n = code.size();
  while (i < n) {
    const char c = code[i];
    if (!python && c == '/' && i + 1 < n && code[i + 1] == '/') {
      const auto end = code.find('\n', i);
      const std::size_t stop = end == std::string_view::npos ? n : end;
      blank(i, stop);
      i = stop;
    } else if (!python && c == '/' && i + 1 < n && code[i + 1] == '*') {
      const auto end = code.find("*/", i + 2);
      const std::size_t stop = end == std::string_view::npos ? n : end + 2;
      blank(i, stop);
      i = stop;
    } else if (python && c == '#') {
      const auto end = code.find('\n', i);
      const std::size_t stop = end == std::string_view::npos ? n : end;
      blank(i, stop);
      i = stop;
    } else if (c == '"' || c == '\'') {
      std::size_t stop;
      std::size_t quote = 1;
      if (python && code.substr(i, 3) == std::string(3, c)) {
        const auto end = code.find(std::string(3, c), i + 3);
        stop = end == std::string_view::npos ? n : end + 3;
        quote = 3;
      } else {
        stop = i + 1;
        while (stop < n && code[stop] != c && code[stop] != '\n') {
          if (code[stop] == '\\') ++stop;
          ++stop;
        }
        if (stop < n && code[stop] == c) ++stop;
      }
      if (!keep_strings && stop - i > 2 * quote) blank(i + quote, stop - quote);
      i = stop;
    } else {
      ++i;
    }
  }
  return out;
}

namespace {

// What a file is to the project: the torch binding, kernel code, the Python package, or other
// (tests, benchmarks, examples: not what ships).
class FileRoles {
 public:
  explicit FileRoles(const LayoutReport& layout)
      : root_(layout.root.empty() ? "" : layout.root + "/") {
    for (const auto& s : layout.torch_sources) binding_.insert(root_ + s);
    for (const auto& k : layout.kernels)
      for (const auto& s : k.sources) kernel_sources_.insert(root_ + s);
  }
  bool has_binding() const { return !binding_.empty(); }
  Role of(const ExtractedFile& f, Lang lang) const {
    if (binding_.contains(f.path)) return Role::binding;
    if (lang == Lang::python && f.path.starts_with(root_ + "torch-ext/")) return Role::package;
    if (kernel_sources_.contains(f.path)) return Role::kernel;
    if (lang == Lang::cxx && binding_.empty() && kernel_sources_.empty()) {
      // No build.toml: the binding is whatever registers ops; everything else is kernel code.
      const bool registers = f.content.find("TORCH_LIBRARY") != std::string::npos ||
                             f.content.find("PYBIND11_MODULE") != std::string::npos;
      return registers ? Role::binding : Role::kernel;
    }
    if (lang == Lang::cxx && f.path.starts_with(root_ + "torch-ext/")) return Role::binding;
    return Role::other;
  }

 private:
  std::string root_;
  std::set<std::string> binding_, kernel_sources_;
};

// What the whole project must have, seen file by file: a kernel, and the registration calls.
struct ProjectSigns {
  bool any_global = false, any_kernel_source = false, registers = false, registers_ext = false;
};

// The position of the bracket that opens the one closing at `close` (`}` or `)`), scanning back;
// npos when there is none.
std::size_t matching_open(const std::string& code, std::size_t close) {
  const char closing = code[close], opening = closing == '}' ? '{' : '(';
  int depth = 0;
  for (std::size_t i = close + 1; i-- > 0;) {
    if (code[i] == closing) ++depth;
    if (code[i] == opening && --depth == 0) return i;
  }
  return std::string::npos;
}

// The conditions of the if-chain whose `else` ends just before `end` (`if (A) {…} else if (B)
// {…} else`): A and B. Empty when what precedes is not such a chain.
std::vector<std::string> chain_conditions(const std::string& code, std::size_t end) {
  std::vector<std::string> out;
  const auto skip_back = [&](std::size_t at) {
    while (at > 0 && std::isspace(static_cast<unsigned char>(code[at - 1]))) --at;
    return at;
  };
  for (std::size_t at = end - 4;;) {  // `at`: where this `else` starts
    std::size_t close = skip_back(at);
    if (close == 0 || code[close - 1] != '}') return out;
    const std::size_t brace = matching_open(code, close - 1);
    if (brace == std::string::npos) return out;
    const std::size_t paren_end = skip_back(brace);
    if (paren_end == 0 || code[paren_end - 1] != ')') return out;
    const std::size_t paren = matching_open(code, paren_end - 1);
    if (paren == std::string::npos) return out;
    const std::size_t keyword = skip_back(paren);
    if (keyword < 2 || code.compare(keyword - 2, 2, "if") != 0) return out;
    out.push_back(code.substr(paren + 1, paren_end - 1 - paren - 1));
    const std::size_t before_if = skip_back(keyword - 2);
    if (before_if < 4 || code.compare(before_if - 4, 4, "else") != 0) return out;
    at = before_if - 4;
  }
}

// Where torch ops beside a kernel are legitimate, by the context of a line (offset `at` in the
// blanked code): in the `else` branch of a dispatch on the CPU's features — a condition of its
// if-chain tests a feature, not negated — which runs only where the kernels the other branches
// call cannot (kernels-community's rmsnorm falls back to at::mean(at::pow(...)) without AVX2);
// or in a function whose name says it computes gradients and that nothing in its file calls (the
// spec times and checks the forward op). Empty when neither: the finding stands.
std::string torch_fallback_context(const std::string& code, std::size_t at) {
  std::vector<std::size_t> open;  // positions of the unclosed '{' before `at`
  for (std::size_t i = 0; i < at && i < code.size(); ++i) {
    if (code[i] == '{') open.push_back(i);
    if (code[i] == '}' && !open.empty()) open.pop_back();
  }
  // What precedes a '{', spaces skipped: "else", or a ")" ending a function's parameter list.
  const auto before = [&](std::size_t brace) {
    std::size_t end = brace;
    while (end > 0 && std::isspace(static_cast<unsigned char>(code[end - 1]))) --end;
    return end;
  };
  // The function: the outermost block opened right after a parameter list (qualifiers allowed).
  static const std::regex header(R"((\w+)\s*\([^(){};]*\)\s*(const|noexcept|override|final|\s)*$)");
  std::string function;
  std::size_t body = std::string::npos;
  for (const std::size_t brace : open) {
    const std::size_t end = before(brace);
    const std::string head =
        code.substr(end > 400 ? end - 400 : 0, end - (end > 400 ? end - 400 : 0));
    std::smatch m;
    if (std::regex_search(head, m, header) && m[1] != "if" && m[1] != "for" && m[1] != "while" &&
        m[1] != "switch" && m[1] != "catch") {
      function = m[1];
      body = brace;
      break;
    }
  }
  if (body == std::string::npos) return "";
  static const std::regex gradient(R"(backward|bwd|_grad\b|^grad)", std::regex::icase);
  if (std::regex_search(function, gradient)) {
    const std::regex call("\\b" + function + "\\s*\\(");
    const auto uses =
        std::distance(std::sregex_iterator(code.begin(), code.end(), call), std::sregex_iterator());
    if (uses <= 1) return "in " + function + ", a gradient function";  // its definition only
  }
  static const std::regex feature_check(
      R"((!\s*)?\b((\w+::)*\w*has_?(avx|sse|fma|neon|sve|amx)\w*|__builtin_cpu_supports|cpuinfo_has_\w+|(\w+::)*cpu_supports\w*|(\w+::)*is_cpu_capability\w*|CPUFeatures::\w+|(\w+::)*cpu_capability\w*)\b)",
      std::regex::icase);
  const std::size_t innermost = open.back();
  const std::size_t end = before(innermost);
  if (innermost <= body || end < 4 || code.compare(end - 4, 4, "else") != 0) return "";
  for (const std::string& condition : chain_conditions(code, end))
    for (auto it = std::sregex_iterator(condition.begin(), condition.end(), feature_check);
         it != std::sregex_iterator(); ++it)
      if (!(*it)[1].matched)
        return "in the fallback branch of " + function + "'s dispatch on the CPU's features";
  return "";
}

// The profile's rules over one file's lines (code with comments and strings blanked out, or with
// strings kept where a rule reads them): at most kMaxPerRule findings a rule.
void apply_rules(const ExtractedFile& f, Lang lang, Role role, unsigned mask,
                 const std::string& code, const std::string& with_strings, LintReport& report) {
  const auto code_lines = text::split_lines(code);
  const auto string_lines = text::split_lines(with_strings);
  const auto original_lines = text::split_lines(f.content);
  for (std::size_t r = 0; r < rules().size(); ++r) {
    const Rule& rule = rules()[r];
    if (!(rule.profiles & mask) || rule.lang != lang) continue;
    if (rule.kernel_sources_only && role != Role::kernel) continue;
    std::optional<std::regex> per_file;
    if (rule.tensor_receivers) {
      const std::set<std::string> names = tensor_names(code);
      if (!names.empty()) per_file.emplace(with_tensor_receivers(rule.pattern, names));
    }
    const std::regex& re = per_file ? *per_file : compiled_rules()[r];
    const auto& lines = rule.keep_strings ? string_lines : code_lines;
    int reported = 0;
    std::size_t offset = 0;  // of line `ln` in the code
    const auto next_line = [&] {
      const std::size_t nl = code.find('\n', offset);
      offset = nl == std::string::npos ? code.size() : nl + 1;
    };
    for (std::size_t ln = 0; ln < lines.size() && reported < kMaxPerRule; next_line(), ++ln) {
      if (!std::regex_search(lines[ln], re)) continue;
      std::string excerpt =
          ln < original_lines.size() ? text::excerpt(text::trim(original_lines[ln]), 120) : "";
      const std::string fallback =
          rule.id == std::string_view("torch-op-compute") && lang == Lang::cxx
              ? torch_fallback_context(code, offset)
              : "";
      if (!fallback.empty())
        report.findings.push_back(
            {rule.id, false, f.path, static_cast<int>(ln + 1),
             "computes with a PyTorch op " + fallback + ": allowed beside the kernel",
             std::move(excerpt)});
      else
        report.findings.push_back({rule.id, rule.error, f.path, static_cast<int>(ln + 1),
                                   rule.message, std::move(excerpt)});
      ++reported;
    }
  }
}

// One file linted: its rules, kernel-builder's file-level findings, and what it shows of the
// project's signs.
void lint_file(const ExtractedFile& f, Lang lang, Role role, unsigned mask,
               const LayoutReport& layout, const std::optional<std::regex>& self_import,
               LintReport& report, ProjectSigns& signs) {
  static const std::regex global(R"(\b__global__\b)");
  // ATen's elementwise launchers take a device lambda and launch their own __global__ kernel
  // (rotary's kernel is gpu_kernel_multiple_outputs): a kernel too — called as at::native::NAME(,
  // or with a lambda after the iterator; a function of the answer's own by that name is not.
  static const std::regex aten_launcher = [] {
    const std::string names =
        "gpu_kernel|gpu_kernel_multiple_outputs|gpu_kernel_with_scalars|gpu_kernel_nocast|"
        "opmath_gpu_kernel_with_scalars|opmath_symmetric_gpu_kernel_with_scalars|"
        "launch_vectorized_kernel|launch_legacy_kernel";
    return std::regex(R"((\bat::native::()" + names + R"()\s*(<[^;{}]*>)?\s*\()|(\b()" + names +
                      R"()\s*(<[^;{}]*>)?\s*\(\s*\w+\s*,\s*\[))");
  }();
  static const std::regex library_expand(R"(\bTORCH_LIBRARY_EXPAND\s*\(\s*TORCH_EXTENSION_NAME\b)");
  static const std::regex register_extension(
      R"(\bREGISTER_EXTENSION\s*\(\s*TORCH_EXTENSION_NAME\s*\))");
  if ((mask & kb) && basename(f.path) == "setup.py")
    report.findings.push_back({"cpp-extension", true, f.path, 0,
                               "a hand-written setup.py; kernel-builder builds from build.toml",
                               ""});
  // Tests, benchmarks and examples are not the extension: lint what ships.
  if (role == Role::other && lang == Lang::python) return;
  const std::string code = blank_comments_and_strings(f.content, lang == Lang::python, false);
  const std::string with_strings =
      blank_comments_and_strings(f.content, lang == Lang::python, true);
  if (lang == Lang::cxx) {
    signs.any_global = signs.any_global || std::regex_search(code, global) ||
                       std::regex_search(code, aten_launcher);
    signs.any_kernel_source = signs.any_kernel_source || role == Role::kernel;
    signs.registers = signs.registers || std::regex_search(code, library_expand);
    signs.registers_ext = signs.registers_ext || std::regex_search(code, register_extension);
  }
  apply_rules(f, lang, role, mask, code, with_strings, report);
  if ((mask & kb) && lang == Lang::python && role == Role::package && self_import) {
    const auto code_lines = text::split_lines(code);
    const auto original_lines = text::split_lines(f.content);
    for (std::size_t ln = 0; ln < code_lines.size(); ++ln)
      if (std::regex_search(code_lines[ln], *self_import))
        report.findings.push_back({"absolute-self-import", true, f.path, static_cast<int>(ln + 1),
                                   fmt::format("an absolute import of the package itself ('{}'); "
                                               "use relative imports (from ._ops import ops)",
                                               layout.python_name),
                                   text::excerpt(text::trim(original_lines[ln]), 120)});
  }
  if ((mask & kb) && basename(f.path) == "registration.h")
    report.findings.push_back(
        {"registration-header", false, f.path, 0,
         "kernel-builder generates registration.h; the project's own copy is replaced", ""});
}

// What only the whole project shows: no kernel at all, a binding that never registers.
void project_findings(const ProjectSigns& signs, unsigned mask, bool has_binding,
                      std::string_view backend, LintReport& report) {
  if (backend == "cuda" && !signs.any_global)
    report.findings.push_back({"no-kernel", true, "", 0,
                               "no __global__ function (or ATen kernel launcher such as "
                               "gpu_kernel) anywhere: the computation is not a CUDA kernel",
                               ""});
  if (backend == "cpu" && !signs.any_kernel_source)
    report.findings.push_back(
        {"no-kernel", true, "", 0, "no kernel source besides the binding", ""});
  if (!(mask & kb) || !has_binding) return;
  if (!signs.registers)
    report.findings.push_back({"missing-registration", true, "", 0,
                               "the torch binding never calls "
                               "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops)",
                               ""});
  if (!signs.registers_ext)
    report.findings.push_back({"missing-registration", true, "", 0,
                               "the torch binding never calls "
                               "REGISTER_EXTENSION(TORCH_EXTENSION_NAME)",
                               ""});
}

}  // namespace

LintReport lint_project(const Extraction& project, const LayoutReport& layout, LintProfile profile,
                        std::string_view backend) {
  LintReport report;
  report.profile = profile;
  const unsigned mask = mask_of(profile);
  if (!mask) return report;
  const FileRoles roles(layout);
  const std::optional<std::regex> self_import =
      layout.python_name.empty()
          ? std::nullopt
          : std::optional<std::regex>(R"(^\s*(from|import)\s+)" + regex_escape(layout.python_name) +
                                      R"(\b)");
  ProjectSigns signs;
  for (const auto& f : project.files) {
    const Lang lang = language_of(f.path);
    if (lang == Lang::other) continue;
    lint_file(f, lang, roles.of(f, lang), mask, layout, self_import, report, signs);
  }
  project_findings(signs, mask, roles.has_binding(), backend, report);
  return report;
}

}  // namespace upskill::kernel
