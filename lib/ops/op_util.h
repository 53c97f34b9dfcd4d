// The helpers every op family of the reference evaluator shares (one version of each): input
// checks, axis handling, the allocation cap and checked output allocation, reading tensors as
// int64 or double, making tensors from doubles (saturating for integers), int list attributes and
// dtype-agnostic element copies. Family-specific helpers stay in the family's own header
// (elementwise_util.h, tensor_util.h, nn_util.h, misc_internal.h, control_flow_util.h,
// quant_util.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/support/dtype_dispatch.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::ops {

// ---- allocation ---------------------------------------------------------------------------------

// The most elements any one tensor or scratch buffer an op allocates may have. Shapes, attributes
// and index values come from untrusted models (a [N,1] + [1,N] broadcast, Tile, Pad, Expand,
// ConstantOfShape, a Resize scale...), so every allocation sized by them is checked against this
// first and fails with an error rather than bad_alloc or an OOM kill. 2^31 elements is 8 GiB of
// float32 (16 GiB of int64/double, about as much again for the evaluator's double scratch copy):
// far above any real model's tensor, still within one developer or CI machine. (It replaces the
// families' own caps of 2^28 to 2^32.) Tensors read from files (.npy, TensorProto) keep their own
// cap, kMaxFileElements (2^34) in lib/support/tensor.h.
inline constexpr int64_t kMaxElements = int64_t{1} << 31;

// The element count of `shape`, or an error if a dim is negative or it exceeds kMaxElements.
inline Expected<int64_t> checkedElementCount(const Shape& shape) { return checkedNumElements(shape, kMaxElements); }

// A zero-filled tensor of `dtype` and `shape`, or an error when the dtype has no storage or the
// shape is negative or larger than kMaxElements.
Expected<Tensor> makeOutput(DType dtype, const Shape& shape);

// Errors unless the tensor's storage holds exactly the elements its shape says, so loops can
// index it by shape alone (toInt64s and toDoubles check it).
Status checkStorage(const Tensor& t);

// ---- inputs -------------------------------------------------------------------------------------

// Input i, or an error naming it when it is missing.
inline Expected<const Tensor*> requireInput(const std::vector<const Tensor*>& in, size_t i) {
  if (i >= in.size() || !in[i]) return Error("input " + std::to_string(i) + " is required");
  return in[i];
}
// Input i, or an error naming it by its spec name (`name`) when it is missing.
inline Expected<const Tensor*> requireInput(const std::vector<const Tensor*>& in, size_t i, const std::string& name) {
  if (i >= in.size() || !in[i]) return Error("input '" + name + "' is required");
  return in[i];
}
// Input i, or nullptr when it is omitted.
inline const Tensor* optionalInput(const std::vector<const Tensor*>& in, size_t i) { return i < in.size() ? in[i] : nullptr; }

// An error unless t's dtype is float16/bfloat16/float/double; `what` names the tensor.
inline Status requireFloat(const Tensor& t, const std::string& what) {
  if (!isFloatingPoint(t.dtype()))
    return Error(what + " must be a floating-point tensor, got " + std::string(dtypeName(t.dtype())));
  return okStatus();
}

// ---- axes and shapes ----------------------------------------------------------------------------

// An axis in [-rank, rank) made non-negative; an error if out of range (rank 0 has no axis).
inline Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// The product of dims [from, to) of `shape` (clamped to its rank); 1 when empty.
inline int64_t shapeProduct(const Shape& shape, size_t from = 0, size_t to = std::numeric_limits<size_t>::max()) {
  int64_t p = 1;
  for (size_t d = from; d < to && d < shape.size(); ++d) p *= shape[d];
  return p;
}

// ---- reading tensors ----------------------------------------------------------------------------

// The values of an integer tensor as int64 (uint64 above INT64_MAX wrap to negative). Any other
// dtype (bool included) is an error that names the tensor as `what`, when given.
Expected<std::vector<int64_t>> toInt64s(const Tensor& t, const std::string& what = "");
// The values of a numeric (or bool) tensor as double.
Expected<std::vector<double>> toDoubles(const Tensor& t);
// The values of `t` (as toDoubles) seen through a unidirectional broadcast to `shape` (LayerNorm's
// Scale and B, attention's Mask); an error naming `what` when it does not broadcast.
Expected<std::vector<double>> broadcastTo(const Tensor& t, const Shape& shape, const std::string& what);
// The value of a scalar or one-element 1-D tensor (an integer one for scalarInt) such as TopK's
// k, Loop's trip count or DFT's length; `what` names it in errors.
Expected<int64_t> scalarInt(const Tensor& t, const std::string& what);
Expected<double> scalarDouble(const Tensor& t, const std::string& what);

// ---- making tensors -----------------------------------------------------------------------------

// How castFromDouble rounds a value stored to an integer dtype.
enum class IntRounding { Truncate, Nearest /* half to even */ };

// Converts a double to T with no undefined behaviour: floating types round as the type does;
// integers truncate (or round to nearest), saturate to T's range and take NaN as 0; bool is != 0.
template <class T>
T castFromDouble(double v, IntRounding rounding = IntRounding::Truncate) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T{0};
    if (rounding == IntRounding::Nearest) v = std::nearbyint(v);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return fromCompute<T>(static_cast<typename ComputeType<T>::type>(v));
  }
}

// A tensor of `dtype` and `shape` from doubles, each converted with castFromDouble; an error if
// the shape exceeds kMaxElements or the value count does not match it.
Expected<Tensor> fromDoubles(DType dtype, const Shape& shape, const std::vector<double>& values,
                             IntRounding rounding = IntRounding::Truncate);

// An int64 tensor of `shape` holding `values` (as many as the shape has elements).
inline Tensor int64Tensor(const std::vector<int64_t>& values, Shape shape) {
  Tensor t(DType::Int64, std::move(shape));
  std::copy(values.begin(), values.end(), t.data<int64_t>().begin());
  return t;
}

// The output list of an op with one output.
inline std::vector<Tensor> single(Tensor t) {
  std::vector<Tensor> v;
  v.push_back(std::move(t));
  return v;
}

// ---- attributes ---------------------------------------------------------------------------------

// An int list attribute of exactly `size` values (`fill` repeated when absent), each in [lo, hi].
Expected<std::vector<int64_t>> intsAttr(const ir::Node& node, const std::string& name, size_t size, int64_t fill,
                                        int64_t lo = std::numeric_limits<int64_t>::min(),
                                        int64_t hi = std::numeric_limits<int64_t>::max());

// ---- copies -------------------------------------------------------------------------------------

// Copies `count` consecutive elements of `src` from element `from` to `dst` at element `to`; the
// dtypes are equal (any dtype, strings included) and the ranges in bounds.
void copyBlock(const Tensor& src, int64_t from, Tensor& dst, int64_t to, int64_t count);
// Elements [start, start + len) along `axis` of x, every other axis whole (in bounds).
Tensor sliceAxis(const Tensor& x, int64_t axis, int64_t start, int64_t len);

}  // namespace poprt::ops
