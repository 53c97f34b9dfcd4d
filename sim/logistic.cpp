#include "sim/logistic.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lib/ops/scalar_math.h"
#include "lib/support/simd_isa.h"

#include "sim/x86_intrinsics.h"  // last

namespace poprt::sim {
namespace {

// The evaluator's way, one element at a time (lib/ops/scalar_math.h).
float exact(bool swish, float x) {
  const double xd = x;
  return static_cast<float>(swish ? ops::scalar::swish(xd) : ops::scalar::sigmoid(xd));
}

#ifdef POPRT_X86_INTRINSICS

constexpr double kLimit = 80;  // |x| beyond it (or NaN) goes the evaluator's way: e^80 < float's max

constexpr int kVectors = 4;  // vectors in flight: each one's exp is a long chain of dependent steps
constexpr int kBlock = 32;   // elements a block: a bit each in the mask of lanes done
static_assert(kBlock == 8 * kVectors && kBlock % (4 * kVectors) == 0, "whole AVX-512 vectors and AVX2 rounds a block");
// The constants both widths use (the comment below says what each is for).
constexpr double kShifter = 0x1.8p52;  // t = y log2 e + kShifter holds round(y log2 e) in its low bits
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;  // Cody and Waite
constexpr double kTaylorTop = 1.0 / 39916800.0;                                             // 1/11!, then kTaylor's terms
constexpr double kMargin = 0x1p-40;  // relative: how close our double is to the evaluator's
constexpr double kFloatMax = 3.4028234663852886e38;
constexpr double kTaylor[] = {1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0,
                              1.0 / 24.0,      1.0 / 6.0,      0.5,           1.0,          1.0};  // after 1/11!

// The AVX-512 path's exp: e^y = 2^n 2^(j/16) e^r with k = 16n + j = round(16 y / ln 2) and
// |r| <= ln 2 / 32 (Cody and Waite's two-part ln 2 / 16: k has at most 11 bits, kLn2Hi's last 21
// are zero, so k ln2_hi / 16 is exact), 2^(j/16) from a table of 16 doubles (two registers, one
// permute) and e^r - 1 by its Taylor series to r^6 (the rest is below 2^-51 of e^r).
constexpr double kLog2eBy16 = 16 * kLog2e;
constexpr double kExpTaylor[] = {1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0};  // after 1/720
alignas(64) constexpr double kTwoToSixteenths[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};  // 2^(j/16), rounded
// Doubles whose bits, below float's 23 bits of mantissa, lie within this many units (2^-52 of the
// binade) of half a float unit are too close to a rounding boundary: 2^-40 of |v| is at most 2^13
// of them.
constexpr int64_t kNearHalf = int64_t{1} << 13;

// kBlock elements. 1 / (1 + e^-x) from the 14-bit reciprocal and two Newton steps; the double
// result is within 2^-48 of the exact value relative to it, the evaluator's (libm's exp) within
// 2^-50. So when every double within 2^-40 of ours rounds to the same float as ours, the
// evaluator's does too, and the lane is done: its bits below the float's mantissa are more than
// kNearHalf units from half a float unit (the only doubles a float rounding turns on), and it is
// a normal float. The others (zero, infinities, NaN, |x| > kLimit, results near a boundary or
// below float's normal range, about 1 in 30,000) are left to the evaluator's way. Writes
// out[0, kBlock) after reading in[0, kBlock) (so `in` may be `out`), and when a lane is not done,
// the inputs to saved[0, kBlock); returns the lanes done, bit i for element i.
template <bool kSwish>
__attribute__((target("avx512f,avx512vl,avx2,fma"))) uint32_t logisticBlock512(const float* in, float* out, float* saved) {
  const __m512d limit = _mm512_set1_pd(kLimit), shifter = _mm512_set1_pd(kShifter), one = _mm512_set1_pd(1.0);
  const __m512d table_lo = _mm512_load_pd(kTwoToSixteenths), table_hi = _mm512_load_pd(kTwoToSixteenths + 8);
  __m512d x[kVectors], t[kVectors], r[kVectors], p[kVectors], q[kVectors];
  for (int j = 0; j < kVectors; ++j) {
    x[j] = _mm512_cvtps_pd(_mm256_loadu_ps(in + 8 * j));  // every input read before any output is written
    const __m512d y = _mm512_min_pd(_mm512_max_pd(_mm512_sub_pd(_mm512_setzero_pd(), x[j]), _mm512_set1_pd(-kLimit)), limit);
    t[j] = _mm512_fmadd_pd(y, _mm512_set1_pd(kLog2eBy16), shifter);
    const __m512d k = _mm512_sub_pd(t[j], shifter);
    r[j] = _mm512_fnmadd_pd(k, _mm512_set1_pd(kLn2Hi / 16), y);
    r[j] = _mm512_fnmadd_pd(k, _mm512_set1_pd(kLn2Lo / 16), r[j]);
    p[j] = _mm512_set1_pd(1.0 / 720.0);
  }
  for (const double c : kExpTaylor)
    for (int j = 0; j < kVectors; ++j) p[j] = _mm512_fmadd_pd(p[j], r[j], _mm512_set1_pd(c));
  for (int j = 0; j < kVectors; ++j) {
    const __m512i k_bits = _mm512_castpd_si512(t[j]);  // k in the low bits: j in the lowest 4, n above
    const __m512d two_j = _mm512_permutex2var_pd(table_lo, k_bits, table_hi);
    const __m512i two_n = _mm512_slli_epi64(_mm512_add_epi64(_mm512_srli_epi64(k_bits, 4), _mm512_set1_epi64(1023)), 52);
    const __m512d e = _mm512_mul_pd(_mm512_fmadd_pd(two_j, _mm512_mul_pd(p[j], r[j]), two_j), _mm512_castsi512_pd(two_n));
    p[j] = _mm512_add_pd(e, one);  // 1 + e^-x
    q[j] = _mm512_rcp14_pd(p[j]);
  }
  for (int step = 0; step < 2; ++step)
    for (int j = 0; j < kVectors; ++j) q[j] = _mm512_fmadd_pd(q[j], _mm512_fnmadd_pd(p[j], q[j], one), q[j]);
  uint32_t done = 0;
  __m256 f[kVectors];
  for (int j = 0; j < kVectors; ++j) {
    const __m512d v = kSwish ? _mm512_mul_pd(x[j], q[j]) : q[j];
    f[j] = _mm512_cvtpd_ps(v);
    const __m512i below = _mm512_and_si512(_mm512_castpd_si512(v), _mm512_set1_epi64((int64_t{1} << 29) - 1));
    const __m512i from_half = _mm512_abs_epi64(_mm512_sub_epi64(below, _mm512_set1_epi64(int64_t{1} << 28)));
    __mmask8 ok = _mm512_cmp_epi64_mask(from_half, _mm512_set1_epi64(kNearHalf), _MM_CMPINT_NLE);
    ok &= _mm512_cmp_pd_mask(_mm512_abs_pd(x[j]), limit, _CMP_LE_OQ);
    ok &= _mm512_cmp_pd_mask(_mm512_abs_pd(v), _mm512_set1_pd(0x1p-126), _CMP_GE_OQ);  // a normal float (|v| <= 80)
    done |= static_cast<uint32_t>(ok) << (8 * j);
  }
  if (done != ~uint32_t{0})
    for (int j = 0; j < kVectors; ++j) _mm256_storeu_ps(saved + 8 * j, _mm512_cvtpd_ps(x[j]));
  for (int j = 0; j < kVectors; ++j) _mm256_storeu_ps(out + 8 * j, f[j]);
  return done;
}

// The same with AVX2, with the exp the AVX-512 path had before its table: e^-x = 2^k e^r with
// k = round(-x log2 e) and |r| <= ln 2 / 2, e^r by its Taylor series to r^11 (the rest is below
// 7e-15 of it), 2^k put into the exponent bits; vectors of 4, two rounds of kVectors a block, and
// 1 / (1 + e^-x) by a division (correctly rounded). The result is within 2^-45 of the exact value;
// a lane is done when the midpoints between its float and the float's neighbours (exact in
// double) lie more than 2^-40 of it away. Every input is copied to `saved`.
template <bool kSwish>
__attribute__((target("avx2,fma"))) uint32_t logisticBlock256(const float* in, float* out, float* saved) {
  const __m256d limit = _mm256_set1_pd(kLimit), shifter = _mm256_set1_pd(kShifter), one = _mm256_set1_pd(1.0);
  const __m256d sign = _mm256_set1_pd(-0.0);
  uint32_t done = 0;
  for (int round = 0; round < kBlock / (4 * kVectors); ++round) {
    const int at = round * 4 * kVectors;
    __m256d x[kVectors], t[kVectors], r[kVectors], p[kVectors];
    for (int j = 0; j < kVectors; ++j) {
      const __m128 input = _mm_loadu_ps(in + at + 4 * j);
      _mm_storeu_ps(saved + at + 4 * j, input);  // before this round's outputs may overwrite it
      x[j] = _mm256_cvtps_pd(input);
      const __m256d y = _mm256_min_pd(_mm256_max_pd(_mm256_xor_pd(x[j], sign), _mm256_set1_pd(-kLimit)), limit);
      t[j] = _mm256_fmadd_pd(y, _mm256_set1_pd(kLog2e), shifter);
      const __m256d k = _mm256_sub_pd(t[j], shifter);
      r[j] = _mm256_fnmadd_pd(k, _mm256_set1_pd(kLn2Hi), y);
      r[j] = _mm256_fnmadd_pd(k, _mm256_set1_pd(kLn2Lo), r[j]);
      p[j] = _mm256_set1_pd(kTaylorTop);
    }
    for (const double c : kTaylor)
      for (int j = 0; j < kVectors; ++j) p[j] = _mm256_fmadd_pd(p[j], r[j], _mm256_set1_pd(c));
    for (int j = 0; j < kVectors; ++j) {
      const __m256i bits = _mm256_slli_epi64(_mm256_add_epi64(_mm256_castpd_si256(t[j]), _mm256_set1_epi64x(1023)), 52);
      p[j] = _mm256_fmadd_pd(p[j], _mm256_castsi256_pd(bits), one);  // 1 + e^-x
      const __m256d q = _mm256_div_pd(one, p[j]);
      const __m256d v = kSwish ? _mm256_mul_pd(x[j], q) : q;
      const __m128 f = _mm256_cvtpd_ps(v);
      _mm_storeu_ps(out + at + 4 * j, f);
      const __m128i a_bits = _mm_and_si128(_mm_castps_si128(f), _mm_set1_epi32(0x7fffffff));
      const __m256d a = _mm256_cvtps_pd(_mm_castsi128_ps(a_bits));
      const __m256d up = _mm256_cvtps_pd(_mm_castsi128_ps(_mm_add_epi32(a_bits, _mm_set1_epi32(1))));
      const __m256d down = _mm256_cvtps_pd(_mm_castsi128_ps(_mm_sub_epi32(a_bits, _mm_set1_epi32(1))));
      const __m256d half = _mm256_set1_pd(0.5);
      const __m256d av = _mm256_andnot_pd(sign, v), margin = _mm256_mul_pd(av, _mm256_set1_pd(kMargin));
      __m256d ok = _mm256_cmp_pd(_mm256_andnot_pd(sign, x[j]), limit, _CMP_LE_OQ);
      ok = _mm256_and_pd(ok, _mm256_cmp_pd(a, _mm256_setzero_pd(), _CMP_GT_OQ));
      ok = _mm256_and_pd(ok, _mm256_cmp_pd(a, _mm256_set1_pd(kFloatMax), _CMP_LE_OQ));
      ok = _mm256_and_pd(ok, _mm256_cmp_pd(_mm256_sub_pd(av, margin), _mm256_mul_pd(_mm256_add_pd(a, down), half), _CMP_GT_OQ));
      ok = _mm256_and_pd(ok, _mm256_cmp_pd(_mm256_add_pd(av, margin), _mm256_mul_pd(_mm256_add_pd(a, up), half), _CMP_LT_OQ));
      done |= static_cast<uint32_t>(_mm256_movemask_pd(ok)) << (at + 4 * j);
    }
  }
  return done;
}

// Blocks of kBlock through `block` (its vectorised way), then the evaluator's way for the lanes
// it did not do; the last partial block through a padded copy.
template <bool kSwish, uint32_t (*block)(const float*, float*, float*)>
void logisticBlocks(const float* in, float* out, int64_t n) {
  constexpr uint32_t kAll = ~uint32_t{0};
  static_assert(kBlock == 32, "kAll holds one bit per element of a block");
  float saved[kBlock];  // the inputs of a block's lanes not done: `in` may be `out`
  auto finish = [&](uint32_t done, float* o, int len) {
    if (done == kAll) return;
    for (int i = 0; i < len; ++i)
      if (!(done >> i & 1)) o[i] = exact(kSwish, saved[i]);
  };
  int64_t at = 0;
  for (; at + kBlock <= n; at += kBlock) finish(block(in + at, out + at, saved), out + at, kBlock);
  if (at == n) return;
  const int len = static_cast<int>(n - at);
  float x[kBlock], f[kBlock];
  std::fill(std::copy(in + at, in + n, x), x + kBlock, 0.0f);
  const uint32_t done = block(x, f, saved);
  std::copy(f, f + len, out + at);
  finish(done, out + at, len);
}

#endif

}  // namespace

void logisticActivationWith(SimdIsa isa, bool swish, const float* in, float* out, int64_t n) {
#ifdef POPRT_X86_INTRINSICS
  if (isa == SimdIsa::Avx512)
    return swish ? logisticBlocks<true, logisticBlock512<true>>(in, out, n)
                 : logisticBlocks<false, logisticBlock512<false>>(in, out, n);
  if (isa == SimdIsa::Avx2)
    return swish ? logisticBlocks<true, logisticBlock256<true>>(in, out, n)
                 : logisticBlocks<false, logisticBlock256<false>>(in, out, n);
#endif
  (void)isa;
  for (int64_t i = 0; i < n; ++i) out[i] = exact(swish, in[i]);
}

void logisticActivation(bool swish, const float* in, float* out, int64_t n) {
  logisticActivationWith(bestSimdIsa(), swish, in, out, n);
}

}  // namespace poprt::sim
