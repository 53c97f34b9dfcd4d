// Misc op family of the reference evaluator (see registry.h): the losses
// (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss), Det and the ai.onnx.preview.training
// optimizers (Adagrad, Adam, Momentum) here; Einsum, the string ops and the random ops in
// misc_einsum.cpp, misc_string.cpp and misc_random.cpp. Floating-point math runs in double.
#include <cmath>
#include <limits>

#include "lib/ops/misc_internal.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops {
namespace {

// ---------------------------------------------------------------------------------------------
// NegativeLogLikelihoodLoss (12, 13) and SoftmaxCrossEntropyLoss (12, 13).
// scores [N, C, d1..dk], labels [N, d1..dk] (int), optional weights [C]; attributes reduction
// (none|sum|mean, default mean) and ignore_index. The loss of element (n, d) is
// -w[t]·logp[n, t, d] with t = labels[n, d] (weight 0 where t == ignore_index); mean divides
// the sum by the sum of the weights.

Expected<std::vector<Tensor>> evalLoss(const ir::Node& node, const std::vector<const Tensor*>& in, bool softmax) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* tp, requireInput(in, 1));
  const Tensor& x = *xp;
  const Tensor& target = *tp;
  const Tensor* weight = optionalInput(in, 2);
  POPRT_TRY(requireFloat(x, "input"));
  const Shape& xs = x.shape();
  if (xs.size() < 2) return Error("input must have shape [N, C, ...], got " + shapeToString(xs));
  Shape ts = xs;
  ts.erase(ts.begin() + 1);
  if (target.shape() != ts)
    return Error("target shape " + shapeToString(target.shape()) + " does not match input shape " + shapeToString(xs));
  if (!isInteger(target.dtype())) return Error("target must be an integer tensor");
  const int64_t N = xs[0], C = xs[1];
  int64_t D = 1;
  for (size_t i = 2; i < xs.size(); ++i) D *= xs[i];
  std::vector<double> w;
  if (weight) {
    POPRT_TRY(requireFloat(*weight, "weight"));
    if (weight->shape() != Shape{C})
      return Error("weight must have shape [" + std::to_string(C) + "], got " + shapeToString(weight->shape()));
    POPRT_ASSIGN_OR_RETURN(w, toDoubles(*weight));
  }
  const std::string reduction = node.attrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") return Error("unknown reduction '" + reduction + "'");
  const bool has_ii = node.hasAttr("ignore_index");
  const int64_t ii = node.attrInt("ignore_index", 0);
  POPRT_ASSIGN_OR_RETURN(std::vector<double> lp, toDoubles(x));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> t, toInt64s(target));
  if (softmax) {  // log-softmax over axis 1, in place
    for (int64_t n = 0; n < N; ++n)
      for (int64_t d = 0; d < D; ++d) {
        auto at = [&](int64_t c) -> double& { return lp[static_cast<size_t>((n * C + c) * D + d)]; };
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t c = 0; c < C; ++c) mx = std::max(mx, at(c));
        double sum = 0;
        for (int64_t c = 0; c < C; ++c) sum += std::exp(at(c) - mx);
        const double lse = mx + std::log(sum);
        for (int64_t c = 0; c < C; ++c) at(c) -= lse;
      }
  }
  std::vector<double> loss(static_cast<size_t>(N * D));
  double loss_sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      const size_t i = static_cast<size_t>(n * D + d);
      const int64_t label = t[i];
      if (has_ii && label == ii) continue;  // loss and weight 0
      if (label < 0 || label >= C)
        return Error("target value " + std::to_string(label) + " is out of range [0, " + std::to_string(C) + ")");
      const double wt = weight ? w[static_cast<size_t>(label)] : 1.0;
      loss[i] = -wt * lp[static_cast<size_t>((n * C + label) * D + d)];
      loss_sum += loss[i];
      weight_sum += wt;
    }
  std::vector<Tensor> outs;
  if (reduction == "none") {
    POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(x.dtype(), ts, loss));
    outs.push_back(std::move(y));
  } else {
    double v = reduction == "sum" ? loss_sum : loss_sum / weight_sum;
    POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(x.dtype(), {}, {v}));
    outs.push_back(std::move(y));
  }
  if (softmax && node.outputs().size() > 1) {
    POPRT_ASSIGN_OR_RETURN(Tensor log_prob, fromDoubles(x.dtype(), xs, lp));
    outs.push_back(std::move(log_prob));
  }
  return outs;
}

// ---------------------------------------------------------------------------------------------
// Det: [*, M, M] -> [*], by LU decomposition with partial pivoting.

Expected<std::vector<Tensor>> evalDet(const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  const Tensor& x = *xp;
  POPRT_TRY(requireFloat(x, "input"));
  const Shape& s = x.shape();
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
    return Error("input must have shape [*, M, M], got " + shapeToString(s));
  const int64_t M = s.back();
  Shape out_shape(s.begin(), s.end() - 2);
  int64_t batches = 1;
  for (int64_t d : out_shape) batches *= d;
  POPRT_ASSIGN_OR_RETURN(std::vector<double> a, toDoubles(x));
  std::vector<double> dets(static_cast<size_t>(batches));
  for (int64_t b = 0; b < batches; ++b) {
    double* m = a.data() + b * M * M;
    auto at = [&](int64_t r, int64_t c) -> double& { return m[r * M + c]; };
    double det = 1;
    for (int64_t k = 0; k < M; ++k) {
      int64_t piv = k;
      for (int64_t r = k + 1; r < M; ++r)
        if (std::fabs(at(r, k)) > std::fabs(at(piv, k))) piv = r;
      if (at(piv, k) == 0) {
        det = 0;
        break;
      }
      if (piv != k) {
        for (int64_t c = 0; c < M; ++c) std::swap(at(k, c), at(piv, c));
        det = -det;
      }
      det *= at(k, k);
      for (int64_t r = k + 1; r < M; ++r) {
        const double f = at(r, k) / at(k, k);
        for (int64_t c = k; c < M; ++c) at(r, c) -= f * at(k, c);
      }
    }
    dets[static_cast<size_t>(b)] = det;
  }
  POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(x.dtype(), out_shape, dets));
  return single(std::move(y));
}

// ---------------------------------------------------------------------------------------------
// ai.onnx.preview.training optimizers. Inputs R (learning rate), T (update count), then `groups`
// lists of n tensors each (X..., G..., and the state lists); outputs X_new... then the new states.

struct OptimizerArgs {
  double r = 0;
  int64_t t = 0;
  int64_t n = 0;  // tensors being optimized
  // lists[g][i]: the i-th tensor of input group g (0 = X, 1 = G, 2.. = states), as doubles.
  std::vector<std::vector<std::vector<double>>> lists;
};

Expected<OptimizerArgs> readOptimizerArgs(const std::vector<const Tensor*>& in, int64_t groups) {
  OptimizerArgs args;
  POPRT_ASSIGN_OR_RETURN(const Tensor* rp, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* tp, requireInput(in, 1));
  POPRT_TRY(requireFloat(*rp, "R"));
  if (rp->numElements() != 1 || tp->numElements() != 1) return Error("R and T must be scalars");
  POPRT_ASSIGN_OR_RETURN(std::vector<double> r, toDoubles(*rp));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> t, toInt64s(*tp));
  args.r = r[0];
  args.t = t[0];
  const int64_t rest = static_cast<int64_t>(in.size()) - 2;
  if (rest <= 0 || rest % groups != 0)
    return Error("expects R, T and " + std::to_string(groups) + " lists of equal length, got " + std::to_string(in.size()) +
                 " inputs");
  args.n = rest / groups;
  args.lists.resize(static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t i = 0; i < args.n; ++i) {
      const size_t idx = static_cast<size_t>(2 + g * args.n + i);
      POPRT_ASSIGN_OR_RETURN(const Tensor* p, requireInput(in, idx));
      POPRT_TRY(requireFloat(*p, "input " + std::to_string(idx)));
      const Tensor& x = *in[static_cast<size_t>(2 + i)];
      if (p->shape() != x.shape())
        return Error("input " + std::to_string(idx) + " has shape " + shapeToString(p->shape()) + ", expected " +
                     shapeToString(x.shape()));
      POPRT_ASSIGN_OR_RETURN(std::vector<double> v, toDoubles(*p));
      args.lists[static_cast<size_t>(g)].push_back(std::move(v));
    }
  return args;
}

// Outputs: for each output group, n tensors shaped like (and typed as) the matching input.
Expected<std::vector<Tensor>> optimizerOutputs(const std::vector<const Tensor*>& in, const OptimizerArgs& args,
                                               const std::vector<std::vector<std::vector<double>>>& out_lists) {
  std::vector<Tensor> outs;
  for (size_t g = 0; g < out_lists.size(); ++g)
    for (int64_t i = 0; i < args.n; ++i) {
      // Output group g has the dtype of input group g (X_new like X, the states like theirs):
      // input group index: 0 for X, and 2 + (g - 1) for state g - 1.
      const int64_t in_group = g == 0 ? 0 : static_cast<int64_t>(g) + 1;
      const Tensor& like = *in[static_cast<size_t>(2 + in_group * args.n + i)];
      POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(like.dtype(), like.shape(), out_lists[g][static_cast<size_t>(i)]));
      outs.push_back(std::move(y));
    }
  return outs;
}

Expected<std::vector<Tensor>> evalAdagrad(const ir::Node& node, const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(OptimizerArgs a, readOptimizerArgs(in, 3));
  const double decay = node.attrFloat("decay_factor", 0.0f), eps = node.attrFloat("epsilon", 1e-6f),
               norm = node.attrFloat("norm_coefficient", 0.0f);
  const double r = a.r / (1.0 + static_cast<double>(a.t) * decay);
  std::vector<std::vector<std::vector<double>>> out(2);
  for (int64_t i = 0; i < a.n; ++i) {
    const auto &x = a.lists[0][static_cast<size_t>(i)], &g = a.lists[1][static_cast<size_t>(i)],
               &h = a.lists[2][static_cast<size_t>(i)];
    std::vector<double> xn(x.size()), hn(x.size());
    for (size_t k = 0; k < x.size(); ++k) {
      const double gr = norm * x[k] + g[k];
      hn[k] = h[k] + gr * gr;
      xn[k] = x[k] - r * gr / (std::sqrt(hn[k]) + eps);
    }
    out[0].push_back(std::move(xn));
    out[1].push_back(std::move(hn));
  }
  return optimizerOutputs(in, a, out);
}

Expected<std::vector<Tensor>> evalAdam(const ir::Node& node, const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(OptimizerArgs a, readOptimizerArgs(in, 4));
  const double alpha = node.attrFloat("alpha", 0.9f), beta = node.attrFloat("beta", 0.999f),
               eps = node.attrFloat("epsilon", 1e-6f), norm = node.attrFloat("norm_coefficient", 0.0f),
               norm_post = node.attrFloat("norm_coefficient_post", 0.0f);
  double r = a.r;
  if (a.t > 0) {  // bias correction of the moments
    const double td = static_cast<double>(a.t);
    r = a.r * std::sqrt(1.0 - std::pow(beta, td)) / (1.0 - std::pow(alpha, td));
  }
  std::vector<std::vector<std::vector<double>>> out(3);
  for (int64_t i = 0; i < a.n; ++i) {
    const auto& x = a.lists[0][static_cast<size_t>(i)];
    const auto& g = a.lists[1][static_cast<size_t>(i)];
    const auto& v = a.lists[2][static_cast<size_t>(i)];
    const auto& h = a.lists[3][static_cast<size_t>(i)];
    std::vector<double> xn(x.size()), vn(x.size()), hn(x.size());
    for (size_t k = 0; k < x.size(); ++k) {
      const double gr = norm * x[k] + g[k];
      vn[k] = alpha * v[k] + (1.0 - alpha) * gr;
      hn[k] = beta * h[k] + (1.0 - beta) * gr * gr;
      xn[k] = (1.0 - norm_post) * (x[k] - r * vn[k] / (std::sqrt(hn[k]) + eps));
    }
    out[0].push_back(std::move(xn));
    out[1].push_back(std::move(vn));
    out[2].push_back(std::move(hn));
  }
  return optimizerOutputs(in, a, out);
}

Expected<std::vector<Tensor>> evalMomentum(const ir::Node& node, const std::vector<const Tensor*>& in) {
  POPRT_ASSIGN_OR_RETURN(OptimizerArgs a, readOptimizerArgs(in, 3));
  for (const char* attr : {"alpha", "beta", "norm_coefficient", "mode"})
    if (!node.hasAttr(attr)) return Error(std::string("attribute '") + attr + "' is required");
  const double alpha = node.attrFloat("alpha", 0.0f), beta = node.attrFloat("beta", 0.0f),
               norm = node.attrFloat("norm_coefficient", 0.0f);
  const std::string mode = node.attrString("mode", "");
  if (mode != "standard" && mode != "nesterov") return Error("unknown mode '" + mode + "'");
  const double beta_adj = a.t > 0 ? beta : 1.0;  // the gradient's coefficient is 1 on the first update
  std::vector<std::vector<std::vector<double>>> out(2);
  for (int64_t i = 0; i < a.n; ++i) {
    const auto& x = a.lists[0][static_cast<size_t>(i)];
    const auto& g = a.lists[1][static_cast<size_t>(i)];
    const auto& v = a.lists[2][static_cast<size_t>(i)];
    std::vector<double> xn(x.size()), vn(x.size());
    for (size_t k = 0; k < x.size(); ++k) {
      const double gr = norm * x[k] + g[k];
      vn[k] = alpha * v[k] + beta_adj * gr;
      xn[k] = mode == "standard" ? x[k] - a.r * vn[k] : x[k] - a.r * (gr + alpha * vn[k]);
    }
    out[0].push_back(std::move(xn));
    out[1].push_back(std::move(vn));
  }
  return optimizerOutputs(in, a, out);
}

}  // namespace

void registerMiscOps(std::vector<OpDef>& ops) {
  ops.push_back({"NegativeLogLikelihoodLoss",
                 Fp16Policy::AccumulateFp32,
                 LoweringFamily::None,
                 [](const ir::Node& n, const std::vector<const Tensor*>& in, EvalContext&) { return evalLoss(n, in, false); },
                 {},
                 ""});
  ops.push_back({"SoftmaxCrossEntropyLoss",
                 Fp16Policy::AccumulateFp32,
                 LoweringFamily::None,
                 [](const ir::Node& n, const std::vector<const Tensor*>& in, EvalContext&) { return evalLoss(n, in, true); },
                 {},
                 ""});
  ops.push_back({"Det",
                 Fp16Policy::KeepFp32,
                 LoweringFamily::None,
                 [](const ir::Node&, const std::vector<const Tensor*>& in, EvalContext&) { return evalDet(in); },
                 {},
                 ""});
  const std::string training = "ai.onnx.preview.training";
  ops.push_back({"Adagrad",
                 Fp16Policy::KeepFp32,
                 LoweringFamily::None,
                 [](const ir::Node& n, const std::vector<const Tensor*>& in, EvalContext&) { return evalAdagrad(n, in); },
                 {},
                 training});
  ops.push_back({"Adam",
                 Fp16Policy::KeepFp32,
                 LoweringFamily::None,
                 [](const ir::Node& n, const std::vector<const Tensor*>& in, EvalContext&) { return evalAdam(n, in); },
                 {},
                 training});
  ops.push_back({"Momentum",
                 Fp16Policy::KeepFp32,
                 LoweringFamily::None,
                 [](const ir::Node& n, const std::vector<const Tensor*>& in, EvalContext&) { return evalMomentum(n, in); },
                 {},
                 training});
  misc::registerEinsumOps(ops);
  misc::registerStringOps(ops);
  misc::registerRandomOps(ops);
}

}  // namespace poprt::ops
