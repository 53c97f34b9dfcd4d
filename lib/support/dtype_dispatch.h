// Calls a generic lambda with a value of the C++ element type of a numeric DType, so one
// template body serves every dtype: dispatchNumeric(t, [&](auto tag) { using T = decltype(tag); ... }).
#pragma once

#include <cstdint>
#include <string>

#include "lib/support/dtype.h"
#include "lib/support/half.h"
#include "lib/support/status.h"

namespace poprt {

template <class F>
Status dispatchNumeric(DType t, F&& f) {
  switch (t) {
    case DType::Float: f(float{}); break;
    case DType::Double: f(double{}); break;
    case DType::Float16: f(Half{}); break;
    case DType::BFloat16: f(BFloat16{}); break;
    case DType::Int8: f(int8_t{}); break;
    case DType::Int16: f(int16_t{}); break;
    case DType::Int32: f(int32_t{}); break;
    case DType::Int64: f(int64_t{}); break;
    case DType::UInt8: f(uint8_t{}); break;
    case DType::UInt16: f(uint16_t{}); break;
    case DType::UInt32: f(uint32_t{}); break;
    case DType::UInt64: f(uint64_t{}); break;
    case DType::Bool: f(bool{}); break;
    default: return Error("dtype " + std::string(dtypeName(t)) + " is not supported here");
  }
  return okStatus();
}

// The type arithmetic happens in: float for the 16-bit floats, the type itself otherwise.
template <class T>
struct ComputeType {
  using type = T;
};
template <>
struct ComputeType<Half> {
  using type = float;
};
template <>
struct ComputeType<BFloat16> {
  using type = float;
};

template <class T>
typename ComputeType<T>::type toCompute(T v) {
  return static_cast<typename ComputeType<T>::type>(v);
}
template <class T>
T fromCompute(typename ComputeType<T>::type v) {
  return T(v);
}

}  // namespace poprt
