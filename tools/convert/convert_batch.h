// Batch conversion: several models in one poprt-convert run (--input_model repeated, a list under
// input_model: or a models: list in --config_yaml). Each model converts into OUTPUT_DIR/<stem>/
// (its file name without the extension) with its summary in OUTPUT_DIR/<stem>/summary.json; two
// models with the same stem and output dir are a usage error before any work. Every model is
// tried; --summary_json FILE gets the batch summary (each model's status, error and files) and the
// run fails (exit 1) if any model failed.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "converter/options.h"
#include "lib/support/status.h"

namespace poprt::tools {

using converter::ConvertOptions;

// What one conversion reports back beyond success.
struct ConvertOutcome {
  std::string cache;  // as ConvertResult::cache: "hit", "remote hit", "miss", "bypassed", or ""
};

// The conversions a run makes, each with input_model set. One model converts as given (its
// outputs straight into output_dir); several are a batch (`batch` set), laid out as above.
// Throws UsageError for stem clashes and a missing input_model.
std::vector<ConvertOptions> planConversions(const ConvertOptions& o, bool& batch);

using ConvertFn = std::function<Status(const ConvertOptions&, ConvertOutcome&)>;

// Runs every planned conversion, printing each failure to stderr as it happens (tools/error_format.h,
// with the model named), then a one-line tally on `out`; writes the batch summary to
// o.summary_json when set. An error when any model failed.
Status runBatch(const ConvertOptions& o, const std::vector<ConvertOptions>& plan, const ConvertFn& convert, std::ostream& out);

}  // namespace poprt::tools
