// Host fallback: the ONNX model of a run of nodes the device cannot run, cut out of the whole
// model with its boundary values as graph inputs and outputs.
#pragma once

#include <string>
#include <vector>

#include "lib/ir/graph.h"

namespace onnx {
class ModelProto;
}

namespace poprt::codegen {

// Values of `graph` a top-level node reads: its inputs and what its subgraphs read from outside.
std::vector<const ir::Value*> valuesRead(const ir::Node& node, const ir::Graph& graph);

// Serialized ModelProto of `nodes` (indices into `whole`'s node list, which follows the IR order)
// with `inputs` and `outputs` as its graph inputs/outputs; initializers the nodes read are copied in.
std::string hostProgramModel(const ir::Model& model, const onnx::ModelProto& whole, const std::vector<size_t>& nodes,
                             const std::vector<const ir::Value*>& inputs, const std::vector<const ir::Value*>& outputs,
                             const std::string& name);

}  // namespace poprt::codegen
