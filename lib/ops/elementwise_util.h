// Helpers of the elementwise and reduce families of the reference evaluator: checked output
// allocation, N-ary broadcasting loops, conversions from double that never hit undefined
// behaviour, and wrapping integer arithmetic.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/ops/broadcast.h"
#include "lib/support/dtype_dispatch.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::ops::ew {

// The most elements an op of these families may allocate for one output (an input can ask for
// more through broadcasting, e.g. [N,1] + [1,N]).
inline constexpr int64_t kMaxOutputElements = int64_t{1} << 31;

// A zero-filled output tensor, or an error when its shape is negative or too large.
inline Expected<Tensor> makeOutput(DType dtype, const Shape& shape) {
  POPRT_TRY(checkedNumElements(shape, kMaxOutputElements));
  return Tensor(dtype, shape);
}

// Errors unless the tensor's storage holds exactly the elements its shape says, so loops can
// index it by shape alone.
inline Status checkStorage(const Tensor& t) {
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedNumElements(t.shape()));
  bool ok = t.dtype() == DType::String ? static_cast<int64_t>(t.strings().size()) == n
                                       : dtypeSize(t.dtype()) != 0 && t.byteSize() == static_cast<size_t>(n) * dtypeSize(t.dtype());
  if (!ok) return Error("tensor of shape " + shapeToString(t.shape()) + " and dtype " + std::string(dtypeName(t.dtype())) +
                        " has inconsistent storage");
  return okStatus();
}

// Input i, or an error naming it when it is missing. (Like op_util.h's requireInput; op_util.h
// is not included because its toInt64s does not compile for Half/BFloat16 at this commit.)
inline Expected<const Tensor*> input(const std::vector<const Tensor*>& in, size_t i) {
  if (i >= in.size() || !in[i]) return Error("input " + std::to_string(i) + " is required");
  return in[i];
}

inline std::vector<Tensor> single(Tensor t) {
  std::vector<Tensor> v;
  v.push_back(std::move(t));
  return v;
}

inline bool isNumeric(DType t) { return isFloatingPoint(t) || isInteger(t); }
inline std::string typeError(DType t) { return "dtype " + std::string(dtypeName(t)) + " is not supported"; }

template <class C>
bool isNaNValue(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  else return false;
}

// Converts a double to T: float types round, integers saturate (NaN gives 0), bool is != 0.
template <class T>
T castFromDouble(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return fromCompute<T>(static_cast<typename ComputeType<T>::type>(v));
  }
}

// Integer + and * modulo 2^bits (no signed-overflow UB); plain operators for floats.
template <class A>
A wrapAdd(A a, A b) {
  if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <class A>
A wrapMul(A a, A b) {
  if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>) {
    using U = std::make_unsigned_t<A>;
    // uint16 * uint16 would promote to (signed) int: multiply in uint64 instead.
    return static_cast<A>(static_cast<U>(static_cast<uint64_t>(static_cast<U>(a)) * static_cast<uint64_t>(static_cast<U>(b))));
  } else {
    return a * b;
  }
}

// The broadcast shape of several shapes.
inline Expected<Shape> broadcastAll(const std::vector<Shape>& shapes) {
  Shape out;
  for (const Shape& s : shapes) {
    POPRT_ASSIGN_OR_RETURN(out, broadcastShapes(out, s));
  }
  return out;
}

// Calls f(i, offsets) for every element i of `out` (row-major), where offsets[k] is the element
// offset of input k (of shape ins[k], broadcast to `out`).
template <class F>
void forEachBroadcast(const Shape& out, const std::vector<Shape>& ins, F&& f) {
  const size_t rank = out.size(), n = ins.size();
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  if (total == 0) return;
  std::vector<std::vector<int64_t>> strides;
  for (const Shape& s : ins) strides.push_back(broadcastStrides(s, out));
  std::vector<int64_t> index(rank, 0), off(n, 0);
  for (int64_t i = 0; i < total; ++i) {
    f(i, off.data());
    for (size_t d = rank; d-- > 0;) {
      for (size_t k = 0; k < n; ++k) off[k] += strides[k][d];
      if (++index[d] < out[d]) break;
      for (size_t k = 0; k < n; ++k) off[k] -= strides[k][d] * out[d];
      index[d] = 0;
    }
  }
}

// Splits `shape` around axis: (product before, size of axis, product after).
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
inline AxisSplit splitAt(const Shape& shape, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis) s.outer *= shape[d];
    else if (d == axis) s.len = shape[d];
    else s.inner *= shape[d];
  }
  return s;
}

// An axis in [-rank, rank-1], made non-negative (unlike normalizeAxis, rank 0 has no axis).
inline Expected<int64_t> strictAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

// The values of an integer tensor as int64 (uint64 above INT64_MAX wrap to negative).
inline Expected<std::vector<int64_t>> int64Values(const Tensor& t) {
  if (!isInteger(t.dtype())) return Error("expected an integer tensor, got " + std::string(dtypeName(t.dtype())));
  POPRT_TRY(checkStorage(t));
  std::vector<int64_t> out;
  POPRT_TRY(dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>)
      for (T v : t.data<T>()) out.push_back(static_cast<int64_t>(v));
  }));
  return out;
}

// The values of a numeric tensor as double.
inline Expected<std::vector<double>> doubleValues(const Tensor& t) {
  POPRT_TRY(checkStorage(t));
  std::vector<double> out;
  POPRT_TRY(dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (T v : t.data<T>()) out.push_back(static_cast<double>(toCompute(v)));
  }));
  return out;
}

// The single integer of a scalar (or one-element) tensor input such as TopK's k or CumSum's axis.
inline Expected<int64_t> scalarInt(const Tensor& t, const std::string& what) {
  if (!isInteger(t.dtype())) return Error(what + " must be an integer tensor, got " + std::string(dtypeName(t.dtype())));
  POPRT_TRY(checkStorage(t));
  if (t.numElements() != 1 || t.shape().size() > 1)
    return Error(what + " must be a scalar, got shape " + shapeToString(t.shape()));
  int64_t v = 0;
  POPRT_TRY(dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) v = static_cast<int64_t>(t.data<T>()[0]);
  }));
  return v;
}

}  // namespace poprt::ops::ew
