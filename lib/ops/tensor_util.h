// Helpers of the tensor op family (data movement, indexing, casts): element copies that do not
// care about the dtype and index arithmetic (the shared helpers are in op_util.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/ops/broadcast.h"
#include "lib/ops/op_util.h"
#include "lib/ops/registry.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::ops::tensor_detail {

using Inputs = std::vector<const Tensor*>;
using Outputs = Expected<std::vector<Tensor>>;

inline int64_t rankOf(const Tensor& t) { return static_cast<int64_t>(t.shape().size()); }

// A 1-D integer input (shape, axes, pads, repeats...).
inline Expected<std::vector<int64_t>> intList(const Tensor& t, const std::string& what) {
  if (t.shape().size() > 1) return Error(what + " must be 1-D, got shape " + shapeToString(t.shape()));
  return toInt64s(t, what);
}

// A tensor of `out_shape` whose element i is in[src[i]] (src[i] < 0: `fill`'s first element,
// or zero when fill is null or not of in's dtype). The caller guarantees every src[i] < in.numElements().
Tensor takeElements(const Tensor& in, Shape out_shape, const std::vector<int64_t>& src, const Tensor* fill = nullptr);

// The multi-index of flat index `flat` in `shape` (strides from contiguousStrides(shape)).
void unravel(int64_t flat, const std::vector<int64_t>& strides, std::vector<int64_t>& index);

// The strided view of `in` as a tensor of `out_shape`: element (i0, i1, ...) is
// in[base + i0 * step[0] + i1 * step[1] + ...] (one step per dim of out_shape, the caller keeps
// every offset inside `in`). Slice and Transpose.
Tensor takeStrided(const Tensor& in, Shape out_shape, int64_t base, const std::vector<int64_t>& step);

// Permutes the axes of `in` (perm[i] = input axis of output axis i; validated here).
Expected<Tensor> transposeTensor(const Tensor& in, const std::vector<int64_t>& perm);

// The same elements under a new shape with the same element count (checked).
Expected<Tensor> reshaped(const Tensor& in, Shape shape);

// Axis list validated against `rank`, made non-negative; an error on duplicates.
Expected<std::vector<int64_t>> normalizeAxes(const std::vector<int64_t>& axes, int64_t rank);

// An index in [-dim, dim) made non-negative, or an error naming it.
Expected<int64_t> wrapIndex(int64_t index, int64_t dim);

}  // namespace poprt::ops::tensor_detail
