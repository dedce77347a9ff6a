// Test-case files read (see test_suite.hpp).
#include "upskill/cases/test_suite.hpp"

#include <fmt/format.h>

#include "upskill/core/files.hpp"
#include "upskill/core/json_fields.hpp"

namespace upskill::cases {

Result<TestSuite> parse_test_suite(std::string_view text, const std::string& file) {
  UPSKILL_ASSIGN_OR_RETURN(JsonDocument doc, parse_json_document(text, file));
  TestSuite suite;
  std::string pointer;
  if (doc.value.is_object()) {
    JsonObjectReader r(doc, "", "");
    UPSKILL_RETURN_IF_ERROR(r.reject_unknown_keys({"cases"}));
    if (!doc.value.contains("cases"))
      return fail(Error::at(doc.at(""),
                            "expected a list of test cases or an object with a \"cases\" list"));
    suite.wrapped = true;
    pointer = "/cases";
  } else if (!doc.value.is_array()) {
    return fail(Error::at(doc.at(""),
                          fmt::format("expected a list of test cases or an object with a \"cases\" "
                                      "list, found {}",
                                      json_type_name(doc.value))));
  }
  UPSKILL_ASSIGN_OR_RETURN(CaseListResult parsed, parse_case_array(doc, pointer));
  suite.cases = std::move(parsed.cases);
  suite.warnings = std::move(parsed.warnings);
  return suite;
}

Result<TestSuite> load_test_suite(const std::filesystem::path& path) {
  UPSKILL_ASSIGN_OR_RETURN(std::string text, files::read_text(path));
  return parse_test_suite(text, path.string());
}

}  // namespace upskill::cases
