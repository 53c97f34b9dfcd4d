// popef-run's benchmark loop over a ModelRunner: the first request (whose outputs popef-run
// writes and checks), warm-up requests, then the measured requests from --threads client threads
// keeping --async requests in flight each, for at least --iterations requests and --duration
// seconds. A progress bar goes to stderr when it is a terminal and the run takes over 2 s.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/support/status.h"
#include "poprt/runtime/model_runner.h"

namespace poprt::tools {

struct BenchOptions {
  int64_t iterations = 1;     // measured requests, at least
  int64_t warmup = 0;         // requests before the measured ones
  double warmup_seconds = 0;  // and, at least, this long
  double duration = 0;        // seconds the measured phase lasts, at least
  int threads = 1;
  int async = 1;  // requests in flight per thread
};

struct BenchResult {
  runtime::OutputMemory first_outputs;  // of the very first request
  std::vector<double> latencies;        // seconds, submit to result, one per measured request
  std::vector<double> starts;           // seconds from the measured phase's start, the same order
  double wall = 0;                      // seconds of the measured phase
  runtime::RunTimings timings;          // the runner's host split over the measured requests
};

// Runtime errors come out as poprt::Error (the first one stops the run); an ApplicationError
// keeps its message, the runtime categories say what they are.
Expected<BenchResult> runBench(runtime::ModelRunner& runner, const runtime::InputMemoryView& inputs, const BenchOptions& options);

}  // namespace poprt::tools
