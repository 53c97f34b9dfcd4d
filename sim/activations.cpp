#include "sim/activations.h"

#include "lib/ops/scalar_math.h"
#include "sim/logistic.h"

#include "sim/x86_intrinsics.h"  // last

namespace poprt::sim {
namespace {

using ops::graphcore::Activation;
using Kind = ops::graphcore::ActivationKind;

// One element at a time, the evaluator's way.
template <Kind K>
void activateAs(Activation act, const float* in, float* out, int64_t n) {
  act.kind = K;  // a constant: applyActivation's switch folds away
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(ops::graphcore::applyActivation(act, in[i]));
}

#ifdef POPRT_X86_INTRINSICS

#define POPRT_V4 __attribute__((target("avx512f,avx512vl,avx2,fma"), always_inline)) inline

// lib/ops/scalar_math.h's formulas on 8 doubles, op for op (the sim layer contracts no
// multiply-add, nor do these), each comparison ordered as the scalar one, so a NaN takes the
// branch it takes there: the same bits. GCC kept the scalar loops' comparisons as branches and
// divided one double at a time (a HardSwish epilogue was a fifth of ppocr_v4_rec's run).
POPRT_V4 __m512d select(__mmask8 take, __m512d otherwise, __m512d value) { return _mm512_mask_blend_pd(take, otherwise, value); }
POPRT_V4 __m512d clamp01(__m512d v) {  // v < 0 ? 0 : (v > 1 ? 1 : v)
  const __m512d zero = _mm512_setzero_pd(), one = _mm512_set1_pd(1.0);
  const __m512d upper = select(_mm512_cmp_pd_mask(v, one, _CMP_GT_OQ), v, one);
  return select(_mm512_cmp_pd_mask(v, zero, _CMP_LT_OQ), upper, zero);
}

template <Kind K>
POPRT_V4 __m512d apply512(const Activation& act, __m512d x) {
  const __m512d zero = _mm512_setzero_pd();
  if constexpr (K == Kind::Relu) {  // x > 0 ? x : (x == x ? 0 : x)
    return select(_mm512_cmp_pd_mask(x, zero, _CMP_LE_OQ), x, zero);
  } else if constexpr (K == Kind::Clip) {  // x < lo ? lo : (x > hi ? hi : x)
    const __m512d lo = _mm512_set1_pd(act.min), hi = _mm512_set1_pd(act.max);
    const __m512d upper = select(_mm512_cmp_pd_mask(x, hi, _CMP_GT_OQ), x, hi);
    return select(_mm512_cmp_pd_mask(x, lo, _CMP_LT_OQ), upper, lo);
  } else if constexpr (K == Kind::LeakyRelu) {  // x < 0 ? alpha x : x
    return select(_mm512_cmp_pd_mask(x, zero, _CMP_LT_OQ), x, _mm512_mul_pd(_mm512_set1_pd(act.alpha), x));
  } else if constexpr (K == Kind::HardSigmoid) {  // clamp01(alpha x + beta)
    return clamp01(_mm512_add_pd(_mm512_mul_pd(_mm512_set1_pd(act.alpha), x), _mm512_set1_pd(act.beta)));
  } else {
    static_assert(K == Kind::HardSwish);  // x clamp01(x / 6 + 1/2)
    return _mm512_mul_pd(x, clamp01(_mm512_add_pd(_mm512_div_pd(x, _mm512_set1_pd(6.0)), _mm512_set1_pd(0.5))));
  }
}

template <Kind K>
__attribute__((target("avx512f,avx512vl,avx2,fma"))) void activate512(const Activation& act, const float* in, float* out,
                                                                      int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm512_cvtpd_ps(apply512<K>(act, _mm512_cvtps_pd(_mm256_loadu_ps(in + i)))));
  if (i == n) return;
  const __mmask8 last = static_cast<__mmask8>((1u << (n - i)) - 1);
  const __m512d x = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(last, in + i));
  _mm256_mask_storeu_ps(out + i, last, _mm512_cvtpd_ps(apply512<K>(act, x)));
}

#endif

}  // namespace

void activateWith(SimdIsa isa, const Activation& act, const float* in, float* out, int64_t n) {
#ifdef POPRT_X86_INTRINSICS
  if (isa == SimdIsa::Avx512) switch (act.kind) {
      case Kind::Relu: return activate512<Kind::Relu>(act, in, out, n);
      case Kind::Clip: return activate512<Kind::Clip>(act, in, out, n);
      case Kind::LeakyRelu: return activate512<Kind::LeakyRelu>(act, in, out, n);
      case Kind::HardSigmoid: return activate512<Kind::HardSigmoid>(act, in, out, n);
      case Kind::HardSwish: return activate512<Kind::HardSwish>(act, in, out, n);
      default: break;
    }
#endif
  switch (act.kind) {
    case Kind::Relu: return activateAs<Kind::Relu>(act, in, out, n);
    case Kind::Clip: return activateAs<Kind::Clip>(act, in, out, n);
    case Kind::LeakyRelu: return activateAs<Kind::LeakyRelu>(act, in, out, n);
    case Kind::Sigmoid: return logisticActivationWith(isa, false, in, out, n);
    case Kind::HardSigmoid: return activateAs<Kind::HardSigmoid>(act, in, out, n);
    case Kind::HardSwish: return activateAs<Kind::HardSwish>(act, in, out, n);
    case Kind::Tanh: return activateAs<Kind::Tanh>(act, in, out, n);
    case Kind::Swish: return logisticActivationWith(isa, true, in, out, n);
  }
}

void activate(const Activation& act, const float* in, float* out, int64_t n) { activateWith(bestSimdIsa(), act, in, out, n); }

}  // namespace poprt::sim
