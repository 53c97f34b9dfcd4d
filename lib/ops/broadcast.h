// Numpy-style (multidirectional) broadcasting, shared by the reference evaluator and codegen.
#pragma once

#include <vector>

#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::ops {

Expected<Shape> broadcastShapes(const Shape& a, const Shape& b);
// Element strides of `in` seen through `out` (rank of out; 0 where `in` is broadcast).
std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out);
// The offset of element `index` (flat, row-major in a shape whose contiguous strides are
// `contiguous`) in a tensor seen through broadcast `strides`.
int64_t broadcastOffset(int64_t index, const std::vector<int64_t>& contiguous, const std::vector<int64_t>& strides);
// Row-major element strides of a shape.
std::vector<int64_t> contiguousStrides(const Shape& shape);

}  // namespace poprt::ops
