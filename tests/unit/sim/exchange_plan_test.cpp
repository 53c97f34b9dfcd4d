// The exchange plan (sim/exchange_plan.h): moves written out by hand for a small exchange, and the
// inline short move against memmove on overlapping ranges.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "sim/exchange_plan.h"

namespace poprt::sim {
namespace {

TEST(ExchangePlan, MovesAreResolvedGroupedByTileAndMerged) {
  exec::Executable exe;
  exe.tile_bytes = {1024, 1024, 1024};
  const std::vector<uint64_t> offsets = {0, 2048, 4096};  // tile t's arena offset
  // A float32 layout of 24 elements: 0-7 on tile 0 at 64, 8-15 right after them, 16-23 on tile 2.
  exe.layouts.push_back({4, {{0, 8, 0, 64}, {8, 8, 0, 96}, {16, 8, 2, 0}}});
  exec::Exchange ex;
  ex.copies = {
      {0, 100, 1, 0, 16},  // tile 0 [100, 116) -> tile 1 [0, 16)
      {0, 116, 1, 16, 8},  // continues it on both sides: merged
      {0, 200, 1, 24, 8},  // continues the destination only
      {2, 0, 0, 512, 4},   // another tile: a new run
      {1, 0, 0, 516, 0},   // nothing to move
      {2, 4, 0, 516, 4},   // continues the move before
  };
  // Elements 4-19 to tile 1 at 300: one piece from each region, the first two contiguous.
  ex.gathers.push_back({0, 4, 16, 1, 0, 1, 300, 0});
  exe.exchanges.push_back(ex);
  const auto plans = planExchanges(exe, offsets);
  ASSERT_EQ(plans.size(), 1u);
  const std::vector<ExchangeMove> moves = {{100, 0, 24}, {200, 24, 8}, {4096, 512, 8}, {64 + 16, 300, 48}, {4096, 348, 16}};
  const std::vector<ExchangeRun> runs = {{1, 2}, {0, 3}, {1, 5}};
  EXPECT_EQ(plans[0].moves, moves);
  EXPECT_EQ(plans[0].runs, runs);
}

// Copies that continue each other but read what the one before wrote stay two moves: one
// memmove of both would read the old byte.
TEST(ExchangePlan, MovesThatReadEarlierWritesAreNotMerged) {
  exec::Executable exe;
  exe.tile_bytes = {64};
  exec::Exchange ex;
  ex.copies = {{0, 0, 0, 1, 1}, {0, 1, 0, 2, 1}, {0, 10, 0, 20, 4}, {0, 14, 0, 24, 4}};  // the last two may merge
  exe.exchanges.push_back(ex);
  const auto plans = planExchanges(exe, {0});
  const std::vector<ExchangeMove> moves = {{0, 1, 1}, {1, 2, 1}, {10, 20, 8}};
  EXPECT_EQ(plans[0].moves, moves);
}

TEST(ExchangePlan, ShortMovesMatchMemmoveOnOverlappingRanges) {
  for (uint32_t n = 0; n <= 80; ++n)
    for (int shift : {-17, -16, -3, 0, 1, 16, 40}) {
      std::vector<uint8_t> want(256), got(256);
      std::iota(want.begin(), want.end(), 0);
      got = want;
      std::memmove(want.data() + 96 + shift, want.data() + 96, n);
      moveBytes(got.data() + 96 + shift, got.data() + 96, n);
      ASSERT_EQ(got, want) << n << " bytes moved by " << shift;
    }
}

}  // namespace
}  // namespace poprt::sim
