// The range check of float_to_half (with --enable_avoid_overflow_patterns): runs the float32 model
// with the reference evaluator (its products summed in float32, as the model sums them) on
// calibration inputs (--fp16_calibration_input files, else generated ones like --check's) and
// keeps in float32 every node that reads or makes a value beyond a quarter of the float16 range
// (16376; the margin covers inputs larger than the calibration ones). This catches what no pattern
// can: activations that grow past 65504 because of the weights (constant-filled test models,
// unnormalised features).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/ops/value.h"

namespace poprt::passes {

inline constexpr double kFp16SafeMagnitude = 65504.0 / 4;

// Makes every floating-point tensor a node of `g` (top level) computes an output of `g` too, so
// one run of the reference evaluator returns them all (for the range check and per-layer
// --precision_compare). Returns how many outputs it added.
size_t exposeFloatValues(ir::Graph& g);

// Node -> why it stays float32 ("makes values up to 2.1e+06 on the calibration inputs"). An
// error when the model does not run on the inputs (the caller skips the check with a warning).
Expected<std::map<const ir::Node*, std::string>> outOfRangeNodes(const ir::Model& model,
                                                                 const std::vector<std::pair<std::string, ops::RtValue>>& inputs);

}  // namespace poprt::passes
