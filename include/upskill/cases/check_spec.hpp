#pragma once
// The check kinds (docs/test-cases.md) as data: what a test case asks of an answer. This module
// defines and validates them; the checks and kernel modules execute them.
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "upskill/core/json.hpp"
#include "upskill/core/json_fields.hpp"

namespace upskill::cases {

enum class CheckKind {
  contains,       // value appears, case-sensitive
  icontains,      // value appears, case-insensitive (upskill's expected.contains)
  contains_all,   // every one of values appears (case-insensitive)
  contains_any,   // at least one of values appears (case-insensitive)
  not_contains,   // value does not appear (case-insensitive)
  regex,          // ECMAScript pattern matches somewhere
  equals,         // whole answer equals value
  is_json,        // answer parses as JSON
  json_path,      // value at a path of the JSON answer exists / equals
  file_exists,    // workspace file exists
  file_contains,  // workspace file contains value
  command,        // command in the sandboxed workspace exits as expected
  validator,      // named built-in validator
  kernel,         // build, bind, check and time a kernel project
  judge,          // a judge model scores the answer against criteria
  unsupported,    // a verifier of a type this version cannot run: an error when run, never a pass
};

std::string_view to_string(CheckKind kind);
std::optional<CheckKind> check_kind_from_string(std::string_view name);
const std::vector<std::string>& check_kind_names();

// Pipeline stages of the kernel check, in execution order.
enum class KernelStage { extract, layout, lint, compile, bind, correct, bench };
std::string_view to_string(KernelStage stage);
std::optional<KernelStage> kernel_stage_from_string(std::string_view name);

struct TextMatchParams {  // contains, icontains, not_contains (one value); contains_all/any
                          // (values)
  std::vector<std::string> values;
};
struct RegexParams {
  std::string pattern;
  std::string flags;  // subset of "im"
};
struct EqualsParams {
  std::string value;
  bool trim = true;
  bool ignore_case = false;
};
struct IsJsonParams {};
struct JsonPathParams {
  std::string path;            // JSONPath subset ($.a[0].b) or JSON pointer (/a/0/b)
  std::optional<Json> equals;  // absent: the path must exist
};
struct FileExistsParams {
  std::string path;  // relative to the workspace, never escaping it
};
struct FileContainsParams {
  std::string path;
  std::vector<std::string> values;  // every one must appear
  bool ignore_case = false;
};
struct CommandParams {
  std::string run;
  int expect_exit = 0;
  double timeout_s = 60;
};
using ScalarMap = Json;  // object of string/number/boolean values (upskill's validator_config)
struct ValidatorParams {
  std::string name;
  ScalarMap config = Json::object();
  // A workspace file the validator reads instead of the answer (upskill's output_file).
  std::optional<std::string> file;
};
struct KernelParams {
  std::vector<KernelStage> stages;        // in pipeline order, starting with extract
  std::string backend = "cuda";           // cuda | cpu
  std::vector<std::string> capabilities;  // e.g. "9.0", "8.0"; empty: the pipeline's default
  std::string lint = "kernel-builder";    // kernel-builder | torch-extension | kernelbench | none
  std::optional<std::string> spec;        // op test spec (Python), relative to the test file
  std::optional<std::string> project;     // expected [general] name in build.toml
  std::optional<double> min_speedup;      // bench gate against the PyTorch reference
  std::optional<double> timeout_s;
};

// A judged check (docs/judge.md): judge models score the answer against criteria on a 0..scale
// scale; the check passes when the judges' mean score reaches threshold × scale.
struct JudgeParams {
  std::vector<std::string> criteria;  // each one a line of the rubric
  std::vector<std::string> models;    // empty: the configured judge model
  double scale = 10;                  // the highest score
  double threshold = 0.7;             // share of the scale the mean score must reach
  bool criteria_was_string = false;   // written back in the same shape
};
// What a verifier of an unknown type (or missing its keys) becomes: it loads, as upskill's does,
// and is an error when it runs.
struct UnsupportedParams {
  std::string message;
};

using CheckParams =
    std::variant<TextMatchParams, RegexParams, EqualsParams, IsJsonParams, JsonPathParams,
                 FileExistsParams, FileContainsParams, CommandParams, ValidatorParams, KernelParams,
                 JudgeParams, UnsupportedParams>;

struct Check {
  CheckKind kind = CheckKind::icontains;
  CheckParams params;
  double weight = 1.0;
  std::string label;  // optional human name shown in reports
};

bool operator==(const Check& a, const Check& b);

// Where a check is being read from, for messages: the document, the JSON pointer of the check
// object and a prefix such as "case 2 ('rmsnorm-cpu')".
struct CheckSource {
  const JsonDocument& doc;
  std::string pointer;
  std::string context;
};

Result<Check> parse_check(const CheckSource& source);
// An optional object of string/number/boolean values at `key` (an empty object when absent).
Result<ScalarMap> parse_scalar_map(const JsonObjectReader& r, std::string_view key);
Json check_to_json(const Check& check);

// Validates a workspace-relative path: not empty, not absolute, no ".." component.
std::optional<std::string> workspace_path_problem(std::string_view path);

}  // namespace upskill::cases
