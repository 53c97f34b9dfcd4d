// --check: runs the original graph (after its input shapes are fixed) and the optimised one on
// the same generated inputs with the reference evaluator, prints the largest errors per output
// and fails naming the worst output when one is beyond the tolerance.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "lib/ir/graph.h"

namespace poprt::converter {

struct CheckOptions {
  double rtol = 1e-3;
  double atol = 1e-4;
  uint64_t seed = 0;  // of the generated inputs and of random ops
};

// The model before the passes, kept to be run after them. Fails naming the first input whose
// shape is not static or that is not a numeric or bool tensor (--check generates the inputs).
Expected<std::string> snapshotForCheck(const ir::Model& original);

Status runCheck(const std::string& original_snapshot, const ir::Model& optimised, const CheckOptions& options, std::ostream& out);

}  // namespace poprt::converter
