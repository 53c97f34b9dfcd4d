// popef-run's report: the benchmark summary in the style of trtexec (throughput; latency min,
// mean, median, p90, p95, p99, max; the host split into host-to-device, compute and
// device-to-host; the estimated IPU latency and throughput), printed and, with --json, written as
// JSON with the very same numbers (each rounded once, to what the text shows).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "converter/value_check.h"
#include "poprt/runtime/session.h"

namespace poprt::tools {

struct RunFacts {
  std::string popef, target, ipu_version;
  unsigned replication_factor = 1, batches_per_step = 1;
  int64_t batch = 1;       // samples per request (dim 0 of the first input)
  bool benchmark = false;  // measured (--benchmark and friends), or one plain run
  int64_t iterations = 1, warmup = 0;
  double warmup_s = 0;
  double duration = 0;
  int threads = 1, async = 1;
  double load_s = 0;
  std::vector<double> latencies;  // seconds
  double wall_s = 0;
  runtime::RunTimings timings;
  runtime::IpuEstimate estimate;
  const std::vector<converter::ValueDiff>* diffs = nullptr;  // with --expected_dir
  converter::Tolerance tolerance;
};

// The numbers of the summary, each rounded as printed.
nlohmann::json reportJson(const RunFacts& facts);
// The summary lines, from the same numbers.
std::vector<std::string> reportText(const nlohmann::json& report);

}  // namespace poprt::tools
