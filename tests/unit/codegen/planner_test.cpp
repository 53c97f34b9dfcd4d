#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "codegen/matmul_planner.h"
#include "codegen/target.h"
#include "codegen/tile_mapping.h"

namespace poprt::codegen {
namespace {

TEST(MatMulPlanner, EveryPlanFitsItsBudgetAndCoversTheOutput) {
  const uint64_t budget = 624 * 1024 * 6 / 10;
  for (int64_t M : {1, 7, 64, 1000}) {
    for (int64_t K : {1, 64, 2048}) {
      for (int64_t N : {1, 10, 1000, 4096}) {
        for (uint32_t tiles : {1u, 4u, 1472u}) {
          MatMulPlan p = planMatMul(1, M, K, N, tiles, budget);
          uint64_t need = 4 * static_cast<uint64_t>(p.rows * K + K * p.cols + 2 * p.rows * p.cols);
          EXPECT_EQ(p.bytes_per_tile, need);
          if (p.fits) {
            EXPECT_LE(p.bytes_per_tile, budget) << M << "x" << K << "x" << N << " on " << tiles;
          }
          EXPECT_GE(p.rows * p.row_blocks, M);
          EXPECT_GE(p.cols * p.col_blocks, N);
          EXPECT_LE(p.row_blocks * p.col_blocks, std::max<int64_t>(1, tiles));
        }
      }
    }
  }
}

TEST(MatMulPlanner, LargeProblemsUseManyTiles) {
  MatMulPlan p = planMatMul(1, 512, 512, 512, 1472, 624 * 1024 * 6 / 10);
  ASSERT_TRUE(p.fits);
  EXPECT_GT(p.row_blocks * p.col_blocks, 1000);
}

TEST(MatMulPlanner, ReportsWhenNothingFits) {
  // A 1-tile target cannot hold a 4096x4096 weight in 60% of 624 KiB.
  MatMulPlan p = planMatMul(1, 1, 4096, 4096, 1, 624 * 1024 * 6 / 10);
  EXPECT_FALSE(p.fits);
}

TEST(GatherElements, CopiesExactlyTheRequestedElements) {
  // A tensor of 100 elements spread unevenly over 3 tiles; element e holds value e.
  TileMapping m;
  m.regions = {{0, 30, 0, 0}, {30, 50, 1, 16}, {80, 20, 2, 8}};
  std::vector<std::vector<float>> tiles(4, std::vector<float>(200, -1.0f));
  for (const Region& r : m.regions)
    for (int64_t i = 0; i < r.count; ++i) tiles[r.tile][r.offset / 4 + i] = static_cast<float>(r.begin + i);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    int64_t begin = rng() % 100;
    int64_t count = rng() % (100 - begin + 1);
    std::vector<exec::TileCopy> copies;
    gatherElements(m, begin, count, 4, 3, 64, copies);
    std::fill(tiles[3].begin(), tiles[3].end(), -1.0f);
    uint64_t total = 0;
    for (const auto& c : copies) {
      EXPECT_EQ(c.dst_tile, 3u);
      std::memcpy(reinterpret_cast<uint8_t*>(tiles[3].data()) + c.dst_offset,
                  reinterpret_cast<uint8_t*>(tiles[c.src_tile].data()) + c.src_offset, c.bytes);
      total += c.bytes;
    }
    EXPECT_EQ(total, static_cast<uint64_t>(count) * 4);
    for (int64_t i = 0; i < count; ++i) ASSERT_EQ(tiles[3][16 + i], static_cast<float>(begin + i));
    EXPECT_EQ(tiles[3][16 + count], -1.0f);  // nothing written past the end
  }
}

TEST(Target, PresetsAndSmallTargets) {
  auto ipu2 = makeTarget("ipu2");
  ASSERT_TRUE(ipu2.ok());
  EXPECT_EQ(ipu2->numTiles(), 1472u);
  EXPECT_EQ(ipu2->bytes_per_tile, 624u * 1024u);
  auto ipu1 = makeTarget("ipu1");
  ASSERT_TRUE(ipu1.ok());
  EXPECT_EQ(ipu1->numTiles(), 1216u);
  auto small = makeTarget("ipu21", 2, 4);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->numTiles(), 8u);
  EXPECT_EQ(small->clock_hz, 1.5e9);
  EXPECT_FALSE(makeTarget("ipu3").ok());
  EXPECT_FALSE(makeTarget("ipu2", 1, 5000).ok());
}

}  // namespace
}  // namespace poprt::codegen
