// Tests for half.h. The oracles are independent of the code under test: half/bfloat16 values
// are decoded with std::ldexp from the IEEE field definitions, and rounding is checked against a
// brute-force "nearest representable value, ties to even" search done in double precision.
#include "lib/support/half.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace poprt {
namespace {

bool isHalfNaN(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool isBf16NaN(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

// Value of a half bit pattern from the binary16 definition (1 sign, 5 exponent, 10 mantissa).
double halfValue(uint16_t h) {
  int sign = (h & 0x8000u) ? -1 : 1;
  int exp = (h >> 10) & 0x1f;
  int mant = h & 0x3ff;
  if (exp == 0x1f) return sign * std::numeric_limits<double>::infinity();  // NaN checked apart
  if (exp == 0) return sign * std::ldexp(mant, -24);                       // subnormal
  return sign * std::ldexp(1024 + mant, exp - 25);
}

// Value of a bfloat16 bit pattern (1 sign, 8 exponent, 7 mantissa).
double bf16Value(uint16_t b) {
  int sign = (b & 0x8000u) ? -1 : 1;
  int exp = (b >> 7) & 0xff;
  int mant = b & 0x7f;
  if (exp == 0xff) return sign * std::numeric_limits<double>::infinity();
  if (exp == 0) return sign * std::ldexp(mant, -133);
  return sign * std::ldexp(128 + mant, exp - 134);
}

// Reference float -> half: nearest of all finite halves, ties to the even bit pattern; values at
// or above 65520 (halfway between 65504 and the next, unrepresentable, step 65536) become inf.
uint16_t referenceHalf(float f) {
  static const std::vector<double> positives = [] {
    std::vector<double> v;
    for (uint32_t h = 0; h <= 0x7bffu; ++h) v.push_back(halfValue(static_cast<uint16_t>(h)));
    return v;
  }();
  uint16_t sign = std::signbit(f) ? 0x8000u : 0;
  double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00u;
  auto it = std::lower_bound(positives.begin(), positives.end(), a);  // first >= a
  if (it == positives.end()) return sign | 0x7bffu;                   // in (65504, 65520): 65504 is nearest
  auto hi = static_cast<uint16_t>(it - positives.begin());
  if (positives[hi] == a || hi == 0) return sign | hi;
  auto lo = static_cast<uint16_t>(hi - 1);
  double dlo = a - positives[lo], dhi = positives[hi] - a;
  if (dlo < dhi) return sign | lo;
  if (dhi < dlo) return sign | hi;
  return sign | ((lo & 1u) == 0 ? lo : hi);
}

// Reference float -> bfloat16 for non-NaN floats: nearest of the two bfloat16 neighbours.
uint16_t referenceBf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  auto lo = static_cast<uint16_t>(x >> 16);
  if ((x & 0xffffu) == 0) return lo;
  auto hi = static_cast<uint16_t>(lo + 1);  // next magnitude up, same sign
  double a = std::fabs(static_cast<double>(f));
  double vlo = std::fabs(bf16Value(lo));
  // The step above the largest finite bfloat16 is 2^128, which only double can hold.
  double vhi = (hi & 0x7fffu) == 0x7f80u ? std::ldexp(1.0, 128) : std::fabs(bf16Value(hi));
  if (a - vlo < vhi - a) return lo;
  if (vhi - a < a - vlo) return hi;
  return (lo & 1u) == 0 ? lo : hi;
}

TEST(Half, DecodesEveryBitPatternExactly) {
  for (uint32_t i = 0; i < 0x10000u; ++i) {
    auto h = static_cast<uint16_t>(i);
    float f = halfBitsToFloat(h);
    if (isHalfNaN(h)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << i;
    } else {
      ASSERT_EQ(static_cast<double>(f), halfValue(h)) << std::hex << i;
      EXPECT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << i;  // -0 keeps its sign
    }
  }
}

TEST(Half, RoundTripsEveryBitPattern) {
  for (uint32_t i = 0; i < 0x10000u; ++i) {
    auto h = static_cast<uint16_t>(i);
    uint16_t back = floatToHalfBits(halfBitsToFloat(h));
    if (isHalfNaN(h)) {
      EXPECT_TRUE(isHalfNaN(back)) << std::hex << i << " -> " << back;
      EXPECT_EQ(back & 0x8000u, h & 0x8000u);
    } else {
      ASSERT_EQ(back, h) << std::hex << i;
    }
  }
}

TEST(Half, TiesRoundToEvenBetweenEveryPairOfNeighbours) {
  for (uint32_t lo = 0; lo < 0x7c00u; ++lo) {
    // The neighbour above 65504 (0x7bff) is the overflow threshold step 65536, encoded as inf.
    double vlo = halfValue(static_cast<uint16_t>(lo));
    double vhi = lo == 0x7bffu ? 65536.0 : halfValue(static_cast<uint16_t>(lo + 1));
    auto mid = static_cast<float>((vlo + vhi) / 2);  // exact: needs one bit more than a half
    ASSERT_EQ(static_cast<double>(mid), (vlo + vhi) / 2);
    uint32_t even = (lo & 1u) == 0 ? lo : lo + 1;
    for (uint32_t sign : {0u, 0x8000u}) {
      float s = sign ? -1.0f : 1.0f;
      EXPECT_EQ(floatToHalfBits(s * mid), sign | even) << std::hex << lo;
      EXPECT_EQ(floatToHalfBits(s * std::nextafter(mid, 0.0f)), sign | lo) << std::hex << lo;
      EXPECT_EQ(floatToHalfBits(s * std::nextafter(mid, INFINITY)), sign | (lo + 1)) << std::hex << lo;
    }
  }
}

TEST(Half, MatchesBruteForceNearestOnAFloatSweep) {
  // Every 997th float bit pattern (~4.3M values) covers all exponents, both signs, and float
  // subnormals, infinities and NaNs.
  for (uint64_t x = 0; x <= 0xffffffffull; x += 997) {
    float f = std::bit_cast<float>(static_cast<uint32_t>(x));
    uint16_t got = floatToHalfBits(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(isHalfNaN(got)) << std::hex << x;
    } else {
      ASSERT_EQ(got, referenceHalf(f)) << std::hex << x << " = " << f;
    }
  }
}

TEST(Half, BulkConversionMatchesTheReferenceBitForBit) {
  // floatsToHalfBits (F16C where the CPU has it) on the sweep above, in one buffer whose length
  // is not a multiple of the vector width; NaNs must come out as floatToHalfBits makes them.
  std::vector<float> in;
  for (uint64_t x = 0; x <= 0xffffffffull; x += 997) in.push_back(std::bit_cast<float>(static_cast<uint32_t>(x)));
  in.push_back(65519.0f);
  in.push_back(65520.0f);
  in.push_back(std::bit_cast<float>(0x7f800001u));  // a signalling NaN
  std::vector<uint16_t> out(in.size());
  floatsToHalfBits(in.data(), in.size(), out.data());
  for (size_t i = 0; i < in.size(); ++i) {
    if (std::isnan(in[i])) {
      ASSERT_EQ(out[i], (std::signbit(in[i]) ? 0x8000u : 0u) | 0x7e00u) << i;
    } else {
      ASSERT_EQ(out[i], referenceHalf(in[i])) << std::hex << std::bit_cast<uint32_t>(in[i]);
    }
  }
}

TEST(Half, OverflowGoesToInfinity) {
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7bffu);  // largest finite half
  EXPECT_EQ(floatToHalfBits(65519.996f), 0x7bffu);
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7c00u);
  EXPECT_EQ(floatToHalfBits(1e6f), 0x7c00u);
  EXPECT_EQ(floatToHalfBits(-1e6f), 0xfc00u);
  EXPECT_EQ(floatToHalfBits(std::numeric_limits<float>::max()), 0x7c00u);
  EXPECT_EQ(floatToHalfBits(INFINITY), 0x7c00u);
  EXPECT_EQ(floatToHalfBits(-INFINITY), 0xfc00u);
  EXPECT_TRUE(std::isinf(halfBitsToFloat(0x7c00u)));
}

TEST(Half, Subnormals) {
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -24)), 0x0001u);     // smallest subnormal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1023.0f, -24)), 0x03ffu);  // largest subnormal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -14)), 0x0400u);     // smallest normal
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -25)), 0x0000u);     // tie between 0 and 2^-24: even
  EXPECT_EQ(floatToHalfBits(std::ldexp(3.0f, -25)), 0x0002u);     // tie between 1 and 2: even
  EXPECT_EQ(floatToHalfBits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001u);
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -26)), 0x0000u);
  EXPECT_EQ(floatToHalfBits(-std::ldexp(1.0f, -26)), 0x8000u);  // underflow keeps the sign
  EXPECT_EQ(floatToHalfBits(1e-40f), 0x0000u);                  // float subnormal
  EXPECT_EQ(floatToHalfBits(-0.0f), 0x8000u);
  EXPECT_EQ(halfBitsToFloat(0x0001u), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfBitsToFloat(0x8200u), -std::ldexp(1.0f, -15));
  EXPECT_EQ(halfBitsToFloat(0x3c00u), 1.0f);
  EXPECT_EQ(halfBitsToFloat(0xc000u), -2.0f);
}

TEST(Half, NaNStaysNaN) {
  EXPECT_TRUE(isHalfNaN(floatToHalfBits(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(isHalfNaN(floatToHalfBits(-std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload lives only in the low float mantissa bits must not become infinity.
  EXPECT_TRUE(isHalfNaN(floatToHalfBits(std::bit_cast<float>(0x7f800001u))));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7e00u)));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0xfc01u)));
  Half h(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(static_cast<float>(h)));
}

TEST(BFloat16, DecodesAndRoundTripsEveryBitPattern) {
  for (uint32_t i = 0; i < 0x10000u; ++i) {
    auto b = static_cast<uint16_t>(i);
    float f = bfloat16BitsToFloat(b);
    uint16_t back = floatToBFloat16Bits(f);
    if (isBf16NaN(b)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << i;
      EXPECT_TRUE(isBf16NaN(back)) << std::hex << i << " -> " << back;
    } else {
      ASSERT_EQ(static_cast<double>(f), bf16Value(b)) << std::hex << i;
      ASSERT_EQ(back, b) << std::hex << i;
    }
  }
}

TEST(BFloat16, MatchesNearestEvenOnAFloatSweep) {
  for (uint64_t x = 0; x <= 0xffffffffull; x += 991) {
    float f = std::bit_cast<float>(static_cast<uint32_t>(x));
    uint16_t got = floatToBFloat16Bits(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(isBf16NaN(got)) << std::hex << x;
    } else {
      ASSERT_EQ(got, referenceBf16(f)) << std::hex << x;
    }
  }
}

TEST(BFloat16, TiesOverflowAndNaN) {
  EXPECT_EQ(floatToBFloat16Bits(std::bit_cast<float>(0x3f808000u)), 0x3f80u);  // tie, even below
  EXPECT_EQ(floatToBFloat16Bits(std::bit_cast<float>(0x3f818000u)), 0x3f82u);  // tie, even above
  EXPECT_EQ(floatToBFloat16Bits(std::bit_cast<float>(0x3f808001u)), 0x3f81u);
  EXPECT_EQ(floatToBFloat16Bits(std::numeric_limits<float>::max()), 0x7f80u);  // rounds to inf
  EXPECT_EQ(floatToBFloat16Bits(-INFINITY), 0xff80u);
  EXPECT_EQ(floatToBFloat16Bits(1.0f), 0x3f80u);
  // NaN with payload only in the low 16 bits must stay NaN (truncation alone would give inf).
  EXPECT_TRUE(isBf16NaN(floatToBFloat16Bits(std::bit_cast<float>(0x7f800001u))));
  EXPECT_TRUE(isBf16NaN(floatToBFloat16Bits(std::bit_cast<float>(0xffc00000u))));
  EXPECT_EQ(bfloat16BitsToFloat(0xc0a0u), -5.0f);
}

}  // namespace
}  // namespace poprt
