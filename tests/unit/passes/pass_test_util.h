// Helpers for pass tests: build small models, run one pass, and check that the optimised graph
// computes what the original did (reference evaluator before vs after on the same inputs).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
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

inline ops::Opsets opsetsOf(const ir::Model& m) {
  ops::Opsets o;
  for (const auto& op : m.opset_imports) o[op.domain == "ai.onnx" ? "" : op.domain] = op.version;
  return o;
}

// Runs `passes` (empty: the default pipeline) and checks: the graph verifies, (with
// `check_types`) every node output has a dtype and a rank, and the outputs equal the evaluator's
// before the passes, at the model's opsets, within tol + tol*|x| (NaN and infinities must match).
// The same with every pipeline option given (the passes' own options, such as serialize_matmul's).
inline std::vector<PassReport> runOptionsChecked(ir::Model& m, const PipelineOptions& options, double tol = 1e-5,
                                                 bool check_types = false) {
  auto inputs = randomInputs(*m.graph);
  auto before = ops::evaluateGraph(*m.graph, inputs, opsetsOf(m));
  EXPECT_TRUE(before.ok()) << before.error().message();
  auto reports = runPipeline(m, options);
  EXPECT_TRUE(reports.ok()) << (reports.ok() ? "" : reports.error().message());
  auto st = ir::verify(*m.graph);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message());
  if (check_types)
    for (const auto& n : m.graph->nodes())
      for (const ir::Value* v : n->outputs())
        if (v) {
          EXPECT_TRUE(v->type.dtype != DType::Undefined && v->type.dims)
              << v->name() << " of " << n->describe() << " has no type";
        }
  auto after = ops::evaluateGraph(*m.graph, inputs, opsetsOf(m));
  EXPECT_TRUE(after.ok()) << after.error().message();
  if (before.ok() && after.ok()) {
    EXPECT_EQ(before->size(), after->size());
    for (size_t o = 0; o < before->size() && o < after->size(); ++o) {
      const Tensor& b = (*before)[o];
      const Tensor& a = (*after)[o];
      EXPECT_EQ(b.shape(), a.shape());
      EXPECT_EQ(b.dtype(), a.dtype());
      if (b.dtype() != DType::Float || a.dtype() != DType::Float) {
        EXPECT_TRUE(a == b) << "output " << o << " differs after the passes";
        continue;
      }
      auto bv = b.data<float>();
      auto av = a.data<float>();
      for (size_t i = 0; i < bv.size() && i < av.size(); ++i) {
        if ((std::isnan(av[i]) && std::isnan(bv[i])) || (std::isinf(bv[i]) && av[i] == bv[i])) continue;
        EXPECT_NEAR(av[i], bv[i], tol + tol * std::fabs(bv[i])) << "output " << o << " [" << i << "]";
      }
    }
  }
  return reports.ok() ? std::move(reports).value() : std::vector<PassReport>{};
}

inline std::vector<PassReport> runPassesChecked(ir::Model& m, std::vector<std::string> passes, double tol = 1e-5,
                                                bool check_types = false) {
  PipelineOptions options;
  options.passes = std::move(passes);
  return runOptionsChecked(m, options, tol, check_types);
}

// Runs the named pass alone (checked as above); returns whether it changed the graph.
inline bool runPassChecked(ir::Model& m, const std::string& pass) {
  auto reports = runPassesChecked(m, {pass});
  return !reports.empty() && reports.front().changed;
}

inline std::vector<std::string> opTypes(const ir::Graph& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.nodes()) ops.push_back(n->opType());
  return ops;
}

}  // namespace poprt::passes::testing
