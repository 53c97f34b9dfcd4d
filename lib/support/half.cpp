#include "lib/support/half.h"

#include <immintrin.h>

namespace poprt {
namespace {

// F16C converts 8 floats at a time with the same rounding (to nearest even, subnormals kept, the
// overflow to infinity); only a NaN keeps part of its payload there, so NaNs are redone after.
__attribute__((target("avx,f16c"))) void floatsToHalfBitsF16c(const float* in, size_t n, uint16_t* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) out[i] = floatToHalfBits(in[i]);
  for (i = 0; i < n; ++i)
    if ((out[i] & 0x7c00u) == 0x7c00u && (out[i] & 0x3ffu)) out[i] = floatToHalfBits(in[i]);
}

}  // namespace

void floatsToHalfBits(const float* in, size_t n, uint16_t* out) {
  // Every x86 CPU with AVX2 has F16C (Haswell, Piledriver on), and clang has no "f16c" test here.
  static const bool f16c = __builtin_cpu_supports("avx2");
  if (f16c) return floatsToHalfBitsF16c(in, n, out);
  for (size_t i = 0; i < n; ++i) out[i] = floatToHalfBits(in[i]);
}

}  // namespace poprt
