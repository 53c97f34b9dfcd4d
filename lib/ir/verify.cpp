#include <unordered_set>

#include "lib/ir/graph.h"

namespace poprt::ir {
namespace {

Status verifyGraph(const Graph& graph, std::unordered_set<const Value*>& visible) {
  auto where = [&](const Node& n) { return "graph '" + graph.name() + "': " + n.describe(); };
  std::unordered_set<std::string> names;
  auto define = [&](const Value* v) -> Status {
    if (v->graph() != &graph) return Error("graph '" + graph.name() + "': value '" + v->name() + "' belongs to another graph");
    if (!v->name().empty() && !names.insert(v->name()).second)
      return Error("graph '" + graph.name() + "': value '" + v->name() + "' is defined twice");
    visible.insert(v);
    return okStatus();
  };
  for (const Value* v : graph.inputs()) POPRT_TRY(define(v));
  for (const Value* v : graph.initializers()) {
    if (!v->isInitializer()) return Error("graph '" + graph.name() + "': '" + v->name() + "' listed as initializer without data");
    if (!v->isGraphInput()) POPRT_TRY(define(v));
  }
  for (const auto& node : graph.nodes()) {
    if (node->graph() != &graph) return Error(where(*node) + " belongs to another graph");
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      const Value* in = node->inputs()[i];
      if (!in) continue;
      if (!visible.count(in)) return Error(where(*node) + ": input '" + in->name() + "' is not defined before it is used");
      bool listed = false;
      for (const Use& u : in->uses()) listed |= (u.node == node.get() && u.input_index == i);
      if (!listed) return Error(where(*node) + ": use list of '" + in->name() + "' is missing this node");
    }
    for (const auto& [name, attr] : node->attributes) {
      std::vector<GraphPtr> subs;
      if (auto* g = std::get_if<GraphPtr>(&attr.value)) subs.push_back(*g);
      if (auto* gs = std::get_if<std::vector<GraphPtr>>(&attr.value)) subs = *gs;
      for (const auto& sub : subs) {
        if (!sub) return Error(where(*node) + ": attribute '" + name + "' has no graph");
        if (sub->parent() != &graph) return Error(where(*node) + ": subgraph '" + sub->name() + "' has the wrong parent");
        std::unordered_set<const Value*> inner = visible;
        POPRT_TRY(verifyGraph(*sub, inner));
      }
    }
    for (const Value* out : node->outputs()) {
      if (!out) continue;
      if (out->producer() != node.get()) return Error(where(*node) + ": output '" + out->name() + "' names another producer");
      POPRT_TRY(define(out));
    }
  }
  for (const Value* out : graph.outputs())
    if (!out || !visible.count(out))
      return Error("graph '" + graph.name() + "': output '" + (out ? out->name() : "<null>") + "' is never defined");
  return okStatus();
}

}  // namespace

Status verify(const Graph& graph) {
  std::unordered_set<const Value*> visible;
  // A subgraph verified on its own may read values of its enclosing graphs.
  for (const Graph* g = graph.parent(); g; g = g->parent()) {
    visible.insert(g->inputs().begin(), g->inputs().end());
    visible.insert(g->initializers().begin(), g->initializers().end());
    for (const auto& n : g->nodes()) visible.insert(n->outputs().begin(), n->outputs().end());
  }
  return verifyGraph(graph, visible);
}

}  // namespace poprt::ir
