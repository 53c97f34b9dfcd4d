#include "lib/onnx/type_map.h"

namespace poprt::onnxio {

ir::TensorType typeFromProto(const onnx::TypeProto& tp) {
  ir::TensorType type;
  if (!tp.has_tensor_type()) {
    if (tp.value_case() != onnx::TypeProto::VALUE_NOT_SET) type.opaque = tp.SerializeAsString();
    return type;
  }
  const auto& tt = tp.tensor_type();
  type.dtype = dtypeFromOnnx(tt.elem_type()).value_or(DType::Undefined);
  if (tt.has_shape()) {
    type.dims.emplace();
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value() && d.dim_value() >= 0)
        type.dims->push_back(ir::Dim::fixed(d.dim_value()));
      else
        type.dims->push_back(ir::Dim::symbolic(d.has_dim_param() ? d.dim_param() : ""));
    }
  }
  return type;
}

void typeToProto(const ir::TensorType& type, onnx::TypeProto* tp) {
  if (!type.isTensor()) {
    tp->ParseFromString(type.opaque);
    return;
  }
  auto* tt = tp->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(type.dtype));
  if (!type.dims) return;
  auto* shape = tt->mutable_shape();
  for (const auto& d : *type.dims) {
    auto* dim = shape->add_dim();
    if (d.isStatic())
      dim->set_dim_value(d.value);
    else if (!d.symbol.empty())
      dim->set_dim_param(d.symbol);
  }
}

}  // namespace poprt::onnxio
