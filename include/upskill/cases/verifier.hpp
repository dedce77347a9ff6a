#pragma once
// upskill's `verifiers` (docs/test-cases.md): a case's list of typed checks in the Python upskill's
// shape — contains, file_exists, file_contains, command, validator. Each is kept as written, so a
// file round-trips unchanged, and becomes one of our checks when the case runs. A verifier of a
// type this version does not know loads (as upskill's does) and is an error when it runs.
#include <optional>
#include <string>
#include <vector>

#include "upskill/cases/check_spec.hpp"

namespace upskill::cases {

struct Verifier {
  std::string type;
  std::optional<std::string> name;  // a label; for `validator`, the validator's name
  std::optional<std::vector<std::string>> values;
  bool values_was_string = false;  // written back in the same shape
  std::optional<std::string> path;
  std::optional<std::string> text;
  std::optional<std::string> cmd;
  std::optional<ScalarMap> config;

  // The check this verifier runs as: one assertion, labelled with its name or type.
  Check to_check() const;
};

bool operator==(const Verifier& a, const Verifier& b);

// The keys a verifier object may have.
const std::vector<std::string>& verifier_keys();

Result<Verifier> parse_verifier(const CheckSource& source);
Json verifier_to_json(const Verifier& verifier);

}  // namespace upskill::cases
