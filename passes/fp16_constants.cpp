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
  static_assert(sizeof(Half) == sizeof(uint16_t));
  floatsToHalfBits(src.data(), src.size(), reinterpret_cast<uint16_t*>(dst.data()));
  for (size_t i = 0; i < src.size(); ++i) {
    const float x = src[i];
    if (x == 0) continue;
    ++h.nonzero;
    if (std::isfinite(x) && std::fabs(x) > kHalfMax) {  // (rare) clamped rather than infinite
      ++h.clamped;
      h.largest_clamped = std::max(h.largest_clamped, std::fabs(x));
      dst[i] = Half(std::copysign(kHalfMax, x));
    } else if ((dst[i].bits & 0x7fffu) == 0) {
      ++h.flushed;
    }
  }
  return h;
}

}  // namespace poprt::passes
