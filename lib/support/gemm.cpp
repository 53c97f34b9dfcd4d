// Register-tiled kernels: a tile of J rows of `out` by W columns lives in vector registers while k
// runs over K, each step broadcasting a[j][k] and fused-multiply-adding it with row k of b (each
// row of b through its own pointer, so a convolution can pass rows of its padded input in place
// of an im2col matrix). The
// last columns of a row go through masked loads and stores, so nothing reads past a row of b.
// `gemm` picks the version for the CPU once; each version is callable by itself, for the tests.
#include "lib/support/gemm.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__) && defined(__GNUC__)  // GCC and Clang
#define POPRT_GEMM_X86 1
#include <immintrin.h>
#endif

namespace poprt {
namespace {

// Row k of b: at a stride (a matrix), or through a table of pointers (gemmRows).
struct StridedRows {
  const float* b;
  int64_t ldb;
  const float* operator[](int64_t k) const { return b + k * ldb; }
};
struct PointerRows {
  const float* const* b;
  int64_t first;  // column
  const float* operator[](int64_t k) const { return b[k] + first; }
};

#ifdef POPRT_GEMM_X86

// Features, not arch levels: Clang's multiversioning takes no "arch=x86-64-v4".
#define POPRT_V4 __attribute__((target("avx512f,fma"), always_inline)) inline
#define POPRT_V3 __attribute__((target("avx2,fma"), always_inline)) inline
// A tile's sums live in registers only when its loops over rows and vectors are unrolled whole:
// GCC left some tiles' loops rolled and kept their sums in memory (an FMA with a load and a store
// for each).
#define POPRT_UNROLL _Pragma("GCC unroll 16")

// AVX-512: J rows x V vectors of 16; `last` masks the used columns of the last vector.
template <int J, int V, class Rows>
POPRT_V4 void tile512(const float* a, int64_t K, Rows b, int64_t q, float* out, int64_t ldo, __mmask16 last) {
  __m512 acc[J][V];
  POPRT_UNROLL for (int j = 0; j < J; ++j) POPRT_UNROLL for (int v = 0; v < V; ++v) acc[j][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m512 c[V];
    const float* row = b[k] + q;
    POPRT_UNROLL for (int v = 0; v < V - 1; ++v) c[v] = _mm512_loadu_ps(row + 16 * v);
    c[V - 1] = _mm512_maskz_loadu_ps(last, row + 16 * (V - 1));
    POPRT_UNROLL for (int j = 0; j < J; ++j) {
      const __m512 x = _mm512_set1_ps(a[j * K + k]);
      POPRT_UNROLL for (int v = 0; v < V; ++v) acc[j][v] = _mm512_fmadd_ps(x, c[v], acc[j][v]);
    }
  }
  POPRT_UNROLL for (int j = 0; j < J; ++j) {
    POPRT_UNROLL for (int v = 0; v < V - 1; ++v) _mm512_storeu_ps(out + j * ldo + 16 * v, acc[j][v]);
    _mm512_mask_storeu_ps(out + j * ldo + 16 * (V - 1), last, acc[j][V - 1]);
  }
}

// The vectors of 16 columns a tile of J rows spans: J * V sums in registers, with room left for
// the row of b being loaded and a broadcast weight (32 registers). Wide tiles cover a row of a
// conv block's output (14 to 63 columns are common) in one pass over K: a tile of few vectors per
// row made several passes, each re-reading the weights with fewer sums in flight.
template <int J>
constexpr int kTileVectors = J >= 7   ? 3
                             : J >= 5 ? 4
                             : J == 4 ? 6
                             : J == 3 ? 8
                                      : 12;

POPRT_V4 __mmask16 firstLanes(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }  // n in [1, 16]

// Columns [q, n) of rows [0, J), fewer than 16V + 1 of them: one tile of as many vectors as they
// need, the last masked.
template <int J, int V, class Rows>
POPRT_V4 void lastTile512(const float* a, int64_t K, Rows b, int64_t q, int64_t n, float* out, int64_t ldo) {
  if constexpr (V > 1)
    if (n - q <= 16 * (V - 1)) return lastTile512<J, V - 1, Rows>(a, K, b, q, n, out, ldo);
  tile512<J, V, Rows>(a, K, b, q, out + q, ldo, firstLanes(n - q - 16 * (V - 1)));
}

// Rows [0, J) of columns [0, n): whole tiles, then the last.
template <int J, class Rows>
POPRT_V4 void rows512(const float* a, int64_t K, Rows b, int64_t n, float* out, int64_t ldo) {
  constexpr int V = kTileVectors<J>;
  int64_t q = 0;
  for (; q + 16 * V <= n; q += 16 * V) tile512<J, V, Rows>(a, K, b, q, out + q, ldo, 0xFFFF);
  if (q < n) lastTile512<J, V, Rows>(a, K, b, q, n, out, ldo);
}

template <class Rows>
__attribute__((target("avx512f,fma"))) void gemmAvx512(const float* a, int64_t M, int64_t K, Rows b, int64_t N, float* out,
                                                       int64_t ldo) {
  // Tiles of 8 rows, a column block at a time: its rows of b stay in cache for all the row tiles.
  constexpr int V = kTileVectors<8>;
  const int64_t whole = M / 8 * 8;
  int64_t q = 0;
  for (; q + 16 * V <= N; q += 16 * V)
    for (int64_t j = 0; j < whole; j += 8) tile512<8, V, Rows>(a + j * K, K, b, q, out + j * ldo + q, ldo, 0xFFFF);
  for (int64_t j = 0; j < whole && q < N; j += 8) lastTile512<8, V, Rows>(a + j * K, K, b, q, N, out + j * ldo, ldo);
  // The last M % 8 rows sweep the columns by themselves, with more columns a tile: an FMA takes
  // about 4 cycles, so a tile wants 8 or more sums in flight (a 1-row tile of 2 vectors had 2). A
  // conv block's few output channels (2 to 7 are common) are all remainder.
  const float* ar = a + whole * K;
  float* orow = out + whole * ldo;
  switch (M - whole) {
    case 1: return rows512<1, Rows>(ar, K, b, N, orow, ldo);
    case 2: return rows512<2, Rows>(ar, K, b, N, orow, ldo);
    case 3: return rows512<3, Rows>(ar, K, b, N, orow, ldo);
    case 4: return rows512<4, Rows>(ar, K, b, N, orow, ldo);
    case 5: return rows512<5, Rows>(ar, K, b, N, orow, ldo);
    case 6: return rows512<6, Rows>(ar, K, b, N, orow, ldo);
    case 7: return rows512<7, Rows>(ar, K, b, N, orow, ldo);
    default: return;
  }
}

// AVX2: J rows x V vectors of 8; `last` masks the used columns of the last vector.
template <int J, int V, class Rows>
POPRT_V3 void tile256(const float* a, int64_t K, Rows b, int64_t q, float* out, int64_t ldo, __m256i last) {
  __m256 acc[J][V];
  POPRT_UNROLL for (int j = 0; j < J; ++j) POPRT_UNROLL for (int v = 0; v < V; ++v) acc[j][v] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m256 c[V];
    const float* row = b[k] + q;
    POPRT_UNROLL for (int v = 0; v < V - 1; ++v) c[v] = _mm256_loadu_ps(row + 8 * v);
    c[V - 1] = _mm256_maskload_ps(row + 8 * (V - 1), last);
    POPRT_UNROLL for (int j = 0; j < J; ++j) {
      const __m256 x = _mm256_set1_ps(a[j * K + k]);
      POPRT_UNROLL for (int v = 0; v < V; ++v) acc[j][v] = _mm256_fmadd_ps(x, c[v], acc[j][v]);
    }
  }
  POPRT_UNROLL for (int j = 0; j < J; ++j) {
    POPRT_UNROLL for (int v = 0; v < V - 1; ++v) _mm256_storeu_ps(out + j * ldo + 8 * v, acc[j][v]);
    _mm256_maskstore_ps(out + j * ldo + 8 * (V - 1), last, acc[j][V - 1]);
  }
}

POPRT_V3 __m256i mask256(int64_t n) {  // the first n of 8 lanes
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Rows [0, J) of columns [q, n), 8V at a time, then what is left with half as many vectors a tile.
template <int J, int V, class Rows>
POPRT_V3 void columns256(const float* a, int64_t K, Rows b, int64_t q, int64_t n, float* out, int64_t ldo) {
  for (; q + 8 * V <= n; q += 8 * V) tile256<J, V, Rows>(a, K, b, q, out + q, ldo, mask256(8));
  if (q >= n) return;
  if constexpr (V > 1)
    columns256<J, V / 2, Rows>(a, K, b, q, n, out, ldo);
  else
    tile256<J, 1, Rows>(a, K, b, q, out + q, ldo, mask256(n - q));
}

template <class Rows>
__attribute__((target("avx2,fma"))) void gemmAvx2(const float* a, int64_t M, int64_t K, Rows b, int64_t N, float* out,
                                                  int64_t ldo) {
  // Tiles of 6 rows by 16 columns (12 sums in registers), a column block at a time.
  const int64_t whole = M / 6 * 6;
  int64_t q = 0;
  for (; q + 16 <= N; q += 16)
    for (int64_t j = 0; j < whole; j += 6) tile256<6, 2, Rows>(a + j * K, K, b, q, out + j * ldo + q, ldo, mask256(8));
  const int64_t left = N - q;
  for (int64_t j = 0; j < whole && left > 0; j += 6) {
    if (left > 8)
      tile256<6, 2, Rows>(a + j * K, K, b, q, out + j * ldo + q, ldo, mask256(left - 8));
    else
      tile256<6, 1, Rows>(a + j * K, K, b, q, out + j * ldo + q, ldo, mask256(left));
  }
  // The last M % 6 rows sweep the columns with more columns a tile, as gemmAvx512's do: a tile of
  // 1 row by 2 vectors kept 2 sums in flight where the FMA units want 8 or more (resnet20_cifar's
  // conv blocks of 1-5 output channels were all remainder).
  const float* ar = a + whole * K;
  float* orow = out + whole * ldo;
  switch (M - whole) {
    case 1: return columns256<1, 8, Rows>(ar, K, b, 0, N, orow, ldo);
    case 2: return columns256<2, 4, Rows>(ar, K, b, 0, N, orow, ldo);
    case 3: return columns256<3, 4, Rows>(ar, K, b, 0, N, orow, ldo);
    case 4: return columns256<4, 2, Rows>(ar, K, b, 0, N, orow, ldo);
    case 5: return columns256<5, 2, Rows>(ar, K, b, 0, N, orow, ldo);
    default: return;
  }
}

#endif

template <class Rows>
void gemmPortable(const float* a, int64_t M, int64_t K, Rows b, int64_t N, float* out, int64_t ldo) {
  for (int64_t j = 0; j < M; ++j)
    for (int64_t q = 0; q < N; ++q) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc = std::fma(a[j * K + k], b[k][q], acc);
      out[j * ldo + q] = acc;
    }
}

// Chains [0, R*S) of c at once, their sums in registers: a step loads each chain's tap and makes
// its fused multiply-add, independent of the others', so the adds of one chain wait on nothing but
// its own. Chains r*S to r*S + S - 1 share their weights (a conv block's outputs of one channel),
// loaded once a step for all S: the loop is bound by its loads.
template <int R, int S, bool kFmaInstruction>
__attribute__((always_inline)) inline void chainGroup(const DotChain* c, const TapRun* runs, int64_t n_runs) {
  constexpr int N = R * S;
  float acc[N];
  const float* a[R];
  const float* b[N];
  for (int i = 0; i < N; ++i) {
    acc[i] = 0.0f;
    b[i] = c[i].b;
  }
  for (int r = 0; r < R; ++r) a[r] = c[r * S].a;
  for (int64_t k = 0; k < n_runs; ++k) {
    const int64_t at = runs[k].at, count = runs[k].count;
    for (int64_t t = 0; t < count; ++t)
      for (int r = 0; r < R; ++r) {
        const float w = a[r][t];
        for (int j = 0; j < S; ++j) {
          float& sum = acc[r * S + j];
          if constexpr (kFmaInstruction)
            sum = __builtin_fmaf(w, b[r * S + j][at + t], sum);
          else
            sum = std::fma(w, b[r * S + j][at + t], sum);
        }
      }
    for (int r = 0; r < R; ++r) a[r] += count;
  }
  for (int i = 0; i < N; ++i) *c[i].out = acc[i];
}

// Whether the 8 chains at c come in runs of `s` sharing their weights.
inline bool sharingBy(const DotChain* c, int s) {
  for (int i = 0; i < 8; ++i)
    if (c[i].a != c[i / s * s].a) return false;
  return true;
}

template <bool kFmaInstruction>
__attribute__((always_inline)) inline void chainsBy8(const DotChain* c, int64_t n, const TapRun* runs, int64_t n_runs) {
  for (; n >= 8; c += 8, n -= 8) {
    if (sharingBy(c, 4))
      chainGroup<2, 4, kFmaInstruction>(c, runs, n_runs);
    else if (sharingBy(c, 2))
      chainGroup<4, 2, kFmaInstruction>(c, runs, n_runs);
    else
      chainGroup<8, 1, kFmaInstruction>(c, runs, n_runs);
  }
  switch (n) {
    case 7: return chainGroup<7, 1, kFmaInstruction>(c, runs, n_runs);
    case 6: return chainGroup<6, 1, kFmaInstruction>(c, runs, n_runs);
    case 5: return chainGroup<5, 1, kFmaInstruction>(c, runs, n_runs);
    case 4: return chainGroup<4, 1, kFmaInstruction>(c, runs, n_runs);
    case 3: return chainGroup<3, 1, kFmaInstruction>(c, runs, n_runs);
    case 2: return chainGroup<2, 1, kFmaInstruction>(c, runs, n_runs);
    case 1: return chainGroup<1, 1, kFmaInstruction>(c, runs, n_runs);
    default: return;
  }
}

#ifdef POPRT_GEMM_X86
// The scalar FMA instruction (fmaf from libm is exact too, but a call a tap).
__attribute__((target("fma"))) void chainsFma(const DotChain* c, int64_t n, const TapRun* runs, int64_t n_runs) {
  chainsBy8<true>(c, n, runs, n_runs);
}
#endif

}  // namespace

void dotChainsWith(SimdIsa isa, const DotChain* chains, int64_t n, const TapRun* runs, int64_t n_runs) {
#ifdef POPRT_GEMM_X86
  if (isa != SimdIsa::Portable) return chainsFma(chains, n, runs, n_runs);
#endif
  chainsBy8<false>(chains, n, runs, n_runs);
}

void dotChains(const DotChain* chains, int64_t n, const TapRun* runs, int64_t n_runs) {
  dotChainsWith(bestSimdIsa(), chains, n, runs, n_runs);
}

namespace {
template <class Rows>
void gemmAny(SimdIsa isa, const float* a, int64_t M, int64_t K, Rows b, int64_t N, float* out, int64_t ldo) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // no products: zeros, without touching a or b (which may be null then)
    for (int64_t j = 0; j < M; ++j) std::fill(out + j * ldo, out + j * ldo + N, 0.0f);
    return;
  }
  switch (isa) {
#ifdef POPRT_GEMM_X86
    case SimdIsa::Avx512: return gemmAvx512(a, M, K, b, N, out, ldo);
    case SimdIsa::Avx2: return gemmAvx2(a, M, K, b, N, out, ldo);
#endif
    default: return gemmPortable(a, M, K, b, N, out, ldo);
  }
}
}  // namespace

void gemmWith(SimdIsa isa, const float* a, int64_t M, int64_t K, const float* b, int64_t ldb, int64_t N, float* out,
              int64_t ldo) {
  gemmAny(isa, a, M, K, StridedRows{b, ldb}, N, out, ldo);
}

void gemmRowsWith(SimdIsa isa, const float* a, int64_t M, int64_t K, const float* const* b, int64_t first, int64_t N, float* out,
                  int64_t ldo) {
  gemmAny(isa, a, M, K, PointerRows{b, first}, N, out, ldo);
}

void gemm(const float* a, int64_t M, int64_t K, const float* b, int64_t ldb, int64_t N, float* out, int64_t ldo) {
  gemmWith(bestSimdIsa(), a, M, K, b, ldb, N, out, ldo);
}

void gemmRows(const float* a, int64_t M, int64_t K, const float* const* b, int64_t first, int64_t N, float* out, int64_t ldo) {
  gemmRowsWith(bestSimdIsa(), a, M, K, b, first, N, out, ldo);
}

}  // namespace poprt
