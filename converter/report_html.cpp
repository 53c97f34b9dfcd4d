#include "converter/report_html.h"

#include <string_view>

#include "converter/report_template.h"  // generated from converter/report/report.html (converter/CMakeLists.txt)
#include "lib/support/status.h"

namespace poprt::converter {

std::string renderReportHtml(const nlohmann::ordered_json& profile) {
  static constexpr std::string_view kSlot = "/*POPRT_PROFILE_JSON*/";
  const std::string_view page = kReportTemplate;
  const size_t at = page.find(kSlot);
  POPRT_CHECK(at != std::string_view::npos, "the report template has no profile slot");
  // Inside <script>, "</script" or "<!--" in a name would end or confuse the element; '<' only
  // occurs inside JSON strings, where \u003c is the same character.
  std::string json;
  for (char c : profile.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)) {
    if (c == '<')
      json += "\\u003c";
    else
      json += c;
  }
  std::string html;
  html.reserve(page.size() + json.size());
  html.append(page.substr(0, at)).append(json).append(page.substr(at + kSlot.size()));
  return html;
}

}  // namespace poprt::converter
