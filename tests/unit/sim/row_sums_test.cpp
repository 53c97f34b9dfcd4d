// sumRows (sim/row_sums.h) against the sums written out: double, from zero, row by row, rounded
// to float, under every instruction set this CPU has, rows one after another or through a table; every width around the vectors
// (4 and 8 sums) and their blocks (32), and values whose sums depend on that order (cancellations, NaN, infinities, signed
// zeros).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "sim/row_sums.h"

namespace poprt::sim {
namespace {

TEST(RowSums, TheEvaluatorsSumsForEveryWidthAndRowCount) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> wide(-1e6f, 1e6f), narrow(-1.0f, 1.0f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            -0.0f,
                            0.0f,
                            1e-45f,
                            3e38f};
  for (SimdIsa isa : availableSimdIsas())
    for (int64_t n : {0, 1, 3, 4, 5, 7, 8, 9, 15, 31, 32, 33, 39, 64, 100})
      for (int64_t count : {0, 1, 2, 4, 13, 32}) {
        std::vector<float> rows(static_cast<size_t>(n * count));
        for (size_t k = 0; k < rows.size(); ++k)
          rows[k] = rng() % 50 == 0 ? specials[rng() % std::size(specials)] : (k % 2 ? wide(rng) : narrow(rng));
        // Guards past the output: nothing may be written there.
        std::vector<float> out(static_cast<size_t>(n) + 8, 12345.0f);
        sumRowsWith(isa, rows.data(), count, n, out.data());
        for (int64_t i = 0; i < n; ++i) {
          double acc = 0.0;
          for (int64_t e = 0; e < count; ++e) acc += rows[static_cast<size_t>(e * n + i)];
          const float want = static_cast<float>(acc);
          const float got = out[static_cast<size_t>(i)];
          EXPECT_TRUE(std::isnan(want) ? std::isnan(got) : std::bit_cast<uint32_t>(want) == std::bit_cast<uint32_t>(got))
              << "isa " << static_cast<int>(isa) << " n " << n << " count " << count << " i " << i << ": " << got << ", want "
              << want;
        }
        for (size_t k = static_cast<size_t>(n); k < out.size(); ++k) EXPECT_EQ(out[k], 12345.0f) << "n " << n;
        // The rows anywhere, through a table (here in reverse order, apart): the same bits.
        std::vector<float> scattered(static_cast<size_t>((n + 3) * count));
        std::vector<const float*> table(static_cast<size_t>(count));
        for (int64_t e = 0; e < count; ++e) {
          float* at = scattered.data() + (count - 1 - e) * (n + 3);
          std::copy(rows.begin() + e * n, rows.begin() + (e + 1) * n, at);
          table[static_cast<size_t>(e)] = at;
        }
        std::vector<float> via_table(out.size(), 12345.0f);
        sumRowsWith(isa, table.data(), count, n, via_table.data());
        for (size_t k = 0; k < out.size(); ++k)
          EXPECT_EQ(std::bit_cast<uint32_t>(via_table[k]), std::bit_cast<uint32_t>(out[k])) << "table, n " << n << " k " << k;
      }
}

}  // namespace
}  // namespace poprt::sim
