// Byte-range sets (sim/byte_ranges.h) against a scan of the ranges as given.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "sim/byte_ranges.h"

namespace poprt::sim {
namespace {

bool scanOverlaps(const std::vector<ByteRange>& raw, uint64_t begin, uint64_t end) {
  for (const ByteRange& r : raw)
    if (r.begin < end && begin < r.end && r.begin < r.end && begin < end) return true;
  return false;
}

TEST(ByteRanges, MergeJoinsOverlappingAndTouchingRangesAndDropsEmptyOnes) {
  const std::vector<ByteRange> merged = mergeRanges({{10, 20}, {0, 4}, {4, 6}, {15, 30}, {40, 40}, {50, 60}});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].begin, 0u);
  EXPECT_EQ(merged[0].end, 6u);
  EXPECT_EQ(merged[1].begin, 10u);
  EXPECT_EQ(merged[1].end, 30u);
  EXPECT_EQ(merged[2].begin, 50u);
  EXPECT_EQ(merged[2].end, 60u);
}

// Queries that walk forward, jump back and land anywhere, as a gather's sources do.
TEST(ByteRanges, SearchesAndTheCursorAgreeWithAScan) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<ByteRange> raw;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const uint64_t b = rng() % 1000;
      raw.push_back({b, b + rng() % 30});
    }
    const std::vector<ByteRange> merged = mergeRanges(raw);
    RangeCursor cursor(merged);
    uint64_t at = 0;
    for (int q = 0; q < 400; ++q) {
      const uint64_t pick = rng() % 4;
      at = pick == 0 ? rng() % 1100 : pick == 1 && at > 20 ? at - rng() % 20 : at + rng() % 12;
      const uint64_t end = at + rng() % 16;
      const bool want = scanOverlaps(raw, at, end);
      EXPECT_EQ(overlapsAny(merged, at, end), want) << "[" << at << ", " << end << ")";
      EXPECT_EQ(cursor.overlaps(at, end), want) << "[" << at << ", " << end << ")";
    }
  }
}

}  // namespace
}  // namespace poprt::sim
