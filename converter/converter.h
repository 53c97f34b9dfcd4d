// The conversion library: everything poprt-convert does, as one call. A Converter is built from
// one ConvertOptions (the table the flags, --config_yaml and the Python keyword arguments fill,
// converter/options.h) and converts one model: import, input shapes, passes, precision, --check,
// --precision_compare, the compile cache, codegen and the PopEF, the summary. poprt-convert, the
// `poprt` Python package and PopRT's command line are thin shells over it.
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "converter/cache.h"
#include "converter/options.h"
#include "lib/support/status.h"

namespace poprt::converter {

// Where a conversion's messages go. Log lines go through lib/support/log.h (setLogSink).
struct ConvertHooks {
  // The human-readable report, as poprt-convert prints it on stdout; nullptr: none.
  std::ostream* report = nullptr;
  // Called as each stage starts ("import", "passes", "compile", "write") and once at the end
  // ("done", total, total); `done` stages of `total` are behind.
  std::function<void(const std::string& stage, size_t done, size_t total)> progress;
};

struct ConvertResult {
  std::string onnx;     // the converted model, serialized
  std::string popef;    // the PopEF, with export_popef
  std::string summary;  // the --summary_json document
  std::vector<std::string> warnings;
  std::string cache;   // "hit" (local), "remote hit", "miss", "bypassed", or "" without a cache
  ConvertFiles files;  // the files written (empty paths when write_files is off)
};

class Converter {
 public:
  explicit Converter(ConvertOptions options, ConvertHooks hooks = {});
  const ConvertOptions& options() const { return options_; }

  // Converts options().input_model (or options().model_bytes). With write_files, the converted
  // ONNX, the PopEF and the summary are written (all or none) as poprt-convert writes them.
  // Bad options: an Error, or UsageError thrown for a combination no conversion can take.
  Expected<ConvertResult> convert() const;

 private:
  ConvertOptions options_;
  ConvertHooks hooks_;
};

}  // namespace poprt::converter
