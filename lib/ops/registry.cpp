#include "lib/ops/registry.h"

#include <deque>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace poprt::ops {
namespace {

// The built-in ops, then the custom ops plugins add at run time (a deque: adding one never moves
// the OpDefs callers hold pointers to).
struct Registry {
  std::deque<OpDef> ops;
  std::map<std::pair<std::string, std::string>, size_t> by_key;
  // Lookups (every node the evaluator runs, from any number of threads) share it; only a plugin's
  // registration takes it alone.
  mutable std::shared_mutex mutex;
  Registry() {
    std::vector<OpDef> builtin;
    registerElementwiseOps(builtin);
    registerMatMulOps(builtin);
    registerReduceOps(builtin);
    registerTensorOps(builtin);
    registerNnOps(builtin);
    registerRnnOps(builtin);
    registerQuantOps(builtin);
    registerControlFlowOps(builtin);
    registerSignalOps(builtin);
    registerMiscOps(builtin);
    registerGraphcoreOps(builtin);
    ops.assign(std::make_move_iterator(builtin.begin()), std::make_move_iterator(builtin.end()));
    for (size_t i = 0; i < ops.size(); ++i) {
      auto key = std::make_pair(ir::canonicalDomain(ops[i].domain), ops[i].op_type);
      POPRT_CHECK(by_key.emplace(key, i).second, "op " + ops[i].op_type + " is registered twice");
    }
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const OpDef* findOp(const std::string& domain, const std::string& op_type) {
  auto& r = registry();
  std::shared_lock lock(r.mutex);
  auto it = r.by_key.find({ir::canonicalDomain(domain), op_type});
  return it == r.by_key.end() ? nullptr : &r.ops[it->second];
}

std::vector<const OpDef*> allOps() {
  auto& r = registry();
  std::shared_lock lock(r.mutex);
  std::vector<const OpDef*> out;
  for (const auto& op : r.ops) out.push_back(&op);
  return out;
}

bool isReservedDomain(const std::string& domain) {
  const std::string d = ir::canonicalDomain(domain);
  return d.empty() || d == "ai.onnx.ml" || d == "ai.onnx.preview.training" || d == "ai.graphcore";
}

Status registerCustomOp(OpDef def) {
  const std::string domain = ir::canonicalDomain(def.domain);
  if (isReservedDomain(domain))
    return Error("custom op " + def.op_type + ": domain '" + def.domain + "' belongs to ONNX or poprt");
  auto& r = registry();
  std::unique_lock lock(r.mutex);
  if (!r.by_key.emplace(std::make_pair(domain, def.op_type), r.ops.size()).second)
    return Error("custom op " + domain + "::" + def.op_type + " is already registered");
  r.ops.push_back(std::move(def));
  return okStatus();
}

int64_t EvalContext::opset(const std::string& domain) const {
  auto it = opsets_.find(ir::canonicalDomain(domain));
  return it == opsets_.end() ? 0 : it->second;
}

// The values visible while a graph runs: its own, then those of the enclosing graphs.
// Initializers are not copied in: tensor ops read them where the graph holds them.
struct Scope {
  const Scope* parent = nullptr;
  std::unordered_map<const ir::Value*, RtValue> values;

  const RtValue* find(const ir::Value* v) const {
    for (const Scope* s = this; s; s = s->parent)
      if (auto it = s->values.find(v); it != s->values.end()) return &it->second;
    return nullptr;
  }
};

namespace {

// A tensor op on its input tensors; errors name the node.
Expected<std::vector<RtValue>> runTensorOp(const OpDef& def, const ir::Node& node, const std::vector<const Tensor*>& in,
                                           EvalContext& ctx) {
  try {
    auto result = def.eval(node, in, ctx);
    if (!result.ok()) return result.error().withContext(node.describe());
    std::vector<RtValue> values;
    for (auto& t : *result) values.push_back(RtValue::of(std::move(t)));
    return values;
  } catch (const std::bad_alloc&) { return Error(node.describe() + ": out of memory in the reference evaluator"); }
}

}  // namespace

class GraphRunner {
 public:
  // The scope ends with the run: outputs are moved out of it.
  static Expected<std::vector<RtValue>> run(const ir::Graph& graph, Scope& scope, EvalContext& ctx) {
    for (const ir::Value* in : graph.inputs())
      if (!scope.find(in) && !in->initializer())
        return Error("graph '" + graph.name() + "': input '" + in->name() + "' was not given a value");
    for (const auto& node : graph.nodes()) {
      const OpDef* def = findOp(node->domain(), node->opType());
      const bool tensor_op = def && def->eval && !def->value_eval;
      std::vector<const RtValue*> args;
      std::vector<const Tensor*> tensors;
      for (const ir::Value* in : node->inputs()) {
        const RtValue* v = in ? scope.find(in) : nullptr;
        const Tensor* t = v && v->isTensor() ? &v->tensor : nullptr;
        if (in && !v && in->initializer()) {  // an initializer of this graph or an enclosing one
          if (tensor_op) {
            t = in->initializer();
          } else {
            v = &(scope.values[in] = RtValue::of(*in->initializer()));
          }
        }
        if (in && !v && !t) return Error(node->describe() + ": input '" + in->name() + "' has no value");
        if (tensor_op && v && !t) return Error(node->describe() + ": expects tensor inputs, got a sequence or optional");
        args.push_back(v);
        tensors.push_back(t);
      }
      const Scope* saved = ctx.scope_;
      ctx.scope_ = &scope;
      auto outs = tensor_op ? runTensorOp(*def, *node, tensors, ctx) : runNode(*node, args, ctx);
      ctx.scope_ = saved;
      if (!outs.ok()) return outs.error();
      for (size_t i = 0; i < node->outputs().size() && i < outs->size(); ++i) {
        const ir::Value* out = node->outputs()[i];
        if (!out) continue;
        RtValue& kept = scope.values[out] = std::move((*outs)[i]);
        if (ctx.observer_) ctx.observer_(*out, kept);
      }
    }
    // Each output is moved out of the scope at its last mention (a model whose every value is an
    // output, as per-layer --precision_compare makes, would copy them all).
    std::unordered_map<const ir::Value*, size_t> last_mention;
    for (size_t i = 0; i < graph.outputs().size(); ++i) last_mention[graph.outputs()[i]] = i;
    std::vector<RtValue> results;
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      const ir::Value* out = graph.outputs()[i];
      if (auto own = scope.values.find(out); own != scope.values.end() && last_mention[out] == i) {
        results.push_back(std::move(own->second));
      } else if (const RtValue* v = scope.find(out)) {
        results.push_back(*v);
      } else if (out->initializer()) {
        results.push_back(RtValue::of(*out->initializer()));
      } else {
        return Error("graph '" + graph.name() + "': output '" + out->name() + "' was not computed");
      }
    }
    return results;
  }
};

Expected<std::vector<RtValue>> EvalContext::runSubgraph(const ir::Graph& graph, const std::vector<RtValue>& inputs) {
  if (inputs.size() != graph.inputs().size())
    return Error("subgraph '" + graph.name() + "' takes " + std::to_string(graph.inputs().size()) + " inputs, got " +
                 std::to_string(inputs.size()));
  Scope scope;
  scope.parent = scope_;
  for (size_t i = 0; i < inputs.size(); ++i) scope.values[graph.inputs()[i]] = inputs[i];
  return GraphRunner::run(graph, scope, *this);
}

Expected<std::vector<RtValue>> runNode(const ir::Node& node, const std::vector<const RtValue*>& inputs, EvalContext& ctx) {
  const OpDef* def = findOp(node.domain(), node.opType());
  if (!def || (!def->eval && !def->value_eval))
    return Error(node.describe() + ": the reference evaluator does not support this op yet");
  if (!def->value_eval) {
    std::vector<const Tensor*> tensors;
    for (const RtValue* v : inputs) {
      if (v && !v->isTensor()) return Error(node.describe() + ": expects tensor inputs, got a sequence or optional");
      tensors.push_back(v ? &v->tensor : nullptr);
    }
    return runTensorOp(*def, node, tensors, ctx);
  }
  try {
    auto result = def->value_eval(node, inputs, ctx);
    if (!result.ok()) return result.error().withContext(node.describe());
    return result;
  } catch (const std::bad_alloc&) { return Error(node.describe() + ": out of memory in the reference evaluator"); }
}

Expected<std::vector<RtValue>> runGraph(const ir::Graph& graph, const std::vector<std::pair<std::string, RtValue>>& inputs,
                                        EvalContext& ctx) {
  Scope scope;
  for (const auto& [name, value] : inputs) {
    const ir::Value* v = graph.findLocalValue(name);
    if (!v || !v->isGraphInput()) return Error("graph has no input named '" + name + "'");
    scope.values[v] = value;
  }
  return GraphRunner::run(graph, scope, ctx);
}

Expected<std::vector<Tensor>> evaluateNode(const ir::Node& node, const std::vector<const Tensor*>& inputs, int64_t opset) {
  std::vector<RtValue> values;
  values.reserve(inputs.size());
  for (const Tensor* t : inputs) values.push_back(t ? RtValue::of(*t) : RtValue::none());
  std::vector<const RtValue*> args;
  for (size_t i = 0; i < inputs.size(); ++i) args.push_back(inputs[i] ? &values[i] : nullptr);
  EvalContext ctx({{"", opset}});
  POPRT_ASSIGN_OR_RETURN(std::vector<RtValue> outs, runNode(node, args, ctx));
  std::vector<Tensor> tensors;
  for (auto& v : outs) tensors.push_back(std::move(v.tensor));
  return tensors;
}

Expected<std::vector<Tensor>> evaluateGraph(const ir::Graph& graph, const std::vector<std::pair<std::string, Tensor>>& inputs,
                                            const Opsets& opsets) {
  std::vector<std::pair<std::string, RtValue>> values;
  for (const auto& [name, t] : inputs) values.emplace_back(name, RtValue::of(t));
  EvalContext ctx(opsets);
  POPRT_ASSIGN_OR_RETURN(std::vector<RtValue> outs, runGraph(graph, values, ctx));
  std::vector<Tensor> tensors;
  for (auto& v : outs) {
    if (!v.isTensor()) return Error("graph output is a sequence or optional, not a tensor");
    tensors.push_back(std::move(v.tensor));
  }
  return tensors;
}

Opsets opsetsOf(const ir::Model& model) {
  Opsets opsets;
  for (const auto& op : model.opset_imports) opsets[ir::canonicalDomain(op.domain)] = op.version;
  return opsets;
}

}  // namespace poprt::ops
