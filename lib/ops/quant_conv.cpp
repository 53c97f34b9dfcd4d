// ConvInteger and QLinearConv: an N-D integer convolution of its own (grouped, strided, dilated,
// padded, auto_pad), accumulating (x - x_zero_point) * (w - w_zero_point) in int64.
#include <algorithm>

#include "lib/ops/quant_util.h"

namespace poprt::ops::quant {
namespace {

constexpr int64_t kMaxAttr = int64_t{1} << 31;  // bound on strides, dilations and pads

}  // namespace

Expected<ConvResult> convInteger(const ir::Node& node, const Tensor& x, int64_t x_zp, const Tensor& w,
                                 const std::vector<int64_t>& w_zp_in) {
  POPRT_TRY(checkQuantInput(x, "x"));
  POPRT_TRY(checkQuantInput(w, "w"));
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  if (xs.size() < 3) return Error("x must have rank >= 3 (N, C, spatial...), got shape " + shapeToString(xs));
  if (ws.size() != xs.size()) return Error("w has shape " + shapeToString(ws) + ", expected rank " + std::to_string(xs.size()));
  const size_t S = xs.size() - 2;
  const int64_t N = xs[0], C = xs[1], M = ws[0], Cg = ws[1];
  const int64_t group = node.attrInt("group", 1);
  if (group < 1 || group > std::max<int64_t>(C, 1)) return Error("attribute 'group' is " + std::to_string(group));
  if (Cg * group != C)
    return Error("w has " + std::to_string(Cg) + " input channels per group, x has " + std::to_string(C) + " channels in " +
                 std::to_string(group) + " groups");
  if (M % group != 0)
    return Error("output channels " + std::to_string(M) + " are not divisible by group " + std::to_string(group));
  Shape kernel(ws.begin() + 2, ws.end());
  for (int64_t k : kernel)
    if (k < 1 || k > kMaxAttr) return Error("w has an invalid kernel shape " + shapeToString(ws));
  if (node.hasAttr("kernel_shape") && node.attrInts("kernel_shape") != kernel)
    return Error("attribute 'kernel_shape' does not match w's shape " + shapeToString(ws));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> strides, intsAttr(node, "strides", S, 1, 1, kMaxAttr));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, intsAttr(node, "dilations", S, 1, 1, kMaxAttr));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> pads, intsAttr(node, "pads", 2 * S, 0, 0, kMaxAttr));
  const std::string auto_pad = node.attrString("auto_pad", "NOTSET");
  ConvResult r;
  r.shape = {N, M};
  std::vector<int64_t> pad_begin(S);
  for (size_t d = 0; d < S; ++d) {
    const int64_t in = xs[2 + d], k = kernel[d], extent = dilations[d] * (k - 1) + 1;
    int64_t out = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out = (in + strides[d] - 1) / strides[d];
      const int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + extent - in);
      pad_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (auto_pad == "VALID" || auto_pad == "NOTSET") {
      const int64_t pb = auto_pad == "VALID" ? 0 : pads[d], pe = auto_pad == "VALID" ? 0 : pads[S + d];
      pad_begin[d] = pb;
      const int64_t padded = in + pb + pe;
      if (padded < extent)
        return Error("kernel extent " + std::to_string(extent) + " exceeds padded input " + std::to_string(padded) +
                     " on spatial axis " + std::to_string(d));
      out = (padded - extent) / strides[d] + 1;
    } else {
      return Error("attribute 'auto_pad' has unknown value '" + auto_pad + "'");
    }
    r.shape.push_back(out);
  }
  POPRT_ASSIGN_OR_RETURN(int64_t total, checkedElementCount(r.shape));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> w_zp, perChannel(w_zp_in, M, "w_zero_point (per output channel)"));

  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> xv, toInt64s(x, "x"));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> wv, toInt64s(w, "w"));
  for (int64_t& v : xv) v -= x_zp;
  const int64_t w_per_m = M == 0 ? 0 : static_cast<int64_t>(wv.size()) / M;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] -= at(w_zp, static_cast<int64_t>(i) / w_per_m);

  // Flat sizes of the spatial parts.
  int64_t in_spatial = 1, out_spatial = 1, k_spatial = 1;
  for (size_t d = 0; d < S; ++d) {
    in_spatial *= xs[2 + d];
    out_spatial *= r.shape[2 + d];
    k_spatial *= kernel[d];
  }
  r.acc.assign(static_cast<size_t>(total), 0);
  const int64_t m_per_group = M / group;
  std::vector<int64_t> opos(S), kpos(S);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t g = m / m_per_group;
      int64_t* out = r.acc.data() + (n * M + m) * out_spatial;
      for (int64_t o = 0; o < out_spatial; ++o) {
        // Output position from the flat index.
        for (size_t d = S, rem = static_cast<size_t>(o); d-- > 0;) {
          opos[d] = static_cast<int64_t>(rem) % r.shape[2 + d];
          rem /= static_cast<size_t>(r.shape[2 + d]);
        }
        int64_t acc = 0;
        for (int64_t kf = 0; kf < k_spatial; ++kf) {
          int64_t rem = kf, in_off = 0;
          bool inside = true;
          for (size_t d = S; d-- > 0;) {
            kpos[d] = rem % kernel[d];
            rem /= kernel[d];
          }
          for (size_t d = 0; d < S && inside; ++d) {
            const int64_t coord = opos[d] * strides[d] - pad_begin[d] + kpos[d] * dilations[d];
            inside = coord >= 0 && coord < xs[2 + d];
            in_off = in_off * xs[2 + d] + coord;
          }
          if (!inside) continue;  // padding: x equals its zero point there
          for (int64_t c = 0; c < Cg; ++c) {
            const int64_t xi = (n * C + g * Cg + c) * in_spatial + in_off;
            const int64_t wi = (m * Cg + c) * k_spatial + kf;
            acc += xv[static_cast<size_t>(xi)] * wv[static_cast<size_t>(wi)];
          }
        }
        out[o] = acc;
      }
    }
  return r;
}

namespace {

Expected<int64_t> scalarZeroPoint(const Tensor* zp, DType want, const std::string& what) {
  if (!zp) return int64_t{0};
  if (zp->dtype() != want)
    return Error(what + " dtype " + std::string(dtypeName(zp->dtype())) + " differs from its input's " +
                 std::string(dtypeName(want)));
  if (zp->numElements() != 1) return Error(what + " must be a scalar, got shape " + shapeToString(zp->shape()));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> v, toInt64s(*zp, what));
  return v[0];
}

Expected<std::vector<int64_t>> channelZeroPoints(const Tensor* zp, DType want, const std::string& what) {
  if (!zp) return std::vector<int64_t>{0};
  if (zp->dtype() != want)
    return Error(what + " dtype " + std::string(dtypeName(zp->dtype())) + " differs from its input's " +
                 std::string(dtypeName(want)));
  if (zp->shape().size() > 1) return Error(what + " must be a scalar or 1-D, got shape " + shapeToString(zp->shape()));
  return toInt64s(*zp, what);
}

Expected<std::vector<Tensor>> evalConvInteger(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0, "x"));
  POPRT_ASSIGN_OR_RETURN(const Tensor* w, requireInput(in, 1, "w"));
  POPRT_ASSIGN_OR_RETURN(int64_t x_zp, scalarZeroPoint(optionalInput(in, 2), x->dtype(), "x_zero_point"));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> w_zp, channelZeroPoints(optionalInput(in, 3), w->dtype(), "w_zero_point"));
  POPRT_ASSIGN_OR_RETURN(ConvResult r, convInteger(node, *x, x_zp, *w, w_zp));
  for (int64_t& v : r.acc) v = static_cast<int32_t>(static_cast<uint32_t>(v));  // int32 wrap-around
  POPRT_ASSIGN_OR_RETURN(Tensor y, fromInts(DType::Int32, r.shape, r.acc));
  return single(std::move(y));
}

// y = saturate(round((acc + B[m]) * x_scale * w_scale[m] / y_scale) + y_zero_point)
Expected<std::vector<Tensor>> evalQLinearConv(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0, "x"));
  POPRT_ASSIGN_OR_RETURN(const Tensor* xs_t, requireInput(in, 1, "x_scale"));
  POPRT_ASSIGN_OR_RETURN(const Tensor* w, requireInput(in, 3, "w"));
  POPRT_ASSIGN_OR_RETURN(const Tensor* ws_t, requireInput(in, 4, "w_scale"));
  POPRT_ASSIGN_OR_RETURN(const Tensor* ys_t, requireInput(in, 6, "y_scale"));
  POPRT_ASSIGN_OR_RETURN(const Tensor* yzp_t, requireInput(in, 7, "y_zero_point"));
  POPRT_ASSIGN_OR_RETURN(int64_t x_zp, scalarZeroPoint(optionalInput(in, 2), x->dtype(), "x_zero_point"));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> w_zp, channelZeroPoints(optionalInput(in, 5), w->dtype(), "w_zero_point"));
  POPRT_ASSIGN_OR_RETURN(ConvResult r, convInteger(node, *x, x_zp, *w, w_zp));
  const int64_t M = r.shape[1];
  POPRT_ASSIGN_OR_RETURN(std::vector<float> x_scale, floats(*xs_t, "x_scale"));
  POPRT_ASSIGN_OR_RETURN(std::vector<float> w_scale, floats(*ws_t, "w_scale"));
  POPRT_ASSIGN_OR_RETURN(std::vector<float> y_scale, floats(*ys_t, "y_scale"));
  if (x_scale.size() != 1) return Error("x_scale must be a scalar");
  if (y_scale.size() != 1) return Error("y_scale must be a scalar");
  POPRT_ASSIGN_OR_RETURN(w_scale, perChannel(std::move(w_scale), M, "w_scale (per output channel)"));
  POPRT_ASSIGN_OR_RETURN(Range range, rangeOf(yzp_t->dtype(), "y_zero_point"));
  if (yzp_t->numElements() != 1) return Error("y_zero_point must be a scalar");
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> yzp, toInt64s(*yzp_t, "y_zero_point"));
  std::vector<int64_t> bias(static_cast<size_t>(M), 0);
  if (const Tensor* b = optionalInput(in, 8)) {
    if (b->dtype() != DType::Int32) return Error("B must be int32, got " + std::string(dtypeName(b->dtype())));
    if (b->shape() != Shape{M})
      return Error("B has shape " + shapeToString(b->shape()) + ", expected [" + std::to_string(M) + "]");
    POPRT_ASSIGN_OR_RETURN(bias, toInt64s(*b, "B"));
  }
  int64_t per_m = 1;  // output elements per (n, m)
  for (size_t d = 2; d < r.shape.size(); ++d) per_m *= r.shape[d];
  std::vector<int64_t> y(r.acc.size());
  for (size_t i = 0; i < y.size(); ++i) {  // not entered when per_m or M is 0
    const int64_t m = (static_cast<int64_t>(i) / per_m) % M;
    const float mult = x_scale[0] * at(w_scale, m) / y_scale[0];
    const float v = static_cast<float>(r.acc[i] + bias[static_cast<size_t>(m)]) * mult;
    y[i] = quantizeValue(static_cast<double>(v), yzp[0], range);
  }
  POPRT_ASSIGN_OR_RETURN(Tensor out, fromInts(yzp_t->dtype(), r.shape, y));
  return single(std::move(out));
}

}  // namespace

void registerConvOps(std::vector<OpDef>& ops) {
  ops.push_back({"ConvInteger", Fp16Policy::TypeAgnostic, LoweringFamily::None, evalConvInteger});
  ops.push_back({"QLinearConv", Fp16Policy::KeepFp32, LoweringFamily::None, evalQLinearConv});
}

}  // namespace poprt::ops::quant
