// fuse_elementwise_chain: an elementwise op and the ops after it whose other operands are one value
// each become one ai.graphcore ElementwiseChain (lib/ops/graphcore_ops.h): a dynamic quantizer's
//   Round(x / scale), then Max(·, -zero_point), then Min(·, 255 - zero_point)
// by run-time scalars is one pass over x on the device, not four supersteps, as is the scalar
// arithmetic between its min/max and its scale. Each step must be an op the device runs as a
// Unary or Binary vertex (the chain computes them with the same functions, so in float32 the
// result is the same bits); every value inside the chain must have no other use, and the running
// value keeps its shape. Runs after float_to_half, whose overflow rules look at single ops; in
// float16 the chain computes in float32 and rounds once, where the ops rounded after each step.
// The chain keeps its ops' marks: a quantized op's integer arithmetic (its constants stay
// unrounded in a float16 PopEF), and --fp16_skip_op_types finds it by its steps' op types.
#include <algorithm>
#include <optional>
#include <unordered_set>

#include "lib/ops/graphcore_ops.h"
#include "lib/ops/registry.h"
#include "passes/fp16_options.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

using namespace fusion;

// One value of a float dtype the device computes in, of a static shape.
bool isOneValue(const ir::Value* v, DType dtype) {
  return v && v->type.isTensor() && v->type.dtype == dtype && v->type.hasStaticShape() && v->type.numElements() == 1;
}

// `n` as a step taking the running value `v` (nullptr: n heads a chain and names it), or nullopt.
struct Step {
  ir::Value* running = nullptr;
  ir::Value* operand = nullptr;  // a binary step's one value
  bool operand_first = false;    // op(operand, running)
};
std::optional<Step> asStep(const ir::Node& n, const ir::Value* v) {
  if (!n.domain().empty() || n.outputs().size() != 1 || !n.output(0)) return std::nullopt;
  const ops::OpDef* def = ops::findOp("", n.opType());
  if (!def) return std::nullopt;
  const ir::Value* y = n.output(0);
  const DType dt = y->type.dtype;
  if (!y->type.isTensor() || (dt != DType::Float && dt != DType::Float16) || !y->type.hasStaticShape()) return std::nullopt;
  auto sameAsOutput = [&](const ir::Value* x) { return x && x->type.isTensor() && x->type.dtype == dt && x->type == y->type; };
  if (def->lowering == ops::LoweringFamily::Unary && ops::unaryFnOf(n.opType()) && n.inputs().size() == 1) {
    ir::Value* x = n.input(0);
    if (!sameAsOutput(x) || (v && x != v)) return std::nullopt;
    return Step{x};
  }
  if (def->lowering != ops::LoweringFamily::Binary || !ops::binaryFnOf(n.opType()) || n.inputs().size() != 2) return std::nullopt;
  ir::Value *a = n.input(0), *b = n.input(1);
  auto take = [&](ir::Value* running, ir::Value* other, bool operand_first) -> std::optional<Step> {
    if (running == other || !sameAsOutput(running) || !isOneValue(other, dt)) return std::nullopt;
    return Step{running, other, operand_first};
  };
  if (v) return a == v ? take(a, b, false) : b == v ? take(b, a, true) : std::nullopt;
  // A head: the running value is the input of the output's shape beside a one value (the first,
  // when both are one value: scalar arithmetic).
  if (auto s = take(a, b, false)) return s;
  return take(b, a, true);
}

class FuseElementwiseChain : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    removeDeadNodes(graph);
    std::vector<ir::Node*> order;
    for (const auto& n : graph.nodes()) order.push_back(n.get());
    std::unordered_set<const ir::Node*> taken;
    // A node --fp16_skip_node_names names stays itself: the PopEF finds its weights by its name.
    const std::unordered_set<std::string> named(ctx.fp16.skip_node_names.begin(), ctx.fp16.skip_node_names.end());
    for (ir::Node* n : order)
      if (named.count(n->name())) taken.insert(n);
    bool changed = false;
    for (ir::Node* head : order) {
      if (taken.count(head)) continue;
      auto first = asStep(*head, nullptr);
      if (!first) continue;
      // Extend while the running value's one use is a step on it.
      std::vector<ir::Node*> nodes = {head};
      std::vector<Step> steps = {*first};
      for (;;) {
        const ir::Value* y = nodes.back()->output(0);
        ir::Node* next = y->isGraphOutput() ? nullptr : singleUser(y);
        if (!next || !usedExactly(y, 1) || static_cast<int64_t>(nodes.size()) == ops::graphcore::kMaxChainSteps) break;
        auto step = taken.count(next) ? std::nullopt : asStep(*next, y);
        if (!step) break;
        nodes.push_back(next);
        steps.push_back(*step);
      }
      if (nodes.size() < 2) continue;
      for (ir::Node* n : nodes) taken.insert(n);
      fuse(graph, nodes, steps, ctx);
      changed = true;
    }
    if (changed) {
      importGraphcoreDomain(ctx.model);
      POPRT_TRY(finishRewrites(graph));
    }
    return changed;
  }

 private:
  static void fuse(ir::Graph& graph, const std::vector<ir::Node*>& nodes, const std::vector<Step>& steps, PassContext& ctx) {
    std::vector<ir::Value*> inputs = {steps.front().running};
    std::vector<std::string> op_types;
    std::vector<int64_t> operands;
    for (size_t k = 0; k < nodes.size(); ++k) {
      op_types.push_back(nodes[k]->opType());
      const Step& s = steps[k];
      if (!s.operand) {
        operands.push_back(0);
        continue;
      }
      auto at = std::find(inputs.begin() + 1, inputs.end(), s.operand);
      if (at == inputs.end()) at = inputs.insert(inputs.end(), s.operand);
      const auto j = static_cast<int64_t>(at - inputs.begin());
      operands.push_back(s.operand_first ? -j : j);
    }
    const ir::TensorType type = nodes.back()->output(0)->type;
    const bool integer = std::any_of(nodes.begin(), nodes.end(), [](const ir::Node* n) { return isIntegerArithmetic(*n); });
    ir::Node* chain = replaceWithNode(graph, nodes.back(), ops::graphcore::kElementwiseChain, ops::graphcore::kDomain, inputs);
    chain->attributes["ops"].value = op_types;
    chain->attributes["operands"].value = operands;
    refineType(chain->output(0), type);
    // A quantized op's arithmetic stays marked: the PopEF keeps its constants unrounded in fp16.
    if (integer) markIntegerArithmetic(*chain);
    ctx.count("chains");
    ctx.count("ops_fused", static_cast<int64_t>(nodes.size()));
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseElementwiseChain() { return std::make_unique<FuseElementwiseChain>(); }

}  // namespace poprt::passes
