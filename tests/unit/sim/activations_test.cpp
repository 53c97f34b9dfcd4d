// Every fused activation under every instruction set this CPU has, against the evaluator's
// formula (lib/ops/graphcore_ops.h's applyActivation, in double, rounded to float), bit for bit:
// random floats over every exponent, the places where each one bends, NaNs, infinities and signed
// zeros, in place and not, and lengths that leave a partial vector.
#include "sim/activations.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace poprt::sim {
namespace {

using ops::graphcore::Activation;
using Kind = ops::graphcore::ActivationKind;

std::vector<float> testInputs() {
  std::vector<float> x = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          3.0f,
                          -3.0f,
                          2.5f,
                          -2.5f,
                          6.0f,
                          -6.0f,
                          0.5f,
                          -0.5f,
                          1e-30f,
                          -1e-30f,
                          std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          -std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::lowest()};
  for (float v = -8.0f; v <= 8.0f; v += 1.0f / 64) x.push_back(v);  // the bends: 0, +-1, +-3, the clip bounds
  std::mt19937 rng(3);
  for (int i = 0; i < 20000; ++i) x.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  x.push_back(0.25f);  // a length that is not a multiple of 8
  return x;
}

TEST(Activations, EveryKindGivesTheEvaluatorsBitsUnderEveryInstructionSet) {
  const std::vector<float> x = testInputs();
  const int64_t n = static_cast<int64_t>(x.size());
  for (int k = 0; k <= static_cast<int>(ops::graphcore::kLastActivationKind); ++k) {
    Activation act;
    act.kind = static_cast<Kind>(k);
    act.alpha = 0.2, act.beta = 0.5, act.min = -1.5, act.max = 6.0;  // LeakyRelu's and HardSigmoid's, Clip's bounds
    for (SimdIsa isa : availableSimdIsas()) {
      SCOPED_TRACE("kind " + std::to_string(k) + ", isa " + std::to_string(static_cast<int>(isa)));
      for (int64_t len : {n, int64_t{1}, int64_t{7}, int64_t{9}}) {
        std::vector<float> out(x.size(), 12345.f), in_place(x);
        activateWith(isa, act, x.data(), out.data(), len);
        activateWith(isa, act, in_place.data(), in_place.data(), len);
        int bad = 0;
        for (int64_t i = 0; i < n && bad < 5; ++i) {
          const float want = i < len ? static_cast<float>(ops::graphcore::applyActivation(act, x[i])) : 12345.f;
          const bool same =
              std::isnan(want) ? std::isnan(out[i]) : std::bit_cast<uint32_t>(want) == std::bit_cast<uint32_t>(out[i]);
          if (!same)
            ADD_FAILURE() << "f(" << x[i] << ") = " << out[i] << ", want " << want << " (at " << i << " of " << len << ")", ++bad;
          if (i < len && std::bit_cast<uint32_t>(in_place[i]) != std::bit_cast<uint32_t>(out[i]) && !std::isnan(want))
            ADD_FAILURE() << "in place f(" << x[i] << ") = " << in_place[i] << ", want " << out[i], ++bad;
        }
      }
    }
  }
}

}  // namespace
}  // namespace poprt::sim
