// What a model input or output holds: a tensor, a sequence of tensors, or an optional of either
// (ONNX's sequence and optional types). Element dtypes are kept beside it as a DType.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace poprt {

enum class ValueKind : uint32_t { Tensor = 0, Sequence = 1, Optional = 2, OptionalSequence = 3 };

inline std::string_view valueKindName(ValueKind k) {
  switch (k) {
    case ValueKind::Tensor: return "tensor";
    case ValueKind::Sequence: return "sequence";
    case ValueKind::Optional: return "optional";
    case ValueKind::OptionalSequence: return "optional_sequence";
  }
  return "tensor";
}

inline std::optional<ValueKind> valueKindFromName(std::string_view name) {
  for (auto k : {ValueKind::Tensor, ValueKind::Sequence, ValueKind::Optional, ValueKind::OptionalSequence})
    if (valueKindName(k) == name) return k;
  return std::nullopt;
}

inline std::optional<ValueKind> valueKindFromInt(uint64_t v) {
  if (v > static_cast<uint64_t>(ValueKind::OptionalSequence)) return std::nullopt;
  return static_cast<ValueKind>(v);
}

}  // namespace poprt
