// The layout stage: build.toml checked against kernel-builder's schema, and the files, binding and
// package it names looked for (see layout.hpp).
#include "upskill/kernel/layout.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <regex>
#include <set>

#include "upskill/core/text.hpp"

namespace upskill::kernel {

namespace {

const std::vector<std::string> kBackends{"cpu", "cuda", "metal",  "rocm",
                                         "xpu", "cann", "neuron", "tpu"};
const std::vector<std::string> kPythonDepends{"einops", "helion", "nvidia-cutlass-dsl"};

int line_of(const toml::node* node) {
  return node ? static_cast<int>(node->source().begin.line) : 0;
}

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

class Checker {
 public:
  LayoutReport& report;
  const Extraction& project;
  bool current = true;  // edition 5 rules (deny unknown fields, name regex, required license)

  // Whether the answer has `rel`, relative to the project's root (build.toml's folder).
  bool file_exists(const std::string& rel) const {
    return std::any_of(project.files.begin(), project.files.end(),
                       [&](const ExtractedFile& f) { return f.path == report.root + rel; });
  }

  void error(const toml::node* at, std::string message) {
    report.findings.push_back({true, line_of(at), std::move(message)});
  }
  void warn(const toml::node* at, std::string message) {
    report.findings.push_back({false, line_of(at), std::move(message)});
  }

  void unknown_keys(const toml::table& table, const std::string& where,
                    const std::vector<std::string>& allowed) {
    for (const auto& [key, value] : table) {
      const std::string k(key.str());
      if (contains(allowed, k)) continue;
      const std::string message =
          fmt::format("[{}] has no key '{}' (allowed: {})", where, k, text::join(allowed, ", "));
      if (current)
        error(&value, message + "; kernel-builder rejects unknown keys");
      else
        warn(&value, message);
    }
  }

  std::vector<std::string> strings(const toml::table& table, const char* key,
                                   const std::string& where, bool required) {
    std::vector<std::string> out;
    const toml::node* node = table.get(key);
    if (!node) {
      if (required) error(&table, fmt::format("[{}] needs '{}'", where, key));
      return out;
    }
    const toml::array* array = node->as_array();
    if (!array) {
      error(node, fmt::format("[{}] {} must be a list of strings", where, key));
      return out;
    }
    for (const auto& item : *array) {
      if (auto s = item.value<std::string>())
        out.push_back(*s);
      else
        error(&item, fmt::format("[{}] {} must be a list of strings", where, key));
    }
    return out;
  }
};

}  // namespace

namespace {

// Switches for g++ (and, through -Xcompiler=, nvcc's host compiler) that only change how code is
// generated: optimisation, debug info, defines, warnings, the language standard, the target's ISA
// extensions and code-generation -f switches. Absent on purpose: anything that names a file to read
// or write (-o, -include, @file, -specs=, -fplugin=, -fprofile-use=, -fdump-*, -save-temps), a
// program to run (-B, -wrapper, -fuse-ld=) or a search path (-I, -L, --sysroot).
bool host_flag_allowed(std::string_view flag) {
  static const std::regex allowed(
      R"(-O([0-3sgz]|fast)?|-g[0-3]?|-D[A-Za-z_]\w*(=[\w.+-]*)?|-U[A-Za-z_]\w*|)"
      R"(-std=(c|gnu)\+\+(14|17|20|1z|2a)|-W[a-z][a-z0-9=-]*|-w|)"
      // x86 ISA extensions (-mavx512bf16, -mamx-tile, -msse4.2, -mno-avx512f, ...) and the target
      R"(-m(no-)?(avx[\w.-]*|sse[\w.]*|ssse3|f16c|fma4?|bmi2?|amx-[a-z0-9-]+|popcnt|lzcnt|movbe|)"
      R"(aes|pclmul|sha|adx|gfni|vaes|vpclmulqdq|prfchw|rdrnd|rdseed|xsave\w*|vzeroupper)|)"
      R"(-m(arch|tune|cpu)=[A-Za-z0-9][\w.+-]*|-mprefer-vector-width=(128|256|512|none)|)"
      R"(-mfpmath=(sse|387|both)|-m64|)"
      R"(-f(no-)?(fast-math|strict-aliasing|unroll-loops|unroll-all-loops|peel-loops|openmp|)"
      R"(openmp-simd|finite-math-only|math-errno|trapping-math|signed-zeros|associative-math|)"
      R"(reciprocal-math|unsafe-math-optimizations|tree-vectorize|tree-loop-vectorize|)"
      R"(tree-slp-vectorize|omit-frame-pointer|inline-functions|inline-small-functions|PIC|pic|)"
      R"(prefetch-loop-arrays|ipa-pta|wrapv|plt|semantic-interposition|exceptions|rtti|)"
      R"(visibility-inlines-hidden|strict-overflow)|)"
      R"(-ffp-contract=(fast|on|off)|-fexcess-precision=(fast|standard)|)"
      R"(-fvect-cost-model=(unlimited|dynamic|cheap|very-cheap)|-fvisibility=(default|hidden))");
  return std::regex_match(flag.begin(), flag.end(), allowed);
}

// ptxas options nvcc passes on with -Xptxas=: reports, optimisation and register limits, never
// -o / --output-file.
bool ptxas_flag_allowed(std::string_view flag) {
  static const std::regex allowed(
      R"(-v|--verbose|-O[0-3]|--warn-on-spills|-warn-spills|--warn-on-local-memory-usage|)"
      R"(-warn-lmem-usage|--allow-expensive-optimizations=(true|false)|-dlcm=(ca|cg|cs)|)"
      R"(--def-load-cache=(ca|cg|cs|lu|cv)|--maxrregcount=\d+|-maxrregcount=\d+)");
  return std::regex_match(flag.begin(), flag.end(), allowed);
}

// A comma-separated list passed on to another tool (-Xcompiler=a,b): every item must pass.
bool all_items(std::string_view list, bool (*item_allowed)(std::string_view)) {
  while (true) {
    const auto comma = list.find(',');
    if (!item_allowed(list.substr(0, comma))) return false;
    if (comma == std::string_view::npos) return true;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

bool build_flag_allowed(std::string_view flag) {
  static const std::regex nvcc(
      R"(-?-use_fast_math|--expt-relaxed-constexpr|--expt-extended-lambda|-lineinfo|)"
      R"(--(ftz|prec-div|prec-sqrt|fmad)=(true|false)|--threads=\d+|--maxrregcount=\d+|)"
      R"(-maxrregcount=\d+|--extra-device-vectorization)");
  if (std::regex_match(flag.begin(), flag.end(), nvcc)) return true;
  for (const std::string_view prefix : {"-Xptxas=", "--ptxas-options="})
    if (flag.starts_with(prefix)) return all_items(flag.substr(prefix.size()), ptxas_flag_allowed);
  for (const std::string_view prefix : {"-Xcompiler=", "--compiler-options="})
    if (flag.starts_with(prefix)) return all_items(flag.substr(prefix.size()), host_flag_allowed);
  return host_flag_allowed(flag);
}

const std::vector<std::string>& builder_cuda_capabilities() {
  static const std::vector<std::string> caps{"7.0", "7.2", "7.5",  "8.0",  "8.6",  "8.7",
                                             "8.9", "9.0", "10.0", "10.1", "11.0", "12.0"};
  return caps;
}

bool LayoutReport::passed() const {
  return std::none_of(findings.begin(), findings.end(),
                      [](const LayoutFinding& f) { return f.error; });
}

namespace {

// The shallowest build.toml; its folder is the project's root. Nullptr (with a finding) when none.
const ExtractedFile* find_build_toml(const Extraction& project, LayoutReport& report) {
  std::vector<const ExtractedFile*> tomls;
  for (const auto& f : project.files)
    if (f.path == "build.toml" || f.path.ends_with("/build.toml")) tomls.push_back(&f);
  if (tomls.empty()) {
    report.findings.push_back({true, 0, "no build.toml: a kernel-builder project starts with one"});
    return nullptr;
  }
  std::sort(tomls.begin(), tomls.end(),
            [](auto* a, auto* b) { return a->path.size() < b->path.size(); });
  if (tomls.size() > 1)
    report.findings.push_back(
        {false, 0, fmt::format("{} build.toml files; using {}", tomls.size(), tomls[0]->path)});
  const ExtractedFile& build = *tomls[0];
  report.root = build.path.size() > 10 ? build.path.substr(0, build.path.size() - 10) : "";
  return &build;
}

// [general] edition: 5 (current), 4 (upgraded), absent (the early-2026 form, older rules).
void check_edition(Checker& c, const toml::table& general) {
  LayoutReport& report = c.report;
  const auto edition = general["edition"].value<int64_t>();
  if (!edition) {
    report.edition = "early-2026 (no edition)";
    c.current = false;
    c.warn(
        &general,
        "no 'edition': this is the early-2026 form (build2cmake v3); current kernel-builder needs "
        "edition = 5 (kernel-builder update-build)");
  } else if (*edition == 5 || *edition == 4) {
    report.edition = std::to_string(*edition);
    if (*edition == 4)
      c.warn(general.get("edition"), "edition 4 is upgraded automatically; write edition = 5");
  } else {
    report.edition = std::to_string(*edition);
    c.error(general.get("edition"),
            fmt::format("edition {} is not one kernel-builder knows (use 5)", *edition));
  }
}

void check_general(Checker& c, const toml::table& general) {
  LayoutReport& report = c.report;
  c.unknown_keys(general, "general",
                 c.current
                     ? std::vector<std::string>{"name", "version", "edition", "license", "backends",
                                                "upstream", "source", "python-depends",
                                                "kernel-depends", "hub", "cuda"}
                     : std::vector<std::string>{"name", "universal", "license", "version",
                                                "backends", "python-depends", "hub", "cuda",
                                                "upstream", "source", "kernel-depends"});
  if (auto name = general["name"].value<std::string>()) {
    report.name = *name;
    static const std::regex kName(R"(^[a-z][-a-z0-9]*[a-z0-9]$)");
    if (c.current && !std::regex_match(*name, kName))
      c.error(general.get("name"),
              fmt::format(
                  "name '{}' must match ^[a-z][-a-z0-9]*[a-z0-9]$ (lowercase, digits, '-'; no '_')",
                  *name));
  } else {
    c.error(&general, "[general] needs 'name'");
  }
  report.python_name = report.name;
  std::replace(report.python_name.begin(), report.python_name.end(), '-', '_');
  if (c.current) {
    if (!general["version"].is_integer()) c.error(&general, "[general] needs an integer 'version'");
    if (!general["license"].is_string())
      c.error(&general, "[general] needs 'license' (required in edition 5)");
  }
  report.backends = c.strings(general, "backends", "general", c.current);
  for (const auto& b : report.backends)
    if (!contains(kBackends, b))
      c.error(general.get("backends"), fmt::format("unknown backend '{}'", b));
  for (const auto& dep : c.strings(general, "python-depends", "general", false))
    if (!contains(kPythonDepends, dep))
      c.error(
          general.get("python-depends"),
          fmt::format(
              "python-depends '{}' is not allowed (only einops, helion, nvidia-cutlass-dsl)", dep));
  if (const toml::table* cuda = general["cuda"].as_table()) {
    if (cuda->contains("capabilities"))
      c.error(cuda->get("capabilities"),
              "[general.cuda] has no 'capabilities' key: put cuda-capabilities on each [kernel.*] "
              "table");
  }
}

// [torch]: the binding's sources.
void check_torch(Checker& c, const toml::table& doc) {
  LayoutReport& report = c.report;
  if (const toml::table* torch = doc["torch"].as_table()) {
    c.unknown_keys(*torch, "torch",
                   {"src", "include", "pyext", "minver", "maxver", "stable-abi", "cxx-flags"});
    report.torch_sources = c.strings(*torch, "src", "torch", true);
    const bool has_cpp =
        std::any_of(report.torch_sources.begin(), report.torch_sources.end(),
                    [](const std::string& s) { return s.ends_with(".cpp") || s.ends_with(".cc"); });
    if (!report.torch_sources.empty() && !has_cpp)
      c.error(torch->get("src"), "[torch] src names no .cpp binding source");
    for (const auto& s : report.torch_sources)
      if (!c.file_exists(s))
        c.error(torch->get("src"),
                fmt::format("[torch] src names {}, which the answer does not contain", s));
  } else if (!doc.contains("torch-noarch") && !doc.contains("tvm-ffi")) {
    c.error(&doc, "build.toml needs a [torch] table (the binding sources)");
  }
}

// The keys a [kernel.<id>] table may have, for its backend.
std::vector<std::string> kernel_keys(const Checker& c, const std::string& backend) {
  std::vector<std::string> allowed{"backend", "depends", "src", "include", "cxx-flags"};
  if (backend == "cuda" || backend.empty())
    allowed.insert(allowed.end(), {"cuda-capabilities", "cuda-flags", "cuda-minver"});
  if (backend == "rocm") allowed.insert(allowed.end(), {"rocm-archs", "hip-flags"});
  if (backend == "xpu") allowed.push_back("sycl-flags");
  if (!c.current) allowed.insert(allowed.end(), {"language", "cuda-capabilities", "rocm-archs"});
  return allowed;
}

// One [kernel.<id>] table: its backend, sources, capabilities, include folders and flags.
KernelEntry check_kernel(Checker& c, const std::string& id, const toml::table& k) {
  const std::string where = "kernel." + id;
  KernelEntry entry;
  entry.id = id;
  entry.backend = k["backend"].value_or(std::string());
  if (entry.backend.empty() && c.current) c.error(&k, fmt::format("[{}] needs 'backend'", where));
  if (!entry.backend.empty() && !contains(kBackends, entry.backend))
    c.error(k.get("backend"), fmt::format("[{}] backend '{}' is unknown", where, entry.backend));
  if (!entry.backend.empty() && !c.report.backends.empty() &&
      !contains(c.report.backends, entry.backend))
    c.error(k.get("backend"),
            fmt::format("[{}] backend '{}' is not in [general] backends", where, entry.backend));
  c.unknown_keys(k, where, kernel_keys(c, entry.backend));
  c.strings(k, "depends", where, c.current);
  entry.sources = c.strings(k, "src", where, true);
  for (const auto& s : entry.sources)
    if (!c.file_exists(s))
      c.error(k.get("src"),
              fmt::format("[{}] src names {}, which the answer does not contain", where, s));
  entry.capabilities = c.strings(k, "cuda-capabilities", where, false);
  for (const auto& cap : entry.capabilities)
    if (!contains(builder_cuda_capabilities(), cap))
      c.error(k.get("cuda-capabilities"),
              fmt::format("[{}] cuda-capability '{}' is not one kernel-builder builds (7.0 … 12.0)",
                          where, cap));
  entry.include = c.strings(k, "include", where, false);
  for (const auto& dir : entry.include)
    if (dir.empty() || dir.front() == '/' || dir.find("..") != std::string::npos)
      c.error(k.get("include"),
              fmt::format("[{}] include '{}' must be a folder inside the project", where, dir));
  entry.cxx_flags = c.strings(k, "cxx-flags", where, false);
  entry.cuda_flags = c.strings(k, "cuda-flags", where, false);
  for (const auto* flags : {&entry.cxx_flags, &entry.cuda_flags})
    for (const auto& flag : *flags)
      if (!build_flag_allowed(flag))
        c.error(k.get(flags == &entry.cxx_flags ? "cxx-flags" : "cuda-flags"),
                fmt::format("[{}] flag '{}' is not one upskill passes to a compiler "
                            "(optimisation, -D/-U, -W, -std, fast-math and code-generation "
                            "switches only)",
                            where, flag));
  return entry;
}

// [kernel.<id>]: at least one.
void check_kernels(Checker& c, const toml::table& doc) {
  const toml::table* kernels = doc["kernel"].as_table();
  if (!kernels || kernels->empty()) c.error(&doc, "build.toml declares no [kernel.<name>] table");
  if (!kernels) return;
  for (const auto& [key, node] : *kernels) {
    const std::string id(key.str());
    const toml::table* k = node.as_table();
    if (!k) {
      c.error(&node, fmt::format("[kernel.{}] must be a table", id));
      continue;
    }
    c.report.kernels.push_back(check_kernel(c, id, *k));
  }
}

}  // namespace

LayoutReport check_layout(const Extraction& project) {
  LayoutReport report;
  const ExtractedFile* build = find_build_toml(project, report);
  if (!build) return report;
  toml::table doc;
  try {
    doc = toml::parse(build->content, build->path);
  } catch (const toml::parse_error& e) {
    report.findings.push_back({true, static_cast<int>(e.source().begin.line),
                               fmt::format("build.toml is not valid TOML: {}", e.description())});
    return report;
  }
  Checker c{report, project};
  const toml::table* general = doc["general"].as_table();
  if (!general) {
    c.error(&doc, "build.toml needs a [general] table");
    return report;
  }
  check_edition(c, *general);
  check_general(c, *general);
  check_torch(c, doc);
  check_kernels(c, doc);
  // The Python package: torch-ext/<python_name>/__init__.py
  if (!report.python_name.empty() &&
      !c.file_exists("torch-ext/" + report.python_name + "/__init__.py"))
    report.findings.push_back(
        {true, 0,
         fmt::format(
             "torch-ext/{}/__init__.py is missing (the python package; kernel-builder's layout "
             "check fails without it)",
             report.python_name)});
  return report;
}

}  // namespace upskill::kernel
