// fuse_hard_sigmoid: the chains exporters write for MobileNetV3's hard activations become ONNX ops.
//   Clip(x + 3, 0, 6) / 6           (or · (1/6))          -> HardSigmoid(x, alpha 1/6, beta 0.5)
//   x · HardSigmoid(x, 1/6, 0.5)    (either operand order) -> HardSwish(x)   (opset >= 14)
//   x · Clip(x + 3, 0, 6) / 6       (PaddlePaddle's hardswish) -> HardSwish(x), or below opset 14
//                                                              x · HardSigmoid(x, 1/6, 0.5)
// HardSigmoid exists from opset 6, HardSwish from 14; below 14, fuse_conv_activation still takes
// a Conv or Gemm followed by that Mul into a ConvAct/GemmAct with the HardSwish activation. Every
// interior value must have no other use; Clip's bounds must be constants.
#include <cmath>

#include "lib/ops/graphcore_ops.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite_rule.h"

namespace poprt::passes {
namespace {

using namespace fusion;

// Why `scaled` (what a Div by 6 or a Mul by 1/6 scales) is not Clip(x + 3, 0, 6); on a match,
// sets x.
std::string matchChain(ir::Value* scaled, int64_t opset, ir::Value*& x) {
  ir::Node* clip = scaled->producer();
  if (!isOp(clip, "Clip") || !singleUser(scaled)) return "its input is not a Clip used only by it";
  auto bounds = ops::graphcore::activationOfOp(*clip, opset);
  if (!bounds.ok()) return bounds.error().message();
  if (bounds->min != 0.0 || bounds->max != 6.0) return "the Clip is not to [0, 6]";
  ir::Value* shifted = clip->input(0);
  ir::Node* add = shifted ? shifted->producer() : nullptr;
  if (!isOp(add, "Add") || !singleUser(shifted)) return "the Clip's input is not an Add used only by it";
  for (size_t i = 0; i < 2 && !x; ++i) {
    auto c = scalarOperand(*add, add->input(i));
    if (c && *c == 3.0) x = add->input(i);
  }
  if (!x) return "the Add is not x + 3";
  return "";
}

// x when `product` is x · Clip(x + 3, 0, 6) (either operand order), used only by what scales it.
ir::Value* clippedProductOf(ir::Value* product, int64_t opset) {
  ir::Node* mul = product->producer();
  if (!isOp(mul, "Mul") || !singleUser(product)) return nullptr;
  for (size_t i = 0; i < 2; ++i) {
    ir::Value* x = nullptr;
    if (matchChain(mul->input(i), opset, x).empty() && x == mul->input(1 - i)) return x;
  }
  return nullptr;
}

// The value a Div by 6 or a Mul by 1/6 scales, else nullptr.
ir::Value* sixthOf(const ir::Node* n) {
  if (isOp(n, "Div")) {
    auto c = scalarOperand(*n, n->input(0));
    return c && *c == 6.0 ? n->input(0) : nullptr;
  }
  if (isOp(n, "Mul"))
    for (size_t i = 0; i < 2; ++i)
      if (auto c = scalarOperand(*n, n->input(i)); c && near(*c, 1.0 / 6.0)) return n->input(i);
  return nullptr;
}

bool sameFloatType(const ir::Value* a, const ir::Value* b) {
  return a->type.isTensor() && isFloatingPoint(a->type.dtype) && b->type.dtype == a->type.dtype && a->type.dims && b->type.dims &&
         a->type.dims->size() == b->type.dims->size();
}

struct HardSigmoidMatch {
  std::vector<ir::Node*> nodes;  // the Div by 6 (or Mul by 1/6), then x · it when that becomes HardSwish
  ir::Value* x = nullptr;
  bool scales_product = false;  // the Div scales x · Clip(x + 3, 0, 6), not the Clip
};

class FuseHardSigmoid : public RewriteRule<HardSigmoidMatch> {
 protected:
  std::vector<std::string> rootOpTypes() const override { return {"Div", "Mul"}; }

  Found<HardSigmoidMatch> match(ir::Graph&, ir::Node& div, PassContext&) override {
    using F = Found<HardSigmoidMatch>;
    ir::Value* scaled = sixthOf(&div);
    if (!scaled) return F::none();
    if (ir::Value* x = clippedProductOf(scaled, opset())) {
      if (!sameFloatType(x, div.output(0))) return F::nearMiss("x is not a floating-point tensor of the result's rank");
      return HardSigmoidMatch{{&div}, x, true};
    }
    ir::Value* x = nullptr;
    std::string why = matchChain(scaled, opset(), x);
    if (why.empty() && !sameFloatType(x, div.output(0))) why = "x is not a floating-point tensor of the result's rank";
    if (!why.empty())
      return x || why.find("[0, 6]") != std::string::npos ? F::nearMiss(why) : F::none();  // only chains that began alike
    HardSigmoidMatch m{{&div}, x};
    // x · HardSigmoid(x) is HardSwish(x), where the opset has it.
    ir::Node* mul = singleUser(div.output(0));
    if (opset() >= 14 && isOp(mul, "Mul") && otherOperand(*mul, div.output(0)) == x) m.nodes.push_back(mul);
    return m;
  }

  Status rewrite(ir::Graph& graph, HardSigmoidMatch& m, PassContext& ctx) override {
    ir::Node* div = m.nodes[0];
    if (m.scales_product) return rewriteProduct(graph, div, m.x, ctx);
    const ir::TensorType type = div->output(0)->type;
    ir::Node* hs = replaceWithNode(graph, div, "HardSigmoid", "", {m.x});
    hs->attributes["alpha"].value = static_cast<float>(1.0 / 6.0);
    hs->attributes["beta"].value = 0.5f;
    refineType(hs->output(0), type);
    ctx.count("hard_sigmoid");
    if (m.nodes.size() < 2) return okStatus();
    ir::Node* mul = m.nodes[1];
    const ir::TensorType mul_type = mul->output(0)->type;
    ir::Node* swish = replaceWithNode(graph, mul, "HardSwish", "", {m.x});
    refineType(swish->output(0), mul_type);
    ctx.count("hard_swish");
    return okStatus();
  }

 private:
  // x · Clip(x + 3, 0, 6) / 6: HardSwish(x) where the opset has it; below, the Clip becomes
  // HardSigmoid(x) and the Div x · it, which fuse_conv_activation takes after a Conv or Gemm.
  Status rewriteProduct(ir::Graph& graph, ir::Node* div, ir::Value* x, PassContext& ctx) {
    const ir::TensorType type = div->output(0)->type;
    if (opset() >= 14) {
      refineType(replaceWithNode(graph, div, "HardSwish", "", {x})->output(0), type);
      ctx.count("hard_swish");
      return okStatus();
    }
    ir::Node* clip = otherOperand(*div->input(0)->producer(), x)->producer();
    const ir::TensorType clip_type = clip->output(0)->type;
    ir::Node* hs = replaceWithNode(graph, clip, "HardSigmoid", "", {x});
    hs->attributes["alpha"].value = static_cast<float>(1.0 / 6.0);
    hs->attributes["beta"].value = 0.5f;
    refineType(hs->output(0), clip_type);
    refineType(replaceWithNode(graph, div, "Mul", "", {x, hs->output(0)})->output(0), type);
    ctx.count("hard_sigmoid");
    return okStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseHardSigmoid() { return std::make_unique<FuseHardSigmoid>(); }

}  // namespace poprt::passes
