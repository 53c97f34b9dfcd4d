// Normalizations: BatchNormalization (inference and training_mode), InstanceNormalization,
// LayerNormalization (with Mean/InvStdDev), LRN, MeanVarianceNormalization, LpNormalization.
// Statistics are accumulated in double.
#include "lib/ops/broadcast.h"
#include "lib/ops/nn_util.h"

namespace poprt::ops::nn {
namespace {

// A per-channel parameter of BatchNormalization: [C], or (opset 7 spatial=0) X.shape[1:].
Expected<std::vector<double>> channelParam(const Tensor& t, const Shape& xs, const std::string& what) {
  const int64_t C = xs[1], per_act = shapeProduct(xs, 1, xs.size());
  if (t.numElements() != C && t.numElements() != per_act)
    return Error(what + " of shape " + shapeToString(t.shape()) + " does not match " + std::to_string(C) + " channels");
  POPRT_TRY(requireFloat(t, what));
  return toDoubles(t);
}

Expected<std::vector<Tensor>> evalBatchNorm(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
  for (size_t i = 0; i < 5; ++i) POPRT_TRY(requireInput(in, i));
  const Tensor& xt = *in[0];
  POPRT_TRY(requireFloat(xt, "X"));
  const Shape& xs = xt.shape();
  if (xs.size() < 2) return Error("X must have rank >= 2 (N, C, ...), got " + shapeToString(xs));
  const double eps = node.attrFloat("epsilon", 1e-5f);
  const double momentum = node.attrFloat("momentum", 0.9f);
  const int64_t opset = ctx.opset();
  const size_t n_outputs = node.outputs().size();
  const bool training = opset >= 14 ? node.attrInt("training_mode", 0) != 0 : n_outputs > 1;
  POPRT_ASSIGN_OR_RETURN(std::vector<double> scale, channelParam(*in[1], xs, "scale"));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> bias, channelParam(*in[2], xs, "B"));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> mean, channelParam(*in[3], xs, "input_mean"));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> var, channelParam(*in[4], xs, "input_var"));
  const int64_t N = xs[0], C = xs[1], S = shapeProduct(xs, 2, xs.size());
  // The parameter index of element (c, s): per channel, or per activation when given X.shape[1:].
  auto pidx = [&](const std::vector<double>& p, int64_t c, int64_t s) {
    return p.size() == static_cast<size_t>(C) ? c : c * S + s;
  };
  const size_t uc = static_cast<size_t>(C);
  if (training && (scale.size() != uc || bias.size() != uc || mean.size() != uc || var.size() != uc))
    return Error("training mode needs per-channel parameters");
  POPRT_ASSIGN_OR_RETURN(std::vector<double> x, toDoubles(xt));
  std::vector<double> use_mean = mean, use_var = var;
  std::vector<double> batch_mean(static_cast<size_t>(C), 0.0), batch_var(static_cast<size_t>(C), 0.0);
  if (training) {
    const double count = static_cast<double>(N * S);
    for (int64_t c = 0; c < C; ++c) {
      double sum = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s) sum += x[(n * C + c) * S + s];
      const double m = sum / count;
      double sq = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s) {
          const double d = x[(n * C + c) * S + s] - m;
          sq += d * d;
        }
      batch_mean[c] = m;
      batch_var[c] = sq / count;
    }
    use_mean = batch_mean;
    use_var = batch_var;
  }
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        const size_t i = static_cast<size_t>((n * C + c) * S + s);
        const double m = use_mean[pidx(use_mean, c, s)], v = use_var[pidx(use_var, c, s)];
        y[i] = (x[i] - m) / std::sqrt(v + eps) * scale[pidx(scale, c, s)] + bias[pidx(bias, c, s)];
      }
  std::vector<Tensor> outs;
  POPRT_ASSIGN_OR_RETURN(Tensor yt, fromDoubles(xt.dtype(), xs, y, IntRounding::Nearest));
  outs.push_back(std::move(yt));
  if (training && n_outputs > 1) {
    std::vector<double> run_mean(static_cast<size_t>(C)), run_var(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      run_mean[c] = mean[c] * momentum + batch_mean[c] * (1 - momentum);
      run_var[c] = var[c] * momentum + batch_var[c] * (1 - momentum);
    }
    POPRT_ASSIGN_OR_RETURN(Tensor rm, fromDoubles(in[3]->dtype(), in[3]->shape(), run_mean, IntRounding::Nearest));
    POPRT_ASSIGN_OR_RETURN(Tensor rv, fromDoubles(in[4]->dtype(), in[4]->shape(), run_var, IntRounding::Nearest));
    outs.push_back(std::move(rm));
    outs.push_back(std::move(rv));
    if (opset < 14) {  // saved_mean and saved_var (the batch statistics)
      POPRT_ASSIGN_OR_RETURN(Tensor sm, fromDoubles(in[3]->dtype(), in[3]->shape(), batch_mean, IntRounding::Nearest));
      POPRT_ASSIGN_OR_RETURN(Tensor sv, fromDoubles(in[4]->dtype(), in[4]->shape(), batch_var, IntRounding::Nearest));
      outs.push_back(std::move(sm));
      outs.push_back(std::move(sv));
    }
  }
  return outs;
}

Expected<std::vector<Tensor>> evalInstanceNorm(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  for (size_t i = 0; i < 3; ++i) POPRT_TRY(requireInput(in, i));
  const Tensor& xt = *in[0];
  POPRT_TRY(requireFloat(xt, "X"));
  const Shape& xs = xt.shape();
  if (xs.size() < 3) return Error("X must have rank >= 3 (N, C, spatial...), got " + shapeToString(xs));
  const int64_t N = xs[0], C = xs[1], S = shapeProduct(xs, 2, xs.size());
  for (size_t i = 1; i < 3; ++i)
    if (in[i]->shape() != Shape{C}) return Error("scale and B must have shape [" + std::to_string(C) + "]");
  const double eps = node.attrFloat("epsilon", 1e-5f);
  POPRT_ASSIGN_OR_RETURN(std::vector<double> x, toDoubles(xt));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> scale, toDoubles(*in[1]));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> bias, toDoubles(*in[2]));
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const double* s = x.data() + (n * C + c) * S;
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < S; ++i) sum += s[i];
      const double m = sum / static_cast<double>(S);
      for (int64_t i = 0; i < S; ++i) sq += (s[i] - m) * (s[i] - m);
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(S) + eps);
      for (int64_t i = 0; i < S; ++i) y[(n * C + c) * S + i] = (s[i] - m) * inv * scale[c] + bias[c];
    }
  POPRT_ASSIGN_OR_RETURN(Tensor yt, fromDoubles(xt.dtype(), xs, y, IntRounding::Nearest));
  return single(std::move(yt));
}

Expected<std::vector<Tensor>> evalLayerNorm(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xt, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* st, requireInput(in, 1));
  const Tensor* bt = optionalInput(in, 2);
  POPRT_TRY(requireFloat(*xt, "X"));
  const Shape& xs = xt->shape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank == 0) return Error("X must have rank >= 1");
  POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrInt("axis", -1), rank));
  const double eps = node.attrFloat("epsilon", 1e-5f);
  auto stash = dtypeFromOnnx(node.attrInt("stash_type", 1));
  if (!stash || !isFloatingPoint(*stash)) return Error("stash_type must be a floating-point type");
  const Shape norm_shape(xs.begin() + axis, xs.end());
  const int64_t outer = shapeProduct(xs, 0, static_cast<size_t>(axis)), inner = shapeProduct(norm_shape, 0, norm_shape.size());
  POPRT_ASSIGN_OR_RETURN(std::vector<double> scale, broadcastTo(*st, norm_shape, "Scale"));
  std::vector<double> bias(static_cast<size_t>(inner), 0.0);
  if (bt) { POPRT_ASSIGN_OR_RETURN(bias, broadcastTo(*bt, norm_shape, "B")); }
  POPRT_ASSIGN_OR_RETURN(std::vector<double> x, toDoubles(*xt));
  std::vector<double> y(x.size()), means(static_cast<size_t>(outer)), inv_std(static_cast<size_t>(outer));
  for (int64_t o = 0; o < outer; ++o) {
    const double* s = x.data() + o * inner;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < inner; ++i) sum += s[i];
    const double m = sum / static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) sq += (s[i] - m) * (s[i] - m);
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(inner) + eps);
    for (int64_t i = 0; i < inner; ++i) y[o * inner + i] = (s[i] - m) * inv * scale[i] + bias[i];
    means[o] = m;
    inv_std[o] = inv;
  }
  Shape stat_shape(xs.begin(), xs.begin() + axis);
  stat_shape.resize(xs.size(), 1);
  std::vector<Tensor> outs;
  POPRT_ASSIGN_OR_RETURN(Tensor yt, fromDoubles(xt->dtype(), xs, y, IntRounding::Nearest));
  outs.push_back(std::move(yt));
  POPRT_ASSIGN_OR_RETURN(Tensor mt, fromDoubles(*stash, stat_shape, means, IntRounding::Nearest));
  POPRT_ASSIGN_OR_RETURN(Tensor it, fromDoubles(*stash, stat_shape, inv_std, IntRounding::Nearest));
  outs.push_back(std::move(mt));
  outs.push_back(std::move(it));
  return outs;
}

Expected<std::vector<Tensor>> evalLrn(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xt, requireInput(in, 0));
  POPRT_TRY(requireFloat(*xt, "X"));
  const Shape& xs = xt->shape();
  if (xs.size() < 2) return Error("X must have rank >= 2 (N, C, ...), got " + shapeToString(xs));
  if (!node.hasAttr("size")) return Error("attribute size is required");
  const int64_t size = node.attrInt("size", 1);
  if (size < 1 || size > kMaxDim) return Error("size must be >= 1");
  const double alpha = node.attrFloat("alpha", 1e-4f), beta = node.attrFloat("beta", 0.75f), bias = node.attrFloat("bias", 1.0f);
  const int64_t N = xs[0], C = xs[1], S = shapeProduct(xs, 2, xs.size());
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  POPRT_ASSIGN_OR_RETURN(std::vector<double> x, toDoubles(*xt));
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        double sq = 0;
        const int64_t lo = std::max<int64_t>(0, c - before), hi = std::min<int64_t>(C - 1, c + after);
        for (int64_t k = lo; k <= hi; ++k) {
          const double v = x[(n * C + k) * S + s];
          sq += v * v;
        }
        const size_t i = static_cast<size_t>((n * C + c) * S + s);
        y[i] = x[i] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta);
      }
  POPRT_ASSIGN_OR_RETURN(Tensor yt, fromDoubles(xt->dtype(), xs, y, IntRounding::Nearest));
  return single(std::move(yt));
}

// Splits the dims of `shape` into reduced (in `axes`) and kept ones; returns, for each element,
// the index of its group (the flat index over the kept dims).
Expected<std::vector<int64_t>> groupIndex(const Shape& shape, const std::vector<int64_t>& axes, int64_t* groups) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t a : axes) {
    POPRT_ASSIGN_OR_RETURN(int64_t ax, normalizeAxis(a, rank));
    if (rank == 0) return Error("axes must be empty for a scalar input");
    reduced[ax] = true;
  }
  *groups = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d]) *groups *= shape[d];
  const int64_t n = shapeProduct(shape, 0, shape.size());
  std::vector<int64_t> g(static_cast<size_t>(n));
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d]) k = k * shape[d] + idx[d];
    g[i] = k;
    for (int64_t d = rank; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return g;
}

Expected<std::vector<Tensor>> evalMvn(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xt, requireInput(in, 0));
  POPRT_TRY(requireFloat(*xt, "X"));
  const std::vector<int64_t> axes = node.attrInts("axes", {0, 2, 3});
  int64_t groups = 0;
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> g, groupIndex(xt->shape(), axes, &groups));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> x, toDoubles(*xt));
  std::vector<double> sum(static_cast<size_t>(groups), 0.0), sq(static_cast<size_t>(groups), 0.0),
      count(static_cast<size_t>(groups), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    sum[g[i]] += x[i];
    sq[g[i]] += x[i] * x[i];
    count[g[i]] += 1;
  }
  // As the ONNX function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9).
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double m = sum[g[i]] / count[g[i]];
    const double var = sq[g[i]] / count[g[i]] - m * m;
    y[i] = (x[i] - m) / (std::sqrt(std::max(var, 0.0)) + 1e-9);
  }
  POPRT_ASSIGN_OR_RETURN(Tensor yt, fromDoubles(xt->dtype(), xt->shape(), y, IntRounding::Nearest));
  return single(std::move(yt));
}

Expected<std::vector<Tensor>> evalLpNorm(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xt, requireInput(in, 0));
  POPRT_TRY(requireFloat(*xt, "X"));
  const Shape& xs = xt->shape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank == 0) return Error("X must have rank >= 1");
  POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(node.attrInt("axis", -1), rank));
  const int64_t p = node.attrInt("p", 2);
  if (p != 1 && p != 2) return Error("p must be 1 or 2, got " + std::to_string(p));
  const int64_t outer = shapeProduct(xs, 0, static_cast<size_t>(axis)), len = xs[axis],
                inner = shapeProduct(xs, static_cast<size_t>(axis) + 1, xs.size());
  POPRT_ASSIGN_OR_RETURN(std::vector<double> x, toDoubles(*xt));
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double norm = 0;
      for (int64_t k = 0; k < len; ++k) {
        const double v = x[(o * len + k) * inner + i];
        norm += p == 1 ? std::fabs(v) : v * v;
      }
      if (p == 2) norm = std::sqrt(norm);
      // A zero vector stays zero (as ONNX Runtime does) instead of becoming NaN.
      for (int64_t k = 0; k < len; ++k) {
        const size_t j = static_cast<size_t>((o * len + k) * inner + i);
        y[j] = norm == 0 ? 0.0 : x[j] / norm;
      }
    }
  POPRT_ASSIGN_OR_RETURN(Tensor yt, fromDoubles(xt->dtype(), xs, y, IntRounding::Nearest));
  return single(std::move(yt));
}

}  // namespace

void registerNnNormOps(std::vector<OpDef>& ops) {
  ops.push_back({"BatchNormalization", Fp16Policy::AccumulateFp32, LoweringFamily::Norm, evalBatchNorm});
  ops.push_back({"InstanceNormalization", Fp16Policy::AccumulateFp32, LoweringFamily::Norm, evalInstanceNorm});
  ops.push_back({"LayerNormalization", Fp16Policy::AccumulateFp32, LoweringFamily::Norm, evalLayerNorm});
  ops.push_back({"LRN", Fp16Policy::KeepFp32, LoweringFamily::None, evalLrn});
  ops.push_back({"MeanVarianceNormalization", Fp16Policy::AccumulateFp32, LoweringFamily::None, evalMvn});
  ops.push_back({"LpNormalization", Fp16Policy::AccumulateFp32, LoweringFamily::None, evalLpNorm});
}

}  // namespace poprt::ops::nn
