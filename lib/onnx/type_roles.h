// Which inputs and outputs of a node carry the op's data type — the ones that switch to float16
// when the op runs in half precision — and which are parameters of their own type that a
// precision change must leave alone (Resize's scales and roi, Pow's exponent, Dropout's ratio,
// BatchNormalization's statistics from opset 15, ConstantOfShape's or Cast's output, whose dtype
// an attribute sets). Read from the op's ONNX schema, so no op needs a private list.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "lib/ir/graph.h"

namespace poprt::onnxio {

enum class TypeRole {
  Data,   // bound to a type parameter of the op's data: input 0's or a present output's
  Fixed,  // a fixed type (tensor(float), tensor(int64)), or a type parameter only parameters or
          // attributes decide
};

struct NodeTypeRoles {
  std::vector<TypeRole> inputs;   // one per input slot of the node
  std::vector<TypeRole> outputs;  // one per output slot of the node
  bool float16_allowed = false;   // every data type parameter admits tensor(float16)
};

// The roles of `node`'s inputs and outputs at default-domain opset `opset`. ai.graphcore ops
// (lib/ops/graphcore_ops.h) have no ONNX schema: every input and output of theirs is data.
// nullopt when ONNX has no schema for the op (other custom domains).
std::optional<NodeTypeRoles> typeRoles(const ir::Node& node, int64_t opset);

}  // namespace poprt::onnxio
