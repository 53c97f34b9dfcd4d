// report.html: the profile (profile_report.h) drawn on one self-contained page — tile memory
// map, liveness chart, sortable tables of ops and compute sets, execution trace timeline. The
// page is converter/report/report.html, compiled in; the profile is embedded in it as JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace poprt::converter {

std::string renderReportHtml(const nlohmann::ordered_json& profile);

}  // namespace poprt::converter
