#include "passes/pass_list.h"

namespace poprt::passes {

const std::vector<PassInfo>& allPasses() {
  // The default pipeline runs them in this order.
  static const std::vector<PassInfo> passes = {
      {"infer_shapes", "propagate static shapes and types through the graph (ONNX shape inference)", makeInferShapes},
      {"constant_folding", "evaluate nodes with constant inputs (and Shape/Size of static tensors) into initializers",
       makeConstantFolding},
      {"identity_elimination",
       "remove Identity, inference Dropout, same-type Cast and no-op Reshape/Transpose/Expand/Pad; merge Reshape "
       "chains, Transpose pairs and Squeeze/Unsqueeze pairs",
       makeIdentityElimination},
      {"dead_code_elimination", "remove nodes and initializers nothing uses", makeDeadCode},
      {"infer_shapes_final", "re-infer types after the rewrites", makeInferShapes},
  };
  return passes;
}

}  // namespace poprt::passes
