#include "sim/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace poprt::sim {
namespace {

// Every version this CPU has gives the same bits as the portable one, over the register tiles'
// edges (rows and columns left over), strided b and out rows, and K = 0; and the portable one
// matches a product in double. Nothing outside the out rows' first N columns is written.
TEST(Gemm, EveryVersionGivesTheSameBitsAndMatchesDouble) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  const std::vector<SimdIsa> isas = availableSimdIsas();
  ASSERT_EQ(isas.front(), SimdIsa::Portable);
  const float sentinel = 12345.f;
  // Every remainder of M by the row tiles (8 rows with AVX-512, 6 with AVX2), and N across the
  // wider tiles the remainder rows use.
  for (int64_t M : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 17, 23})
    for (int64_t K : {0, 1, 5, 64})
      for (int64_t N : {1, 7, 8, 15, 16, 17, 31, 32, 33, 50, 64, 100, 129, 200}) {
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
        }
      }
}

}  // namespace
}  // namespace poprt::sim
