// Numpy-style (multidirectional) broadcasting, shared by the reference evaluator and codegen.
#pragma once

#include <vector>

#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::ops {

Expected<Shape> broadcastShapes(const Shape& a, const Shape& b);
// Element strides of `in` seen through `out` (rank of out; 0 where `in` is broadcast).
std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out);
// Row-major element strides of a shape.
std::vector<int64_t> contiguousStrides(const Shape& shape);

}  // namespace poprt::ops
