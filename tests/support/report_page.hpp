#pragma once
// The trials `upskill runs --html` embeds in its page, parsed back for a test to read.
#include <string>

#include "upskill/core/json.hpp"

namespace upskill::testing {

// The page's data ({"batches": [...]}); null when the page has none.
inline Json report_page_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"upskill-data\">";
  const auto at = html.find(open);
  if (at == std::string::npos) return nullptr;
  const auto start = at + open.size();
  return Json::parse(html.substr(start, html.find("</script>", start) - start));
}

}  // namespace upskill::testing
