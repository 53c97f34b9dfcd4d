// The activations a codelet applies to its float32 output (ConvPartial's and MatMul's epilogues,
// the Activation codelet), with the evaluator's bits: lib/ops/graphcore_ops.h's applyActivation in
// double, rounded to float.
#pragma once

#include <cstdint>

#include "lib/ops/graphcore_ops.h"
#include "lib/support/simd_isa.h"

namespace poprt::sim {

// out[i] = act(in[i]) for i < n; `in` may be `out`. The kind is chosen once per span; Sigmoid and
// Swish go through sim/logistic.h.
void activate(const ops::graphcore::Activation& act, const float* in, float* out, int64_t n);
// The same under a given instruction set (one of availableSimdIsas()).
void activateWith(SimdIsa isa, const ops::graphcore::Activation& act, const float* in, float* out, int64_t n);

}  // namespace poprt::sim
