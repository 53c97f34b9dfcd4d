// The vector instruction sets the simulator's kernels are written for (lib/support/gemm.h,
// sim/row_sums.h, sim/logistic.h). Every kernel gives the same bits under each of them, so a
// PopEF's results do not depend on the CPU; the tests run every one this CPU has.
#pragma once

#include <vector>

namespace poprt {

// Avx2 means AVX2 with FMA; Avx512 means AVX-512 F and VL, with AVX2 and FMA.
enum class SimdIsa { Portable, Avx2, Avx512 };

// The ones this CPU has, Portable first, each a superset of the one before.
std::vector<SimdIsa> availableSimdIsas();
// The last of those: what the kernels use.
SimdIsa bestSimdIsa();

}  // namespace poprt
