// Pooling: MaxPool (with Indices), AveragePool, LpPool, their Global* forms, and MaxUnpool.
// Windows are clipped to the input before looping, so huge kernels or pads cost no more than the input.
#include "lib/ops/nn_util.h"

namespace poprt::ops::nn {
namespace {

enum class PoolKind { Max, Avg, Lp };

// Cap on the window taps one pooling node visits, so hostile kernel/pads cannot hang the evaluator.
constexpr double kMaxWork = static_cast<double>(int64_t{1} << 36);

struct PoolSpec {
  PoolKind kind = PoolKind::Max;
  bool count_include_pad = false;
  double p = 2;
  bool column_major_indices = false;  // MaxPool storage_order = 1
};

struct PoolResult {
  std::vector<double> values;
  std::vector<int64_t> indices;
};

// Pools every (n, c) plane of x (shape [N, C, w.in...]) with window geometry w.
PoolResult pool(const std::vector<double>& x, int64_t planes, const Window& w, const PoolSpec& spec) {
  const size_t r = w.rank();
  int64_t plane_in = 1, plane_out = 1;
  for (size_t d = 0; d < r; ++d) {
    plane_in *= w.in[d];
    plane_out *= w.out[d];
  }
  // Row-major strides for the flat offset, and the strides Indices reports (storage_order).
  std::vector<int64_t> stride(r, 1), index_stride(r, 1);
  for (size_t d = r - 1; d-- > 0;) stride[d] = stride[d + 1] * w.in[d + 1];
  for (size_t d = 1; d < r; ++d) index_stride[d] = index_stride[d - 1] * w.in[d - 1];
  if (!spec.column_major_indices) index_stride = stride;
  // Per dim and output index: the window start, the taps [k_lo, k_hi) that fall inside the input,
  // and the tap count inside the padded input (for count_include_pad).
  std::vector<std::vector<int64_t>> first(r), k_lo(r), k_hi(r), padded_count(r);
  for (size_t d = 0; d < r; ++d) {
    const size_t n = static_cast<size_t>(w.out[d]);
    first[d].resize(n);
    k_lo[d].resize(n);
    k_hi[d].resize(n);
    padded_count[d].resize(n);
    for (int64_t o = 0; o < w.out[d]; ++o) {
      const int64_t start = o * w.strides[d] - w.pad_begin[d];
      first[d][o] = start;
      k_lo[d][o] = start >= 0 ? 0 : std::min(w.kernel[d], (-start + w.dilations[d] - 1) / w.dilations[d]);
      k_hi[d][o] = start >= w.in[d] ? 0 : std::min(w.kernel[d], (w.in[d] - 1 - start) / w.dilations[d] + 1);
      if (k_hi[d][o] < k_lo[d][o]) k_hi[d][o] = k_lo[d][o];
      const int64_t hi = w.in[d] + w.pad_end[d] - 1 - start;
      padded_count[d][o] = hi < 0 ? 0 : std::min(w.kernel[d], hi / w.dilations[d] + 1);
    }
  }
  PoolResult res;
  res.values.assign(static_cast<size_t>(planes * plane_out), 0.0);
  if (spec.kind == PoolKind::Max) res.indices.assign(res.values.size(), -1);
  std::vector<int64_t> oidx(r), tidx(r), lo(r), hi(r), start(r);
  for (int64_t pl = 0; pl < planes; ++pl) {
    const double* src = x.data() + pl * plane_in;
    std::fill(oidx.begin(), oidx.end(), 0);
    for (int64_t p = 0; p < plane_out; ++p) {
      bool empty = false;
      double count_pad = 1;
      for (size_t d = 0; d < r; ++d) {
        lo[d] = k_lo[d][oidx[d]];
        hi[d] = k_hi[d][oidx[d]];
        start[d] = first[d][oidx[d]];
        empty = empty || lo[d] >= hi[d];
        count_pad *= static_cast<double>(padded_count[d][oidx[d]]);
      }
      double acc = spec.kind == PoolKind::Max ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t best = -1, count = 0;
      if (!empty) {
        tidx = lo;
        while (true) {
          int64_t off = 0, ioff = 0;
          for (size_t d = 0; d < r; ++d) {
            const int64_t c = start[d] + tidx[d] * w.dilations[d];
            off += c * stride[d];
            ioff += c * index_stride[d];
          }
          const double v = src[off];
          switch (spec.kind) {
            case PoolKind::Max:
              if (best < 0 || v > acc || (std::isnan(v) && !std::isnan(acc))) {
                acc = v;
                best = ioff;
              }
              break;
            case PoolKind::Avg: acc += v; break;
            case PoolKind::Lp: acc += std::pow(std::fabs(v), spec.p); break;
          }
          ++count;
          size_t d = r;
          while (d-- > 0) {
            if (++tidx[d] < hi[d]) break;
            tidx[d] = lo[d];
          }
          if (d == static_cast<size_t>(-1)) break;
        }
      }
      const size_t out = static_cast<size_t>(pl * plane_out + p);
      switch (spec.kind) {
        case PoolKind::Max:
          res.values[out] = acc;
          res.indices[out] = best < 0 ? -1 : pl * plane_in + best;
          break;
        case PoolKind::Avg: res.values[out] = acc / (spec.count_include_pad ? count_pad : static_cast<double>(count)); break;
        case PoolKind::Lp: res.values[out] = std::pow(acc, 1.0 / spec.p); break;
      }
      for (size_t d = r; d-- > 0;) {
        if (++oidx[d] < w.out[d]) break;
        oidx[d] = 0;
      }
    }
  }
  return res;
}

Expected<double> lpOrder(const ir::Node& node) {
  double p = node.attrInt("p", 2);
  if (node.hasAttr("p") && std::holds_alternative<float>(node.attributes.at("p").value)) p = node.attrFloat("p", 2.0f);
  if (!(p > 0) || !std::isfinite(p)) return Error("p must be positive");
  return p;
}

Expected<std::vector<Tensor>> evalPool(PoolKind kind, const ir::Node& node, const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  if (kind == PoolKind::Max) {
    if (!isFloatingPoint(x->dtype()) && !isInteger(x->dtype()))
      return Error("dtype " + std::string(dtypeName(x->dtype())) + " is not supported");
  } else {
    POPRT_TRY(requireFloat(*x, "X"));
  }
  const Shape& xs = x->shape();
  if (xs.size() < 3) return Error("X must have rank >= 3 (N, C, spatial...), got " + shapeToString(xs));
  const size_t r = xs.size() - 2;
  if (!node.hasAttr("kernel_shape")) return Error("attribute kernel_shape is required");
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, intsAttr(node, "kernel_shape", r, 1, 1, kMaxDim));
  const bool ceil_mode = node.attrInt("ceil_mode", 0) != 0;
  PoolSpec spec;
  spec.kind = kind;
  spec.count_include_pad = node.attrInt("count_include_pad", 0) != 0;
  int64_t storage_order = node.attrInt("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) return Error("storage_order must be 0 or 1");
  spec.column_major_indices = storage_order == 1;
  if (kind == PoolKind::Lp) { POPRT_ASSIGN_OR_RETURN(spec.p, lpOrder(node)); }
  POPRT_ASSIGN_OR_RETURN(Window w, windowGeometry(node, Shape(xs.begin() + 2, xs.end()), kernel, ceil_mode));
  Shape ys{xs[0], xs[1]};
  ys.insert(ys.end(), w.out.begin(), w.out.end());
  POPRT_ASSIGN_OR_RETURN(int64_t ny, checkedElementCount(ys));
  // Work: every output element visits its window's taps inside the input.
  double work = static_cast<double>(xs[0]) * static_cast<double>(xs[1]);
  for (size_t d = 0; d < r; ++d) work *= static_cast<double>(w.out[d]) * static_cast<double>(std::min(w.kernel[d], w.in[d]));
  if (ny > 0 && work > kMaxWork) return Error("pooling windows are too large (more than 2^36 taps in total)");
  POPRT_ASSIGN_OR_RETURN(std::vector<double> xv, toDoubles(*x));
  PoolResult res = pool(xv, xs[0] * xs[1], w, spec);
  std::vector<Tensor> outs;
  POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(x->dtype(), ys, res.values, IntRounding::Nearest));
  outs.push_back(std::move(y));
  if (kind == PoolKind::Max && node.outputs().size() > 1) outs.push_back(int64Tensor(res.indices, ys));
  return outs;
}

Expected<std::vector<Tensor>> evalGlobalPool(PoolKind kind, const ir::Node& node, const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_TRY(requireFloat(*x, "X"));
  const Shape& xs = x->shape();
  if (xs.size() < 2) return Error("X must have rank >= 2 (N, C, spatial...), got " + shapeToString(xs));
  double p = 2;
  if (kind == PoolKind::Lp) { POPRT_ASSIGN_OR_RETURN(p, lpOrder(node)); }
  int64_t plane = 1;
  for (size_t d = 2; d < xs.size(); ++d) plane *= xs[d];
  const int64_t planes = xs[0] * xs[1];
  POPRT_ASSIGN_OR_RETURN(std::vector<double> xv, toDoubles(*x));
  std::vector<double> y(static_cast<size_t>(planes));
  for (int64_t pl = 0; pl < planes; ++pl) {
    const double* s = xv.data() + pl * plane;
    double acc = kind == PoolKind::Max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i = 0; i < plane; ++i) {
      switch (kind) {
        case PoolKind::Max:
          if (s[i] > acc || std::isnan(s[i])) acc = std::isnan(acc) ? acc : s[i];
          break;
        case PoolKind::Avg: acc += s[i]; break;
        case PoolKind::Lp: acc += std::pow(std::fabs(s[i]), p); break;
      }
    }
    if (kind == PoolKind::Avg) acc /= static_cast<double>(plane);
    if (kind == PoolKind::Lp) acc = std::pow(acc, 1.0 / p);
    y[pl] = acc;
  }
  Shape ys(xs.size(), 1);
  ys[0] = xs[0];
  ys[1] = xs[1];
  POPRT_ASSIGN_OR_RETURN(Tensor out, fromDoubles(x->dtype(), ys, y, IntRounding::Nearest));
  return single(std::move(out));
}

Expected<std::vector<Tensor>> evalMaxUnpool(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* ind, requireInput(in, 1));
  const Tensor* shape_in = optionalInput(in, 2);
  const Shape& xs = x->shape();
  if (xs.size() < 3) return Error("X must have rank >= 3 (N, C, spatial...), got " + shapeToString(xs));
  if (ind->shape() != xs) return Error("I of shape " + shapeToString(ind->shape()) + " must match X " + shapeToString(xs));
  const size_t r = xs.size() - 2;
  if (!node.hasAttr("kernel_shape")) return Error("attribute kernel_shape is required");
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, intsAttr(node, "kernel_shape", r, 1, 1, kMaxDim));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> strides, intsAttr(node, "strides", r, 1, 1, kMaxDim));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> pads, intsAttr(node, "pads", 2 * r, 0, 0, kMaxDim));
  // Indices address the inferred output; an explicit output_shape pads it at the end of each dim.
  Shape inferred{xs[0], xs[1]};
  for (size_t d = 0; d < r; ++d) {
    if (xs[d + 2] > kMaxDim) return Error("spatial size is out of range");
    inferred.push_back((xs[d + 2] - 1) * strides[d] + kernel[d] - pads[d] - pads[d + r]);
  }
  POPRT_ASSIGN_OR_RETURN(int64_t ni, checkedElementCount(inferred));
  Shape ys = inferred;
  if (shape_in) {
    POPRT_ASSIGN_OR_RETURN(ys, toInt64s(*shape_in));
    if (ys.size() != xs.size()) return Error("output_shape must have " + std::to_string(xs.size()) + " values");
    for (size_t d = 0; d < ys.size(); ++d)
      if (ys[d] < inferred[d] || (d < 2 && ys[d] != inferred[d]))
        return Error("output_shape " + shapeToString(ys) + " is smaller than the unpooled shape " + shapeToString(inferred));
  }
  POPRT_ASSIGN_OR_RETURN(int64_t ny, checkedElementCount(ys));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> xv, toDoubles(*x));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> iv, toInt64s(*ind));
  std::vector<double> yi(static_cast<size_t>(ni), 0.0);
  for (size_t i = 0; i < iv.size(); ++i) {
    if (iv[i] < 0 || iv[i] >= ni)
      return Error("index " + std::to_string(iv[i]) + " is out of range for unpooled shape " + shapeToString(inferred));
    yi[static_cast<size_t>(iv[i])] = xv[i];
  }
  std::vector<double> y(static_cast<size_t>(ny), 0.0);
  std::vector<int64_t> idx(inferred.size(), 0);
  for (int64_t i = 0; i < ni; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < ys.size(); ++d) off = off * ys[d] + idx[d];
    y[static_cast<size_t>(off)] = yi[static_cast<size_t>(i)];
    for (size_t d = inferred.size(); d-- > 0;) {
      if (++idx[d] < inferred[d]) break;
      idx[d] = 0;
    }
  }
  POPRT_ASSIGN_OR_RETURN(Tensor out, fromDoubles(x->dtype(), ys, y, IntRounding::Nearest));
  return single(std::move(out));
}

template <PoolKind K>
Expected<std::vector<Tensor>> poolOp(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  return evalPool(K, node, in);
}
template <PoolKind K>
Expected<std::vector<Tensor>> globalPoolOp(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  return evalGlobalPool(K, node, in);
}

}  // namespace

void registerNnPoolOps(std::vector<OpDef>& ops) {
  ops.push_back({"MaxPool", Fp16Policy::Convert, LoweringFamily::Pool, poolOp<PoolKind::Max>});
  ops.push_back({"AveragePool", Fp16Policy::AccumulateFp32, LoweringFamily::Pool, poolOp<PoolKind::Avg>});
  ops.push_back({"LpPool", Fp16Policy::AccumulateFp32, LoweringFamily::None, poolOp<PoolKind::Lp>});
  ops.push_back({"GlobalMaxPool", Fp16Policy::Convert, LoweringFamily::Pool, globalPoolOp<PoolKind::Max>});
  ops.push_back({"GlobalAveragePool", Fp16Policy::AccumulateFp32, LoweringFamily::Pool, globalPoolOp<PoolKind::Avg>});
  ops.push_back({"GlobalLpPool", Fp16Policy::AccumulateFp32, LoweringFamily::None, globalPoolOp<PoolKind::Lp>});
  ops.push_back({"MaxUnpool", Fp16Policy::TypeAgnostic, LoweringFamily::None, evalMaxUnpool});
}

}  // namespace poprt::ops::nn
