// Conversions between onnx::TypeProto and ir::TensorType.
#pragma once

#include <onnx/onnx_pb.h>

#include "lib/ir/graph.h"

namespace poprt::onnxio {

ir::TensorType typeFromProto(const onnx::TypeProto& tp);
void typeToProto(const ir::TensorType& type, onnx::TypeProto* tp);

// libonnx's shape inference (with data propagation) over a ModelProto; its exceptions become one-line errors.
// Lenient by default (a node inference cannot handle is skipped). The importer asks for strict:
// any node whose inputs do not fit its schema's shape rules is an error naming the node, and with
// `check_types` so are inputs of the wrong dtype.
struct InferenceStrictness {
  bool strict = false;
  bool check_types = false;
};
Status runOnnxShapeInference(onnx::ModelProto& proto, InferenceStrictness strictness = {});
// An exception message folded onto one line.
std::string oneLine(std::string text);
// What an exception from libonnx says, in poprt's words where its text is the C++ library's
// ("basic_string::_M_create", "vector::_M_range_check"): an allocation it could not make, an
// index out of range.
std::string libraryFailure(const std::exception& e);

}  // namespace poprt::onnxio
