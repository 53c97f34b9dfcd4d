// Model inputs and outputs as files: tensors as .npy or ONNX TensorProto (.pb), sequences and
// optionals as ONNX SequenceProto / OptionalProto (.pb) — the formats of the ONNX test data.
#pragma once

#include <filesystem>
#include <string>

#include "lib/ops/value.h"
#include "lib/support/value_kind.h"

namespace poprt::onnxio {

// Reads a value of `kind`: .npy (tensors only) or .pb.
Expected<ops::RtValue> readValueFile(const std::filesystem::path& path, ValueKind kind);
// The bytes of a sequence or optional as a .pb (SequenceProto or OptionalProto).
Expected<std::string> serializeValueProto(const ops::RtValue& value, ValueKind kind, const std::string& name);
// Writes a sequence or optional as a .pb (SequenceProto or OptionalProto), atomically.
Status writeValueProto(const std::filesystem::path& path, const ops::RtValue& value, ValueKind kind,
                       const std::string& name);

}  // namespace poprt::onnxio
