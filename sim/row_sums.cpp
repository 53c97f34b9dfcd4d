#include "sim/row_sums.h"

#include <algorithm>
#include <vector>

#include "sim/codelet_util.h"

#include "sim/x86_intrinsics.h"  // last

namespace poprt::sim {

POPRT_VECTOR_CLONES void addRows(double* acc, const float* rows, int64_t count, int64_t n) {
  for (int64_t e = 0; e < count; ++e, rows += n)
    for (int64_t i = 0; i < n; ++i) acc[i] += rows[i];
}

namespace {

// Where row e of a sum starts: rows one after another, or anywhere through a table.
struct StridedRows {
  const float* base;
  int64_t n;
  const float* operator()(int64_t e) const { return base + e * n; }
};
struct PointerRows {
  const float* const* rows;
  const float* operator()(int64_t e) const { return rows[e]; }
};

template <class Rows>
void sumRowsPortable(Rows rows, int64_t count, int64_t n, float* out) {
  thread_local std::vector<double> acc;
  acc.assign(static_cast<size_t>(n), 0.0);
  for (int64_t e = 0; e < count; ++e) addRows(acc.data(), rows(e), 1, n);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
}

#ifdef POPRT_X86_INTRINSICS

constexpr int kMaxVectors = 4;  // sums of 8 in flight: a row's add waits on the last one's

// Columns [at, at + 8 V) clipped to n; masked loads read nothing past n.
template <int V, class Rows>
__attribute__((target("avx512f,avx512vl"))) void sumColumns(Rows rows, int64_t count, int64_t n, int64_t at, float* out) {
  __mmask8 mask[V];
  __m512d acc[V];
  for (int j = 0; j < V; ++j) {
    const int64_t left = std::clamp<int64_t>(n - at - 8 * j, 0, 8);
    mask[j] = static_cast<__mmask8>((1u << left) - 1);
    acc[j] = _mm512_setzero_pd();
  }
  for (int64_t e = 0; e < count; ++e) {
    const float* row = rows(e) + at;
    for (int j = 0; j < V; ++j) acc[j] = _mm512_add_pd(acc[j], _mm512_cvtps_pd(_mm256_maskz_loadu_ps(mask[j], row + 8 * j)));
  }
  for (int j = 0; j < V; ++j) _mm256_mask_storeu_ps(out + at + 8 * j, mask[j], _mm512_cvtpd_ps(acc[j]));
}

// AVX2: the same with vectors of 4 sums, up to 8 of them (16 registers: 8 sums and their loads).
// Only the last vector of a row's end is a masked load: those are slow on some CPUs (AMD's).
constexpr int kMaxVectors256 = 8;

template <int V, bool kTail, class Rows>
__attribute__((target("avx2"))) void sumColumns256(Rows rows, int64_t count, int64_t n, int64_t at, float* out) {
  const int left = static_cast<int>(std::min<int64_t>(n - at - 4 * (V - 1), 4));  // the last vector's columns
  const __m128i tail = _mm_cmpgt_epi32(_mm_set1_epi32(left), _mm_setr_epi32(0, 1, 2, 3));
  __m256d acc[V];
  for (int j = 0; j < V; ++j) acc[j] = _mm256_setzero_pd();
  for (int64_t e = 0; e < count; ++e) {
    const float* row = rows(e) + at;
    for (int j = 0; j < V; ++j) {
      const __m128 x = kTail && j == V - 1 ? _mm_maskload_ps(row + 4 * j, tail) : _mm_loadu_ps(row + 4 * j);
      acc[j] = _mm256_add_pd(acc[j], _mm256_cvtps_pd(x));
    }
  }
  for (int j = 0; j < V; ++j) {
    if (kTail && j == V - 1)
      _mm_maskstore_ps(out + at + 4 * j, tail, _mm256_cvtpd_ps(acc[j]));
    else
      _mm_storeu_ps(out + at + 4 * j, _mm256_cvtpd_ps(acc[j]));
  }
}

// Columns [at, n) in blocks of up to kMaxVectors256 vectors, the last one masked when n - at is
// not a multiple of 4.
template <int V = kMaxVectors256, class Rows>
__attribute__((target("avx2"))) void sumColumnsFrom256(Rows rows, int64_t count, int64_t n, int64_t at, float* out) {
  for (; at + 4 * V <= n; at += 4 * V) sumColumns256<V, false>(rows, count, n, at, out);
  if (at >= n) return;
  if constexpr (V > 1)
    if (n - at <= 4 * (V - 1)) return sumColumnsFrom256<V - 1>(rows, count, n, at, out);
  sumColumns256<V, true>(rows, count, n, at, out);
}

#endif

}  // namespace

namespace {

template <class Rows>
void sumRowsAs(SimdIsa isa, Rows rows, int64_t count, int64_t n, float* out) {
#ifdef POPRT_X86_INTRINSICS
  if (isa == SimdIsa::Avx512) {
    for (int64_t at = 0; at < n; at += 8 * kMaxVectors) {
      switch (std::min<int64_t>(kMaxVectors, (n - at + 7) / 8)) {  // as many vectors as the columns left need
        case 1: sumColumns<1>(rows, count, n, at, out); break;
        case 2: sumColumns<2>(rows, count, n, at, out); break;
        case 3: sumColumns<3>(rows, count, n, at, out); break;
        default: sumColumns<4>(rows, count, n, at, out); break;
      }
    }
    return;
  }
  if (isa == SimdIsa::Avx2) return sumColumnsFrom256(rows, count, n, 0, out);
#endif
  (void)isa;
  sumRowsPortable(rows, count, n, out);
}

}  // namespace

void sumRowsWith(SimdIsa isa, const float* rows, int64_t count, int64_t n, float* out) {
  sumRowsAs(isa, StridedRows{rows, n}, count, n, out);
}
void sumRowsWith(SimdIsa isa, const float* const* rows, int64_t count, int64_t n, float* out) {
  sumRowsAs(isa, PointerRows{rows}, count, n, out);
}

void sumRows(const float* rows, int64_t count, int64_t n, float* out) { sumRowsWith(bestSimdIsa(), rows, count, n, out); }
void sumRows(const float* const* rows, int64_t count, int64_t n, float* out) { sumRowsWith(bestSimdIsa(), rows, count, n, out); }

}  // namespace poprt::sim
