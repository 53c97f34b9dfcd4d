#include "passes/fp16_constants.h"

#include <algorithm>
#include <cmath>

#include "lib/support/half.h"

namespace poprt::passes {

HalfConstant toHalfConstant(const Tensor& t) {
  HalfConstant h;
  h.tensor = Tensor(DType::Float16, t.shape());
  auto src = t.data<float>();
  auto dst = h.tensor.data<Half>();
  for (size_t i = 0; i < src.size(); ++i) {
    float x = src[i];
    if (std::isfinite(x) && std::fabs(x) > kHalfMax) {
      ++h.clamped;
      h.largest_clamped = std::max(h.largest_clamped, std::fabs(x));
      x = std::copysign(kHalfMax, x);
    }
    dst[i] = Half(x);
    if (x != 0) {
      ++h.nonzero;
      if (static_cast<float>(dst[i]) == 0) ++h.flushed;
    }
  }
  return h;
}

}  // namespace poprt::passes
