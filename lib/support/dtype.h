// Tensor element types, numbered as ONNX's TensorProto.DataType so conversion is a cast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace poprt {

enum class DType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
};

// Bytes per element; 0 for Undefined and String (strings are stored out of line).
size_t dtypeSize(DType t);
// numpy-style names: float32, float16, bfloat16, float64, int8..int64, uint8..uint64, bool,
// string, complex64, complex128.
std::string_view dtypeName(DType t);
std::optional<DType> dtypeFromName(std::string_view name);
// Maps an integer read from a file (ONNX data_type, PopEF) to a DType, rejecting unknown values.
std::optional<DType> dtypeFromOnnx(int64_t value);
bool isFloatingPoint(DType t);  // float16, bfloat16, float32, float64
bool isInteger(DType t);        // signed or unsigned integer types, not bool

}  // namespace poprt
