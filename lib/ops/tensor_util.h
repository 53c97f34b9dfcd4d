// Helpers of the tensor op family (data movement, indexing, casts): element copies that do not
// care about the dtype, index arithmetic and checked reading of shape-like inputs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/ops/registry.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::ops::tensor_detail {

// The most elements one op may produce (2^28: 1-2 GiB of data plus an index per element): keeps
// a hostile shape/repeats/pads input from asking for an unbounded allocation.
inline constexpr int64_t kMaxElements = int64_t{1} << 28;

// The family's own copies of op_util.h's helpers: op_util.h's toInt64s does not compile for the
// 16-bit float tags of dispatchNumeric, so no file here includes it.

// Input i, or an error naming it when it is missing.
inline Expected<const Tensor*> needInput(const std::vector<const Tensor*>& in, size_t i) {
  if (i >= in.size() || !in[i]) return Error("input " + std::to_string(i) + " is required");
  return in[i];
}

// An axis in [-rank, rank) made non-negative; an error if out of range (rank 0 has no axis).
inline Expected<int64_t> axisIn(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// The values of any numeric or bool tensor as double.
Expected<std::vector<double>> doubleValues(const Tensor& t);
// A tensor of `dtype` and `shape` from doubles, each converted to the dtype.
Expected<Tensor> tensorFromDoubles(DType dtype, Shape shape, const std::vector<double>& values);

inline Tensor int64s(const std::vector<int64_t>& values, Shape shape) {
  Tensor t(DType::Int64, std::move(shape));
  std::copy(values.begin(), values.end(), t.data<int64_t>().begin());
  return t;
}

inline std::vector<Tensor> one(Tensor t) {
  std::vector<Tensor> v;
  v.push_back(std::move(t));
  return v;
}

// Input i, or nullptr when omitted (absent or an empty name).
inline const Tensor* optInput(const std::vector<const Tensor*>& in, size_t i) { return i < in.size() ? in[i] : nullptr; }

// The element count of `shape`, or an error if a dim is negative or it exceeds kMaxElements.
Expected<int64_t> checkedOutputSize(const Shape& shape);

// A tensor of `out_shape` whose element i is in[src[i]] (src[i] < 0: `fill`'s first element,
// or zero when fill is null or not of in's dtype). The caller guarantees every src[i] < in.numElements().
Tensor takeElements(const Tensor& in, Shape out_shape, const std::vector<int64_t>& src, const Tensor* fill = nullptr);

// Copies element `from` of `src` to element `to` of `dst` (same dtype).
void copyElement(const Tensor& src, int64_t from, Tensor& dst, int64_t to);

// Copies `count` consecutive elements from `src` at `from` to `dst` at `to` (same dtype).
void copyBlock(const Tensor& src, int64_t from, Tensor& dst, int64_t to, int64_t count);

// Row-major strides of a shape (elements).
std::vector<int64_t> stridesOf(const Shape& shape);

// The multi-index of flat index `flat` in `shape` (strides from stridesOf(shape)).
void unravel(int64_t flat, const std::vector<int64_t>& strides, std::vector<int64_t>& index);

// Permutes the axes of `in` (perm[i] = input axis of output axis i; validated here).
Expected<Tensor> transposeTensor(const Tensor& in, const std::vector<int64_t>& perm);

// The same elements under a new shape with the same element count (checked).
Expected<Tensor> reshaped(const Tensor& in, Shape shape);

// The values of an integer or bool tensor as int64.
Expected<std::vector<int64_t>> intValues(const Tensor& t);

// A scalar (or one-element) integer tensor's value.
Expected<int64_t> scalarInt(const Tensor& t, const std::string& what);

// Axis list validated against `rank`, made non-negative; an error on duplicates.
Expected<std::vector<int64_t>> normalizeAxes(const std::vector<int64_t>& axes, int64_t rank);

// An index in [-dim, dim) made non-negative, or an error naming it.
Expected<int64_t> wrapIndex(int64_t index, int64_t dim);

}  // namespace poprt::ops::tensor_detail
