#pragma once
// Test-case files: a bare JSON list of cases or {"cases": [...]}, read with the file's line and
// column in every message.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "upskill/cases/test_case.hpp"

namespace upskill::cases {

// A test-case file: a bare list or {"cases": [...]}.
struct TestSuite {
  std::vector<TestCase> cases;
  std::vector<std::string> warnings;
  bool wrapped = false;  // {"cases": [...]} form
};

Result<TestSuite> parse_test_suite(std::string_view text, const std::string& file);
Result<TestSuite> load_test_suite(const std::filesystem::path& path);

}  // namespace upskill::cases
