#include "lib/onnx/type_map.h"

#include <optional>

namespace poprt::onnxio {

ir::TensorType typeFromProto(const onnx::TypeProto& tp) {
  ir::TensorType type;
  if (!tp.has_tensor_type()) {
    if (tp.value_case() != onnx::TypeProto::VALUE_NOT_SET) type.opaque = tp.SerializeAsString();
    // Sequences and optionals of tensors: record what they hold.
    auto elem = [](const onnx::TypeProto& t) -> std::optional<DType> {
      if (!t.has_tensor_type()) return std::nullopt;
      return dtypeFromOnnx(t.tensor_type().elem_type()).value_or(DType::Undefined);
    };
    const onnx::TypeProto* inner = &tp;
    bool optional = false;
    if (tp.has_optional_type()) {
      optional = true;
      inner = &tp.optional_type().elem_type();
    }
    if (inner->has_sequence_type()) {
      if (auto dt = elem(inner->sequence_type().elem_type())) {
        type.kind = optional ? ValueKind::OptionalSequence : ValueKind::Sequence;
        type.dtype = *dt;
      }
    } else if (optional) {
      if (auto dt = elem(*inner)) {
        type.kind = ValueKind::Optional;
        type.dtype = *dt;
      }
    }
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
