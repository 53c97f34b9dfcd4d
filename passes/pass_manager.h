// Runs a pipeline of passes: verifies the graph after each, can print the IR after a named pass,
// and times each pass with its statistics.
#pragma once

#include <string>
#include <vector>

#include "passes/pass.h"

namespace poprt::passes {

struct PipelineOptions {
  std::vector<std::string> passes;       // empty: the default pipeline (every pass, in list order)
  std::vector<std::string> skip_passes;  // removed from the pipeline
  std::string print_ir_after;            // pass name whose result goes into its report (ir_after)
  int64_t max_tensor_size = int64_t{1} << 27;
  Fp16Options fp16;
  std::vector<std::pair<std::string, int64_t>> serialize_matmul;  // --serialize_matmul NODE=FACTOR
};

struct PassReport {
  std::string name;
  double seconds = 0;
  bool changed = false;
  PassStats stats;
  std::string ir_after;  // the IR as the pass left it, for --print_ir_after (the caller prints it)
};

// Unknown pass names are an error listing the known ones; so is an fp16-only pass named in
// --passes without --precision fp16.
Expected<std::vector<std::string>> resolvePipeline(const PipelineOptions& options);
Expected<std::vector<PassReport>> runPipeline(ir::Model& model, const PipelineOptions& options);

}  // namespace poprt::passes
