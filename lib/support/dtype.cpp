#include "lib/support/dtype.h"

#include <array>

namespace poprt {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};

constexpr std::array<DTypeInfo, 17> kInfos = {{
    {DType::Undefined, "undefined", 0},
    {DType::Float, "float32", 4},
    {DType::UInt8, "uint8", 1},
    {DType::Int8, "int8", 1},
    {DType::UInt16, "uint16", 2},
    {DType::Int16, "int16", 2},
    {DType::Int32, "int32", 4},
    {DType::Int64, "int64", 8},
    {DType::String, "string", 0},
    {DType::Bool, "bool", 1},
    {DType::Float16, "float16", 2},
    {DType::Double, "float64", 8},
    {DType::UInt32, "uint32", 4},
    {DType::UInt64, "uint64", 8},
    {DType::Complex64, "complex64", 8},
    {DType::Complex128, "complex128", 16},
    {DType::BFloat16, "bfloat16", 2},
}};

const DTypeInfo& info(DType t) {
  auto i = static_cast<size_t>(t);
  return i < kInfos.size() ? kInfos[i] : kInfos[0];
}

}  // namespace

size_t dtypeSize(DType t) { return info(t).size; }
std::string_view dtypeName(DType t) { return info(t).name; }

std::optional<DType> dtypeFromName(std::string_view name) {
  for (const auto& i : kInfos)
    if (i.name == name && i.type != DType::Undefined) return i.type;
  return std::nullopt;
}

std::optional<DType> dtypeFromOnnx(int64_t value) {
  if (value <= 0 || value >= static_cast<int64_t>(kInfos.size())) return std::nullopt;
  return static_cast<DType>(value);
}

bool isFloatingPoint(DType t) { return t == DType::Float || t == DType::Float16 || t == DType::BFloat16 || t == DType::Double; }

bool isInteger(DType t) {
  switch (t) {
    case DType::UInt8:
    case DType::Int8:
    case DType::UInt16:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
    case DType::UInt32:
    case DType::UInt64: return true;
    default: return false;
  }
}

}  // namespace poprt
