// Helpers of the elementwise and reduce families of the reference evaluator: N-ary broadcasting
// loops, NaN-aware comparisons and wrapping integer arithmetic (the shared helpers, checked
// allocation and conversions from double included, are in op_util.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/ops/broadcast.h"
#include "lib/ops/op_util.h"
#include "lib/ops/registry.h"
#include "lib/support/dtype_dispatch.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::ops::ew {

inline bool isNumeric(DType t) { return isFloatingPoint(t) || isInteger(t); }
inline std::string typeError(DType t) { return "dtype " + std::string(dtypeName(t)) + " is not supported"; }

template <class C>
bool isNaNValue(C v) {
  if constexpr (std::is_floating_point_v<C>)
    return std::isnan(v);
  else
    return false;
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
  for (const Shape& s : shapes) { POPRT_ASSIGN_OR_RETURN(out, broadcastShapes(out, s)); }
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
    if (d < axis)
      s.outer *= shape[d];
    else if (d == axis)
      s.len = shape[d];
    else
      s.inner *= shape[d];
  }
  return s;
}

// The device lowering of the ops outside the unary/binary tables: variadic Sum/Max/Min and Pow
// run as chains of binary vertices, the ConvAct activations as Activation vertices.
inline LoweringFamily loweringOf(const std::string& op_type) {
  if (op_type == "Sum" || op_type == "Max" || op_type == "Min" || op_type == "Pow") return LoweringFamily::Binary;
  if (op_type == "Clip" || op_type == "LeakyRelu" || op_type == "HardSigmoid" || op_type == "HardSwish")
    return LoweringFamily::Activation;
  return LoweringFamily::None;
}

}  // namespace poprt::ops::ew
