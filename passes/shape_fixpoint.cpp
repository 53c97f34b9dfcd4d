// shape_fixpoint: re-infers types and folds again until nothing changes. Exporters compute
// Reshape targets from Shape/Gather/Concat chains; the first folding turns some into constants,
// which makes further values statically typed, whose Shape chains then fold in turn, until
// nothing changes. The fusions
// that follow match on static shapes (and on values no folded Shape still reads). Nodes the
// rewrites leave unused are removed each round.
#include "passes/fusion_util.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

class ShapeFixpoint : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    bool changed = false;
    auto infer = makeInferShapes(), fold = makeConstantFolding(), identity = makeIdentityElimination();
    // A round that goes on folded or removed a node, so the node count bounds the rounds. Exported
    // transformers need about two per layer (each layer's Reshape targets fold only once the layer
    // before is typed), so no small fixed cap will do.
    const size_t max_rounds = graph.nodes().size() + 1;
    for (size_t round = 0; round < max_rounds; ++round) {
      POPRT_ASSIGN_OR_RETURN(bool refined, infer->run(graph, ctx));
      POPRT_ASSIGN_OR_RETURN(bool folded, fold->run(graph, ctx));
      POPRT_ASSIGN_OR_RETURN(bool simplified, identity->run(graph, ctx));
      // What the rewrites left unused goes now, or the next round would find the same no-ops again.
      if (int64_t dead = fusion::removeDeadNodes(graph)) ctx.count("dead_nodes", dead);
      changed |= refined || folded || simplified;
      if (!folded && !simplified) break;
      ctx.count("rounds");
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> makeShapeFixpoint() { return std::make_unique<ShapeFixpoint>(); }

}  // namespace poprt::passes
