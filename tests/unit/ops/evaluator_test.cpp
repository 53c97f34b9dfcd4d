// The reference evaluator against the ONNX backend test data (an independent oracle), plus edge cases.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "lib/onnx/onnx_io.h"
#include "lib/ops/registry.h"
#include "lib/support/half.h"
#include "lib/support/tensor_proto.h"

namespace poprt::ops {
namespace {

const std::filesystem::path kNodeData = "/usr/share/libonnx-testdata/data/node";

void expectNear(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  if (want.dtype() == DType::Float) {
    auto g = got.data<float>();
    auto w = want.data<float>();
    for (size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-7 + 1e-5 * std::fabs(w[i])) << what << " [" << i << "]";
  } else {
    EXPECT_TRUE(std::equal(got.bytes().begin(), got.bytes().end(), want.bytes().begin(), want.bytes().end())) << what;
  }
}

class BackendData : public testing::TestWithParam<std::string> {};

TEST_P(BackendData, MatchesExpectedOutputs) {
  auto dir = kNodeData / GetParam();
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
  auto outs = evaluateGraph(*model->graph, inputs);
  ASSERT_TRUE(outs.ok()) << outs.error().message();
  for (size_t o = 0; o < outs->size(); ++o) {
    auto want = readTensorProtoFile(dir / "test_data_set_0" / ("output_" + std::to_string(o) + ".pb"));
    ASSERT_TRUE(want.ok());
    expectNear((*outs)[o], want->tensor, GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ops, BackendData,
    testing::Values("test_add", "test_add_bcast", "test_add_uint8", "test_sub_bcast", "test_mul_example", "test_div_bcast",
                    "test_relu", "test_neg", "test_abs", "test_exp", "test_sigmoid", "test_tanh", "test_sqrt_example",
                    "test_matmul_2d", "test_matmul_3d", "test_matmul_4d",
                    "test_gemm_all_attributes", "test_gemm_alpha", "test_gemm_beta", "test_gemm_default_matrix_bias",
                    "test_gemm_default_no_bias", "test_gemm_default_scalar_bias", "test_gemm_default_single_elem_vector_bias",
                    "test_gemm_default_vector_bias", "test_gemm_default_zero_bias", "test_gemm_transposeA",
                    "test_gemm_transposeB"),
    [](const testing::TestParamInfo<std::string>& info) { return info.param; });

Tensor scalarF(float v) {
  Tensor t(DType::Float, {});
  t.data<float>()[0] = v;
  return t;
}

TEST(Binary, BroadcastsRankZeroAndEmpty) {
  ir::Graph g;
  auto* x = g.addInput("x", ir::TensorType::of(DType::Float, {2, 0, 3}));
  auto* y = g.addValue("y");
  auto* n = g.addNode("Add", {x, x}, {y});
  Tensor empty(DType::Float, {2, 0, 3});
  Tensor s = scalarF(1.5f);
  auto r = evaluateNode(*n, {&empty, &s});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{2, 0, 3}));
  auto r2 = evaluateNode(*n, {&s, &s});
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ((*r2)[0].shape(), Shape{});
  EXPECT_EQ((*r2)[0].data<float>()[0], 3.0f);
}

TEST(Binary, IntegerDivisionByZeroDoesNotTrap) {
  ir::Graph g;
  auto* a = g.addInput("a", ir::TensorType::of(DType::Int32, {3}));
  auto* y = g.addValue("y");
  auto* n = g.addNode("Div", {a, a}, {y});
  Tensor x(DType::Int32, {3});
  Tensor z(DType::Int32, {3});
  x.data<int32_t>()[0] = 7;
  x.data<int32_t>()[1] = INT32_MIN;
  z.data<int32_t>()[1] = -1;
  auto r = evaluateNode(*n, {&x, &z});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].data<int32_t>()[0], 0);
}

TEST(Binary, NaNAndIncompatibleShapes) {
  ir::Graph g;
  auto* a = g.addInput("a", ir::TensorType::of(DType::Float, {2}));
  auto* y = g.addValue("y");
  auto* n = g.addNode("Mul", {a, a}, {y}, "mul");
  Tensor p(DType::Float, {2}), q(DType::Float, {3});
  p.data<float>()[0] = NAN;
  p.data<float>()[1] = INFINITY;
  auto r = evaluateNode(*n, {&p, &p});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::isnan((*r)[0].data<float>()[0]));
  EXPECT_TRUE(std::isinf((*r)[0].data<float>()[1]));
  auto bad = evaluateNode(*n, {&p, &q});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("node 'mul' (Mul)"), std::string::npos) << bad.error().message();
}

TEST(Unary, Float16Relu) {
  ir::Graph g;
  auto* a = g.addInput("a", ir::TensorType::of(DType::Float16, {3}));
  auto* y = g.addValue("y");
  auto* n = g.addNode("Relu", {a}, {y});
  Tensor h(DType::Float16, {3});
  h.data<Half>()[0] = Half(-2.0f);
  h.data<Half>()[1] = Half(0.5f);
  h.data<Half>()[2] = Half(65504.0f);
  auto r = evaluateNode(*n, {&h});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(static_cast<float>((*r)[0].data<Half>()[0]), 0.0f);
  EXPECT_EQ(static_cast<float>((*r)[0].data<Half>()[1]), 0.5f);
  EXPECT_EQ(static_cast<float>((*r)[0].data<Half>()[2]), 65504.0f);
}

TEST(MatMul, OneDimensionalOperands) {
  ir::Graph g;
  auto* a = g.addInput("a", ir::TensorType::of(DType::Float, {3}));
  auto* y = g.addValue("y");
  auto* n = g.addNode("MatMul", {a, a}, {y});
  Tensor v(DType::Float, {3});
  for (int i = 0; i < 3; ++i) v.data<float>()[i] = static_cast<float>(i + 1);
  auto r = evaluateNode(*n, {&v, &v});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), Shape{});
  EXPECT_EQ((*r)[0].data<float>()[0], 14.0f);  // 1 + 4 + 9
}

TEST(Registry, UnknownOpIsAnErrorNamingTheNode) {
  ir::Graph g;
  auto* a = g.addInput("a", ir::TensorType::of(DType::Float, {1}));
  auto* y = g.addValue("y");
  // Gradient (training domain) has no evaluator.
  auto* n = g.addNode("Gradient", {a}, {y}, "grad1", "ai.onnx.preview.training");
  Tensor t(DType::Float, {1});
  auto r = evaluateNode(*n, {&t});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("node 'grad1' (Gradient): the reference evaluator does not support this op"),
            std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace poprt::ops
