// A float32 constant as float16 for float_to_half: values beyond ±65504 clamped (an infinity
// stays one: a -inf mask means what it says), with what the conversion lost counted so the pass
// can warn about it.
#pragma once

#include <cstdint>

#include "lib/support/tensor.h"

namespace poprt::passes {

inline constexpr float kHalfMax = 65504.0f;

struct HalfConstant {
  Tensor tensor;              // float16, the shape of the original
  int64_t clamped = 0;        // finite values beyond ±65504, now ±65504
  float largest_clamped = 0;  // the largest magnitude among them
  int64_t nonzero = 0;        // non-zero values of the original
  int64_t flushed = 0;        // of those, how many became 0 (below the float16 subnormals)
};

// `t` must be float32.
HalfConstant toHalfConstant(const Tensor& t);

}  // namespace poprt::passes
