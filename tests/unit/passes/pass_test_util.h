// Helpers for pass tests: build small models, run one pass, and check that the optimised graph
// computes what the original did (reference evaluator before vs after on the same inputs).
#pragma once

#include <gtest/gtest.h>

#include <random>

#include "lib/ops/registry.h"
#include "passes/pass_manager.h"

namespace poprt::passes::testing {

inline ir::TensorType f32(Shape s) { return ir::TensorType::of(DType::Float, s); }

inline Tensor randomTensor(Shape shape, uint32_t seed) {
  Tensor t(DType::Float, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (float& x : t.data<float>()) x = dist(rng);
  return t;
}

inline Tensor int64s(std::vector<int64_t> v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>().begin());
  return t;
}

inline ir::Model emptyModel(int64_t opset = 17) {
  ir::Model m;
  m.opset_imports = {{"", opset}};
  return m;
}

// Random inputs for every graph input (float32, static shapes).
inline std::vector<std::pair<std::string, Tensor>> randomInputs(const ir::Graph& g) {
  std::vector<std::pair<std::string, Tensor>> inputs;
  uint32_t seed = 1;
  for (const ir::Value* in : g.inputs())
    if (!in->isInitializer()) inputs.emplace_back(in->name(), randomTensor(in->type.staticShape(), seed++));
  return inputs;
}

// Runs the named pass alone; returns whether it changed the graph. Checks the graph is still
// valid and computes the same outputs as before on random inputs.
inline bool runPassChecked(ir::Model& m, const std::string& pass) {
  auto inputs = randomInputs(*m.graph);
  auto before = ops::evaluateGraph(*m.graph, inputs);
  EXPECT_TRUE(before.ok()) << before.error().message();
  PipelineOptions options;
  options.passes = {pass};
  auto reports = runPipeline(m, options);
  EXPECT_TRUE(reports.ok()) << reports.error().message();
  EXPECT_TRUE(ir::verify(*m.graph).ok());
  auto after = ops::evaluateGraph(*m.graph, inputs);
  EXPECT_TRUE(after.ok()) << after.error().message();
  if (before.ok() && after.ok()) {
    EXPECT_EQ(before->size(), after->size());
    for (size_t o = 0; o < before->size() && o < after->size(); ++o) {
      EXPECT_EQ((*before)[o].shape(), (*after)[o].shape());
      EXPECT_EQ((*before)[o].dtype(), (*after)[o].dtype());
      if ((*before)[o].dtype() == DType::Float) {
        auto b = (*before)[o].data<float>();
        auto a = (*after)[o].data<float>();
        for (size_t i = 0; i < b.size() && i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5 + 1e-5 * std::fabs(b[i]));
      } else {
        EXPECT_TRUE((*before)[o] == (*after)[o]);
      }
    }
  }
  return reports.ok() && !reports->empty() && reports->front().changed;
}

inline std::vector<std::string> opTypes(const ir::Graph& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.nodes()) ops.push_back(n->opType());
  return ops;
}

}  // namespace poprt::passes::testing
