// fuse_conv_activation: Conv or Gemm whose only use is an activation — Relu, Clip, LeakyRelu,
// Sigmoid, HardSigmoid, HardSwish or Tanh — becomes ai.graphcore ConvAct / GemmAct (see
// lib/ops/graphcore_ops.h): Conv's/Gemm's attributes plus `activation` and its parameters, always
// written out (activation_alpha, activation_beta, activation_min, activation_max). Clip's bounds
// must be constants (attributes before opset 11, constant inputs from 11). So does a Conv or Gemm
// followed by a gate on its own output: y · Sigmoid(y) (SiLU) into the Swish activation, and
// y · HardSigmoid(y, 1/6, 0.5) (HardSwish before opset 14; fuse_hard_sigmoid makes the
// HardSigmoid) into HardSwish. A Gemm whose output goes through a Reshape alone to the activation
// (a Gemm of rows') takes it too, the Reshape moving after the GemmAct.
#include <cmath>
#include <limits>
#include <map>

#include "lib/ops/graphcore_ops.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite_rule.h"

namespace poprt::passes {
namespace {

using namespace fusion;

bool isActivation(const ir::Node* n) { return n && n->domain().empty() && ops::graphcore::isFusableActivation(n->opType()); }

// The activation's parameters as ConvAct/GemmAct attributes, or an error text.
std::string activationAttrs(const ir::Node& act, int64_t opset, std::map<std::string, ir::Attribute>& attrs) {
  auto a = ops::graphcore::activationOfOp(act, opset);
  if (!a.ok()) return a.error().message();
  attrs["activation"].value = act.opType();
  const auto kind = a->kind;
  using K = ops::graphcore::ActivationKind;
  if (kind == K::LeakyRelu || kind == K::HardSigmoid) attrs["activation_alpha"].value = static_cast<float>(a->alpha);
  if (kind == K::HardSigmoid) attrs["activation_beta"].value = static_cast<float>(a->beta);
  if (kind == K::Clip) {
    attrs["activation_min"].value = static_cast<float>(a->min);
    attrs["activation_max"].value = static_cast<float>(a->max);
  }
  return "";
}

// y · gate(y) when that is all y is used for: the Mul and the activation it makes (Swish for a
// Sigmoid gate, HardSwish for HardSigmoid(y, 1/6, 0.5)); else a null Mul.
struct Gated {
  ir::Node* mul = nullptr;
  const char* activation = "";
};
Gated gatedActivation(const ir::Value* y) {
  if (!usedExactly(y, 2)) return {};
  for (const ir::Use& u : y->uses()) {
    const ir::Node* gate = u.node;
    const char* activation = isOp(gate, "Sigmoid") ? "Swish"
                             : isOp(gate, "HardSigmoid") && near(gate->attrFloat("alpha", 0.2f), 1.0 / 6.0, 1e-6) &&
                                     gate->attrFloat("beta", 0.5f) == 0.5f
                                 ? "HardSwish"
                                 : nullptr;
    if (!activation || gate->input(0) != y) continue;
    ir::Node* mul = singleUser(gate->output(0));
    if (isOp(mul, "Mul") && otherOperand(*mul, gate->output(0)) == y) return {mul, activation};
  }
  return {};
}

// A Conv or Gemm and the activation (or gating Mul) that becomes its epilogue.
struct ActMatch {
  std::vector<ir::Node*> nodes;  // the Conv/Gemm, then the activation or the gate's Mul
  std::map<std::string, ir::Attribute> attrs;
  std::string act_type;
  ir::Node* reshape = nullptr;  // a Reshape between a Gemm and its activation (a Gemm of rows')
};

// The Reshape a Gemm's output goes through alone to an activation, its only use: a Linear layer
// on a [batch, tokens, features] input, which fuse_matmul_add_into_gemm made a Gemm of rows
// between two Reshapes. An activation commutes with the Reshape, so it can be the Gemm's epilogue.
ir::Node* reshapeToActivation(const ir::Node& gemm, const ir::Value* y) {
  ir::Node* reshape = singleUser(y);
  if (!isOp(&gemm, "Gemm") || !isOp(reshape, "Reshape") || reshape->input(0) != y) return nullptr;
  const ir::Value* z = reshape->output(0);
  ir::Node* act = z->isGraphOutput() ? nullptr : singleUser(z);
  return isActivation(act) && act->input(0) == z ? reshape : nullptr;
}

class FuseConvActivation : public RewriteRule<ActMatch> {
 protected:
  std::vector<std::string> rootOpTypes() const override { return {"Conv", "Gemm"}; }

  Found<ActMatch> match(ir::Graph&, ir::Node& base, PassContext&) override {
    using F = Found<ActMatch>;
    ir::Value* y = base.output(0);
    if (!y || base.outputs().size() != 1) return F::none();
    ir::Node* act = singleUser(y);
    const Gated gated = gatedActivation(y);
    if (gated.mul) act = gated.mul;
    ir::Node* reshape = gated.mul ? nullptr : reshapeToActivation(base, y);
    if (reshape) act = singleUser(reshape->output(0));
    if (!gated.mul && (!isActivation(act) || act->input(0) != (reshape ? reshape->output(0) : y))) {
      // Plausible: an activation reads the output, but so does something else (or it is returned).
      const ir::Node* a = nullptr;
      std::string others;
      for (const ir::Use& u : y->uses()) {
        if (!a && isActivation(u.node) && u.input_index == 0) {
          a = u.node;
        } else if (others.find(u.node->opType()) == std::string::npos) {
          others += (others.empty() ? "" : ", ") + u.node->opType();
        }
      }
      if (!a) return F::none();
      if (y->isGraphOutput()) others += std::string(others.empty() ? "" : ", ") + "a graph output";
      return F::nearMiss("the " + a->opType() + " is not the only use of its output (also: " + others + ")");
    }
    const DType dt = y->type.dtype;
    if (dt != DType::Float && dt != DType::Float16) return F::nearMiss("its output is not float32 or float16", act);
    std::map<std::string, ir::Attribute> attrs = base.attributes;
    if (gated.mul) {
      attrs["activation"].value = std::string(gated.activation);
    } else if (std::string why = activationAttrs(*act, opset(), attrs); !why.empty()) {
      return F::nearMiss(why, act);
    }
    return ActMatch{{&base, act}, std::move(attrs), gated.mul ? gated.activation : act->opType(), reshape};
  }

  Status rewrite(ir::Graph& graph, ActMatch& m, PassContext& ctx) override {
    ir::Node* base = m.nodes[0];
    ir::Node* act = m.nodes[1];
    if (m.reshape) {
      // Gemm -> Reshape -> act becomes GemmAct -> Reshape: the Reshape makes the activation's
      // output (its name, uses, graph-output place), the Gemm's output is the GemmAct's.
      const std::vector<ir::Value*> shape_inputs(m.reshape->inputs().begin() + 1, m.reshape->inputs().end());
      std::vector<ir::Value*> reshape_inputs = {base->output(0)};
      reshape_inputs.insert(reshape_inputs.end(), shape_inputs.begin(), shape_inputs.end());
      const auto reshape_attrs = m.reshape->attributes;
      const ir::TensorType z_type = act->output(0)->type;
      ir::Node* moved = replaceWithNode(graph, act, "Reshape", "", reshape_inputs);
      moved->attributes = reshape_attrs;
      refineType(moved->output(0), z_type);
      act = base;  // the GemmAct now replaces the Gemm, keeping its output
    }
    const ir::TensorType base_type = base->output(0)->type;
    const bool conv = base->opType() == "Conv";
    const std::string name = base->name().empty() ? act->name() : base->name();
    const std::vector<ir::Value*> inputs(base->inputs().begin(), base->inputs().end());  // act may be base
    ir::Node* fused = replaceWithNode(graph, act, conv ? "ConvAct" : "GemmAct", ops::graphcore::kDomain, inputs);
    fused->attributes = std::move(m.attrs);
    fused->setName(name);
    refineType(fused->output(0), base_type);
    importGraphcoreDomain(ctx.model);
    ctx.count(std::string(conv ? "conv_" : "gemm_") + m.act_type);
    return okStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseConvActivation() { return std::make_unique<FuseConvActivation>(); }

}  // namespace poprt::passes
