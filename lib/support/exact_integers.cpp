#include "lib/support/exact_integers.h"

#include <algorithm>
#include <cstring>

namespace poprt {

std::optional<DType> exactIntegerStorage(const Tensor& w) {
  if (w.dtype() != DType::Float || w.numElements() == 0) return std::nullopt;
  const float* x = w.data<float>().data();
  const size_t n = w.data<float>().size();
  uint32_t wider_than_int8 = 0;
  // Blocks of compares and bitwise ors, no branch inside, so the compiler vectorises them (a
  // quantized ViT's 86 million weights are checked twice per compile: for the PopEF and for the
  // converted ONNX).
  constexpr size_t kBlock = 4096;
  for (size_t begin = 0; begin < n; begin += kBlock) {
    const size_t end = std::min(n, begin + kBlock);
    uint32_t inexact = 0;
    for (size_t i = begin; i < end; ++i) {
      // Adding and taking away 1.5 * 2^23 rounds a float of magnitude below 2^22 to an integer:
      // the value is one when it comes back with its own bits (-0.0 comes back +0.0). A NaN
      // fails the range test.
      const float v = x[i];
      const float rounded = (v + 12582912.0f) - 12582912.0f;
      uint32_t v_bits, rounded_bits;
      std::memcpy(&v_bits, &v, sizeof v);
      std::memcpy(&rounded_bits, &rounded, sizeof rounded);
      inexact |= static_cast<uint32_t>(!((v >= -32767.0f) & (v <= 32767.0f))) | (v_bits ^ rounded_bits);
      wider_than_int8 |= static_cast<uint32_t>(!((v >= -128.0f) & (v <= 127.0f)));
    }
    if (inexact) return std::nullopt;
  }
  return wider_than_int8 ? DType::Int16 : DType::Int8;
}

namespace {
template <class Int>
Tensor narrowed(const Tensor& w, DType dtype) {
  Tensor out(dtype, w.shape());
  auto src = w.data<float>();
  auto dst = out.data<Int>();
  for (size_t i = 0; i < src.size(); ++i) dst[i] = static_cast<Int>(src[i]);
  return out;
}
}  // namespace

Tensor narrowedTo(const Tensor& w, DType dtype) {
  return dtype == DType::Int8 ? narrowed<int8_t>(w, dtype) : narrowed<int16_t>(w, dtype);
}

}  // namespace poprt
