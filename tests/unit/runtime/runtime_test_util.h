// Shared by the runtime tests: small models compiled to PopEF files in a temporary directory (for a
// 4-tile target, so they compile and run in milliseconds), and the reference evaluator's outputs
// for them, the independent oracle the runtime's results are compared with.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "converter/make_popef.h"
#include "lib/onnx/onnx_io.h"
#include "lib/ops/registry.h"
#include "poprt/runtime/runtime.h"

namespace poprt::runtime::testing {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "poprt_runtime_test_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline Tensor randomTensor(Shape shape, uint32_t seed) {
  Tensor t(DType::Float, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (float& x : t.data<float>()) x = dist(rng);
  return t;
}

inline ir::TensorType f32(const Shape& s) { return ir::TensorType::of(DType::Float, s); }

// y = relu(x @ w + b), x: float32[rows, 8], y: float32[rows, 6].
inline ir::Model mlpModel(int64_t rows = 4) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({rows, 8}));
  ir::Value* w = g.addInitializer("w", randomTensor({8, 6}, 1));
  ir::Value* b = g.addInitializer("b", randomTensor({6}, 2));
  ir::Value* h = g.addValue("h", f32({rows, 6}));
  ir::Value* a = g.addValue("a", f32({rows, 6}));
  ir::Value* y = g.addValue("y", f32({rows, 6}));
  g.addNode("MatMul", {x, w}, {h}, "matmul");
  g.addNode("Add", {h, b}, {a}, "add");
  g.addNode("Relu", {a}, {y}, "relu");
  g.addOutput(y);
  return m;
}

struct PopefSettings {
  uint32_t replication_factor = 1;
  uint32_t batches_per_step = 1;
  uint32_t tiles = 4;
};

// Compiles `m` as poprt-convert does and writes DIR/NAME.popef.
inline std::string writeModel(const ir::Model& m, const fs::path& dir, const std::string& name, PopefSettings s = {}) {
  auto target = codegen::makeTarget("ipu2", 1, s.tiles);
  if (!target.ok()) throw std::runtime_error(target.error().message());
  auto compiled = codegen::compile(m, {*target, 0.6});
  if (!compiled.ok()) throw std::runtime_error(compiled.error().message());
  converter::ConvertOptions o;
  o.replication_factor = s.replication_factor;
  o.batches_per_step = s.batches_per_step;
  const fs::path path = dir / (name + ".popef");
  Status st = popef::writePopef(path, converter::makePopef(*compiled, m, o));
  if (!st.ok()) throw std::runtime_error(st.error().message());
  return path.string();
}

// The reference evaluator's first output for one input.
inline Tensor reference(const ir::Model& m, const std::string& input, const Tensor& x) {
  auto out = ops::evaluateGraph(*m.graph, {{input, x}});
  if (!out.ok()) throw std::runtime_error(out.error().message());
  return (*out)[0];
}

// Float outputs compared with the evaluator's within fp32 rounding of a few operations.
inline void expectNear(const float* got, const Tensor& want, const std::string& what) {
  auto w = want.data<float>();
  for (size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(got[i], w[i], 1e-5 + 1e-5 * std::fabs(w[i])) << what << " [" << i << "]";
}

inline ConstTensorView view(const Tensor& t) { return {t.bytes().data(), t.byteSize()}; }

// A system of its own per test, so tests never wait for each other's devices.
inline ModelRunnerConfig privateSystem(ModelRunnerConfig c = {}) {
  c.device_manager = std::make_shared<DeviceManager>(std::vector<std::pair<std::string, unsigned>>{{"ipu2", 8}});
  return c;
}

}  // namespace poprt::runtime::testing
