// exec::forEachGatherPiece (the exchange's walk over a layout) against a per-element walk with a
// linear scan of the regions, on random layouts and gathers: strides forward, zero and jumping
// back, so the region search's prediction, gallop and restart all run.
#include <gtest/gtest.h>

#include <random>
#include <tuple>
#include <vector>

#include "lib/exec/executable.h"

namespace poprt {
namespace {

struct Element {
  uint32_t tile;
  uint64_t offset, dst;
  auto operator<=>(const Element&) const = default;
};

exec::Layout randomLayout(std::mt19937& rng, int regions) {
  exec::Layout layout;
  layout.elem_bytes = 4;
  int64_t begin = 0;
  for (int i = 0; i < regions; ++i) {
    const int64_t count = std::uniform_int_distribution<int64_t>(1, 9)(rng);
    layout.regions.push_back({begin, count, static_cast<uint32_t>(rng() % 5), static_cast<uint64_t>(rng() % 1000) * 4});
    begin += count;
  }
  return layout;
}

// Where each element of the gather comes from and goes to, element by element.
std::vector<Element> expected(const exec::Layout& layout, const exec::Gather& g) {
  std::vector<Element> out;
  for (int64_t r = 0; r < g.reps; ++r)
    for (int64_t i = 0; i < g.count; ++i) {
      const int64_t e = g.begin + r * g.stride + i;
      for (const auto& region : layout.regions)
        if (e >= region.begin && e < region.begin + region.count) {
          out.push_back({region.tile, region.offset + static_cast<uint64_t>(e - region.begin) * 4,
                         g.dst_offset + static_cast<uint64_t>(r) * g.dst_stride + static_cast<uint64_t>(i) * 4});
          break;
        }
    }
  return out;
}

std::vector<Element> walked(const exec::Layout& layout, const exec::Gather& g) {
  std::vector<Element> out;
  exec::forEachGatherPiece(layout, g, [&](const exec::LayoutRegion& region, int64_t first, int64_t n, uint64_t dst) {
    EXPECT_GE(first, region.begin);
    EXPECT_LE(first + n, region.begin + region.count);  // a piece stays in its region
    for (int64_t i = 0; i < n; ++i)
      out.push_back(
          {region.tile, region.offset + static_cast<uint64_t>(first - region.begin + i) * 4, dst + static_cast<uint64_t>(i) * 4});
  });
  return out;
}

TEST(GatherPieces, MatchAnElementByElementWalk) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const exec::Layout layout = randomLayout(rng, 1 + static_cast<int>(rng() % 200));
    const int64_t numel = layout.numel();
    exec::Gather g;
    g.count = std::uniform_int_distribution<int64_t>(1, std::min<int64_t>(numel, 12))(rng);
    g.reps = std::uniform_int_distribution<int64_t>(1, 30)(rng);
    const int64_t max_stride = g.reps > 1 ? (numel - g.count) / (g.reps - 1) : 0;
    g.stride = std::uniform_int_distribution<int64_t>(0, max_stride)(rng);
    g.begin = std::uniform_int_distribution<int64_t>(0, numel - g.count - (g.reps - 1) * g.stride)(rng);
    g.dst_offset = 64;
    g.dst_stride = static_cast<uint64_t>(g.count) * 4;
    ASSERT_EQ(walked(layout, g), expected(layout, g)) << "trial " << trial;
  }
}

// Strides that change from rep to rep are not a Gather's, but a layout with regions of uneven
// sizes makes the region jump between reps change: the prediction must be checked, not trusted.
TEST(GatherPieces, UnevenRegionsBreakTheJumpPrediction) {
  exec::Layout layout;
  layout.elem_bytes = 4;
  const int64_t sizes[] = {1, 1, 1, 10, 1, 1, 1, 1, 10, 10, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 10, 10, 10};
  int64_t begin = 0;
  uint32_t tile = 0;
  for (int64_t n : sizes) {
    layout.regions.push_back({begin, n, tile++, 0});
    begin += n;
  }
  for (int64_t stride = 1; stride <= 12; ++stride)
    for (int64_t count = 1; count <= 3; ++count) {
      exec::Gather g;
      g.count = count;
      g.stride = stride;
      g.reps = (layout.numel() - count) / stride + 1;
      g.dst_stride = static_cast<uint64_t>(count) * 4;
      ASSERT_EQ(walked(layout, g), expected(layout, g)) << "stride " << stride << " count " << count;
    }
}

}  // namespace
}  // namespace poprt
