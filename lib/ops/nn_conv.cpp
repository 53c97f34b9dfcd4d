// Conv and ConvTranspose (1-D, 2-D, 3-D..., groups, strides, dilations, pads, auto_pad, bias).
// Both are lowered to im2col/col2im and one double-precision GEMM per (batch, group) with Eigen
// (float32 for a context that asks for float32 sums), so ResNet-sized layers stay fast; the column
// buffer is built in chunks of bounded size, which Conv runs on all the host's cores.
#include <Eigen/Dense>

#include "lib/ops/nn_util.h"
#include "lib/support/gemm.h"
#include "lib/support/parallel.h"

namespace poprt::ops::nn {
namespace {

template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S>
using ConstMapOf = Eigen::Map<const Mat<S>>;
template <class S>
using StridedMapOf = Eigen::Map<Mat<S>, 0, Eigen::OuterStride<>>;
using RowMat = Mat<double>;
using ConstMap = ConstMapOf<double>;

// A tensor's values as S (double for any dtype; float for float32 tensors only).
template <class S>
Expected<std::vector<S>> valuesAs(const Tensor& t) {
  if constexpr (std::is_same_v<S, float>) {
    auto d = t.data<float>();
    return std::vector<float>(d.begin(), d.end());
  } else {
    return toDoubles(t);
  }
}

// Elements per column chunk (rows x positions) of the im2col buffer.
constexpr int64_t kColBudget = int64_t{1} << 22;

// For kernel offsets k (flat over w.kernel) and window positions p in [p0, p1) (flat over w.out),
// the flat offset in the w.in grid of the element the kernel tap reads, or -1 if it is padding.
// Result is K x (p1 - p0), row-major.
std::vector<int64_t> tapOffsets(const Window& w, int64_t p0, int64_t p1) {
  const size_t r = w.rank();
  const int64_t K = shapeProduct(w.kernel), np = p1 - p0;
  std::vector<int64_t> starts(static_cast<size_t>(np) * r);
  std::vector<int64_t> idx(r);
  int64_t rem = p0;
  for (size_t d = r; d-- > 0;) {
    idx[d] = rem % w.out[d];
    rem /= w.out[d];
  }
  for (int64_t j = 0; j < np; ++j) {
    for (size_t d = 0; d < r; ++d) starts[j * r + d] = idx[d] * w.strides[d] - w.pad_begin[d];
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < w.out[d]) break;
      idx[d] = 0;
    }
  }
  std::vector<int64_t> offsets(static_cast<size_t>(K * np));
  std::vector<int64_t> kidx(r, 0);
  for (int64_t k = 0; k < K; ++k) {
    int64_t* row = offsets.data() + k * np;
    for (int64_t j = 0; j < np; ++j) {
      int64_t off = 0;
      bool valid = true;
      for (size_t d = 0; d < r; ++d) {
        int64_t c = starts[j * r + d] + kidx[d] * w.dilations[d];
        if (c < 0 || c >= w.in[d]) {
          valid = false;
          break;
        }
        off = off * w.in[d] + c;
      }
      row[j] = valid ? off : -1;
    }
    for (size_t d = r; d-- > 0;) {
      if (++kidx[d] < w.kernel[d]) break;
      kidx[d] = 0;
    }
  }
  return offsets;
}

// Positions per chunk so that rows x positions stays within the budget (at least one position).
int64_t chunkSize(int64_t rows, int64_t positions) {
  int64_t np = std::max<int64_t>(1, kColBudget / std::max<int64_t>(rows, 1));
  return std::min(np, std::max<int64_t>(positions, 1));
}

struct ConvArgs {
  const Tensor* x;
  const Tensor* w;
  const Tensor* b;
  int64_t group;
};

Expected<ConvArgs> convInputs(const ir::Node& node, const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* w, requireInput(in, 1));
  const Tensor* b = optionalInput(in, 2);
  POPRT_TRY(requireFloat(*x, "X"));
  if (w->dtype() != x->dtype() || (b && b->dtype() != x->dtype())) return Error("X, W and B must have the same dtype");
  if (x->shape().size() < 3) return Error("X must have rank >= 3 (N, C, spatial...), got " + shapeToString(x->shape()));
  if (w->shape().size() != x->shape().size())
    return Error("W of shape " + shapeToString(w->shape()) + " does not match the rank of X " + shapeToString(x->shape()));
  int64_t group = node.attrInt("group", 1);
  if (group < 1 || group > kMaxDim) return Error("group " + std::to_string(group) + " must be >= 1");
  Shape kernel(w->shape().begin() + 2, w->shape().end());
  if (node.hasAttr("kernel_shape") && node.attrInts("kernel_shape") != kernel)
    return Error("kernel_shape does not match the spatial dims of W " + shapeToString(w->shape()));
  return ConvArgs{x, w, b, group};
}

// Y = W * im2col(X) (+ B) summed in S: double, or float for float32 tensors when the context
// asks for the model's own precision.
template <class S>
Expected<Tensor> convolve(const ConvArgs& a, const Window& win, const Shape& ys, int64_t ny) {
  const Shape& xs = a.x->shape();
  const Shape& ws = a.w->shape();
  const int64_t N = xs[0], C = xs[1], M = ws[0], G = a.group;
  POPRT_ASSIGN_OR_RETURN(std::vector<S> x, valuesAs<S>(*a.x));
  POPRT_ASSIGN_OR_RETURN(std::vector<S> w, valuesAs<S>(*a.w));
  std::vector<S> y(static_cast<size_t>(ny), S(0));
  const int64_t Cg = C / G, Mg = M / G, K = shapeProduct(win.kernel), P = shapeProduct(win.out), plane = shapeProduct(win.in);
  const int64_t rows = Cg * K;
  if (ny > 0 && rows > 0) {
    // Chunks of output positions, at least one per core when the conv is big enough to share:
    // each writes its own columns of y.
    const int64_t parts = parallelParts(N * M * P * rows, P);
    const int64_t np_max = std::min(chunkSize(rows, P), (P + parts - 1) / parts);
    parallelFor((P + np_max - 1) / np_max, [&](int64_t chunk) {
      const int64_t p0 = chunk * np_max, p1 = std::min(P, p0 + np_max), np = p1 - p0;
      std::vector<int64_t> offs = tapOffsets(win, p0, p1);
      std::vector<S> col(static_cast<size_t>(rows * np), S(0));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t g = 0; g < G; ++g) {
          for (int64_t c = 0; c < Cg; ++c) {
            const S* img = x.data() + ((n * C) + g * Cg + c) * plane;
            for (int64_t k = 0; k < K; ++k) {
              const int64_t* o = offs.data() + k * np;
              S* dst = col.data() + (c * K + k) * np;
              for (int64_t j = 0; j < np; ++j) dst[j] = o[j] >= 0 ? img[o[j]] : S(0);
            }
          }
          S* yb = y.data() + (n * M + g * Mg) * P + p0;  // rows P apart
          if constexpr (std::is_same_v<S, float>) {
            gemm(w.data() + g * Mg * rows, Mg, rows, col.data(), np, np, yb, P);  // the faster float kernel
          } else {
            StridedMapOf<S>(yb, Mg, np, Eigen::OuterStride<>(P)).noalias() =
                ConstMapOf<S>(w.data() + g * Mg * rows, Mg, rows) * ConstMapOf<S>(col.data(), rows, np);
          }
        }
    });
  }
  if (a.b) {
    POPRT_ASSIGN_OR_RETURN(std::vector<S> b, valuesAs<S>(*a.b));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t p = 0; p < P; ++p) y[(n * M + m) * P + p] += b[m];
  }
  if constexpr (std::is_same_v<S, float>) {
    Tensor out(DType::Float, ys);
    std::copy(y.begin(), y.end(), out.data<float>().begin());
    return out;
  } else {
    return fromDoubles(a.x->dtype(), ys, y, IntRounding::Nearest);
  }
}

Expected<std::vector<Tensor>> evalConv(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(ConvArgs a, convInputs(node, in));
  const Shape& xs = a.x->shape();
  const Shape& ws = a.w->shape();
  const int64_t N = xs[0], C = xs[1], M = ws[0], G = a.group;
  if (C % G != 0 || M % G != 0 || ws[1] * G != C)
    return Error("X " + shapeToString(xs) + " and W " + shapeToString(ws) + " do not match group " + std::to_string(G));
  if (a.b && (a.b->shape().size() != 1 || a.b->shape()[0] != M))
    return Error("B must have shape [" + std::to_string(M) + "], got " + shapeToString(a.b->shape()));
  POPRT_ASSIGN_OR_RETURN(Window win,
                         windowGeometry(node, Shape(xs.begin() + 2, xs.end()), Shape(ws.begin() + 2, ws.end()), false));
  Shape ys{N, M};
  ys.insert(ys.end(), win.out.begin(), win.out.end());
  POPRT_ASSIGN_OR_RETURN(int64_t ny, checkedElementCount(ys));
  const bool in_float32 =
      ctx.float32Sums() && a.x->dtype() == DType::Float && a.w->dtype() == DType::Float && (!a.b || a.b->dtype() == DType::Float);
  POPRT_ASSIGN_OR_RETURN(Tensor out, in_float32 ? convolve<float>(a, win, ys, ny) : convolve<double>(a, win, ys, ny));
  return single(std::move(out));
}

int64_t floorDiv2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

Expected<std::vector<Tensor>> evalConvTranspose(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(ConvArgs a, convInputs(node, in));
  const Shape& xs = a.x->shape();
  const Shape& ws = a.w->shape();
  const int64_t N = xs[0], C = xs[1], G = a.group;
  if (ws[0] != C || C % G != 0) return Error("W " + shapeToString(ws) + " does not match X " + shapeToString(xs) + " and group");
  const int64_t Mg = ws[1], M = Mg * G, Cg = C / G;
  if (a.b && (a.b->shape().size() != 1 || a.b->shape()[0] != M))
    return Error("B must have shape [" + std::to_string(M) + "], got " + shapeToString(a.b->shape()));
  const size_t r = xs.size() - 2;
  // The geometry of the equivalent Conv: its input is our output, its windows our input positions.
  Window win;
  win.kernel.assign(ws.begin() + 2, ws.end());
  win.out.assign(xs.begin() + 2, xs.end());
  for (int64_t k : win.kernel)
    if (k < 1 || k > kMaxDim) return Error("kernel size " + std::to_string(k) + " is out of range");
  for (int64_t i : win.out)
    if (i > kMaxDim) return Error("spatial size " + std::to_string(i) + " is out of range");
  POPRT_ASSIGN_OR_RETURN(win.strides, intsAttr(node, "strides", r, 1, 1, kMaxDim));
  POPRT_ASSIGN_OR_RETURN(win.dilations, intsAttr(node, "dilations", r, 1, 1, kMaxDim));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> out_pad, intsAttr(node, "output_padding", r, 0, 0, kMaxDim));
  win.pad_begin.assign(r, 0);
  win.pad_end.assign(r, 0);
  win.in.assign(r, 0);
  const std::string auto_pad = node.attrString("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && !auto_pad.empty() && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
    return Error("auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  std::vector<int64_t> out_shape = node.attrInts("output_shape");
  if (!out_shape.empty() && out_shape.size() != r && out_shape.size() != r + 2)
    return Error("output_shape has " + std::to_string(out_shape.size()) + " values, expected " + std::to_string(r));
  if (out_shape.size() == r + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  std::vector<int64_t> pads;
  if (out_shape.empty() && !same && auto_pad != "VALID") {
    POPRT_ASSIGN_OR_RETURN(pads, intsAttr(node, "pads", 2 * r, 0, 0, kMaxDim));
  }
  for (size_t d = 0; d < r; ++d) {
    const int64_t full = win.strides[d] * (win.out[d] - 1) + out_pad[d] + win.effectiveKernel(d);
    if (!out_shape.empty() || same) {
      int64_t target = same ? win.out[d] * win.strides[d] : out_shape[d];
      if (target < 0 || target > kMaxDim) return Error("output_shape value " + std::to_string(target) + " is out of range");
      int64_t total = full - target;
      if (same) total = std::max<int64_t>(total, 0);
      // Spec: SAME_UPPER puts the odd padding at the end, otherwise at the start (floor division as in numpy).
      win.pad_begin[d] = auto_pad == "SAME_UPPER" ? floorDiv2(total) : total - floorDiv2(total);
      win.in[d] = target;
    } else if (!pads.empty()) {
      win.pad_begin[d] = pads[d];
      win.in[d] = full - pads[d] - pads[d + r];
    } else {
      win.in[d] = full;
    }
    if (win.in[d] < 0) return Error("pads exceed the output size in spatial dim " + std::to_string(d));
  }
  Shape ys{N, M};
  ys.insert(ys.end(), win.in.begin(), win.in.end());
  POPRT_ASSIGN_OR_RETURN(int64_t ny, checkedElementCount(ys));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> x, toDoubles(*a.x));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> w, toDoubles(*a.w));
  std::vector<double> y(static_cast<size_t>(ny), 0.0);
  const int64_t K = shapeProduct(win.kernel), Pin = shapeProduct(win.out), plane = shapeProduct(win.in), rows = Mg * K;
  if (ny > 0 && Pin > 0 && rows > 0) {
    const int64_t np_max = chunkSize(rows, Pin);
    RowMat col;
    for (int64_t p0 = 0; p0 < Pin; p0 += np_max) {
      const int64_t p1 = std::min(Pin, p0 + np_max), np = p1 - p0;
      std::vector<int64_t> offs = tapOffsets(win, p0, p1);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t g = 0; g < G; ++g) {
          ConstMap wg(w.data() + g * Cg * rows, Cg, rows);
          Eigen::Map<const RowMat, 0, Eigen::OuterStride<>> xg(x.data() + (n * C + g * Cg) * Pin + p0, Cg, np,
                                                               Eigen::OuterStride<>(Pin));
          col.noalias() = wg.transpose() * xg;
          for (int64_t m = 0; m < Mg; ++m) {
            double* img = y.data() + (n * M + g * Mg + m) * plane;
            for (int64_t k = 0; k < K; ++k) {
              const int64_t* o = offs.data() + k * np;
              const double* src = col.data() + (m * K + k) * np;
              for (int64_t j = 0; j < np; ++j)
                if (o[j] >= 0) img[o[j]] += src[j];
            }
          }
        }
    }
  }
  if (a.b) {
    POPRT_ASSIGN_OR_RETURN(std::vector<double> b, toDoubles(*a.b));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t p = 0; p < plane; ++p) y[(n * M + m) * plane + p] += b[m];
  }
  POPRT_ASSIGN_OR_RETURN(Tensor out, fromDoubles(a.x->dtype(), ys, y, IntRounding::Nearest));
  return single(std::move(out));
}

}  // namespace

void registerNnConvOps(std::vector<OpDef>& ops) {
  ops.push_back({"Conv", Fp16Policy::AccumulateFp32, LoweringFamily::Conv, evalConv});
  ops.push_back({"ConvTranspose", Fp16Policy::AccumulateFp32, LoweringFamily::None, evalConvTranspose});
}

}  // namespace poprt::ops::nn
