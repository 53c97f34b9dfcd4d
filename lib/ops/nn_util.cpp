// Shared helpers of the nn op family (see nn_util.h).
#include "lib/ops/nn_util.h"


namespace poprt::ops::nn {

Expected<int64_t> checkedCount(const Shape& shape, const std::string& what) {
  auto n = checkedNumElements(shape, kMaxElements);
  if (!n.ok()) return Error(what + " of shape " + shapeToString(shape) + " is too large or invalid");
  return n;
}

Expected<Tensor> tensorFromDoubles(DType dtype, const Shape& shape, const std::vector<double>& values) {
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedCount(shape, "result"));
  if (static_cast<int64_t>(values.size()) != n) return Error("internal: value count mismatch");
  Tensor t(dtype, shape);
  POPRT_TRY(dispatchNumeric(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto d = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) d[i] = castFromDouble<T>(values[i]);
  }));
  return t;
}

Expected<const Tensor*> needInput(const std::vector<const Tensor*>& in, size_t i) {
  if (i >= in.size() || !in[i]) return Error("input " + std::to_string(i) + " is required");
  return in[i];
}

Expected<int64_t> normAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Tensor makeInt64Tensor(const std::vector<int64_t>& values, Shape shape) {
  Tensor t(DType::Int64, std::move(shape));
  std::copy(values.begin(), values.end(), t.data<int64_t>().begin());
  return t;
}

std::vector<Tensor> oneOutput(Tensor t) {
  std::vector<Tensor> v;
  v.push_back(std::move(t));
  return v;
}

Expected<std::vector<double>> doublesOf(const Tensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numElements()));
  POPRT_TRY(dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (T v : t.data<T>()) out.push_back(static_cast<double>(toCompute(v)));
  }));
  return out;
}

Expected<std::vector<int64_t>> intsOf(const Tensor& t) {
  std::vector<int64_t> out;
  if (!isInteger(t.dtype())) return Error("expected an integer tensor, got " + std::string(dtypeName(t.dtype())));
  POPRT_TRY(dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>)
      for (T v : t.data<T>()) out.push_back(static_cast<int64_t>(v));
  }));
  return out;
}

Status requireFloat(const Tensor& t, const std::string& what) {
  if (!isFloatingPoint(t.dtype()))
    return Error(what + " must be a floating-point tensor, got " + std::string(dtypeName(t.dtype())));
  return okStatus();
}

Expected<double> scalarDouble(const std::vector<const Tensor*>& in, size_t i, double fallback) {
  if (i >= in.size() || !in[i]) return fallback;
  if (in[i]->numElements() == 0) return fallback;
  if (in[i]->numElements() != 1) return Error("input " + std::to_string(i) + " must be a scalar");
  POPRT_ASSIGN_OR_RETURN(std::vector<double> v, doublesOf(*in[i]));
  return v[0];
}

Expected<int64_t> scalarInt(const std::vector<const Tensor*>& in, size_t i, int64_t fallback) {
  if (i >= in.size() || !in[i]) return fallback;
  if (in[i]->numElements() == 0) return fallback;
  if (in[i]->numElements() != 1) return Error("input " + std::to_string(i) + " must be a scalar");
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> v, intsOf(*in[i]));
  return v[0];
}

Expected<std::vector<int64_t>> intsAttr(const ir::Node& node, const std::string& name, size_t size, int64_t fill,
                                        int64_t lo, int64_t hi) {
  std::vector<int64_t> v = node.attrInts(name, std::vector<int64_t>(size, fill));
  if (v.size() != size)
    return Error("attribute " + name + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(size));
  for (int64_t x : v)
    if (x < lo || x > hi)
      return Error("attribute " + name + " value " + std::to_string(x) + " is out of range [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "]");
  return v;
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
