// report.html: the profile goes into the page as JSON that no name can break out of, and comes back
// unchanged when the page's script reads it.
#include <gtest/gtest.h>

#include "converter/report_html.h"

namespace poprt::tools {

using namespace poprt::converter;
namespace {

TEST(ReportHtml, EmbedsTheProfileSoNoNameCanEndItsScript) {
  nlohmann::ordered_json profile = {{"popef", "a</script><script>alert(1)</script><!--"},
                                    {"compute_sets", {{{"name", "n</SCRIPT>"}, {"cycles", 12}}}}};
  const std::string html = renderReportHtml(profile);
  const std::string open = "<script id=\"profile-data\" type=\"application/json\">";
  const size_t begin = html.find(open);
  ASSERT_NE(begin, std::string::npos);
  const size_t data = begin + open.size();
  const size_t end = html.find("</script>", data);
  ASSERT_NE(end, std::string::npos);
  const std::string embedded = html.substr(data, end - data);
  EXPECT_EQ(embedded.find('<'), std::string::npos) << embedded;
  EXPECT_EQ(nlohmann::ordered_json::parse(embedded), profile);  // what JSON.parse gives the page
  EXPECT_EQ(html.find("/*POPRT_PROFILE_JSON*/"), std::string::npos);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
}

}  // namespace
}  // namespace poprt::tools
