// The reference evaluator against the ONNX backend test data (an independent oracle), plus edge cases.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "tests/unit/ops/op_test_util.h"

namespace poprt::ops {
namespace {

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
  std::vector<Tensor> got, want;
  ASSERT_NO_FATAL_FAILURE(runBackendCase(kBackendNodeData / GetParam(), /*model_opset=*/false, got, want));
  for (size_t o = 0; o < got.size(); ++o) expectNear(got[o], want[o], GetParam());
}

INSTANTIATE_TEST_SUITE_P(Ops, BackendData,
                         testing::Values("test_add", "test_add_bcast", "test_add_uint8", "test_sub_bcast", "test_mul_example",
                                         "test_div_bcast", "test_relu", "test_neg", "test_abs", "test_exp", "test_sigmoid",
                                         "test_tanh", "test_sqrt_example", "test_matmul_2d", "test_matmul_3d", "test_matmul_4d",
                                         "test_gemm_all_attributes", "test_gemm_alpha", "test_gemm_beta",
                                         "test_gemm_default_matrix_bias", "test_gemm_default_no_bias",
                                         "test_gemm_default_scalar_bias", "test_gemm_default_single_elem_vector_bias",
                                         "test_gemm_default_vector_bias", "test_gemm_default_zero_bias", "test_gemm_transposeA",
                                         "test_gemm_transposeB"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(Binary, BroadcastsRankZeroAndEmpty) {
  OneNode n("Add", 2);
  Tensor empty(DType::Float, {2, 0, 3});
  Tensor s = f32({}, {1.5f});
  auto r = n.run({&empty, &s});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{2, 0, 3}));
  auto r2 = n.run({&s, &s});
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ((*r2)[0].shape(), Shape{});
  EXPECT_EQ((*r2)[0].data<float>()[0], 3.0f);
}

TEST(Binary, IntegerDivisionByZeroDoesNotTrap) {
  Tensor x = i32({3}, {7, INT32_MIN, 0});
  Tensor z = i32({3}, {0, -1, 0});
  auto r = OneNode("Div", 2).run({&x, &z});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].data<int32_t>()[0], 0);
}

TEST(Binary, NaNAndIncompatibleShapes) {
  OneNode n("Mul", 2, 1, "", "mul");
  Tensor p = f32({2}, {NAN, INFINITY}), q(DType::Float, {3});
  auto r = n.run({&p, &p});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::isnan((*r)[0].data<float>()[0]));
  EXPECT_TRUE(std::isinf((*r)[0].data<float>()[1]));
  auto bad = n.run({&p, &q});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("node 'mul' (Mul)"), std::string::npos) << bad.error().message();
}

TEST(Unary, Float16Relu) {
  Tensor h = f16({3}, {-2.0f, 0.5f, 65504.0f});
  auto r = OneNode("Relu", 1).run({&h});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(static_cast<float>((*r)[0].data<Half>()[0]), 0.0f);
  EXPECT_EQ(static_cast<float>((*r)[0].data<Half>()[1]), 0.5f);
  EXPECT_EQ(static_cast<float>((*r)[0].data<Half>()[2]), 65504.0f);
}

TEST(MatMul, OneDimensionalOperands) {
  Tensor v = f32({3}, {1, 2, 3});
  auto r = OneNode("MatMul", 2).run({&v, &v});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), Shape{});
  EXPECT_EQ((*r)[0].data<float>()[0], 14.0f);  // 1 + 4 + 9
}

TEST(Registry, UnknownOpIsAnErrorNamingTheNode) {
  // Gradient (training domain) has no evaluator.
  OneNode n("Gradient", 1, 1, "ai.onnx.preview.training", "grad1");
  Tensor t(DType::Float, {1});
  auto r = n.run({&t});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("node 'grad1' (Gradient): the reference evaluator does not support this op"),
            std::string::npos)
      << r.error().message();
}

}  // namespace
}  // namespace poprt::ops
