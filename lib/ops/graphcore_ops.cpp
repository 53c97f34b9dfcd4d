// The ai.graphcore fused ops (semantics in graphcore_ops.h): Gelu, LayerNorm, MultiHeadAttention,
// ConvAct, GemmAct and ElementwiseChain. Floating-point maths runs in double, but for
// ElementwiseChain's float32 steps; ConvAct/GemmAct run the Conv/Gemm evaluator and apply the
// activation to its result, so they equal the unfused pair exactly.
#include "lib/ops/graphcore_ops.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "lib/ops/broadcast.h"
#include "lib/ops/op_util.h"
#include "lib/ops/registry.h"
#include "lib/ops/scalar_math.h"

namespace poprt::ops {
namespace graphcore {

std::optional<ActivationKind> activationKind(const std::string& op_type) {
  static const std::pair<const char*, ActivationKind> kinds[] = {{"Relu", ActivationKind::Relu},
                                                                 {"Clip", ActivationKind::Clip},
                                                                 {"LeakyRelu", ActivationKind::LeakyRelu},
                                                                 {"Sigmoid", ActivationKind::Sigmoid},
                                                                 {"HardSigmoid", ActivationKind::HardSigmoid},
                                                                 {"HardSwish", ActivationKind::HardSwish},
                                                                 {"Tanh", ActivationKind::Tanh},
                                                                 {"Swish", ActivationKind::Swish}};
  for (const auto& [name, kind] : kinds)
    if (op_type == name) return kind;
  return std::nullopt;
}

namespace {

// ---- Gelu -------------------------------------------------------------------------------------

Expected<std::vector<Tensor>> evalGelu(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xt, requireInput(in, 0));
  POPRT_TRY(requireFloat(*xt, "X"));
  POPRT_ASSIGN_OR_RETURN(UnaryFn fn, geluFn(node));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> x, toDoubles(*xt));
  for (double& v : x) v = applyUnary(fn, v);
  POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(xt->dtype(), xt->shape(), x));
  return single(std::move(y));
}

// ---- ElementwiseChain ---------------------------------------------------------------------------

// In float32 step by step, as the device's vertex computes it (and, in float32, the unfused ops).
Expected<std::vector<Tensor>> evalElementwiseChain(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xt, requireInput(in, 0));
  if (xt->dtype() != DType::Float && xt->dtype() != DType::Float16)
    return Error("ElementwiseChain takes float32 or float16, not " + std::string(dtypeName(xt->dtype())));
  POPRT_ASSIGN_OR_RETURN(std::vector<ChainStep> steps, chainSteps(node));
  std::vector<float> operand(in.size(), 0.f);
  for (size_t j = 1; j < in.size(); ++j) {
    if (!in[j]) continue;
    if (in[j]->dtype() != xt->dtype() || in[j]->numElements() != 1)
      return Error("ElementwiseChain input " + std::to_string(j) + " is not one value of X's dtype");
    POPRT_ASSIGN_OR_RETURN(std::vector<double> v, toDoubles(*in[j]));
    operand[j] = static_cast<float>(v[0]);
  }
  POPRT_ASSIGN_OR_RETURN(std::vector<double> x, toDoubles(*xt));
  for (double& e : x) {
    auto v = static_cast<float>(e);
    for (const ChainStep& s : steps) {
      if (s.unary) {
        v = applyUnaryF(s.unary_fn, v);
        continue;
      }
      const float o = operand[static_cast<size_t>(s.operand < 0 ? -s.operand : s.operand)];
      v = s.operand > 0 ? applyBinary<float>(s.binary_fn, v, o) : applyBinary<float>(s.binary_fn, o, v);
    }
    e = v;
  }
  POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(xt->dtype(), xt->shape(), x));
  return single(std::move(y));
}

// ---- LayerNorm --------------------------------------------------------------------------------

// The same computation as ONNX's LayerNormalization (axis, epsilon, Scale, optional B): its
// evaluator runs it, and only Y is returned.
Expected<std::vector<Tensor>> evalLayerNorm(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
  const OpDef* def = findOp("", "LayerNormalization");
  POPRT_CHECK(def && def->eval, "LayerNormalization has no evaluator");
  POPRT_ASSIGN_OR_RETURN(std::vector<Tensor> out, def->eval(node, in, ctx));
  if (out.empty()) return Error("internal: LayerNormalization produced no output");
  out.resize(1);
  return out;
}

// ---- MultiHeadAttention -----------------------------------------------------------------------

// Its `num_heads` attribute, required and at least 1.
Expected<int64_t> numHeads(const ir::Node& node) {
  const int64_t heads = node.attrInt("num_heads", 0);
  if (heads < 1) return Error("num_heads must be >= 1");
  return heads;
}

Expected<std::vector<Tensor>> evalAttention(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* qt, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* kt, requireInput(in, 1));
  POPRT_ASSIGN_OR_RETURN(const Tensor* vt, requireInput(in, 2));
  const Tensor* mt = in.size() > 3 ? in[3] : nullptr;
  POPRT_TRY(requireFloat(*qt, "Q"));
  if (kt->dtype() != qt->dtype() || vt->dtype() != qt->dtype() || (mt && mt->dtype() != qt->dtype()))
    return Error("Q, K, V and Mask must have the same dtype");
  const Shape &qs = qt->shape(), &ks = kt->shape(), &vs = vt->shape();
  if (qs.size() != 3 || ks.size() != 3 || vs.size() != 3)
    return Error("Q, K and V must be [batch, sequence, hidden], got " + shapeToString(qs) + ", " + shapeToString(ks) + ", " +
                 shapeToString(vs));
  POPRT_ASSIGN_OR_RETURN(const int64_t H, numHeads(node));
  const int64_t B = qs[0], Sq = qs[1], Sk = ks[1];
  if (ks[0] != B || vs[0] != B || vs[1] != Sk || ks[2] != qs[2])
    return Error("Q " + shapeToString(qs) + ", K " + shapeToString(ks) + " and V " + shapeToString(vs) + " do not match");
  if (qs[2] % H != 0 || vs[2] % H != 0) return Error("the hidden sizes are not multiples of num_heads " + std::to_string(H));
  const int64_t D = qs[2] / H, Dv = vs[2] / H;
  const double scale = node.hasAttr("scale") ? node.attrFloat("scale", 1.0f) : 1.0 / std::sqrt(static_cast<double>(D));
  const Shape score_shape{B, H, Sq, Sk};
  std::vector<double> mask;
  if (mt) {
    if (mt->shape().size() > 4) return Error("Mask must have rank <= 4, got " + shapeToString(mt->shape()));
    POPRT_ASSIGN_OR_RETURN(mask, broadcastTo(*mt, score_shape, "Mask"));
  }
  POPRT_ASSIGN_OR_RETURN(std::vector<double> q, toDoubles(*qt));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> k, toDoubles(*kt));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> v, toDoubles(*vt));
  const Shape ys{B, Sq, H * Dv};
  POPRT_ASSIGN_OR_RETURN(int64_t ny, checkedElementCount(ys));
  std::vector<double> y(static_cast<size_t>(ny), 0.0), s(static_cast<size_t>(Sk));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        const double* qrow = q.data() + (b * Sq + i) * H * D + h * D;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < Sk; ++j) {
          const double* krow = k.data() + (b * Sk + j) * H * D + h * D;
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += qrow[d] * krow[d];
          s[j] = scale * dot + (mt ? mask[((b * H + h) * Sq + i) * Sk + j] : 0.0);
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < Sk; ++j) sum += (s[j] = std::exp(s[j] - mx));
        double* yrow = y.data() + (b * Sq + i) * H * Dv + h * Dv;
        for (int64_t j = 0; j < Sk; ++j) {
          const double p = s[j] / sum;
          const double* vrow = v.data() + (b * Sk + j) * H * Dv + h * Dv;
          for (int64_t e = 0; e < Dv; ++e) yrow[e] += p * vrow[e];
        }
      }
  POPRT_ASSIGN_OR_RETURN(Tensor yt, fromDoubles(qt->dtype(), ys, y));
  return single(std::move(yt));
}

// ---- ConvAct / GemmAct ------------------------------------------------------------------------

}  // namespace

Expected<Activation> activationOf(const ir::Node& node) {
  const std::string name = node.attrString("activation", "");
  auto kind = activationKind(name);
  if (!kind)
    return Error("activation must be one of Relu, Clip, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh, Swish; got \"" + name +
                 "\"");
  Activation act;
  act.kind = *kind;
  const float default_alpha = act.kind == ActivationKind::LeakyRelu ? 0.01f : 0.2f;
  act.alpha = node.attrFloat("activation_alpha", default_alpha);
  act.beta = node.attrFloat("activation_beta", 0.5f);
  act.min = node.attrFloat("activation_min", -std::numeric_limits<float>::infinity());
  act.max = node.attrFloat("activation_max", std::numeric_limits<float>::infinity());
  return act;
}

Expected<UnaryFn> geluFn(const ir::Node& node) {
  const std::string approximate = node.attrString("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return Error("approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  return approximate == "tanh" ? UnaryFn::GeluTanh : UnaryFn::Gelu;
}

Expected<std::vector<ChainStep>> chainSteps(const ir::Node& node) {
  const auto* ops_attr = node.hasAttr("ops") ? std::get_if<std::vector<std::string>>(&node.attributes.at("ops").value) : nullptr;
  if (!ops_attr || ops_attr->empty()) return Error("ElementwiseChain needs a non-empty 'ops' attribute (strings)");
  const std::vector<int64_t> operands = node.attrInts("operands");
  if (operands.size() != ops_attr->size()) return Error("ElementwiseChain needs one 'operands' entry per step");
  if (static_cast<int64_t>(operands.size()) > kMaxChainSteps)
    return Error("ElementwiseChain has " + std::to_string(operands.size()) + " steps, more than " +
                 std::to_string(kMaxChainSteps));
  const auto inputs = static_cast<int64_t>(node.inputs().size());
  std::vector<ChainStep> steps;
  for (size_t k = 0; k < operands.size(); ++k) {
    const std::string& op = (*ops_attr)[k];
    ChainStep step;
    step.operand = operands[k];
    if (auto u = unaryFnOf(op); u && step.operand == 0) {
      step.unary_fn = *u;
    } else if (auto b = binaryFnOf(op); b && step.operand != 0) {
      const int64_t j = step.operand < 0 ? -step.operand : step.operand;
      if (j >= inputs || !node.input(static_cast<size_t>(j)))
        return Error("ElementwiseChain step " + std::to_string(k) + " (" + op + ") names input " + std::to_string(j) +
                     ", which it does not have");
      step.unary = false;
      step.binary_fn = *b;
    } else {
      return Error("ElementwiseChain step " + std::to_string(k) + " is " + op + " with operand " + std::to_string(step.operand) +
                   ": not a unary op with 0 nor Add/Sub/Mul/Div/Max/Min/Pow with an input");
    }
    steps.push_back(step);
  }
  return steps;
}

Expected<Activation> activationOfOp(const ir::Node& node, int64_t opset) {
  auto kind = activationKind(node.opType());
  if (!kind) return Error(node.opType() + " is not an activation ConvAct/GemmAct can take");
  Activation act;
  act.kind = *kind;
  act.min = -std::numeric_limits<double>::infinity();
  act.max = std::numeric_limits<double>::infinity();
  if (act.kind == ActivationKind::LeakyRelu) act.alpha = node.attrFloat("alpha", 0.01f);
  if (act.kind == ActivationKind::HardSigmoid) {
    act.alpha = node.attrFloat("alpha", 0.2f);
    act.beta = node.attrFloat("beta", 0.5f);
  }
  if (act.kind != ActivationKind::Clip) return act;
  if (opset < 11) {
    act.min = node.attrFloat("min", -std::numeric_limits<float>::infinity());
    act.max = node.attrFloat("max", std::numeric_limits<float>::infinity());
    return act;
  }
  for (size_t i = 1; i < 3 && i < node.inputs().size(); ++i) {
    const ir::Value* bound = node.input(i);
    if (!bound) continue;
    const Tensor* t = bound->initializer();
    if (!t || t->numElements() != 1) return Error("Clip's bounds are not constants");
    POPRT_ASSIGN_OR_RETURN(std::vector<double> v, toDoubles(*t));
    (i == 1 ? act.min : act.max) = v[0];
  }
  return act;
}

namespace {

// Runs the default-domain op `base` on the node's inputs (it reads its own attributes from the
// node and ignores the activation's), then the activation on every element.
Expected<std::vector<Tensor>> evalWithActivation(const std::string& base, const ir::Node& node,
                                                 const std::vector<const Tensor*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(Activation act, activationOf(node));
  const OpDef* def = findOp("", base);
  POPRT_CHECK(def && def->eval, base + " has no evaluator");
  POPRT_ASSIGN_OR_RETURN(std::vector<Tensor> out, def->eval(node, in, ctx));
  if (out.empty()) return Error("internal: " + base + " produced no output");
  POPRT_TRY(requireFloat(out[0], "Y"));
  if (out[0].dtype() == DType::Float) {  // in place: the common case, kept cheap
    for (float& v : out[0].data<float>()) v = static_cast<float>(applyActivation(act, v));
    return single(std::move(out[0]));
  }
  POPRT_ASSIGN_OR_RETURN(std::vector<double> y, toDoubles(out[0]));
  for (double& v : y) v = applyActivation(act, v);
  POPRT_ASSIGN_OR_RETURN(Tensor yt, fromDoubles(out[0].dtype(), out[0].shape(), y));
  return single(std::move(yt));
}

// The check of an op whose attributes `read` reads (its result unused).
template <class Read>
CheckFn readsAttributes(Read read) {
  return [read](const ir::Node& n) -> Status {
    POPRT_TRY(read(n));
    return okStatus();
  };
}

}  // namespace
}  // namespace graphcore

void registerGraphcoreOps(std::vector<OpDef>& ops) {
  using namespace graphcore;
  const std::string d = kDomain;
  ops.push_back({"Gelu", Fp16Policy::Convert, LoweringFamily::Unary, evalGelu, {}, d, "", readsAttributes(geluFn)});
  ops.push_back({kElementwiseChain,
                 Fp16Policy::Convert,
                 LoweringFamily::ElementwiseChain,
                 evalElementwiseChain,
                 {},
                 d,
                 "",
                 readsAttributes(chainSteps)});
  ops.push_back({"LayerNorm", Fp16Policy::AccumulateFp32, LoweringFamily::Norm, evalLayerNorm, {}, d});
  ops.push_back({"MultiHeadAttention",
                 Fp16Policy::AccumulateFp32,
                 LoweringFamily::Attention,
                 evalAttention,
                 {},
                 d,
                 "",
                 readsAttributes(numHeads)});
  ops.push_back({"ConvAct",
                 Fp16Policy::AccumulateFp32,
                 LoweringFamily::Conv,
                 [](const ir::Node& n, const std::vector<const Tensor*>& in, EvalContext& ctx) {
                   return evalWithActivation("Conv", n, in, ctx);
                 },
                 {},
                 d,
                 "",
                 readsAttributes(activationOf)});
  ops.push_back({"GemmAct",
                 Fp16Policy::AccumulateFp32,
                 LoweringFamily::MatMul,
                 [](const ir::Node& n, const std::vector<const Tensor*>& in, EvalContext& ctx) {
                   return evalWithActivation("Gemm", n, in, ctx);
                 },
                 {},
                 d,
                 "",
                 readsAttributes(activationOf)});
}

}  // namespace poprt::ops
