// Conversions between onnx::TypeProto and ir::TensorType.
#pragma once

#include <onnx/onnx_pb.h>

#include "lib/ir/graph.h"

namespace poprt::onnxio {

ir::TensorType typeFromProto(const onnx::TypeProto& tp);
void typeToProto(const ir::TensorType& type, onnx::TypeProto* tp);

// libonnx's shape inference (with data propagation) over a ModelProto; its exceptions become one-line errors.
Status runOnnxShapeInference(onnx::ModelProto& proto);
// An exception message folded onto one line.
std::string oneLine(std::string text);

}  // namespace poprt::onnxio
