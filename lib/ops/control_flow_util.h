// Helpers of the control-flow family (If/Loop/Scan, sequences, optionals): moving slices of
// tensors of any dtype (strings included) along an axis, and the limits that keep untrusted
// models from running or allocating without bound.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/ops/op_util.h"
#include "lib/ops/value.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::ops::cf {

// Most iterations a Loop or Scan may run (a model with no trip count could otherwise spin forever).
inline constexpr int64_t kMaxIterations = 10'000'000;
// The cap in force: kMaxIterations unless a test lowered it with IterationCapForTesting.
int64_t maxIterations();
class IterationCapForTesting {
 public:
  explicit IterationCapForTesting(int64_t cap);
  ~IterationCapForTesting();
  IterationCapForTesting(const IterationCapForTesting&) = delete;
  IterationCapForTesting& operator=(const IterationCapForTesting&) = delete;

 private:
  int64_t saved_;
};
// Most items a sequence may hold (a tensor built here is capped at kMaxElements, op_util.h).
inline constexpr int64_t kMaxSequenceItems = int64_t{1} << 24;

// The slice at `index` of `t` along `axis`, with that axis removed.
Expected<Tensor> sliceAxis(const Tensor& t, int64_t axis, int64_t index);
// The slice [begin, begin + count) of `t` along `axis`, the axis kept (size `count`).
Expected<Tensor> rangeAxis(const Tensor& t, int64_t axis, int64_t begin, int64_t count);
// Stacks same-shaped tensors along a new axis `axis` (0..rank). `items` must not be empty.
Expected<Tensor> stackAxis(const std::vector<Tensor>& items, int64_t axis);
// Concatenates tensors along existing axis `axis`; all other dims must agree.
Expected<Tensor> concatAxis(const std::vector<Tensor>& items, int64_t axis);

// The graph attribute `name` of `node`, or an error naming it.
Expected<const ir::Graph*> graphAttr(const ir::Node& node, const std::string& name);
// A single-element tensor read as bool (error if it has another element count).
Expected<bool> scalarBool(const Tensor& t, const std::string& what);

Tensor boolScalar(bool v);

// "tensor", "sequence" or "empty optional", for error messages.
std::string kindName(const RtValue& v);

}  // namespace poprt::ops::cf

#include "lib/ops/registry.h"

namespace poprt::ops::cf {
// Sequence and optional ops (control_flow_sequence_ops.cpp), registered by registerControlFlowOps.
void registerSequenceOps(std::vector<OpDef>& ops);
}  // namespace poprt::ops::cf
