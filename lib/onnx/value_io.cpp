#include "lib/onnx/value_io.h"

#include <onnx/onnx-data_pb.h>

#include "lib/support/file_io.h"
#include "lib/support/npy.h"
#include "lib/support/tensor_proto.h"

namespace poprt::onnxio {
namespace {

Expected<ops::RtValue> fromSequence(const onnx::SequenceProto& sp, const std::filesystem::path& path) {
  if (sp.elem_type() != onnx::SequenceProto::TENSOR && sp.elem_type() != onnx::SequenceProto::UNDEFINED)
    return Error(path.string() + ": only sequences of tensors are supported");
  std::vector<Tensor> items;
  DType elem = DType::Undefined;
  for (const auto& t : sp.tensor_values()) {
    auto x = tensorFromProto(t, path.parent_path());
    if (!x.ok()) return x.error().withContext(path.string());
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
Status parse(Proto& proto, const std::filesystem::path& path, const char* what) {
  POPRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, readFileBytes(path, (uint64_t{2} << 30) - 1));
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Error(path.string() + ": not a valid ONNX " + what);
  return okStatus();
}

}  // namespace

Expected<ops::RtValue> readValueFile(const std::filesystem::path& path, ValueKind kind) {
  const bool npy = path.extension() == ".npy";
  if (!npy && path.extension() != ".pb")
    return Error(path.string() + ": unknown input file type '" + path.extension().string() + "' (expected .npy or .pb)");
  if (kind == ValueKind::Tensor) {
    if (npy) {
      POPRT_ASSIGN_OR_RETURN(Tensor t, readNpy(path));
      return ops::RtValue::of(std::move(t));
    }
    POPRT_ASSIGN_OR_RETURN(NamedTensor nt, readTensorProtoFile(path));
    return ops::RtValue::of(std::move(nt.tensor));
  }
  if (npy) return Error(path.string() + ": a " + std::string(valueKindName(kind)) + " input must be an ONNX .pb file");
  if (kind == ValueKind::Sequence) {
    onnx::SequenceProto sp;
    POPRT_TRY(parse(sp, path, "SequenceProto"));
    return fromSequence(sp, path);
  }
  onnx::OptionalProto op;
  POPRT_TRY(parse(op, path, "OptionalProto"));
  if (op.has_tensor_value()) {
    if (kind != ValueKind::Optional) return Error(path.string() + ": holds a tensor, expected an optional sequence");
    auto t = tensorFromProto(op.tensor_value(), path.parent_path());
    if (!t.ok()) return t.error().withContext(path.string());
    return ops::RtValue::of(std::move(t).value());
  }
  if (op.has_sequence_value()) {
    if (kind != ValueKind::OptionalSequence) return Error(path.string() + ": holds a sequence, expected an optional tensor");
    return fromSequence(op.sequence_value(), path);
  }
  return ops::RtValue::none();
}

Status writeValueProto(const std::filesystem::path& path, const ops::RtValue& value, ValueKind kind,
                       const std::string& name) {
  POPRT_ASSIGN_OR_RETURN(std::string bytes, serializeValueProto(value, kind, name));
  return writeFileAtomic(path, bytes);
}

Expected<std::string> serializeValueProto(const ops::RtValue& value, ValueKind kind, const std::string& name) {
  std::string bytes;
  if (kind == ValueKind::Sequence) {
    if (value.kind != ops::RtValue::Kind::Sequence) return Error("output '" + name + "' is not a sequence");
    onnx::SequenceProto sp;
    toSequence(value, &sp, name);
    bytes = sp.SerializeAsString();
  } else if (kind == ValueKind::Optional || kind == ValueKind::OptionalSequence) {
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
    bytes = op.SerializeAsString();
  } else {
    return Error("output '" + name + "' is a tensor; write it as .npy");
  }
  return bytes;
}

}  // namespace poprt::onnxio
