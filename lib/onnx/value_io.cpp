#include "lib/onnx/value_io.h"

#include <onnx/onnx-data_pb.h>

#include <climits>

#include "lib/support/file_io.h"
#include "lib/support/npy.h"
#include "lib/support/tensor_proto.h"

namespace poprt::onnxio {
namespace {

Expected<ops::RtValue> fromSequence(const onnx::SequenceProto& sp, const std::string& source,
                                    const std::filesystem::path& base_dir) {
  if (sp.elem_type() != onnx::SequenceProto::TENSOR && sp.elem_type() != onnx::SequenceProto::UNDEFINED)
    return Error(source + ": only sequences of tensors are supported");
  std::vector<Tensor> items;
  DType elem = DType::Undefined;
  for (const auto& t : sp.tensor_values()) {
    auto x = tensorFromProto(t, base_dir);
    if (!x.ok()) return x.error().withContext(source);
    elem = x->dtype();
    items.push_back(std::move(x).value());
  }
  return ops::RtValue::seq(std::move(items), elem);
}

void toSequence(const ops::RtValue& v, onnx::SequenceProto* sp, const std::string& name) {
  sp->set_name(name);
  sp->set_elem_type(onnx::SequenceProto::TENSOR);
  for (const Tensor& t : v.sequence) tensorToProto(t, "", sp->add_tensor_values());
}

template <class Proto>
Status parse(Proto& proto, std::span<const uint8_t> bytes, const std::string& source, const char* what) {
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    return Error(source + ": is " + std::to_string(bytes.size()) + " bytes, above protobuf's 2 GiB message limit");
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return Error(source + ": not a valid ONNX " + what);
  return okStatus();
}

}  // namespace

Expected<ops::RtValue> parseValueProto(std::span<const uint8_t> bytes, ValueKind kind, const std::string& source,
                                       const std::filesystem::path& base_dir) {
  if (kind == ValueKind::Tensor) {
    onnx::TensorProto tp;
    POPRT_TRY(parse(tp, bytes, source, "TensorProto"));
    auto t = tensorFromProto(tp, base_dir);
    if (!t.ok()) return t.error().withContext(source);
    return ops::RtValue::of(std::move(t).value());
  }
  if (kind == ValueKind::Sequence) {
    onnx::SequenceProto sp;
    POPRT_TRY(parse(sp, bytes, source, "SequenceProto"));
    return fromSequence(sp, source, base_dir);
  }
  onnx::OptionalProto op;
  POPRT_TRY(parse(op, bytes, source, "OptionalProto"));
  if (op.has_tensor_value()) {
    if (kind != ValueKind::Optional) return Error(source + ": holds a tensor, expected an optional sequence");
    auto t = tensorFromProto(op.tensor_value(), base_dir);
    if (!t.ok()) return t.error().withContext(source);
    return ops::RtValue::of(std::move(t).value());
  }
  if (op.has_sequence_value()) {
    if (kind != ValueKind::OptionalSequence) return Error(source + ": holds a sequence, expected an optional tensor");
    return fromSequence(op.sequence_value(), source, base_dir);
  }
  return ops::RtValue::none();
}

Expected<ops::RtValue> readValueFile(const std::filesystem::path& path, ValueKind kind) {
  const bool npy = path.extension() == ".npy";
  if (!npy && path.extension() != ".pb")
    return Error(path.string() + ": unknown input file type '" + path.extension().string() + "' (expected .npy or .pb)");
  if (npy) {
    if (kind != ValueKind::Tensor)
      return Error(path.string() + ": a " + std::string(valueKindName(kind)) + " input must be an ONNX .pb file");
    POPRT_ASSIGN_OR_RETURN(Tensor t, readNpy(path));
    return ops::RtValue::of(std::move(t));
  }
  POPRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, readFileBytes(path, (uint64_t{2} << 30) - 1));
  const std::filesystem::path dir = path.parent_path();
  return parseValueProto(bytes, kind, path.string(), dir.empty() ? std::filesystem::path(".") : dir);
}

Expected<std::string> serializeValueProto(const ops::RtValue& value, ValueKind kind, const std::string& name) {
  if (kind == ValueKind::Tensor) {
    if (!value.isTensor()) return Error("'" + name + "' is not a tensor");
    onnx::TensorProto tp;
    tensorToProto(value.tensor, name, &tp);
    return tp.SerializeAsString();
  }
  if (kind == ValueKind::Sequence) {
    if (value.kind != ops::RtValue::Kind::Sequence) return Error("'" + name + "' is not a sequence");
    onnx::SequenceProto sp;
    toSequence(value, &sp, name);
    return sp.SerializeAsString();
  }
  onnx::OptionalProto op;
  op.set_name(name);
  if (value.kind == ops::RtValue::Kind::Tensor) {
    op.set_elem_type(onnx::OptionalProto::TENSOR);
    tensorToProto(value.tensor, "", op.mutable_tensor_value());
  } else if (value.kind == ops::RtValue::Kind::Sequence) {
    op.set_elem_type(onnx::OptionalProto::SEQUENCE);
    toSequence(value, op.mutable_sequence_value(), "");
  } else {
    op.set_elem_type(kind == ValueKind::Optional ? onnx::OptionalProto::TENSOR : onnx::OptionalProto::SEQUENCE);
  }
  return op.SerializeAsString();
}

}  // namespace poprt::onnxio
