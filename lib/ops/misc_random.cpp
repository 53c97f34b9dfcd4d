// Random ops: RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike, Multinomial,
// Bernoulli. Deterministic: the generator (mt19937_64, fully specified by the C++ standard) is
// seeded from the `seed` attribute, or else from the context's seed mixed with the node's first
// output name so that two random nodes do not repeat each other. The values cannot match
// numpy's generator, only its distributions.
#include <bit>
#include <cmath>
#include <numbers>
#include <random>

#include "lib/ops/misc_internal.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops::misc {
namespace {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  // Uniform in [0, 1), 53 random bits.
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  // Standard normal by Box–Muller.
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::mt19937_64 gen_;
};

Rng makeRng(const ir::Node& node, const EvalContext& ctx) {
  if (node.hasAttr("seed")) return Rng(0x9E3779B97F4A7C15ull ^ std::bit_cast<uint32_t>(node.attrFloat("seed", 0.0f)));
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the first output's name
  const std::string name = node.output(0) ? node.output(0)->name() : node.name();
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return Rng(ctx.seed() ^ h);
}

Expected<DType> dtypeAttr(const ir::Node& node, DType fallback) {
  if (!node.hasAttr("dtype")) return fallback;
  const int64_t v = node.attrInt("dtype", 0);
  auto dt = dtypeFromOnnx(v);
  if (!dt) return Error("dtype " + std::to_string(v) + " is not a data type");
  return *dt;
}

Status requireFloatType(DType t) {
  if (!isFloatingPoint(t)) return Error("output dtype must be floating point, got " + std::string(dtypeName(t)));
  return okStatus();
}

enum class Dist { Normal, Uniform };

Expected<Tensor> sample(const ir::Node& node, EvalContext& ctx, Dist dist, DType dtype, const Shape& shape) {
  POPRT_TRY(requireFloatType(dtype));
  POPRT_TRY(checkedElementCount(shape));
  Rng rng = makeRng(node, ctx);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  if (dist == Dist::Normal) {
    const double mean = node.attrFloat("mean", 0.0f), scale = node.attrFloat("scale", 1.0f);
    for (double& x : v) x = mean + scale * rng.normal();
  } else {
    const double low = node.attrFloat("low", 0.0f), high = node.attrFloat("high", 1.0f);
    for (double& x : v) x = low + (high - low) * rng.uniform();
  }
  return fromDoubles(dtype, shape, v);
}

Expected<std::vector<Tensor>> evalRandom(const ir::Node& node, EvalContext& ctx, Dist dist) {
  if (!node.hasAttr("shape")) return Error("attribute 'shape' is required");
  POPRT_ASSIGN_OR_RETURN(DType dtype, dtypeAttr(node, DType::Float));
  POPRT_ASSIGN_OR_RETURN(Tensor y, sample(node, ctx, dist, dtype, node.attrInts("shape")));
  return single(std::move(y));
}

Expected<std::vector<Tensor>> evalRandomLike(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx,
                                             Dist dist) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* x, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(DType dtype, dtypeAttr(node, x->dtype()));
  POPRT_ASSIGN_OR_RETURN(Tensor y, sample(node, ctx, dist, dtype, x->shape()));
  return single(std::move(y));
}

// Multinomial: input [batch, classes] of unnormalized log-probabilities; output [batch,
// sample_size] class indices (int32 by default, or int64).
Expected<std::vector<Tensor>> evalMultinomial(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  const Tensor& x = *xp;
  if (!isFloatingPoint(x.dtype())) return Error("input must be floating point");
  if (x.shape().size() != 2) return Error("input must have shape [batch, classes], got " + shapeToString(x.shape()));
  POPRT_ASSIGN_OR_RETURN(DType dtype, dtypeAttr(node, DType::Int32));
  if (dtype != DType::Int32 && dtype != DType::Int64) return Error("dtype must be int32 or int64");
  const int64_t batch = x.shape()[0], classes = x.shape()[1];
  const int64_t samples = node.attrInt("sample_size", 1);
  if (samples < 0) return Error("sample_size must be non-negative");
  const Shape out_shape{batch, samples};
  POPRT_TRY(checkedElementCount(out_shape));
  if (classes == 0 && batch * samples > 0) return Error("cannot sample from zero classes");
  POPRT_ASSIGN_OR_RETURN(std::vector<double> logits, toDoubles(x));
  Rng rng = makeRng(node, ctx);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(batch * samples));
  std::vector<double> cum(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    const double* row = logits.data() + b * classes;
    double mx = -INFINITY;
    for (int64_t c = 0; c < classes; ++c) mx = std::max(mx, row[c]);
    double total = 0;
    for (int64_t c = 0; c < classes; ++c) {
      total += std::isnan(row[c]) || mx == -INFINITY ? 0.0 : std::exp(row[c] - mx);
      cum[static_cast<size_t>(c)] = total;
    }
    if (samples > 0 && !(total > 0 && std::isfinite(total)))
      return Error("row " + std::to_string(b) + " has no finite probabilities");
    for (int64_t s = 0; s < samples; ++s) {
      const double u = rng.uniform() * total;
      int64_t c = 0;
      while (c < classes - 1 && cum[static_cast<size_t>(c)] <= u) ++c;
      out.push_back(static_cast<double>(c));
    }
  }
  POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(dtype, out_shape, out));
  return single(std::move(y));
}

// Bernoulli: 1 with probability x, else 0, in dtype (default the input's).
Expected<std::vector<Tensor>> evalBernoulli(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  if (!isFloatingPoint(xp->dtype())) return Error("input must be floating point");
  POPRT_ASSIGN_OR_RETURN(DType dtype, dtypeAttr(node, xp->dtype()));
  if (!isFloatingPoint(dtype) && !isInteger(dtype) && dtype != DType::Bool)
    return Error("dtype " + std::string(dtypeName(dtype)) + " is not supported");
  POPRT_ASSIGN_OR_RETURN(std::vector<double> p, toDoubles(*xp));
  Rng rng = makeRng(node, ctx);
  std::vector<double> y(p.size());
  for (size_t i = 0; i < p.size(); ++i) y[i] = rng.uniform() < p[i] ? 1.0 : 0.0;
  POPRT_ASSIGN_OR_RETURN(Tensor t, fromDoubles(dtype, xp->shape(), y));
  return single(std::move(t));
}

}  // namespace

void registerRandomOps(std::vector<OpDef>& ops) {
  ops.push_back(
      {"RandomNormal",
       Fp16Policy::Convert,
       LoweringFamily::None,
       [](const ir::Node& n, const std::vector<const Tensor*>&, EvalContext& ctx) { return evalRandom(n, ctx, Dist::Normal); },
       {},
       ""});
  ops.push_back(
      {"RandomUniform",
       Fp16Policy::Convert,
       LoweringFamily::None,
       [](const ir::Node& n, const std::vector<const Tensor*>&, EvalContext& ctx) { return evalRandom(n, ctx, Dist::Uniform); },
       {},
       ""});
  ops.push_back({"RandomNormalLike",
                 Fp16Policy::Convert,
                 LoweringFamily::None,
                 [](const ir::Node& n, const std::vector<const Tensor*>& in, EvalContext& ctx) {
                   return evalRandomLike(n, in, ctx, Dist::Normal);
                 },
                 {},
                 ""});
  ops.push_back({"RandomUniformLike",
                 Fp16Policy::Convert,
                 LoweringFamily::None,
                 [](const ir::Node& n, const std::vector<const Tensor*>& in, EvalContext& ctx) {
                   return evalRandomLike(n, in, ctx, Dist::Uniform);
                 },
                 {},
                 ""});
  ops.push_back({"Multinomial", Fp16Policy::KeepFp32, LoweringFamily::None, evalMultinomial, {}, ""});
  ops.push_back({"Bernoulli", Fp16Policy::Convert, LoweringFamily::None, evalBernoulli, {}, ""});
}

}  // namespace poprt::ops::misc
