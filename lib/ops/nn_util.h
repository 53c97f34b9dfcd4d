// Helpers shared by the nn op family files (nn_conv, nn_pool, nn_norm, nn_resize, nn_roi, nn_nms):
// element-count limits, double <-> tensor conversion with saturation, attribute checks and the
// sliding-window geometry of Conv/ConvTranspose/pooling (strides, dilations, pads, auto_pad).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/ops/registry.h"
#include "lib/support/dtype_dispatch.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::ops::nn {

// Cap on the elements of any tensor or scratch buffer an nn op allocates (untrusted shapes and
// attributes must not make the evaluator allocate without bound).
inline constexpr int64_t kMaxElements = int64_t{1} << 28;
// Cap on sizes, strides, pads and dilations read from attributes, so window arithmetic cannot overflow.
inline constexpr int64_t kMaxDim = int64_t{1} << 30;

// The element count of `shape`, or an error if a dim is negative or it exceeds kMaxElements.
Expected<int64_t> checkedCount(const Shape& shape, const std::string& what);

// One tensor value converted for storage: NaN -> 0 and saturation for integers (rounding to
// nearest), plain conversion for the floating types.
template <class T>
T castFromDouble(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T{0};
    v = std::nearbyint(v);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return fromCompute<T>(static_cast<typename ComputeType<T>::type>(v));
  }
}

// (op_util.h cannot be included yet: its toInt64s does not compile for Half/BFloat16, so the
// family keeps its own small equivalents.)
// Input i, or an error naming it when it is missing.
Expected<const Tensor*> needInput(const std::vector<const Tensor*>& in, size_t i);
// An axis in [-rank, rank) made non-negative.
Expected<int64_t> normAxis(int64_t axis, int64_t rank);
Tensor makeInt64Tensor(const std::vector<int64_t>& values, Shape shape);
std::vector<Tensor> oneOutput(Tensor t);

// A tensor of `dtype` and `shape` from doubles (see castFromDouble); checks the element count.
Expected<Tensor> tensorFromDoubles(DType dtype, const Shape& shape, const std::vector<double>& values);
// The values of a numeric tensor as doubles.
Expected<std::vector<double>> doublesOf(const Tensor& t);
// The values of an integer tensor as int64.
Expected<std::vector<int64_t>> intsOf(const Tensor& t);

// An error unless t's dtype is float16/bfloat16/float/double.
Status requireFloat(const Tensor& t, const std::string& what);

// Scalar (or one-element) input i as double / int64, or `fallback` when the input is omitted.
Expected<double> scalarDouble(const std::vector<const Tensor*>& in, size_t i, double fallback);
Expected<int64_t> scalarInt(const std::vector<const Tensor*>& in, size_t i, int64_t fallback);

// An int list attribute of exactly `size` values (or `fill` repeated when absent), each in [lo, hi].
Expected<std::vector<int64_t>> intsAttr(const ir::Node& node, const std::string& name, size_t size, int64_t fill,
                                        int64_t lo, int64_t hi);

// Sliding-window geometry over the spatial dims: `in` is the input extent, `out` the window count.
struct Window {
  Shape in, kernel, strides, dilations, pad_begin, pad_end, out;
  size_t rank() const { return in.size(); }
  int64_t effectiveKernel(size_t d) const { return (kernel[d] - 1) * dilations[d] + 1; }
};

// Reads strides, dilations, pads and auto_pad of a Conv/pool node and computes the output extent
// (ceil_mode for pools; the last window must start inside the input or its begin padding).
Expected<Window> windowGeometry(const ir::Node& node, const Shape& in_spatial, const Shape& kernel, bool ceil_mode,
                                bool has_dilations = true);

// Family sub-registrations (called from registerNnOps in nn_ops.cpp).
void registerNnConvOps(std::vector<OpDef>& ops);
void registerNnPoolOps(std::vector<OpDef>& ops);
void registerNnNormOps(std::vector<OpDef>& ops);
void registerNnResizeOps(std::vector<OpDef>& ops);
void registerNnRoiOps(std::vector<OpDef>& ops);

}  // namespace poprt::ops::nn
