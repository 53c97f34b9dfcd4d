// Rearranging ops (Transpose, Concat, Slice, Pad, Gather with constant indices, nearest Resize...)
// move elements without computing new values, so the device runs them as exchange copies alone.
// Which input element lands where is found by running the op itself, with the reference
// evaluator, on tensors that hold their own element indices: one source of truth for semantics.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/ops/registry.h"

namespace poprt::codegen {

// For each output, for each element: the data input and element it copies, or a fill.
struct RearrangeMap {
  struct Source {
    int32_t input = -1;  // -1: a constant fill
    int64_t element = 0;
  };
  std::vector<std::vector<Source>> outputs;
  double fill_value = 0;  // Pad's constant_value
};

// Data inputs are input 0 (every input for Concat); the others must be constants. An error says
// why the node cannot be rearranged on the device (it then runs on the host).
Expected<RearrangeMap> rearrangeMap(const ir::Node& node, const ops::Opsets& opsets);

}  // namespace poprt::codegen
