#include "lib/ops/registry.h"

#include <unordered_map>

namespace poprt::ops {
namespace {

struct Registry {
  std::vector<OpDef> ops;
  std::unordered_map<std::string, size_t> by_type;
  Registry() {
    registerElementwiseOps(ops);
    registerMatMulOps(ops);
    for (size_t i = 0; i < ops.size(); ++i) by_type[ops[i].op_type] = i;
  }
};

const Registry& registry() {
  static const Registry r;
  return r;
}

}  // namespace

const OpDef* findOp(const std::string& domain, const std::string& op_type) {
  if (!domain.empty() && domain != "ai.onnx") return nullptr;
  const auto& r = registry();
  auto it = r.by_type.find(op_type);
  return it == r.by_type.end() ? nullptr : &r.ops[it->second];
}

std::vector<const OpDef*> allOps() {
  std::vector<const OpDef*> out;
  for (const auto& op : registry().ops) out.push_back(&op);
  return out;
}

Expected<std::vector<Tensor>> evaluateNode(const ir::Node& node, const std::vector<const Tensor*>& inputs) {
  const OpDef* def = findOp(node.domain(), node.opType());
  if (!def || !def->eval) return Error(node.describe() + ": the reference evaluator does not support this op yet");
  try {
    auto result = def->eval(node, inputs);
    if (!result.ok()) return result.error().withContext(node.describe());
    return result;
  } catch (const std::bad_alloc&) {
    return Error(node.describe() + ": out of memory in the reference evaluator");
  }
}

Expected<std::vector<Tensor>> evaluateGraph(const ir::Graph& graph,
                                            const std::vector<std::pair<std::string, Tensor>>& inputs) {
  std::unordered_map<const ir::Value*, Tensor> values;
  for (const auto& [name, tensor] : inputs) {
    const ir::Value* v = graph.findLocalValue(name);
    if (!v || !v->isGraphInput()) return Error("graph has no input named '" + name + "'");
    values[v] = tensor;
  }
  auto lookup = [&](const ir::Value* v) -> const Tensor* {
    if (auto it = values.find(v); it != values.end()) return &it->second;
    return v->initializer();
  };
  for (const ir::Value* in : graph.inputs())
    if (!lookup(in)) return Error("graph input '" + in->name() + "' was not given a value");
  for (const auto& node : graph.nodes()) {
    std::vector<const Tensor*> args;
    for (const ir::Value* in : node->inputs()) {
      const Tensor* t = in ? lookup(in) : nullptr;
      if (in && !t) return Error(node->describe() + ": input '" + in->name() + "' has no value");
      args.push_back(t);
    }
    POPRT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, evaluateNode(*node, args));
    for (size_t i = 0; i < node->outputs().size() && i < outs.size(); ++i)
      if (node->outputs()[i]) values[node->outputs()[i]] = std::move(outs[i]);
  }
  std::vector<Tensor> results;
  for (const ir::Value* out : graph.outputs()) {
    const Tensor* t = lookup(out);
    if (!t) return Error("graph output '" + out->name() + "' was not computed");
    results.push_back(*t);
  }
  return results;
}

}  // namespace poprt::ops
