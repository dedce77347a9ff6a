#pragma once
// Test cases in upskill's JSON format plus our additions (id, mode, threshold, checks).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "upskill/cases/check_spec.hpp"
#include "upskill/cases/verifier.hpp"
#include "upskill/core/json.hpp"

namespace upskill::cases {

// How a case is answered (docs/test-cases.md): one chat answer, or a tool loop in a workspace.
enum class Mode { chat, agent };
std::string_view to_string(Mode mode);
std::optional<Mode> mode_from_string(std::string_view name);
const std::vector<std::string>& mode_names();

struct TestCase {
  std::string id;             // stable: given, or derived from the input
  bool id_generated = false;  // true when derived (and so not written back)
  std::string input;
  // upskill's context.files: file name -> content, appended to the prompt in this order.
  std::vector<std::pair<std::string, std::string>> context_files;
  bool has_context = false;  // "context" key present (kept for round-trip)
  // upskill's expected.contains (all must appear, case-insensitive).
  std::vector<std::string> expected_contains;
  bool has_expected = false;
  bool expected_contains_was_string = false;  // written back in the same shape
  // upskill's verifiers, as written (each one assertion).
  std::vector<Verifier> verifiers;
  bool has_verifiers = false;
  std::optional<std::string> output_file;
  std::optional<std::string> validator;
  std::optional<ScalarMap> validator_config;
  std::optional<Mode> mode;         // chat (default) or agent
  std::optional<double> threshold;  // weighted score needed to pass, 0..1
  std::vector<Check> checks;

  // The checks this case runs, in upskill's order: expected.contains as one check (every string,
  // ignoring case), the verifiers, the validator (reading output_file when one is named), then
  // our checks.
  std::vector<Check> effective_checks() const;
  // Whether a verifier needs the files the student leaves (file_exists, file_contains, command,
  // a validator with a path): upskill's student always works in a workspace, so such a case runs
  // in agent mode unless it names a mode.
  bool verifiers_need_workspace() const;
};

bool operator==(const TestCase& a, const TestCase& b);

// The id derived from an input: a slug of its first words plus 8 hex digits of its SHA-256.
std::string derive_case_id(std::string_view input);

// The keys a case object may have.
const std::vector<std::string>& test_case_keys();

struct CaseListResult {
  std::vector<TestCase> cases;
  std::vector<std::string> warnings;  // e.g. a case without any check
};

// Parses the JSON array at `pointer` of `doc` as test cases. Errors name file:line:col and the
// case. A case with no check at all is refused, as upstream upskill refuses it when loading —
// unless `allow_checkless` (a batch's own plan, written by an older version): then it is a warning.
Result<CaseListResult> parse_case_array(const JsonDocument& doc, const std::string& pointer,
                                        bool allow_checkless = false);

Json case_to_json(const TestCase& c);
Json cases_to_json(const std::vector<TestCase>& cases);

// The case with this id, or nullptr.
const TestCase* find_case(const std::vector<TestCase>& cases, std::string_view id);

}  // namespace upskill::cases
