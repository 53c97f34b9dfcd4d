// Exchange copies and layout regions packed as the executable stores them from format version 4,
// vertices from 5: every value survives the round trip (extremes too), the common patterns take a
// few bytes, and untrusted bytes are refused or decoded into no more than they can describe.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
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
  EXPECT_TRUE(refused({0, 0}, "after the last row"));
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

bool sameBits(const SharedList<float>& a, const SharedList<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void expectSameVertices(const std::vector<Vertex>& got, const std::vector<Vertex>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].tile, want[i].tile) << i;
    EXPECT_EQ(got[i].codelet, want[i].codelet) << i;
    EXPECT_EQ(got[i].dtype, want[i].dtype) << i;
    ASSERT_EQ(got[i].fields.size(), want[i].fields.size()) << i;
    for (size_t f = 0; f < want[i].fields.size(); ++f) {
      EXPECT_EQ(got[i].fields[f].offset, want[i].fields[f].offset) << i << "." << f;
      EXPECT_EQ(got[i].fields[f].bytes, want[i].fields[f].bytes) << i << "." << f;
      EXPECT_EQ(got[i].fields[f].dtype, want[i].fields[f].dtype) << i << "." << f;
    }
    EXPECT_EQ(got[i].params, want[i].params) << i;
    EXPECT_TRUE(sameBits(got[i].fparams, want[i].fparams)) << i;
  }
}

std::vector<Vertex> unpacked(const std::vector<uint8_t>& bytes) {
  std::vector<Vertex> out;
  Status st = unpackVertices(bytes, out);
  EXPECT_TRUE(st.ok()) << st.error().message();
  return out;
}

TEST(PackedVertices, EveryValueSurvivesTheRoundTrip) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  constexpr uint64_t kBig = std::numeric_limits<uint64_t>::max();
  const float nan = std::bit_cast<float>(0x7fc00123u), inf = std::numeric_limits<float>::infinity();
  const std::vector<Vertex> vertices = {
      {5, Codelet::Binary, DType::Float, {{0, 16}, {16, 16}, {kBig, kBig, DType::Float16}}, {kMin, kMax, 0, -1}, {}},
      {4294967295u, Codelet::Binary, DType::Float, {{64, 16}, {0, 0}, {8, 8, DType::Float16}}, {kMin, kMax, 0, -1}, {}},
      {0, Codelet::Binary, DType::Float, {{64, 32}, {0, 0}, {8, 8, DType::Float16}}, {kMax, kMin, 1, 1}, {}},
      {0, Codelet::Binary, DType::Float, {{64, 32}, {0, 0}, {8, 8, DType::Float}}, {kMax, kMin, 1, 1}, {}},  // a field's dtype
      {3, Codelet::MatMul, DType::Float16, {{0, 8}}, {2, 3, 4}, {nan, -inf, -0.0f}},
      {4, Codelet::MatMul, DType::Float16, {{8, 8}}, {2, 3, 4}, {1, 2, 3}},
      {5, Codelet::MatMul, DType::Float16, {{8, 8}}, {2, 3, 5}, {1, 2, 3}},
      {5, Codelet::MatMul, DType::Float, {{8, 8}}, {2, 3, 5}, {1, 2, 3}},  // the dtype
      {6, Codelet::Fill, DType::Float, {}, {}, {}},
      {7, Codelet::Fill, DType::Float, {{0, 16}}, {4}, {0.0f}},
      {8, Codelet::Fill, DType::Float, {{0, 16}}, {4}, {-0.0f}},  // equal as floats, not as bits
  };
  expectSameVertices(unpacked(packVertices(vertices)), vertices);
  EXPECT_TRUE(unpacked(packVertices({})).empty());
}

TEST(PackedVertices, RepeatedParamsTakeNoBytesAndAreShared) {
  // One conv block on every tile: the same params and field offsets on each.
  const Vertex block = {0,
                        Codelet::ConvPartial,
                        DType::Float,
                        {{0, 4096}, {4096, 8192}, {12288, 2304}},
                        {2, 1, 16, 16, 0, 8, 8, 8, 8, 3, 3, 1, 1, 1, 1, -1, -1},
                        {}};
  std::vector<Vertex> vertices(1472, block);
  for (uint32_t t = 0; t < vertices.size(); ++t) vertices[t].tile = t;
  const auto bytes = packVertices(vertices);
  EXPECT_LE(bytes.size(), 100 + vertices.size() * 5) << "flags, tile and a byte per field; the arrays took 50";
  const auto back = unpacked(bytes);
  expectSameVertices(back, vertices);
  for (size_t i = 1; i < back.size(); ++i) ASSERT_TRUE(back[i].params.sharesWith(back[0].params)) << i;
}

TEST(PackedVertices, UntrustedBytesAreRefusedWithAReason) {
  auto refused = [](std::vector<uint8_t> b, const std::string& words) {
    std::vector<Vertex> out;
    Status st = unpackVertices(b, out);
    if (st.ok()) return false;
    EXPECT_NE(st.error().message().find(words), std::string::npos) << st.error().message();
    return true;
  };
  // A valid one-vertex set to start from: flags 15, tile 0, Unary, float32, 1 field of dtype 0,
  // 2 params, 0 fparams; offset 0, bytes 16 (zigzag 32); params 0 and 4 (zigzag 8).
  const std::vector<uint8_t> one = {1, 15, 0, 1, 1, 1, 0, 2, 0, 0, 32, 0, 8};
  ASSERT_EQ(unpacked(one).size(), 1u);
  EXPECT_EQ(unpacked(one)[0].params, (std::vector<int64_t>{0, 4}));
  auto with = [&](size_t at, uint8_t value) {
    auto b = one;
    b[at] = value;
    return b;
  };
  EXPECT_TRUE(refused({}, "end inside a number"));
  EXPECT_TRUE(refused({0x7f, 15}, "declare 127 vertices"));
  EXPECT_TRUE(refused(with(1, 2), "first packed vertex does not give its kind"));
  EXPECT_TRUE(refused(with(1, 31), "unknown flags"));
  EXPECT_TRUE(refused(with(1, 3), "does not give all its values"));
  EXPECT_TRUE(refused(with(3, 99), "unknown codelet 99"));
  EXPECT_TRUE(refused(with(4, 0), "dtype code 0"));    // a vertex's own dtype is never undefined
  EXPECT_TRUE(refused(with(4, 63), "dtype code 63"));  // nor unknown
  EXPECT_TRUE(refused(with(6, 40), "dtype code 40"));  // a field's
  EXPECT_TRUE(refused(with(5, 100), "declare 100 fields"));
  EXPECT_TRUE(refused(with(7, 100), "declare 100 params"));
  EXPECT_TRUE(refused(with(8, 2), "declare 2 fparams"));
  auto trailing = one;
  trailing.push_back(0);
  EXPECT_TRUE(refused(trailing, "after the last row"));
  // A second vertex repeating the first takes 3 bytes (flags 0, tile +1, offset +0): declaring
  // more vertices than 2-byte rows fit is refused before anything is reserved.
  auto two = one;
  two[0] = 2;
  two.insert(two.end(), {0, 2, 0});
  const auto back = unpacked(two);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].tile, 1u);
  EXPECT_TRUE(back[1].params.sharesWith(back[0].params));
  two.pop_back();
  EXPECT_TRUE(refused(two, "end inside a number"));
}

}  // namespace
}  // namespace poprt::exec
