// The profile report of a compiled model (poprt-convert --report, popef-run --report,
// POPRT_REPORT_DIR): profile.json — tile memory by kind, liveness over the program, the cost
// model's cycles per compute set and per op with vertices, FLOPs and exchange bytes, and the
// trace of one run — and report.html, one self-contained page drawing it (report_html.h).
// Static figures come from the PopEF (the executable, and the compiler's memory profile blob);
// the trace from one run of the program on a fresh simulator engine. docs/REPORT.md has the schema.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/ops/value.h"
#include "sim/engine.h"
#include "sim/verify_popef.h"

namespace poprt::converter {

// Where a report goes and who said so, for messages: "--report" or "POPRT_REPORT_DIR".
struct ReportDir {
  std::string path;  // "": no report
  std::string origin;
};
// The flag's directory, else POPRT_REPORT_DIR's, else none.
ReportDir reportDir(const std::string& flag);
// A report directory must be one the files can go to (no file in the way): checked before any work.
Status checkReportDir(const ReportDir& dir);

struct ProfileSource {
  std::string tool;   // "poprt-convert" or "popef-run"
  std::string popef;  // the file profiled, as named to the tool
  // One value per Input stream of the executable, in order, for the traced run; null: generated
  // as poprt-convert --check's are (seed 0).
  const std::vector<ops::RtValue>* inputs = nullptr;
};

// profile.json's document for `model` (read from source.popef): the static figures, and the trace
// of one run on an engine of its own. A malformed memory profile blob is an error naming the file.
Expected<nlohmann::ordered_json> buildProfile(sim::VerifiedPopef model, const ProfileSource& source);

// The `top` steps of the profile's traced run that took the simulator longest, as aligned table
// lines (trtexec's --exportProfile, in the terminal): the step's kind and name (a compute set, an
// exchange, a host program), its simulator wall time and share, and the cost model's IPU estimate;
// then the totals. A profile without a traced run gives the reason in one line.
std::vector<std::string> profileTable(const nlohmann::ordered_json& profile, size_t top);

// Reads source.popef, builds the profile and writes DIR/profile.json and DIR/report.html, each
// atomically (missing directories are created). Returns the paths written.
Expected<std::vector<std::string>> writeProfileReport(const ReportDir& dir, const ProfileSource& source);

}  // namespace poprt::converter
