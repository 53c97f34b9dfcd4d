// Sigmoid and Swish over float spans, with the evaluator's bits (lib/ops/scalar_math.h: in
// double, rounded to float) at a fraction of its cost: libm's exp one element at a time was a
// quarter of yolox_nano's run (its convs end in Swish).
#pragma once

#include <cstdint>

#include "lib/support/simd_isa.h"

namespace poprt::sim {

// out[i] = float(x / (1 + exp(-x))) (swish) or float(1 / (1 + exp(-x))) (sigmoid), x = in[i]
// widened to double; `in` may be `out`. With AVX-512 or AVX2, a polynomial exp gives each result
// within 2^-40 of the evaluator's (relative); where a float rounding boundary lies that close, or
// x is not finite or beyond +-80, and on other CPUs, the element is computed the evaluator's way.
void logisticActivation(bool swish, const float* in, float* out, int64_t n);
// The same under a given instruction set (one of availableSimdIsas()).
void logisticActivationWith(SimdIsa isa, bool swish, const float* in, float* out, int64_t n);

}  // namespace poprt::sim
