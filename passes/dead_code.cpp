// dead_code_elimination: removes nodes none of whose outputs is used or returned, and
// initializers nothing reads (graph inputs with defaults stay: callers may feed them).
#include <vector>

#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

bool isDead(const ir::Node& n) {
  for (const ir::Value* v : n.outputs())
    if (v && (!v->uses().empty() || v->isGraphOutput())) return false;
  return true;
}

class DeadCode : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    bool changed = false;
    // Reverse order: removing a consumer can make its producers dead in the same sweep.
    std::vector<ir::Node*> order;
    for (const auto& n : graph.nodes()) order.push_back(n.get());
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      if (!isDead(**it)) continue;
      graph.removeNode(*it);
      ctx.count("nodes_removed");
      changed = true;
    }
    size_t initializers = graph.initializers().size();
    graph.removeUnusedValues(/*initializers_too=*/true);
    if (graph.initializers().size() != initializers) {
      ctx.count("initializers_removed", static_cast<int64_t>(initializers - graph.initializers().size()));
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> makeDeadCode() { return std::make_unique<DeadCode>(); }

}  // namespace poprt::passes
