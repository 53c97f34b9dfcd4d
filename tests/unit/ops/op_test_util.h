// Helpers of the op unit tests (tests/unit/ops): making tensors from values, building one node
// and running it through the reference evaluator, reading results back and comparing them, and
// running an ONNX backend test case.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/onnx/onnx_io.h"
#include "lib/ops/registry.h"
#include "lib/support/half.h"
#include "lib/support/tensor_proto.h"

namespace poprt::ops {

// ---- tensors from values ------------------------------------------------------------------------

// A tensor of `dtype` and `shape` holding `values` (C++ element type T); the count must match.
template <class T>
Tensor make(DType dtype, Shape shape, const std::vector<T>& values) {
  Tensor t(dtype, std::move(shape));
  auto d = t.data<T>();
  EXPECT_EQ(d.size(), values.size());
  for (size_t i = 0; i < values.size() && i < d.size(); ++i) d[i] = values[i];
  return t;
}
inline Tensor f32(Shape s, const std::vector<float>& v) { return make<float>(DType::Float, std::move(s), v); }
inline Tensor f64(Shape s, const std::vector<double>& v) { return make<double>(DType::Double, std::move(s), v); }
inline Tensor i8(Shape s, const std::vector<int8_t>& v) { return make<int8_t>(DType::Int8, std::move(s), v); }
inline Tensor u8(Shape s, const std::vector<uint8_t>& v) { return make<uint8_t>(DType::UInt8, std::move(s), v); }
inline Tensor i32(Shape s, const std::vector<int32_t>& v) { return make<int32_t>(DType::Int32, std::move(s), v); }
inline Tensor i64(Shape s, const std::vector<int64_t>& v) { return make<int64_t>(DType::Int64, std::move(s), v); }
inline Tensor boolean(Shape s, const std::vector<uint8_t>& v) { return make<uint8_t>(DType::Bool, std::move(s), v); }
inline Tensor boolean(bool b) { return boolean({}, {b}); }
// float16 from float values (each rounded to half).
inline Tensor f16(Shape s, const std::vector<float>& v) {
  std::vector<Half> h;
  for (float x : v) h.push_back(Half(x));
  return make<Half>(DType::Float16, std::move(s), h);
}
inline Tensor strings(Shape s, std::vector<std::string> v) {
  Tensor t(DType::String, std::move(s));
  t.strings() = std::move(v);
  return t;
}

// ---- values from tensors ------------------------------------------------------------------------

// The elements of t as C++ type T.
template <class T>
std::vector<T> values(const Tensor& t) {
  auto d = t.data<T>();
  return {d.begin(), d.end()};
}
// The elements of t (of C++ type T) as doubles.
template <class T>
std::vector<double> asDoubles(const Tensor& t) {
  std::vector<double> out;
  for (T v : t.data<T>()) out.push_back(static_cast<double>(v));
  return out;
}
// The elements of a float16 tensor as doubles.
inline std::vector<double> halfValues(const Tensor& t) {
  std::vector<double> out;
  for (Half v : t.data<Half>()) out.push_back(static_cast<float>(v));
  return out;
}

// ---- comparisons --------------------------------------------------------------------------------

// Element-wise: NaN matches NaN, infinities match exactly, the rest within tol * (1 + |want|).
inline void expectClose(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "[" << i << "] " << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "[" << i << "]";
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "[" << i << "]";
    }
  }
}

// t is a float tensor whose elements are each within `tol` of `want`.
inline void expectFloats(const Tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(t.dtype(), DType::Float);
  auto d = t.data<float>();
  ASSERT_EQ(d.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(d[i], want[i], tol) << "[" << i << "]";
}

// r failed with a message that contains `part`.
inline void expectError(const Expected<std::vector<Tensor>>& r, const std::string& part) {
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find(part), std::string::npos) << r.error().message();
}

// ---- one node -----------------------------------------------------------------------------------

// One node `op` named `name` (inputs in0.., outputs out0..) in its own graph; attributes are set
// by the test, inputs given to run (nullptr = omitted).
struct OneNode {
  ir::Graph g;
  ir::Node* node = nullptr;

  OneNode(const std::string& op, size_t n_in, size_t n_out = 1, const std::string& domain = "", const std::string& name = "n") {
    std::vector<ir::Value*> ins, outs;
    for (size_t i = 0; i < n_in; ++i) ins.push_back(g.addInput("in" + std::to_string(i), {}));
    for (size_t i = 0; i < n_out; ++i) outs.push_back(g.addValue("out" + std::to_string(i)));
    node = g.addNode(op, ins, outs, name, domain);
  }
  OneNode& attr(const std::string& name, ir::AttributeValue v) {
    node->attributes[name] = ir::Attribute{std::move(v), ""};
    return *this;
  }
  OneNode& ints(const std::string& name, std::vector<int64_t> v) { return attr(name, std::move(v)); }
  OneNode& i(const std::string& name, int64_t v) { return attr(name, v); }
  OneNode& f(const std::string& name, float v) { return attr(name, v); }
  OneNode& s(const std::string& name, std::string v) { return attr(name, std::move(v)); }

  Expected<std::vector<Tensor>> run(const std::vector<const Tensor*>& in, int64_t opset = 17) const {
    return evaluateNode(*node, in, opset);
  }
  // All outputs; fails the test on an error.
  std::vector<Tensor> runAll(const std::vector<const Tensor*>& in, int64_t opset = 17) const {
    auto r = run(in, opset);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    return r.ok() ? *r : std::vector<Tensor>{};
  }
  // The first output; fails the test on an error.
  Tensor run1(const std::vector<const Tensor*>& in, int64_t opset = 17) const {
    auto r = runAll(in, opset);
    return r.empty() ? Tensor() : r[0];
  }
  void expectError(const std::vector<const Tensor*>& in, int64_t opset = 17) const {
    auto r = run(in, opset);
    EXPECT_FALSE(r.ok()) << node->opType() << " should have failed";
  }
};

// A node `op` with `n_in` inputs and `n_out` outputs (fresh names) added to graph g.
inline ir::Node* makeNode(ir::Graph& g, const std::string& op, size_t n_in, size_t n_out) {
  std::vector<ir::Value*> ins, outs;
  for (size_t i = 0; i < n_in; ++i) ins.push_back(g.addInput(g.uniqueName("in"), {}));
  for (size_t i = 0; i < n_out; ++i) outs.push_back(g.addValue(g.uniqueName("out")));
  return g.addNode(op, ins, outs);
}

// ---- ONNX backend test data ---------------------------------------------------------------------

inline const std::filesystem::path kBackendNodeData = "/usr/share/libonnx-testdata/data/node";

// Evaluates backend test `dir` (model.onnx on test_data_set_0's inputs; at the model's opset when
// `model_opset`, else at the evaluator's default) into `got`, and reads the expected outputs into
// `want`. Fails the test fatally when anything does not load or the evaluation fails.
inline void runBackendCase(const std::filesystem::path& dir, bool model_opset, std::vector<Tensor>& got,
                           std::vector<Tensor>& want) {
  auto model = onnxio::importModel(dir / "model.onnx");
  ASSERT_TRUE(model.ok()) << model.error().message();
  std::vector<std::pair<std::string, Tensor>> inputs;
  size_t i = 0;
  for (const ir::Value* in : model->graph->inputs()) {
    if (in->isInitializer()) continue;
    auto t = readTensorProtoFile(dir / "test_data_set_0" / ("input_" + std::to_string(i++) + ".pb"));
    ASSERT_TRUE(t.ok()) << t.error().message();
    inputs.emplace_back(in->name(), std::move(t->tensor));
  }
  auto outs =
      model_opset ? evaluateGraph(*model->graph, inputs, {{"", model->opsetVersion()}}) : evaluateGraph(*model->graph, inputs);
  ASSERT_TRUE(outs.ok()) << outs.error().message();
  got = std::move(*outs);
  for (size_t o = 0; o < got.size(); ++o) {
    auto w = readTensorProtoFile(dir / "test_data_set_0" / ("output_" + std::to_string(o) + ".pb"));
    ASSERT_TRUE(w.ok());
    want.push_back(std::move(w->tensor));
  }
}

}  // namespace poprt::ops
