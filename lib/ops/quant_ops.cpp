// Quantization op family of the reference evaluator (see registry.h): QuantizeLinear,
// DequantizeLinear (per tensor, and per axis from opset 13), DynamicQuantizeLinear, MatMulInteger
// and QLinearMatMul; ConvInteger and QLinearConv are in quant_conv.cpp. Rounding is half to even
// and results saturate to the output type. Scale arithmetic is in float, as the spec's numpy
// reference and ONNX Runtime do.
#include <algorithm>
#include <limits>

#include "lib/ops/broadcast.h"
#include "lib/ops/quant_util.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops::quant {

// ---- helpers (declared in quant_util.h) --------------------------------------------------------

Expected<Range> rangeOf(DType t, const std::string& what) {
  switch (t) {
    case DType::Int8: return Range{-128, 127};
    case DType::UInt8: return Range{0, 255};
    case DType::Int16: return Range{-32768, 32767};
    case DType::UInt16: return Range{0, 65535};
    case DType::Int32: return Range{std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default: return Error(what + " has unsupported dtype " + std::string(dtypeName(t)));
  }
}

Expected<std::vector<float>> floats(const Tensor& t, const std::string& what) {
  POPRT_TRY(requireFloat(t, what));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> v, toDoubles(t));
  return std::vector<float>(v.begin(), v.end());  // exact: the values came from a float type
}

Expected<Tensor> fromInts(DType dtype, const Shape& shape, const std::vector<int64_t>& values) {
  POPRT_ASSIGN_OR_RETURN(Tensor t, makeOutput(dtype, shape));
  if (!isInteger(dtype)) return Error("internal: integer output of dtype " + std::string(dtypeName(dtype)));
  if (static_cast<int64_t>(values.size()) != t.numElements()) return Error("internal: value count mismatch");
  POPRT_TRY(dispatchNumeric(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      auto d = t.data<T>();
      for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<T>(values[i]);
    }
  }));
  return t;
}

namespace {

// ---- QuantizeLinear / DequantizeLinear ---------------------------------------------------------

// Where the per-channel parameters apply: element i uses channel (i / inner) % channels.
struct Channels {
  int64_t channels = 1, inner = 1;
  int64_t of(int64_t i) const { return channels == 1 ? 0 : (i / inner) % channels; }
};

// Checks scale (and zero point) against x: one value per tensor, or (opset >= 13) a 1-D tensor
// with one value per slice along 'axis'.
Expected<Channels> channelsOf(const ir::Node& node, const Tensor& x, const Tensor& scale, const Tensor* zp, EvalContext& ctx) {
  Channels c;
  if (zp && zp->shape() != scale.shape() && !(zp->numElements() == 1 && scale.numElements() == 1))
    return Error("zero point shape " + shapeToString(zp->shape()) + " differs from scale shape " + shapeToString(scale.shape()));
  if (scale.numElements() == 1) return c;
  if (ctx.opset() < 13) return Error("scale must be a scalar before opset 13, got shape " + shapeToString(scale.shape()));
  if (scale.shape().size() != 1) return Error("scale must be a scalar or 1-D, got shape " + shapeToString(scale.shape()));
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  POPRT_ASSIGN_OR_RETURN(const int64_t axis, normalizeAxis(node.attrInt("axis", 1), rank));
  if (scale.shape()[0] != x.shape()[axis])
    return Error("scale has " + std::to_string(scale.shape()[0]) + " values for axis " + std::to_string(axis) + " of size " +
                 std::to_string(x.shape()[axis]));
  c.channels = scale.shape()[0];
  for (size_t d = static_cast<size_t>(axis) + 1; d < x.shape().size(); ++d) c.inner *= x.shape()[d];
  return c;
}

Expected<std::vector<Tensor>> evalQuantizeLinear(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0, "x"));
  POPRT_ASSIGN_OR_RETURN(const Tensor* scale, requireInput(in, 1, "y_scale"));
  const Tensor* zp = optionalInput(in, 2);
  POPRT_ASSIGN_OR_RETURN(Channels ch, channelsOf(node, *x, *scale, zp, ctx));
  POPRT_ASSIGN_OR_RETURN(std::vector<float> s, floats(*scale, "y_scale"));
  const DType out_type = zp ? zp->dtype() : DType::UInt8;
  if (out_type == DType::Int32) return Error("y_zero_point must be int8 or uint8, got int32");
  POPRT_ASSIGN_OR_RETURN(Range range, rangeOf(out_type, "y_zero_point"));
  std::vector<int64_t> z(s.size(), 0);
  if (zp) { POPRT_ASSIGN_OR_RETURN(z, toInt64s(*zp, "y_zero_point")); }
  if (z.size() != s.size()) return Error("zero point and scale differ in size");
  std::vector<int64_t> y(static_cast<size_t>(x->numElements()));
  if (isFloatingPoint(x->dtype()) && x->dtype() != DType::Double) {
    POPRT_ASSIGN_OR_RETURN(std::vector<float> xv, floats(*x, "x"));
    for (size_t i = 0; i < xv.size(); ++i) {
      const int64_t c = ch.of(static_cast<int64_t>(i));
      y[i] = quantizeValue(static_cast<double>(xv[i] / s[static_cast<size_t>(c)]), z[static_cast<size_t>(c)], range);
    }
  } else if (x->dtype() == DType::Double || x->dtype() == DType::Int32) {
    std::vector<double> xv;
    if (x->dtype() == DType::Double)
      xv.assign(x->data<double>().begin(), x->data<double>().end());
    else
      xv.assign(x->data<int32_t>().begin(), x->data<int32_t>().end());
    for (size_t i = 0; i < xv.size(); ++i) {
      const int64_t c = ch.of(static_cast<int64_t>(i));
      y[i] = quantizeValue(xv[i] / static_cast<double>(s[static_cast<size_t>(c)]), z[static_cast<size_t>(c)], range);
    }
  } else {
    return Error("x must be float or int32, got " + std::string(dtypeName(x->dtype())));
  }
  POPRT_ASSIGN_OR_RETURN(Tensor out, fromInts(out_type, x->shape(), y));
  return single(std::move(out));
}

Expected<std::vector<Tensor>> evalDequantizeLinear(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0, "x"));
  POPRT_ASSIGN_OR_RETURN(const Tensor* scale, requireInput(in, 1, "x_scale"));
  const Tensor* zp = optionalInput(in, 2);
  POPRT_TRY(rangeOf(x->dtype(), "x"));
  if (zp && zp->dtype() != x->dtype())
    return Error("x_zero_point dtype " + std::string(dtypeName(zp->dtype())) + " differs from x dtype " +
                 std::string(dtypeName(x->dtype())));
  POPRT_ASSIGN_OR_RETURN(Channels ch, channelsOf(node, *x, *scale, zp, ctx));
  POPRT_ASSIGN_OR_RETURN(std::vector<float> s, floats(*scale, "x_scale"));
  std::vector<int64_t> z(s.size(), 0);
  if (zp) { POPRT_ASSIGN_OR_RETURN(z, toInt64s(*zp, "x_zero_point")); }
  if (z.size() != s.size()) return Error("zero point and scale differ in size");
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> xv, toInt64s(*x, "x"));
  std::vector<double> y(xv.size());  // float products, held exactly
  for (size_t i = 0; i < xv.size(); ++i) {
    const size_t c = static_cast<size_t>(ch.of(static_cast<int64_t>(i)));
    y[i] = static_cast<float>(xv[i] - z[c]) * s[c];
  }
  POPRT_ASSIGN_OR_RETURN(Tensor out, fromDoubles(scale->dtype(), x->shape(), y));
  return single(std::move(out));
}

// y_scale = (max(0, max x) - min(0, min x)) / 255, y_zero_point = saturate(round(-min / y_scale)),
// y = saturate(round(x / y_scale) + y_zero_point), all uint8. An all-zero x gives scale 0, zero
// point 0 and y 0.
Expected<std::vector<Tensor>> evalDynamicQuantizeLinear(const ir::Node&, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0, "x"));
  POPRT_ASSIGN_OR_RETURN(std::vector<float> xv, floats(*x, "x"));
  float lo = 0.f, hi = 0.f;
  for (float v : xv) {  // NaN compares false and is skipped
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  const Range u8{0, 255};
  const float scale = (hi - lo) / 255.f;
  int64_t zp = 0;
  std::vector<int64_t> y(xv.size(), 0);
  if (scale > 0 && std::isfinite(scale)) {
    zp = quantizeValue(static_cast<double>(0.f - lo / scale), 0, u8);
    for (size_t i = 0; i < xv.size(); ++i) y[i] = quantizeValue(static_cast<double>(xv[i] / scale), zp, u8);
  }
  std::vector<Tensor> outs;
  POPRT_ASSIGN_OR_RETURN(Tensor yt, fromInts(DType::UInt8, x->shape(), y));
  outs.push_back(std::move(yt));
  POPRT_ASSIGN_OR_RETURN(Tensor st, fromDoubles(DType::Float, {}, {scale}));
  outs.push_back(std::move(st));
  POPRT_ASSIGN_OR_RETURN(Tensor zt, fromInts(DType::UInt8, {}, {zp}));
  outs.push_back(std::move(zt));
  return outs;
}

// ---- MatMulInteger / QLinearMatMul -------------------------------------------------------------

struct MatMulResult {
  Shape shape;
  int64_t M = 0, N = 0;  // output element i has row (i / N) % M and column i % N
  std::vector<int64_t> acc;
};

// numpy-style matmul of (a - a_zp[row]) and (b - b_zp[col]) with int64 accumulation.
Expected<MatMulResult> matmulInteger(const Tensor& a, const Tensor* a_zp, const Tensor& b, const Tensor* b_zp) {
  POPRT_TRY(checkQuantInput(a, "A"));
  POPRT_TRY(checkQuantInput(b, "B"));
  if (a_zp && a_zp->dtype() != a.dtype()) return Error("A's zero point must have A's dtype");
  if (b_zp && b_zp->dtype() != b.dtype()) return Error("B's zero point must have B's dtype");
  if (a.shape().empty() || b.shape().empty()) return Error("inputs must have rank >= 1");
  Shape sa = a.shape(), sb = b.shape();
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  MatMulResult r;
  const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  if (sb[sb.size() - 2] != K)
    return Error("inner dimensions differ: " + shapeToString(a.shape()) + " x " + shapeToString(b.shape()));
  Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  POPRT_ASSIGN_OR_RETURN(Shape batch, broadcastShapes(batch_a, batch_b));
  r.shape = batch;
  if (!a_vec) r.shape.push_back(M);
  if (!b_vec) r.shape.push_back(N);
  POPRT_ASSIGN_OR_RETURN(int64_t total, checkedElementCount(r.shape));
  r.M = M;
  r.N = N;
  std::vector<int64_t> azp{0}, bzp{0};
  if (a_zp) { POPRT_ASSIGN_OR_RETURN(azp, toInt64s(*a_zp, "a_zero_point")); }
  if (b_zp) { POPRT_ASSIGN_OR_RETURN(bzp, toInt64s(*b_zp, "b_zero_point")); }
  POPRT_ASSIGN_OR_RETURN(azp, perChannel(std::move(azp), M, "a_zero_point (per row of A)"));
  POPRT_ASSIGN_OR_RETURN(bzp, perChannel(std::move(bzp), N, "b_zero_point (per column of B)"));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> av, toInt64s(a, "A"));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> bv, toInt64s(b, "B"));
  for (size_t i = 0; i < av.size(); ++i) av[i] -= at(azp, (static_cast<int64_t>(i) / K) % M);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] -= at(bzp, static_cast<int64_t>(i) % N);
  r.acc.assign(static_cast<size_t>(total), 0);
  const std::vector<int64_t> stride_a = broadcastStrides(batch_a, batch), stride_b = broadcastStrides(batch_b, batch);
  const std::vector<int64_t> bstrides = contiguousStrides(batch);
  const int64_t batches = M * N == 0 ? 0 : total / (M * N);
  for (int64_t bi = 0; bi < batches; ++bi) {
    const int64_t oa = broadcastOffset(bi, bstrides, stride_a) * M * K;
    const int64_t ob = broadcastOffset(bi, bstrides, stride_b) * K * N;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += av[static_cast<size_t>(oa + m * K + k)] * bv[static_cast<size_t>(ob + k * N + n)];
        r.acc[static_cast<size_t>((bi * M + m) * N + n)] = acc;
      }
  }
  return r;
}

Expected<std::vector<Tensor>> evalMatMulInteger(const ir::Node&, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* a, requireInput(in, 0, "A"));
  POPRT_ASSIGN_OR_RETURN(const Tensor* b, requireInput(in, 1, "B"));
  POPRT_ASSIGN_OR_RETURN(MatMulResult r, matmulInteger(*a, optionalInput(in, 2), *b, optionalInput(in, 3)));
  for (int64_t& v : r.acc) v = static_cast<int32_t>(static_cast<uint32_t>(v));  // int32 wrap-around
  POPRT_ASSIGN_OR_RETURN(Tensor y, fromInts(DType::Int32, r.shape, r.acc));
  return single(std::move(y));
}

Expected<std::vector<Tensor>> evalQLinearMatMul(const ir::Node&, const std::vector<const Tensor*>& in, EvalContext&) {
  static const char* kNames[] = {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"};
  std::vector<const Tensor*> t(8);
  for (size_t i = 0; i < 8; ++i) { POPRT_ASSIGN_OR_RETURN(t[i], requireInput(in, i, kNames[i])); }
  POPRT_ASSIGN_OR_RETURN(MatMulResult r, matmulInteger(*t[0], t[2], *t[3], t[5]));
  POPRT_ASSIGN_OR_RETURN(std::vector<float> as, floats(*t[1], "a_scale"));
  POPRT_ASSIGN_OR_RETURN(std::vector<float> bs, floats(*t[4], "b_scale"));
  POPRT_ASSIGN_OR_RETURN(std::vector<float> ys, floats(*t[6], "y_scale"));
  POPRT_ASSIGN_OR_RETURN(as, perChannel(std::move(as), r.M, "a_scale (per row of a)"));
  POPRT_ASSIGN_OR_RETURN(bs, perChannel(std::move(bs), r.N, "b_scale (per column of b)"));
  if (ys.size() != 1) return Error("y_scale must be a scalar");
  const Tensor& yzp_t = *t[7];
  if (yzp_t.numElements() != 1) return Error("y_zero_point must be a scalar");
  POPRT_ASSIGN_OR_RETURN(Range range, rangeOf(yzp_t.dtype(), "y_zero_point"));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> yzp, toInt64s(yzp_t, "y_zero_point"));
  std::vector<int64_t> y(r.acc.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const int64_t m = (static_cast<int64_t>(i) / r.N) % r.M, n = static_cast<int64_t>(i) % r.N;
    const float mult = at(as, m) * at(bs, n) / ys[0];
    y[i] = quantizeValue(static_cast<double>(static_cast<float>(r.acc[i]) * mult), yzp[0], range);
  }
  POPRT_ASSIGN_OR_RETURN(Tensor out, fromInts(yzp_t.dtype(), r.shape, y));
  return single(std::move(out));
}

}  // namespace
}  // namespace poprt::ops::quant

namespace poprt::ops {

void registerQuantOps(std::vector<OpDef>& ops) {
  using namespace quant;
  ops.push_back({"QuantizeLinear", Fp16Policy::KeepFp32, LoweringFamily::None, evalQuantizeLinear});
  ops.push_back({"DequantizeLinear", Fp16Policy::KeepFp32, LoweringFamily::None, evalDequantizeLinear});
  ops.push_back({"DynamicQuantizeLinear", Fp16Policy::KeepFp32, LoweringFamily::None, evalDynamicQuantizeLinear});
  ops.push_back({"MatMulInteger", Fp16Policy::TypeAgnostic, LoweringFamily::None, evalMatMulInteger});
  ops.push_back({"QLinearMatMul", Fp16Policy::KeepFp32, LoweringFamily::None, evalQLinearMatMul});
  registerConvOps(ops);
}

}  // namespace poprt::ops
