// exactIntegerStorage against its definition, evaluated the slow way: every value an integer of at
// most 32767 in magnitude that converts to int32 and back with its own bits; int8 when all fit.
#include "lib/support/exact_integers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace poprt {
namespace {

Tensor floats(const std::vector<float>& values) {
  Tensor t(DType::Float, {static_cast<int64_t>(values.size())});
  if (!values.empty()) std::memcpy(t.bytes().data(), values.data(), t.byteSize());
  return t;
}

// The definition, one value at a time.
std::optional<DType> slowStorage(float x) {
  if (!(std::fabs(x) <= 32767.0f)) return std::nullopt;
  const float back = static_cast<float>(static_cast<int32_t>(x));
  if (std::memcmp(&back, &x, sizeof x) != 0) return std::nullopt;
  return x >= -128.0f && x <= 127.0f ? DType::Int8 : DType::Int16;
}

TEST(ExactIntegers, EachValueAgreesWithTheDefinition) {
  std::vector<float> values;
  for (int i = -40000; i <= 40000; ++i) {
    values.push_back(static_cast<float>(i));
    values.push_back(static_cast<float>(i) + 0.5f);
    values.push_back(std::nextafter(static_cast<float>(i), 1e9f));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float x :
       {-0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 4194304.0f, 12582912.0f, -12582912.0f, 1e-30f, -1e-45f})
    values.push_back(x);
  std::mt19937 rng(7);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t bits = rng();
    float x;
    std::memcpy(&x, &bits, sizeof x);
    values.push_back(x);
  }
  for (float x : values) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    ASSERT_EQ(exactIntegerStorage(floats({x})), slowStorage(x)) << x << " (bits " << std::hex << bits << ")";
  }
}

TEST(ExactIntegers, OneValueDecidesForTheWholeTensorWhereverItIs) {
  std::vector<float> weights(10000);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(static_cast<int>(i % 256) - 128);
  EXPECT_EQ(exactIntegerStorage(floats(weights)), DType::Int8);
  for (size_t at : {size_t{0}, size_t{4095}, size_t{4096}, size_t{9999}}) {
    std::vector<float> w = weights;
    w[at] = 128.0f;
    EXPECT_EQ(exactIntegerStorage(floats(w)), DType::Int16) << at;
    w[at] = 0.25f;
    EXPECT_EQ(exactIntegerStorage(floats(w)), std::nullopt) << at;
  }
  EXPECT_EQ(exactIntegerStorage(floats({})), std::nullopt);
  EXPECT_EQ(exactIntegerStorage(Tensor(DType::Int32, {4})), std::nullopt);  // not float32
}

TEST(ExactIntegers, NarrowedValuesWidenBackToTheSameFloats) {
  const std::vector<float> values = {-128, -1, 0, 5, 127};
  Tensor narrow = narrowedTo(floats(values), DType::Int8);
  ASSERT_EQ(narrow.dtype(), DType::Int8);
  ASSERT_EQ(narrow.shape(), Shape{5});
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(static_cast<float>(narrow.data<int8_t>()[i]), values[i]);
  const std::vector<float> wide = {-32767, 300, 32767};
  Tensor narrow16 = narrowedTo(floats(wide), DType::Int16);
  for (size_t i = 0; i < wide.size(); ++i) EXPECT_EQ(static_cast<float>(narrow16.data<int16_t>()[i]), wide[i]);
}

}  // namespace
}  // namespace poprt
