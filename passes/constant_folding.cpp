// constant_folding: runs nodes whose inputs are all constants with the reference evaluator and
// replaces their outputs with initializers (up to --max_tensor_size bytes each). Shape and Size of
// statically shaped tensors fold too, so Shape -> Gather -> Concat -> Reshape chains disappear.
#include <algorithm>
#include <optional>
#include <set>

#include "lib/ops/op_util.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

// Ops whose result is not a function of their inputs.
const std::set<std::string> kNondeterministic = {"RandomNormal",      "RandomUniform", "RandomNormalLike",
                                                 "RandomUniformLike", "Multinomial",   "Bernoulli"};

bool isConstant(const ir::Value* v) {
  // An initializer that is also a graph input is only a default: the caller may override it.
  return v->isInitializer() && !v->isGraphInput();
}

bool hasSubgraph(const ir::Node& n) {
  for (const auto& [name, attr] : n.attributes)
    if (std::holds_alternative<ir::GraphPtr>(attr.value) || std::holds_alternative<std::vector<ir::GraphPtr>>(attr.value))
      return true;
  return false;
}

// Shape/Size of a tensor whose shape is static, whatever its values.
std::optional<Tensor> foldShape(const ir::Node& n, int64_t opset) {
  const ir::Value* x = n.input(0);
  if (!x || !x->type.isTensor() || !x->type.hasStaticShape()) return std::nullopt;
  Shape shape = x->type.staticShape();
  if (n.opType() == "Size") {
    Tensor t(DType::Int64, {});
    t.data<int64_t>()[0] = x->type.numElements();
    return t;
  }
  auto rank = static_cast<int64_t>(shape.size());
  int64_t start = opset >= 15 ? n.attrInt("start", 0) : 0;
  int64_t end = opset >= 15 ? n.attrInt("end", rank) : rank;
  auto clampAxis = [rank](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank); };
  start = clampAxis(start);
  end = clampAxis(end);
  std::vector<int64_t> dims(shape.begin() + start, shape.begin() + std::max(start, end));
  return ops::int64Tensor(dims, {static_cast<int64_t>(dims.size())});
}

class ConstantFolding : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    ops::EvalContext eval(ctx.opsets());
    std::vector<ir::Node*> folded;
    for (const auto& node : graph.nodes()) {
      ir::Node& n = *node;
      if (!n.domain().empty()) continue;
      if (kNondeterministic.count(n.opType()) || hasSubgraph(n)) continue;
      std::vector<Tensor> results;
      if (n.opType() == "Shape" || n.opType() == "Size") {
        auto t = foldShape(n, eval.opset());
        if (!t) continue;
        results.push_back(std::move(*t));
      } else {
        bool all_constant = true;
        std::vector<const Tensor*> inputs;
        for (const ir::Value* v : n.inputs()) {
          if (v && !isConstant(v)) all_constant = false;
          inputs.push_back(v ? v->initializer() : nullptr);
        }
        const ops::OpDef* def = ops::findOp(n.domain(), n.opType());
        if (!all_constant || !def || !def->eval) continue;
        auto out = def->eval(n, inputs, eval);
        if (!out.ok()) {
          ctx.nearMiss(n, out.error().message());
          continue;
        }
        results = std::move(out).value();
      }
      if (results.size() < n.outputs().size()) continue;
      bool fits = true;
      for (const Tensor& t : results) fits &= static_cast<int64_t>(t.byteSize()) <= ctx.max_tensor_size;
      if (!fits) {
        ctx.nearMiss(n, "result larger than --max_tensor_size");
        continue;
      }
      for (size_t i = 0; i < n.outputs().size(); ++i)
        if (ir::Value* v = n.outputs()[i]) graph.makeConstant(v, std::move(results[i]));
      folded.push_back(&n);
    }
    for (ir::Node* n : folded) graph.removeNode(n);
    ctx.count("folded", static_cast<int64_t>(folded.size()));
    return !folded.empty();
  }
};

}  // namespace

std::unique_ptr<Pass> makeConstantFolding() { return std::make_unique<ConstantFolding>(); }

}  // namespace poprt::passes
