// Helpers for the fusion pass tests: a terse graph builder (types come from the infer_shapes pass)
// and a checked run of a list of passes that compares the evaluator's outputs before and after at
// the model's own opsets and checks every value has a type.
#pragma once

#include <map>

#include "lib/ops/graphcore_ops.h"
#include "tests/unit/passes/pass_test_util.h"

namespace poprt::passes::testing {

class Builder {
 public:
  explicit Builder(ir::Model& m) : g_(*m.graph) {}
  ir::Graph& graph() { return g_; }

  ir::Value* input(const std::string& name, Shape s) { return g_.addInput(name, f32(std::move(s))); }
  ir::Value* constant(float v, Shape s = {}) {
    Tensor t(DType::Float, std::move(s));
    for (float& x : t.data<float>()) x = v;
    return g_.addInitializer(g_.uniqueName("c"), std::move(t));
  }
  ir::Value* weight(Shape s, uint32_t seed, float amplitude = 1) {
    Tensor t = randomTensor(std::move(s), seed);
    for (float& x : t.data<float>()) x *= amplitude;
    return g_.addInitializer(g_.uniqueName("w"), std::move(t));
  }
  ir::Value* ints(std::vector<int64_t> v) { return g_.addInitializer(g_.uniqueName("i"), int64s(std::move(v))); }
  ir::Value* scalarInt(int64_t v) {
    Tensor t(DType::Int64, {});
    t.data<int64_t>()[0] = v;
    return g_.addInitializer(g_.uniqueName("i"), std::move(t));
  }

  // A node with one output (untyped until infer_shapes runs); returns the output.
  ir::Value* op(const std::string& type, std::vector<ir::Value*> inputs, std::map<std::string, ir::AttributeValue> attrs = {},
                const std::string& domain = "") {
    ir::Value* out = g_.addValue(g_.uniqueName(type + "_out"));
    ir::Node* n = g_.addNode(type, inputs, {out}, "n" + std::to_string(counter_++) + "_" + type, domain);
    for (auto& [k, v] : attrs) n->attributes[k].value = v;
    return out;
  }
  std::vector<ir::Value*> ops(const std::string& type, std::vector<ir::Value*> inputs, size_t outputs,
                              std::map<std::string, ir::AttributeValue> attrs = {}) {
    std::vector<ir::Value*> outs;
    for (size_t i = 0; i < outputs; ++i) outs.push_back(g_.addValue(g_.uniqueName(type + "_out")));
    ir::Node* n = g_.addNode(type, inputs, outs, "n" + std::to_string(counter_++) + "_" + type);
    for (auto& [k, v] : attrs) n->attributes[k].value = v;
    return outs;
  }
  void output(ir::Value* v) { g_.addOutput(v); }

 private:
  ir::Graph& g_;
  int counter_ = 0;
};

inline bool importsGraphcore(const ir::Model& m) {
  for (const auto& op : m.opset_imports)
    if (op.domain == "ai.graphcore" && op.version == 1) return true;
  return false;
}

inline int countOps(const ir::Graph& g, const std::string& op_type) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->opType() == op_type;
  return n;
}

inline const ir::Node* findNode(const ir::Graph& g, const std::string& op_type) {
  for (const auto& node : g.nodes())
    if (node->opType() == op_type) return node.get();
  return nullptr;
}

// The reports of the last runChecked, as text (counters and near misses per pass), for failure messages.
inline std::vector<PassReport> g_reports;
inline std::string reportText() {
  std::string text;
  for (const auto& r : g_reports) {
    text += r.name + ":";
    for (const auto& [k, v] : r.stats.counters) text += " " + k + "=" + std::to_string(v);
    text += "\n";
    for (const auto& miss : r.stats.near_misses) text += "  near miss: " + miss + "\n";
  }
  return text;
}

// runPassesChecked with the type check; keeps the reports for reportText(). Returns the last one.
inline PassReport runPipelineChecked(ir::Model& m, std::vector<std::string> passes, double tol = 1e-5) {
  g_reports = runPassesChecked(m, std::move(passes), tol, /*check_types=*/true);
  return g_reports.empty() ? PassReport{} : g_reports.back();
}

inline int64_t counter(const PassReport& r, const std::string& name) {
  auto it = r.stats.counters.find(name);
  return it == r.stats.counters.end() ? 0 : it->second;
}

}  // namespace poprt::passes::testing
