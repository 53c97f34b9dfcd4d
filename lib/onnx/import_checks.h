// Checks the importer makes on a ModelProto that libonnx's checker does not (or makes only after
// it has opened files): errors name the model, the graph and the node or value.
#pragma once

#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>

#include "lib/support/status.h"

namespace poprt::onnxio {

// Every string field of the model (names, op types, domains, doc strings, metadata; not the
// bytes fields such as raw_data, string_data or an attribute's `s`) is UTF-8, as ONNX requires, so
// that names can go into JSON (the summary, PopEF metadata) and messages. The error names the
// field's path, e.g. graph.node[3].output[0]. Run first.
Status checkTextFields(const onnx::ModelProto& model, const std::string& source);

// Every external tensor's location is confined to `model_dir` (tensor_proto.h's
// externalDataFile). Run before the checker, which would otherwise open the files it names.
Status checkExternalLocations(const onnx::GraphProto& graph, const std::filesystem::path& model_dir, const std::string& source);

// The graph's names connect: nodes in topological order, each input defined before the node that
// reads it (by a graph input, an initializer, an earlier node, or the enclosing graphs for a
// subgraph), no value defined twice, every graph output defined. A cycle shows up as a node reading
// a value defined only later. libonnx's version converter assumes all this (it dereferences the
// producer of every name), and its checker does not check the graph outputs.
Status checkGraphStructure(const onnx::GraphProto& graph, const std::string& source);

// Declared types (graph inputs, outputs, value_info, in subgraphs too): no negative dim_value and
// an element count that fits in int64, so nothing downstream multiplies a shape into overflow.
// Initializers and tensor attributes: checkTensorDeclaration (known dtype, dims, the size caps),
// before libonnx's checker and shape inference look at them.
Status checkDeclaredShapes(const onnx::GraphProto& graph, const std::string& source);

// Window attributes (strides, dilations, kernel_shape) of every node: each value from 1 to 2^31,
// before libonnx's shape inference, which divides by them.
Status checkWindowAttributes(const onnx::GraphProto& graph, const std::string& source);

// What libonnx's version converter assumes of a model (it runs no inference and no checks of its
// own): its Gemm adapters index A's and B's declared shapes as 2-D, and a ConstantFill node makes
// it loop forever. Run before every ConvertVersion, after the checker.
Status checkForVersionConverter(const onnx::GraphProto& graph, const std::string& source);

// ai.graphcore ops (lib/ops/graphcore_ops.h), which ONNX has no schema for: input and output
// counts, and each attribute known to the op with the type it takes (ConvAct and GemmAct take
// Conv's and Gemm's attributes at `opset` plus the activation ones). A wrong type would otherwise
// be read as the attribute's default.
Status checkCustomOps(const onnx::GraphProto& graph, int64_t opset, const std::string& source);

}  // namespace poprt::onnxio
