#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "codegen/conv_planner.h"
#include "codegen/matmul_planner.h"
#include "codegen/partial_sums.h"
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
          // The A and B blocks and the output; split, float32 partials, the bias bound, and a
          // slice of the reduction (every partial's share of it and the sums).
          const int64_t out = p.rows * p.cols, slice = reductionSlice(out, p.k_splits, p.cols);
          uint64_t need = 4 * static_cast<uint64_t>(p.rows * p.k_block + p.k_block * p.cols + 2 * out);
          if (p.k_splits > 1) need += 4 * static_cast<uint64_t>(p.k_splits * slice + slice);
          EXPECT_EQ(p.bytes_per_tile, need);
          if (p.fits) { EXPECT_LE(p.bytes_per_tile, budget) << M << "x" << K << "x" << N << " on " << tiles; }
          EXPECT_GE(p.rows * p.row_blocks, M);
          EXPECT_GE(p.cols * p.col_blocks, N);
          EXPECT_GE(p.k_block * p.k_splits, K);
          EXPECT_LT(p.k_block * (p.k_splits - 1), std::max<int64_t>(K, 1)) << "an empty K block";
          EXPECT_LE(p.row_blocks * p.col_blocks * p.k_splits, std::max<int64_t>(1, tiles));
        }
      }
    }
  }
}

TEST(MatMulPlanner, Float16OperandsTakeHalfTheBytesPartialsNot) {
  EXPECT_EQ(2 * matMulBlockBytes(10, 20, 30, 1, 2), matMulBlockBytes(10, 20, 30, 1, 4));
  // Split in 4: only the 800 operand elements, the 300 of the bias bound and the 90 sums (3 whole
  // rows of 30) shrink; the 300 partials and the reduction's 4 x 90 stay float32.
  EXPECT_EQ(matMulBlockBytes(10, 20, 30, 4, 4) - matMulBlockBytes(10, 20, 30, 4, 2), 2u * (800 + 300 + 90));
}

// A reducing tile sums whole rows when that costs at most a quarter more than an even share.
TEST(MatMulPlanner, ReductionSlicesAreWholeRowsWhenNearlyEven) {
  EXPECT_EQ(reductionSlice(300, 4), 75);          // no rows: an even share
  EXPECT_EQ(reductionSlice(300, 4, 30), 90);      // 3 rows of 30, 20% more than 75
  EXPECT_EQ(reductionSlice(9456, 89, 48), 107);   // 197 rows: 3 rows (144) would be 35% more
  EXPECT_EQ(reductionSlice(768, 100, 768), 8);    // one row (M = 1) stays spread over the tiles
  EXPECT_EQ(reductionSlice(13002, 42, 66), 330);  // ViT's 197 x 66 blocks: 5 rows, 6% more than 310
}

TEST(MatMulPlanner, BertBaseFfnAtBatch16SplitsK) {
  const uint64_t budget = 624 * 1024 * 6 / 10;
  MatMulPlan p = planMatMul(1, 2048, 3072, 768, 1472, budget, 2);
  // BERT-Base's FFN down projection at batch 16 in float16 (rows 16 x 128): over 1472 tiles an
  // unsplit block needs at least 33 + 33 rows of 3072, 405 KB, more than 60% of a tile. K split,
  // each block holds a share of those rows and fits.
  ASSERT_TRUE(p.fits);
  EXPECT_GT(p.k_splits, 1);
  EXPECT_LE(p.bytes_per_tile, budget);
}

TEST(MatMulPlanner, LargeProblemsUseManyTiles) {
  MatMulPlan p = planMatMul(1, 512, 512, 512, 1472, 624 * 1024 * 6 / 10);
  ASSERT_TRUE(p.fits);
  EXPECT_GT(p.row_blocks * p.col_blocks * p.k_splits, 1000);
}

TEST(MatMulPlanner, ReportsWhenNothingFits) {
  // A 1-tile target cannot hold a 4096x4096 weight in 60% of 624 KiB.
  MatMulPlan p = planMatMul(1, 1, 4096, 4096, 1, 624 * 1024 * 6 / 10);
  EXPECT_FALSE(p.fits);
}

// A 2-D conv layer: batch, in channels, out channels, input size, kernel, stride, pad, group.
ConvProblem conv2d(int64_t n, int64_t c, int64_t m, int64_t size, int64_t k, int64_t s, int64_t pad, int64_t group = 1) {
  ConvProblem p;
  p.batch = n;
  p.groups = group;
  p.in_channels = c / group;
  p.out_channels = m / group;
  const int64_t out = (size + 2 * pad - k) / s + 1;
  p.in = {size, size};
  p.out = {out, out};
  p.kernel = {k, k};
  p.strides = {s, s};
  p.dilations = {1, 1};
  p.has_bias = true;
  return p;
}

// The conv layers of ResNet-50 (torchvision v1.5: the stride on the 3x3), its pools, and
// MobileNet-style depthwise layers, at batch n, with every channel count divided by `narrow`.
std::vector<ConvProblem> resnetLikeLayers(int64_t n, int64_t narrow = 1) {
  std::vector<ConvProblem> layers;
  layers.push_back(conv2d(n, 3, 64 / narrow, 224, 7, 2, 3));
  for (auto [size, wide] : std::vector<std::pair<int64_t, int64_t>>{{56, 64}, {28, 128}, {14, 256}, {7, 512}}) {
    const int64_t mid = wide / narrow;
    layers.push_back(conv2d(n, 4 * mid, mid, size, 1, 1, 0));
    layers.push_back(conv2d(n, mid, mid, size, 3, 1, 1));
    layers.push_back(conv2d(n, mid, 4 * mid, size, 1, 1, 0));
    if (size < 56) {
      layers.push_back(conv2d(n, 2 * mid, mid, 2 * size, 1, 1, 0));
      layers.push_back(conv2d(n, mid, mid, 2 * size, 3, 2, 1));
      layers.push_back(conv2d(n, 2 * mid, 4 * mid, 2 * size, 1, 2, 0));  // downsample
    }
    layers.push_back(conv2d(n, mid, mid, size, 3, 1, 1, mid));      // depthwise
    layers.push_back(conv2d(n, mid, mid, 2 * size, 3, 2, 1, mid));  // depthwise, strided
  }
  ConvProblem pool = conv2d(n, 64 / narrow, 64 / narrow, 112, 3, 2, 1, 64 / narrow);  // the stem's max pool
  pool.has_weights = pool.has_bias = false;
  layers.push_back(pool);
  ConvProblem global = conv2d(n, 2048 / narrow, 2048 / narrow, 7, 7, 1, 0, 2048 / narrow);
  global.has_weights = global.has_bias = false;
  layers.push_back(global);
  return layers;
}

TEST(ConvPlanner, ResNetLayersFitTheirBudgetOnIpu2AndSmallTargets) {
  // (tiles, bytes per tile, batch, channels divided by, the largest input size tried): small
  // targets get narrower layers at smaller sizes, as ResNet-50 itself cannot fit on them.
  for (auto [tiles, bytes, batch, narrow, max_size] :
       std::vector<std::tuple<uint32_t, uint64_t, int64_t, int64_t, int64_t>>{{1472, 624 * 1024, 1, 1, 224},
                                                                              {1472, 624 * 1024, 4, 1, 224},
                                                                              {1216, 256 * 1024, 1, 1, 224},
                                                                              {64, 624 * 1024, 1, 4, 224},
                                                                              {16, 624 * 1024, 1, 8, 56},
                                                                              {4, 624 * 1024, 1, 8, 28}}) {
    const uint64_t budget = bytes * 6 / 10;
    for (ConvProblem p : resnetLikeLayers(batch, narrow))
      for (bool split : {false, true}) {
        if (p.in[0] > max_size) continue;
        p.split_inputs = split;
        SCOPED_TRACE(std::to_string(tiles) + " tiles: " + std::to_string(p.batch) + "x" +
                     std::to_string(p.groups * p.in_channels) + "x" + std::to_string(p.in[0]) + " -> " +
                     std::to_string(p.groups * p.out_channels) + " k" + std::to_string(p.kernel[0]));
        ConvPlan plan = planConv(p, tiles, budget);
        ASSERT_TRUE(plan.fits);
        EXPECT_LE(plan.bytes_per_tile, budget);
        EXPECT_EQ(plan.bytes_per_tile,
                  static_cast<uint64_t>(plan.blocks_per_tile) *
                      convBlockBytes(p, plan.group_block, plan.channel_block, plan.row_block, plan.in_channel_block));
        // The blocks cover the output: batch x channel blocks x row blocks.
        const int64_t row_blocks = (p.out[0] + plan.row_block - 1) / plan.row_block;
        const int64_t channel_blocks = plan.channel_block < p.out_channels
                                           ? p.groups * ((p.out_channels + plan.channel_block - 1) / plan.channel_block)
                                           : (p.groups + plan.group_block - 1) / plan.group_block;
        EXPECT_TRUE(plan.group_block == 1 || plan.channel_block == p.out_channels);
        EXPECT_EQ(plan.in_splits, (p.in_channels + plan.in_channel_block - 1) / plan.in_channel_block);
        EXPECT_TRUE(plan.in_splits == 1 || (p.split_inputs && p.groups == 1));
        EXPECT_EQ(plan.blocks, p.batch * channel_blocks * row_blocks * plan.in_splits);
        EXPECT_EQ(plan.blocks_per_tile, (plan.blocks + tiles - 1) / tiles);
        EXPECT_LE(plan.row_block, p.out[0]);
        EXPECT_LE(plan.channel_block, p.out_channels);
        EXPECT_LE(plan.group_block, p.groups);
      }
  }
}

TEST(ConvPlanner, InputRowsIncludeTheHaloAndStopAtTheInput) {
  ConvProblem p = conv2d(1, 8, 8, 20, 3, 2, 1);
  p.dilations = {2, 2};
  EXPECT_EQ(convInputRows(p, 1), 5);  // (3-1)*2 + 1
  EXPECT_EQ(convInputRows(p, 3), 9);  // 2*2 + 5
  EXPECT_EQ(convInputRows(p, 100), 20);
  // Bytes of a block: input window + weights + bias + output.
  EXPECT_EQ(convBlockBytes(p, 1, 4, 2, 8), 4u * (8 * 7 * 20 + 4 * 8 * 9 + 4 + 4 * 2 * p.out[1]));
}

TEST(ConvPlanner, LargeLayersUseManyTilesAndDepthwiseBundlesGroups) {
  ConvPlan p = planConv(conv2d(1, 64, 64, 56, 3, 1, 1), 1472, 624 * 1024 * 6 / 10);
  ASSERT_TRUE(p.fits);
  EXPECT_GT(p.blocks, 700);
  // Depthwise at 7x7 with 1024 channels: blocks bundle groups rather than leaving tiles idle per channel.
  ConvPlan d = planConv(conv2d(1, 1024, 1024, 7, 3, 1, 1, 1024), 64, 624 * 1024 * 6 / 10);
  ASSERT_TRUE(d.fits);
  EXPECT_GT(d.group_block, 1);
  EXPECT_LE(d.blocks_per_tile, 2);
}

TEST(ConvPlanner, LateLayersSplitTheirInputChannelsWhenAllowed) {
  // ResNet-50's last 1x1 layer: 2048 -> 512 channels at 7x7. Unsplit, every channel block's tile
  // receives the whole 2048-channel input (392 KiB); split, each tile gets a share of it and the
  // partial sums, and the busiest tile's estimate drops.
  ConvProblem p = conv2d(1, 2048, 512, 7, 1, 1, 0);
  const uint64_t budget = 624 * 1024 * 6 / 10;
  const ConvPlan whole = planConv(p, 1472, budget);
  EXPECT_EQ(whole.in_splits, 1);
  p.split_inputs = true;
  const ConvPlan split = planConv(p, 1472, budget);
  ASSERT_TRUE(split.fits);
  EXPECT_GT(split.in_splits, 1);
  EXPECT_LT(split.in_channel_block, 2048);
  EXPECT_LT(split.cycles, whole.cycles / 2);
  // A split block also holds its slice of the reduction: the partials and the output slice.
  const int64_t out = 3 * 7 * 7, splits = 4;
  EXPECT_EQ(convBlockBytes(p, 1, 3, 7, 512),
            convBlockBytes(p, 1, 3, 7, 2048) - 4u * (1536 * 49 + 3 * 1536) + 4u * (splits + 1) * ((out + splits - 1) / splits));
  // Depthwise and grouped convolutions never split (one group's channels per block).
  ConvProblem d = conv2d(1, 1024, 1024, 7, 3, 1, 1, 1024);
  d.split_inputs = true;
  EXPECT_EQ(planConv(d, 1472, budget).in_splits, 1);
}

TEST(ConvPlanner, Float16BlocksHoldHalfTheBytesButFloat32PartialSums) {
  // ResNet-50's last 1x1 layer in float16, one block of 3 output channels by 7 rows (49 outputs
  // each). Unsplit: the 2048-channel window, weights, bias and output at 2 bytes each.
  ConvProblem p = conv2d(1, 2048, 512, 7, 1, 1, 0);
  p.element_bytes = 2;
  EXPECT_EQ(convBlockBytes(p, 1, 3, 7, 2048), 2u * (2048 * 49 + 3 * 2048 + 3 + 3 * 49));
  // Split in 4: a quarter of the window and weights at 2 bytes, the block's 147 outputs as float32
  // partial sums, and the tile's slice of the reduction (37 sums): the 4 partials gathered at 4
  // bytes, the slice written at 2.
  EXPECT_EQ(convBlockBytes(p, 1, 3, 7, 512), 2u * (512 * 49 + 3 * 512 + 3 + 37) + 4u * (147 + 4 * 37));
}

TEST(ConvPlanner, ASplitPaysTheTargetsSyncTwice) {
  // A small layer where a split saves exchange but adds a step: the split wins at a cheap sync and
  // loses when the target's sync costs more than the exchange it saves (an exchange and a compute
  // set: two syncs).
  ConvProblem p = conv2d(1, 256, 16, 4, 1, 1, 0);
  p.split_inputs = true;
  const uint64_t budget = 624 * 1024 * 6 / 10;
  const ConvPlan cheap = planConv(p, 1472, budget, 16, 1);
  const ConvPlan dear = planConv(p, 1472, budget, 16, 2000);
  EXPECT_GT(cheap.in_splits, 1);
  EXPECT_EQ(dear.in_splits, 1);
}

TEST(ConvPlanner, ReportsWhenNothingFits) {
  // One tile cannot hold a single output row's 4096-channel input window in 60% of 64 KiB.
  ConvPlan p = planConv(conv2d(1, 4096, 16, 64, 3, 1, 1), 1, 64 * 1024 * 6 / 10);
  EXPECT_FALSE(p.fits);
  EXPECT_GT(p.bytes_per_tile, 64u * 1024 * 6 / 10);
  // An empty output needs no plan.
  ConvProblem empty = conv2d(0, 4, 4, 8, 3, 1, 1);
  EXPECT_TRUE(planConv(empty, 4, 1000).fits);
  EXPECT_EQ(planConv(empty, 4, 1000).blocks, 0);
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
