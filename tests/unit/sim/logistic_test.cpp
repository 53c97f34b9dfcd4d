// Sigmoid and Swish through the vectorised paths (sim/logistic.h), under every instruction set this
// CPU has, against the evaluator's formula (lib/ops/scalar_math.h, in double, rounded to float),
// bit for bit: random floats over every
// exponent, dense sweeps where the activations bend, and the edge cases.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "lib/ops/scalar_math.h"
#include "sim/logistic.h"

namespace poprt::sim {
namespace {

// The number of elements whose bits differ from the evaluator's (NaNs match any NaN).
int64_t mismatches(SimdIsa isa, bool swish, const std::vector<float>& x) {
  std::vector<float> out(x.size());
  logisticActivationWith(isa, swish, x.data(), out.data(), static_cast<int64_t>(x.size()));
  int64_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xd = x[i];
    const float want = static_cast<float>(swish ? ops::scalar::swish(xd) : ops::scalar::sigmoid(xd));
    if (std::isnan(want) ? !std::isnan(out[i]) : std::bit_cast<uint32_t>(want) != std::bit_cast<uint32_t>(out[i])) {
      if (bad < 5)
        ADD_FAILURE() << "isa " << static_cast<int>(isa) << ": " << (swish ? "swish(" : "sigmoid(") << x[i] << ") = " << out[i]
                      << ", want " << want;
      ++bad;
    }
  }
  return bad;
}

std::vector<float> testInputs() {
  std::vector<float> x;
  std::mt19937 rng(7);
  // Random bit patterns: every exponent, NaNs and infinities among them.
  for (int i = 0; i < 2'000'000; ++i) { x.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng()))); }
  // Where the activations bend, densely; and past where e^-x overflows a float and a double.
  std::uniform_real_distribution<float> near(-40.0f, 40.0f);
  for (int i = 0; i < 4'000'000; ++i) x.push_back(near(rng));
  for (float f = -800.0f; f <= 800.0f; f += 0.125f) x.push_back(f);
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(),
                  -std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::max(), 700.0f, -700.0f, 700.0001f, -700.0001f, 88.7f, -88.7f, 103.9f, -103.9f})
    x.push_back(f);
  return x;
}

TEST(Logistic, SwishAndSigmoidHaveTheEvaluatorsBitsEverywhere) {
  const std::vector<float> x = testInputs();
  for (SimdIsa isa : availableSimdIsas()) {
    EXPECT_EQ(mismatches(isa, true, x), 0);
    EXPECT_EQ(mismatches(isa, false, x), 0);
  }
}

TEST(Logistic, InPlaceAndEveryLengthAroundTheBlock) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-20.0f, 20.0f);
  for (SimdIsa isa : availableSimdIsas())
    for (int64_t n : {0, 1, 7, 15, 16, 17, 63, 64, 65, 130}) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& f : x) f = dist(rng);
      std::vector<float> separate(x.size()), in_place = x;
      logisticActivationWith(isa, true, x.data(), separate.data(), n);
      logisticActivationWith(isa, true, in_place.data(), in_place.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(std::bit_cast<uint32_t>(separate[static_cast<size_t>(i)]),
                  std::bit_cast<uint32_t>(in_place[static_cast<size_t>(i)]))
            << n << " " << i;
        EXPECT_EQ(
            std::bit_cast<uint32_t>(separate[static_cast<size_t>(i)]),
            std::bit_cast<uint32_t>(static_cast<float>(ops::scalar::swish(static_cast<double>(x[static_cast<size_t>(i)])))));
      }
    }
}

}  // namespace
}  // namespace poprt::sim
