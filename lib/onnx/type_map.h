// Conversions between onnx::TypeProto and ir::TensorType.
#pragma once

#include <onnx/onnx_pb.h>

#include "lib/ir/graph.h"

namespace poprt::onnxio {

ir::TensorType typeFromProto(const onnx::TypeProto& tp);
void typeToProto(const ir::TensorType& type, onnx::TypeProto* tp);

}  // namespace poprt::onnxio
