#include "lib/support/simd_isa.h"

namespace poprt {

std::vector<SimdIsa> availableSimdIsas() {
  std::vector<SimdIsa> isas{SimdIsa::Portable};
#if defined(__x86_64__) && defined(__GNUC__)
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2) isas.push_back(SimdIsa::Avx2);
  if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) isas.push_back(SimdIsa::Avx512);
#endif
  return isas;
}

SimdIsa bestSimdIsa() {
  static const SimdIsa best = availableSimdIsas().back();  // on first use: the CPU is known by then
  return best;
}

}  // namespace poprt
