// Exchange copies and layout regions packed as the executable stores them from format version 4:
// every value survives the round trip (extremes too), and the common patterns take a few bytes.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "lib/exec/packed_tables.h"

namespace poprt::exec {
namespace {

bool same(const TileCopy& a, const TileCopy& b) {
  return a.src_tile == b.src_tile && a.src_offset == b.src_offset && a.dst_tile == b.dst_tile && a.dst_offset == b.dst_offset &&
         a.bytes == b.bytes;
}

void expectRoundTrip(const std::vector<TileCopy>& copies) {
  std::vector<TileCopy> back;
  ASSERT_TRUE(unpackCopies(packCopies(copies), back).ok());
  ASSERT_EQ(back.size(), copies.size());
  for (size_t i = 0; i < copies.size(); ++i) EXPECT_TRUE(same(back[i], copies[i])) << "copy " << i;
}

TEST(PackedCopies, EveryValueSurvivesTheRoundTrip) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  constexpr uint32_t kTile = std::numeric_limits<uint32_t>::max();
  expectRoundTrip({});
  expectRoundTrip({{kTile, kMax, 0, kMax, kMax}, {0, 0, kTile, 0, 0}, {kTile, 1, kTile, kMax - 1, 1}, {1, kMax, 2, 3, kMax}});
  std::mt19937_64 rng(7);
  std::vector<TileCopy> random(1000);
  for (auto& c : random)
    c = {static_cast<uint32_t>(rng()), rng() >> (rng() % 64), static_cast<uint32_t>(rng() % 1472), rng() % (1 << 20),
         rng() % 4096};
  expectRoundTrip(random);
}

TEST(PackedCopies, SlicesOfPartialSumsTakeAFewBytesEach) {
  // A reduction's copies: slices of one partial after another into consecutive offsets of a tile.
  std::vector<TileCopy> copies;
  for (uint32_t part = 0; part < 64; ++part)
    for (uint32_t slice = 0; slice < 16; ++slice)
      copies.push_back({part * 23, 4096 + slice * 256, slice, 65536 + (part * 16 + slice) * 256, 256});
  expectRoundTrip(copies);
  EXPECT_LE(packCopies(copies).size(), copies.size() * 7) << "the arrays took about 15 bytes a copy";
}

TEST(PackedCopies, UntrustedBytesAreRefusedWithAReason) {
  std::vector<TileCopy> out;
  auto refused = [&](std::vector<uint8_t> b, const std::string& words) {
    out.clear();
    Status st = unpackCopies(b, out);
    return !st.ok() && st.error().message().find(words) != std::string::npos;
  };
  EXPECT_TRUE(refused({}, "end inside a number"));
  EXPECT_TRUE(refused({0x80}, "end inside a number"));
  EXPECT_TRUE(refused({0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0}, "declare"));  // a count the bytes cannot hold
  EXPECT_TRUE(refused({0, 0}, "after the last copy"));
  std::vector<uint8_t> overlong = {1};
  overlong.insert(overlong.end(), 9, 0xff);
  overlong.insert(overlong.end(), {0x02, 0, 0, 0, 0});
  EXPECT_TRUE(refused(overlong, "beyond 64 bits"));
  // src_tile 2^33: its zigzag difference 2^34 is the varint 80 80 80 80 40.
  EXPECT_TRUE(refused({1, 0x80, 0x80, 0x80, 0x80, 0x40, 0, 0, 0, 0}, "names tile"));
}

TEST(PackedRegions, RoundTripAndRefusals) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  const std::vector<LayoutRegion> regions = {{0, 100, 3, 4096},      {100, 28, 3, 4496}, {128, 1, 1471, 0},
                                             {kMin, kMax, 0, ~0ull}, {-5, -7, 7, 1},     {kMax, kMin, 4294967295u, 12}};
  std::vector<LayoutRegion> back;
  ASSERT_TRUE(unpackRegions(packRegions(regions), back).ok());
  ASSERT_EQ(back.size(), regions.size());
  for (size_t i = 0; i < regions.size(); ++i) {
    EXPECT_EQ(back[i].begin, regions[i].begin) << i;
    EXPECT_EQ(back[i].count, regions[i].count) << i;
    EXPECT_EQ(back[i].tile, regions[i].tile) << i;
    EXPECT_EQ(back[i].offset, regions[i].offset) << i;
  }
  // A tensor spread over tiles in equal runs: a few bytes a region (the arrays took about 12).
  std::vector<LayoutRegion> spread;
  for (uint32_t t = 0; t < 1472; ++t) spread.push_back({t * 64, 64, t, 8192});
  EXPECT_LE(packRegions(spread).size(), spread.size() * 6);
  back.clear();
  EXPECT_FALSE(unpackRegions(std::vector<uint8_t>{5, 0, 0, 0}, back).ok());        // 5 regions in 3 bytes
  EXPECT_FALSE(unpackRegions(std::vector<uint8_t>{1, 0, 0, 0, 0, 0}, back).ok());  // a byte after the last
}

}  // namespace
}  // namespace poprt::exec
