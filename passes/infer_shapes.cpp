// infer_shapes: re-runs ONNX shape inference over the graph (with data propagation), so every
// value has the most precise type known — what the shape folding and codegen rely on.
#include <unordered_map>

#include "lib/onnx/onnx_io.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

class InferShapes : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    std::unordered_map<const ir::Value*, ir::TensorType> before;
    for (const auto& n : graph.nodes())
      for (const ir::Value* v : n->outputs())
        if (v) before[v] = v->type;
    POPRT_TRY(onnxio::inferShapes(ctx.model));
    int64_t refined = 0;
    for (const auto& [v, type] : before) refined += !(v->type == type);
    ctx.count("refined", refined);
    return refined > 0;
  }
};

}  // namespace

std::unique_ptr<Pass> makeInferShapes() { return std::make_unique<InferShapes>(); }

}  // namespace poprt::passes
