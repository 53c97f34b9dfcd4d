// Helpers shared by the nn op family files (nn_conv, nn_pool, nn_norm, nn_resize, nn_roi, nn_nms):
// the attribute value cap, optional scalar inputs and the sliding-window geometry of
// Conv/ConvTranspose/pooling (strides, dilations, pads, auto_pad). The helpers every family shares
// are in op_util.h; nn ops store integer results rounded to nearest (IntRounding::Nearest).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/ir/graph.h"
#include "lib/ops/op_util.h"
#include "lib/ops/registry.h"
#include "lib/support/dtype_dispatch.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"

namespace poprt::ops::nn {

// Cap on sizes, strides, pads and dilations read from attributes, so window arithmetic cannot overflow.
inline constexpr int64_t kMaxDim = int64_t{1} << 30;

// Scalar (or one-element) input i as double / int64 (see scalarDouble / scalarInt), or
// `fallback` when the input is omitted or empty.
Expected<double> optionalScalarDouble(const std::vector<const Tensor*>& in, size_t i, const std::string& what, double fallback);
Expected<int64_t> optionalScalarInt(const std::vector<const Tensor*>& in, size_t i, const std::string& what, int64_t fallback);

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
