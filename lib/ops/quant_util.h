// Helpers of the quantization family: integer ranges, round-half-to-even saturation, reading
// scales and zero points, and the integer convolution/matmul cores shared by the *Integer and
// QLinear* ops (the helpers every family shares are in op_util.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/ops/op_util.h"
#include "lib/ops/registry.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::ops::quant {

struct Range {
  int64_t lo, hi;
};
// The value range of a quantized integer type (int8/uint8/int16/uint16/int32), or an error.
Expected<Range> rangeOf(DType t, const std::string& what);

// saturate(round_half_even(scaled) + zero_point); NaN counts as 0 (gives the zero point).
inline int64_t quantizeValue(double scaled, int64_t zero_point, Range r) {
  double q = std::nearbyint(scaled);
  if (std::isnan(q)) q = 0;
  q += static_cast<double>(zero_point);
  if (q < static_cast<double>(r.lo)) return r.lo;
  if (q > static_cast<double>(r.hi)) return r.hi;
  return static_cast<int64_t>(q);
}

// The values of a floating-point tensor as float (scale arithmetic is in float); `what` names it.
Expected<std::vector<float>> floats(const Tensor& t, const std::string& what);
// A tensor of integer dtype `dtype` from int64 values (already in range).
Expected<Tensor> fromInts(DType dtype, const Shape& shape, const std::vector<int64_t>& values);

// An error unless t is int8 or uint8 (the quantized inputs of the *Integer and QLinear* ops).
inline Status checkQuantInput(const Tensor& t, const std::string& what) {
  if (t.dtype() != DType::Int8 && t.dtype() != DType::UInt8)
    return Error(what + " must be int8 or uint8, got " + std::string(dtypeName(t.dtype())));
  return okStatus();
}

// A per-tensor or per-channel parameter (scale or zero point): one value, or `channels` values.
// Returns the values (size 1 or `channels`); error otherwise.
template <class T>
Expected<std::vector<T>> perChannel(std::vector<T> values, int64_t channels, const std::string& what) {
  if (values.size() == 1 || static_cast<int64_t>(values.size()) == channels) return values;
  return Error(what + " has " + std::to_string(values.size()) + " values, expected 1 or " + std::to_string(channels));
}
template <class T>
T at(const std::vector<T>& v, int64_t i) {
  return v.size() == 1 ? v[0] : v[static_cast<size_t>(i)];
}

// Integer convolution (Conv attributes: auto_pad, dilations, group, kernel_shape, pads, strides)
// of x [N, C, D...] and w [M, C/group, K...] with zero points subtracted (x_zp one value, w_zp one
// or M values; padding contributes nothing). Returns the int64 accumulators and the output shape.
struct ConvResult {
  Shape shape;
  std::vector<int64_t> acc;
};
Expected<ConvResult> convInteger(const ir::Node& node, const Tensor& x, int64_t x_zp, const Tensor& w,
                                 const std::vector<int64_t>& w_zp);

void registerConvOps(std::vector<OpDef>& ops);

}  // namespace poprt::ops::quant
