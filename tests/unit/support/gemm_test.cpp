#include "lib/support/gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace poprt {
namespace {

// Every version this CPU has gives the same bits as the portable one, over the register tiles'
// edges (rows and columns left over), strided b and out rows, and K = 0; and the portable one
// matches a product in double; gemmRows over the same rows anywhere in memory gives the same bits.
// Nothing outside the out rows' first N columns is written.
TEST(Gemm, EveryVersionGivesTheSameBitsAndMatchesDouble) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  const std::vector<SimdIsa> isas = availableSimdIsas();
  ASSERT_EQ(isas.front(), SimdIsa::Portable);
  const float sentinel = 12345.f;
  // Every remainder of M by the row tiles (8 rows with AVX-512, 6 with AVX2), and N across the
  // tile widths of every row count (3 vectors of 16 for 8 rows, up to 12 for 1 or 2: 193 columns).
  for (int64_t M : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 16, 17, 23})
    for (int64_t K : {0, 1, 5, 64})
      for (int64_t N : {1, 7, 8, 15, 16, 17, 31, 32, 33, 48, 49, 50, 64, 97, 100, 129, 193, 200}) {
        SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N));
        const int64_t ldb = N + 3, ldo = N + 5;
        std::vector<float> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * ldb));
        for (float& x : a) x = dist(rng);
        for (float& x : b) x = dist(rng);
        std::vector<float> want(static_cast<size_t>(M * N));
        for (int64_t j = 0; j < M; ++j)
          for (int64_t q = 0; q < N; ++q) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k) s += static_cast<double>(a[j * K + k]) * b[k * ldb + q];
            want[static_cast<size_t>(j * N + q)] = static_cast<float>(s);
          }
        std::vector<float> portable;
        for (SimdIsa isa : isas) {
          SCOPED_TRACE(static_cast<int>(isa));
          std::vector<float> out(static_cast<size_t>(M * ldo), sentinel);
          gemmWith(isa, a.data(), M, K, b.data(), ldb, N, out.data(), ldo);
          for (int64_t j = 0; j < M; ++j)
            for (int64_t q = N; q < ldo; ++q) ASSERT_EQ(out[static_cast<size_t>(j * ldo + q)], sentinel) << j << "," << q;
          if (isa == SimdIsa::Portable) {
            portable = out;
            for (int64_t j = 0; j < M; ++j)
              for (int64_t q = 0; q < N; ++q)
                ASSERT_NEAR(out[static_cast<size_t>(j * ldo + q)], want[static_cast<size_t>(j * N + q)], 1e-5) << j << "," << q;
          } else {
            ASSERT_EQ(std::memcmp(out.data(), portable.data(), out.size() * sizeof(float)), 0);
          }
          // The same rows through pointers, in reverse order in memory, from column 2 of each.
          std::vector<float> moved(static_cast<size_t>(K * ldb + 2));
          std::vector<const float*> rows(static_cast<size_t>(K));
          for (int64_t k = 0; k < K; ++k) {
            float* row = moved.data() + (K - 1 - k) * ldb;
            std::copy(b.begin() + k * ldb, b.begin() + k * ldb + N, row + 2);
            rows[static_cast<size_t>(k)] = row;
          }
          std::vector<float> by_rows(out.size(), sentinel);
          gemmRowsWith(isa, a.data(), M, K, rows.data(), 2, N, by_rows.data(), ldo);
          ASSERT_EQ(std::memcmp(by_rows.data(), out.data(), out.size() * sizeof(float)), 0);
        }
      }
}

// dotChains under every instruction set gives each chain's products summed in tap order from zero
// with fused multiply-adds, bit for bit against that loop written out: every group size of its
// interleaving (1-8 chains and more), runs of one tap and of many, chains sharing weights in runs
// of 2 and 4 (a conv block's outputs of one channel, loaded once for all) and irregularly, and no
// chains at all. Nothing but the outputs is written.
TEST(DotChains, EveryVersionSumsEachChainInTapOrder) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  const std::vector<std::vector<TapRun>> tap_lists = {{}, {{0, 1}}, {{3, 40}}, {{0, 5}, {17, 1}, {9, 33}, {50, 2}}};
  for (const auto& runs : tap_lists)
    for (int64_t n : {0, 1, 2, 3, 7, 8, 9, 16, 19})
      for (int64_t share : {0, 1, 2, 4}) {  // 0: every third chain shares the first's weights
        SCOPED_TRACE(std::to_string(runs.size()) + " runs, " + std::to_string(n) + " chains, sharing " + std::to_string(share));
        int64_t K = 0, reach = 0;
        for (const TapRun& r : runs) K += r.count, reach = std::max(reach, r.at + r.count);
        std::vector<float> a(static_cast<size_t>(n * K + 1)), b(static_cast<size_t>(n * 7 + reach + 1));
        for (float& x : a) x = dist(rng);
        for (float& x : b) x = dist(rng);
        const float sentinel = 12345.f;
        std::vector<float> want(static_cast<size_t>(2 * n + 1), sentinel);
        std::vector<DotChain> chains;
        for (int64_t i = 0; i < n; ++i) {
          const float* ai = a.data() + (share == 0 ? (i % 3 == 2 ? 0 : i * K) : i / share * K);
          const float* bi = b.data() + i * 7;  // overlapping inputs, as a conv's windows
          chains.push_back({ai, bi, nullptr});
          float sum = 0.0f;
          int64_t t = 0;
          for (const TapRun& r : runs)
            for (int64_t k = 0; k < r.count; ++k, ++t) sum = std::fma(ai[t], bi[r.at + k], sum);
          want[static_cast<size_t>(2 * i)] = sum;
        }
        for (SimdIsa isa : availableSimdIsas()) {
          SCOPED_TRACE(static_cast<int>(isa));
          std::vector<float> out(want.size(), sentinel);
          for (int64_t i = 0; i < n; ++i) chains[static_cast<size_t>(i)].out = out.data() + 2 * i;
          dotChainsWith(isa, chains.data(), n, runs.data(), static_cast<int64_t>(runs.size()));
          for (size_t i = 0; i < out.size(); ++i)
            ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(want[i])) << "at " << i;
        }
      }
}

}  // namespace
}  // namespace poprt
