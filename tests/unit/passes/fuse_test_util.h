// Helpers for the fusion pass tests: small graph builders and a checked run that also returns the
// pass reports (counters and near misses).
#pragma once

#include <cmath>

#include "tests/unit/passes/pass_test_util.h"

namespace poprt::passes::testing {

// Random values in [0.5, 1.5): variances and scales that keep BatchNormalization well defined.
inline Tensor positiveTensor(Shape shape, uint32_t seed) {
  Tensor t = randomTensor(std::move(shape), seed);
  for (float& x : t.data<float>()) x = 1.0f + 0.5f * x;
  return t;
}

inline ir::Value* f32Value(ir::Graph& g, const std::string& name, Shape shape) { return g.addValue(name, f32(std::move(shape))); }

inline ir::Node* addBatchNorm(ir::Graph& g, ir::Value* x, ir::Value* y, int64_t channels, float epsilon, uint32_t seed,
                              const std::string& name = "bn") {
  ir::Value* scale = g.addInitializer(g.uniqueName(name + ".scale"), randomTensor({channels}, seed));
  ir::Value* bias = g.addInitializer(g.uniqueName(name + ".bias"), randomTensor({channels}, seed + 1));
  ir::Value* mean = g.addInitializer(g.uniqueName(name + ".mean"), randomTensor({channels}, seed + 2));
  ir::Value* var = g.addInitializer(g.uniqueName(name + ".var"), positiveTensor({channels}, seed + 3));
  ir::Node* bn = g.addNode("BatchNormalization", {x, scale, bias, mean, var}, {y}, name);
  bn->attributes["epsilon"].value = epsilon;
  return bn;
}

// The one pass's report (counters and near misses).
inline PassStats runPassStats(ir::Model& m, const std::string& pass) {
  auto reports = runPassesChecked(m, {pass});
  return reports.empty() ? PassStats{} : reports.front().stats;
}

inline int64_t counter(const PassStats& s, const std::string& name) {
  auto it = s.counters.find(name);
  return it == s.counters.end() ? 0 : it->second;
}

inline bool nearMissMentions(const PassStats& s, const std::string& text) {
  for (const auto& m : s.near_misses)
    if (m.find(text) != std::string::npos) return true;
  return false;
}

inline std::string nearMisses(const PassStats& s) {
  std::string out;
  for (const auto& m : s.near_misses) out += m + "\n";
  return out;
}

}  // namespace poprt::passes::testing
