// Model inputs and outputs as files: tensors as .npy or ONNX TensorProto (.pb), sequences and
// optionals as ONNX SequenceProto / OptionalProto (.pb) — the formats of the ONNX test data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "lib/ops/value.h"
#include "lib/support/value_kind.h"

namespace poprt::onnxio {

// Reads a value of `kind`: .npy (tensors only) or .pb.
Expected<ops::RtValue> readValueFile(const std::filesystem::path& path, ValueKind kind);

// A value of `kind` from the bytes of its ONNX proto (what a .pb file holds). External data is read
// relative to `base_dir`; with an empty `base_dir` it is an error. Errors start with `source`.
Expected<ops::RtValue> parseValueProto(std::span<const uint8_t> bytes, ValueKind kind, const std::string& source,
                                       const std::filesystem::path& base_dir = {});
// The bytes of the ONNX proto holding `value`, with the proto's name set to `name`.
Expected<std::string> serializeValueProto(const ops::RtValue& value, ValueKind kind, const std::string& name);

}  // namespace poprt::onnxio
