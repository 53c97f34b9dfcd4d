#include "runtime/host_value.h"

#include <cstring>

#include "lib/onnx/value_io.h"
#include "lib/support/copy_bytes.h"
#include "sim/engine.h"

namespace poprt::runtime {

namespace {

exec::HostStream streamOf(const DataDesc& d) {
  exec::HostStream s;
  s.name = d.name;
  s.dtype = dtypeFromName(d.dtype).value_or(DType::Undefined);
  s.shape = d.shape;
  s.kind = static_cast<ValueKind>(d.kind);
  return s;
}

}  // namespace

DataDesc describeStream(const exec::HostStream& s) {
  static_assert(static_cast<int>(AnchorKind::OptionalSequence) == static_cast<int>(ValueKind::OptionalSequence));
  DataDesc d;
  d.name = s.name;
  d.dtype = std::string(dtypeName(s.dtype));
  d.shape = s.shape;
  d.kind = static_cast<AnchorKind>(s.kind);
  const bool raw_output = s.role == exec::HostStream::Role::Output && s.kind == ValueKind::Tensor && s.dtype != DType::String;
  d.format = sim::isFixedSize(s) || raw_output ? DataFormat::Raw : DataFormat::OnnxProto;
  d.size_in_bytes = sim::isFixedSize(s) ? s.byteSize() : 0;
  return d;
}

std::string inputMismatch(const DataDesc& desc, const ops::RtValue& value) { return sim::inputMismatch(value, streamOf(desc)); }

Expected<ops::RtValue> decodeValue(const DataDesc& desc, std::span<const uint8_t> bytes, const std::string& source) {
  if (desc.format == DataFormat::OnnxProto) return onnxio::parseValueProto(bytes, streamOf(desc).kind, source);
  const exec::HostStream s = streamOf(desc);
  POPRT_ASSIGN_OR_RETURN(int64_t n, checkedNumElements(s.shape, kMaxFileElements));
  if (s.dtype == DType::Undefined || static_cast<uint64_t>(n) * dtypeSize(s.dtype) != bytes.size())
    return Error(source + ": " + std::to_string(bytes.size()) + " bytes do not hold " + desc.dtype + shapeToString(s.shape));
  Tensor t(s.dtype, s.shape);
  copyBytes(t.bytes().data(), bytes.data(), bytes.size());
  return ops::RtValue::of(std::move(t));
}

Expected<std::vector<uint8_t>> encodeValue(const DataDesc& desc, const ops::RtValue& value) {
  if (desc.format == DataFormat::OnnxProto) {
    POPRT_ASSIGN_OR_RETURN(std::string proto, onnxio::serializeValueProto(value, streamOf(desc).kind, desc.name));
    return std::vector<uint8_t>(proto.begin(), proto.end());
  }
  if (!value.isTensor()) return Error("'" + desc.name + "' is not a tensor");
  auto bytes = value.tensor.bytes();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

}  // namespace poprt::runtime
