// Shared helpers of the nn op family (see nn_util.h).
#include "lib/ops/nn_util.h"

namespace poprt::ops::nn {

Expected<double> optionalScalarDouble(const std::vector<const Tensor*>& in, size_t i, const std::string& what, double fallback) {
  const Tensor* t = optionalInput(in, i);
  if (!t || t->numElements() == 0) return fallback;
  return scalarDouble(*t, what);
}

Expected<int64_t> optionalScalarInt(const std::vector<const Tensor*>& in, size_t i, const std::string& what, int64_t fallback) {
  const Tensor* t = optionalInput(in, i);
  if (!t || t->numElements() == 0) return fallback;
  return scalarInt(*t, what);
}

Expected<Window> windowGeometry(const ir::Node& node, const Shape& in_spatial, const Shape& kernel, bool ceil_mode,
                                bool has_dilations) {
  const size_t r = in_spatial.size();
  if (r == 0) return Error("input must have at least one spatial dimension");
  if (kernel.size() != r)
    return Error("kernel has " + std::to_string(kernel.size()) + " dims, input has " + std::to_string(r) + " spatial dims");
  Window w;
  w.in = in_spatial;
  w.kernel = kernel;
  for (int64_t k : kernel)
    if (k < 1 || k > kMaxDim) return Error("kernel size " + std::to_string(k) + " is out of range");
  for (int64_t i : in_spatial)
    if (i < 0 || i > kMaxDim) return Error("spatial size " + std::to_string(i) + " is out of range");
  POPRT_ASSIGN_OR_RETURN(w.strides, intsAttr(node, "strides", r, 1, 1, kMaxDim));
  if (has_dilations) {
    POPRT_ASSIGN_OR_RETURN(w.dilations, intsAttr(node, "dilations", r, 1, 1, kMaxDim));
  } else {
    w.dilations.assign(r, 1);
  }
  std::string auto_pad = node.attrString("auto_pad", "NOTSET");
  w.pad_begin.assign(r, 0);
  w.pad_end.assign(r, 0);
  w.out.assign(r, 0);
  if (auto_pad == "NOTSET" || auto_pad.empty()) {
    POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> pads, intsAttr(node, "pads", 2 * r, 0, 0, kMaxDim));
    for (size_t d = 0; d < r; ++d) {
      w.pad_begin[d] = pads[d];
      w.pad_end[d] = pads[d + r];
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < r; ++d) {
      int64_t out = (w.in[d] + w.strides[d] - 1) / w.strides[d];
      int64_t total = std::max<int64_t>((out - 1) * w.strides[d] + w.effectiveKernel(d) - w.in[d], 0);
      w.pad_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end[d] = total - w.pad_begin[d];
    }
  } else if (auto_pad != "VALID") {
    return Error("auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  for (size_t d = 0; d < r; ++d) {
    const int64_t span = w.in[d] + w.pad_begin[d] + w.pad_end[d] - w.effectiveKernel(d);
    if (span < 0)
      return Error("kernel extent " + std::to_string(w.effectiveKernel(d)) + " exceeds padded input size " +
                   std::to_string(w.in[d] + w.pad_begin[d] + w.pad_end[d]) + " in spatial dim " + std::to_string(d));
    int64_t out = span / w.strides[d] + 1;
    if (ceil_mode && span % w.strides[d] != 0) {
      ++out;
      if ((out - 1) * w.strides[d] >= w.in[d] + w.pad_begin[d]) --out;
    }
    w.out[d] = out;
  }
  return w;
}

}  // namespace poprt::ops::nn
