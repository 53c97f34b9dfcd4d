#include "passes/fusion_util.h"

#include <cmath>

#include "lib/ops/graphcore_ops.h"
#include "lib/ops/op_util.h"

namespace poprt::passes::fusion {

bool isOp(const ir::Node* n, const char* op_type) { return n && n->opType() == op_type && n->domain().empty(); }

std::optional<double> scalarOf(const ir::Value* v) {
  const Tensor* t = constantOf(v);
  if (!t || t->numElements() != 1) return std::nullopt;
  auto values = ops::toDoubles(*t);
  if (!values.ok() || values->size() != 1) return std::nullopt;
  return (*values)[0];
}

ir::Value* otherOperand(const ir::Node& n, const ir::Value* v) {
  if (n.inputs().size() != 2) return nullptr;
  if (n.input(0) == v) return n.input(1);
  if (n.input(1) == v) return n.input(0);
  return nullptr;
}

std::optional<double> scalarOperand(const ir::Node& n, const ir::Value* x) {
  const ir::Value* c = otherOperand(n, x);
  const Tensor* t = constantOf(c);
  if (!t || !x || !x->type.dims || t->shape().size() > x->type.dims->size()) return std::nullopt;
  if (c->type.dtype != DType::Undefined && x->type.dtype != DType::Undefined && t->dtype() != x->type.dtype) return std::nullopt;
  return scalarOf(c);
}

bool near(double v, double target, double rel) { return std::fabs(v - target) <= rel * std::fabs(target); }

ir::Node* singleUser(const ir::Value* v) {
  if (!v || v->isGraphOutput() || v->uses().size() != 1) return nullptr;
  ir::Node* n = v->uses()[0].node;
  return n->graph() == v->graph() ? n : nullptr;  // a use inside a subgraph is not a pattern node
}

bool usedExactly(const ir::Value* v, size_t n) {
  if (!v || v->isGraphOutput() || v->uses().size() != n) return false;
  for (const ir::Use& u : v->uses())
    if (u.node->graph() != v->graph()) return false;
  return true;
}

bool sameDim(const ir::Dim& a, const ir::Dim& b) {
  if (a.isStatic() || b.isStatic()) return a.value == b.value;
  return !a.symbol.empty() && a.symbol == b.symbol;
}

std::optional<std::vector<ir::Dim>> dimsOf(const ir::Value* v) {
  if (!v || !v->type.isTensor() || !v->type.dims) return std::nullopt;
  return *v->type.dims;
}

std::optional<std::vector<ir::Dim>> reshapeResult(const ir::Node& reshape) {
  std::optional<std::vector<ir::Dim>> out = dimsOf(reshape.output(0));
  const Tensor* target = constantOf(reshape.input(1));
  auto in = dimsOf(reshape.input(0));
  if (!target) return out;
  auto values = ops::toInt64s(*target);
  if (!values.ok()) return out;
  const bool allowzero = reshape.attrInt("allowzero", 0) != 0;
  std::vector<ir::Dim> dims;
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < values->size(); ++i) {
    int64_t v = (*values)[i];
    ir::Dim d;
    if (v == 0 && !allowzero) {
      if (!in || i >= in->size()) return out;
      d = (*in)[i];
    } else if (v == -1) {
      infer_at = static_cast<int64_t>(i);
    } else if (v >= 0) {
      d = ir::Dim::fixed(v);
    } else {
      return out;
    }
    if (v != -1) {
      if (d.isStatic())
        known *= d.value;
      else
        known = -1;
    }
    dims.push_back(d);
  }
  if (infer_at >= 0) {
    int64_t total = 1;
    bool static_in = in.has_value();
    if (in)
      for (const ir::Dim& d : *in) {
        if (!d.isStatic()) static_in = false;
        total *= d.isStatic() ? d.value : 1;
      }
    if (static_in && known > 0 && total % known == 0)
      dims[static_cast<size_t>(infer_at)] = ir::Dim::fixed(total / known);
    else if (out && out->size() == dims.size())
      dims[static_cast<size_t>(infer_at)] = (*out)[static_cast<size_t>(infer_at)];
  }
  // The output type may know more (a symbol the copy did not carry).
  if (out && out->size() == dims.size())
    for (size_t i = 0; i < dims.size(); ++i)
      if (!dims[i].isStatic() && dims[i].symbol.empty()) dims[i] = (*out)[i];
  return dims;
}

std::optional<std::vector<int64_t>> intsFromInputOrAttr(const ir::Node& n, size_t input, const std::string& attr) {
  if (const ir::Value* v = n.input(input)) {
    const Tensor* t = constantOf(v);
    if (!t) return std::nullopt;
    auto values = ops::toInt64s(*t);
    if (!values.ok()) return std::nullopt;
    return *values;
  }
  if (n.hasAttr(attr)) return n.attrInts(attr);
  return std::nullopt;
}

int64_t removeDeadNodes(ir::Graph& graph) {
  std::vector<ir::Node*> order;
  for (const auto& n : graph.nodes()) order.push_back(n.get());
  int64_t removed = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    bool dead = true;
    for (const ir::Value* v : (*it)->outputs())
      if (v && (!v->uses().empty() || v->isGraphOutput())) dead = false;
    if (!dead) continue;
    graph.removeNode(*it);
    ++removed;
  }
  return removed;
}

ir::Node* replaceWithNode(ir::Graph& graph, ir::Node* last, const std::string& op_type, const std::string& domain,
                          const std::vector<ir::Value*>& inputs) {
  POPRT_CHECK(last->outputs().size() == 1 && last->output(0), "replaceWithNode: " + last->describe() + " must have one output");
  ir::Value* y = last->output(0);
  const std::string name = last->name();
  // Park y's uses (and graph-output slots) on a placeholder, free y of its producer, then give it
  // to the new node and move the uses back.
  ir::Value* parked = graph.addValue(graph.uniqueName(y->name() + "__parked"), y->type);
  graph.replaceAllUses(y, parked);
  graph.removeNode(last);
  ir::Node* fused = graph.addNode(op_type, inputs, {y}, name, domain);
  graph.replaceAllUses(parked, y);
  return fused;
}

void refineType(ir::Value* y, const ir::TensorType& known) {
  if (!y->type.isTensor() || !known.isTensor()) return;
  if (y->type.dtype == DType::Undefined) y->type.dtype = known.dtype;
  if (!known.dims) return;
  if (!y->type.dims || y->type.dims->size() != known.dims->size()) {
    y->type.dims = known.dims;
    return;
  }
  for (size_t i = 0; i < known.dims->size(); ++i) {
    ir::Dim& d = (*y->type.dims)[i];
    const ir::Dim& k = (*known.dims)[i];
    if (!d.isStatic() && (k.isStatic() || d.symbol.empty())) d = k;
  }
}

void importGraphcoreDomain(ir::Model& model) {
  for (const auto& op : model.opset_imports)
    if (op.domain == ops::graphcore::kDomain) return;
  model.opset_imports.push_back({ops::graphcore::kDomain, ops::graphcore::kOpsetVersion});
}

Status finishRewrites(ir::Graph& graph) {
  removeDeadNodes(graph);
  graph.removeUnusedValues(/*initializers_too=*/false);
  return graph.topoSort();
}

}  // namespace poprt::passes::fusion
