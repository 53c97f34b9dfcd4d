// identity_elimination: removes nodes that return their input unchanged and merges pairs that
// cancel or compose. A node whose output is a graph output stays (the output keeps its name).
#include <numeric>

#include "lib/ops/op_util.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

const Tensor* constantInput(const ir::Node& n, size_t i) { return ir::constantOf(n.input(i)); }

bool sameStaticShape(const ir::Value* a, const ir::Value* b) {
  return a && b && a->type.isTensor() && b->type.isTensor() && a->type.hasStaticShape() && b->type.hasStaticShape() &&
         a->type.staticShape() == b->type.staticShape() && a->type.dtype == b->type.dtype;
}

std::vector<int64_t> transposePerm(const ir::Node& n) {
  std::vector<int64_t> perm = n.attrInts("perm");
  if (perm.empty() && n.input(0) && n.input(0)->type.dims) {
    perm.resize(n.input(0)->type.dims->size());
    std::iota(perm.rbegin(), perm.rend(), 0);  // default: reverse the dims
  }
  return perm;
}

bool isIdentityPerm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// Why node `n` returns input 0 unchanged, or "" when it does not.
std::string noOpReason(const ir::Node& n, int64_t opset) {
  const std::string& op = n.opType();
  const ir::Value* x = n.input(0);
  const ir::Value* y = n.output(0);
  if (!x || !y) return "";
  if (op == "Identity") return x->type.isTensor() || x->type.kind == y->type.kind ? "identity" : "";
  if (op == "Dropout") {
    if (n.output(1) && !n.output(1)->uses().empty()) return "";  // the mask is used
    // In training mode it still passes X unchanged when the ratio is a constant 0 (torchvision's
    // Swin calls dropout with training=True and p=0): the scale is 1 and nothing is dropped.
    const Tensor* training = constantInput(n, 2);
    const Tensor* ratio = constantInput(n, 1);
    bool keeps_all = false;
    if (ratio && ratio->numElements() == 1) {
      auto r = ops::toDoubles(*ratio);
      keeps_all = r.ok() && (*r)[0] == 0;
    }
    if (n.input(2) && (!training || training->data<uint8_t>()[0] != 0) && !keeps_all) return "";
    if (opset < 7 && n.attrInt("is_test", 0) == 0) return "";
    return "dropout";
  }
  if (op == "Cast")
    return x->type.dtype != DType::Undefined && x->type.dtype == static_cast<DType>(n.attrInt("to", 0)) ? "cast" : "";
  if (op == "Reshape" || op == "Expand" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten")
    return sameStaticShape(x, y) ? "reshape" : "";
  if (op == "Transpose") return isIdentityPerm(transposePerm(n)) ? "transpose" : "";
  if (op == "Pad") {
    std::vector<int64_t> pads = n.attrInts("pads");
    if (opset >= 11) {
      const Tensor* p = constantInput(n, 1);
      if (!p) return "";
      auto values = ops::toInt64s(*p);
      if (!values.ok()) return "";
      pads = *values;
    }
    bool zero = std::all_of(pads.begin(), pads.end(), [](int64_t v) { return v == 0; });
    return zero && sameStaticShape(x, y) ? "pad" : "";
  }
  return "";
}

class IdentityElimination : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    const int64_t opset = ctx.opsets()[""];
    bool changed = false;
    std::vector<ir::Node*> nodes;
    for (const auto& n : graph.nodes()) nodes.push_back(n.get());
    for (ir::Node* n : nodes) {
      ir::Value* y = n->output(0);
      if (!y || y->isGraphOutput()) continue;
      std::string why = noOpReason(*n, opset);
      if (!why.empty()) {
        graph.replaceAllUses(y, n->input(0));
        ctx.count(why);
        changed = true;
        continue;
      }
      changed |= mergeWithProducer(graph, *n, ctx);
    }
    return changed;
  }

 private:
  // Reshape(Reshape(x)) -> Reshape(x); Transpose(Transpose(x)) -> one Transpose or nothing;
  // Unsqueeze(Squeeze(x)) / Squeeze(Unsqueeze(x)) on the same axes -> x. The first node is left
  // for dead-code elimination once nothing uses it.
  bool mergeWithProducer(ir::Graph& graph, ir::Node& n, PassContext& ctx) {
    ir::Value* x = n.input(0);
    ir::Node* p = x ? x->producer() : nullptr;
    if (!p || p->graph() != &graph) return false;
    const std::string& op = n.opType();
    if (op == "Reshape" && p->opType() == "Reshape" && n.output(0)->type.hasStaticShape() && constantInput(n, 1)) {
      // The second Reshape's target is static and constant: it can read the first's input directly.
      const Tensor* shape = constantInput(n, 1);
      auto dims = ops::toInt64s(*shape);
      if (!dims.ok() || std::find(dims->begin(), dims->end(), 0) != dims->end()) return false;  // 0 copies a dim of x
      n.setInput(0, p->input(0));
      ctx.count("reshape_chain");
      return true;
    }
    if (op == "Transpose" && p->opType() == "Transpose") {
      std::vector<int64_t> inner = transposePerm(*p), outer = transposePerm(n);
      if (inner.size() != outer.size() || inner.empty()) return false;
      std::vector<int64_t> composed(outer.size());
      for (size_t i = 0; i < outer.size(); ++i) composed[i] = inner[static_cast<size_t>(outer[i])];
      if (isIdentityPerm(composed)) {
        graph.replaceAllUses(n.output(0), p->input(0));
      } else {
        n.setInput(0, p->input(0));
        n.attributes["perm"].value = composed;
      }
      ctx.count("transpose_pair");
      return true;
    }
    bool pair = (op == "Unsqueeze" && p->opType() == "Squeeze") || (op == "Squeeze" && p->opType() == "Unsqueeze");
    if (pair && sameStaticShape(p->input(0), n.output(0))) {
      graph.replaceAllUses(n.output(0), p->input(0));
      ctx.count("squeeze_pair");
      return true;
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<Pass> makeIdentityElimination() { return std::make_unique<IdentityElimination>(); }

}  // namespace poprt::passes
