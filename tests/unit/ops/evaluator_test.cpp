// The reference evaluator against the ONNX backend test data (an independent oracle), plus edge cases.
#include <gtest/gtest.h>

#include <algorithm>
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

// Seeded values in [-1, 1).
Tensor randomF32(Shape s, uint32_t seed) {
  Tensor t(DType::Float, std::move(s));
  uint32_t x = seed * 2654435761u + 1;
  for (float& v : t.data<float>()) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<float>(x >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return t;
}

Tensor runWith(OneNode& n, const std::vector<const Tensor*>& in, bool float32_sums) {
  EvalContext ctx({{"", 17}});
  ctx.setFloat32Sums(float32_sums);
  auto r = findOp("", n.node->opType())->eval(*n.node, in, ctx);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? (*r)[0] : Tensor();
}

TEST(Gemm, ManyRowsAndEveryTransposeMatchADoubleLoop) {
  // 20 rows: past the few-rows path, through the blocked product; alpha, beta and a row bias.
  const int64_t M = 20, K = 37, N = 11;
  Tensor c = randomF32({N}, 3);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      Tensor a = randomF32(ta ? Shape{K, M} : Shape{M, K}, 1), b = randomF32(tb ? Shape{N, K} : Shape{K, N}, 2);
      OneNode n("Gemm", 3);
      n.i("transA", ta).i("transB", tb).f("alpha", 0.5f).f("beta", 2.0f);
      Tensor y = n.run1({&a, &b, &c});
      ASSERT_EQ(y.shape(), (Shape{M, N}));
      auto pa = a.data<float>(), pb = b.data<float>();
      for (int64_t m = 0; m < M; ++m)
        for (int64_t j = 0; j < N; ++j) {
          double sum = 0;
          for (int64_t k = 0; k < K; ++k)
            sum += static_cast<double>(pa[ta ? k * M + m : m * K + k]) * pb[tb ? j * K + k : k * N + j];
          const double want = 0.5 * sum + 2.0 * c.data<float>()[j];
          ASSERT_NEAR(y.data<float>()[m * N + j], want, 1e-6 * std::fabs(want) + 1e-7) << ta << tb << " " << m << "," << j;
        }
    }
}

TEST(Products, Float32SumsStayWithinFloat32RoundingOfTheDoubleOnes) {
  // The fp16 range check's faster sums: MatMul (batched), Gemm and Conv against the reference.
  Tensor a = randomF32({3, 40, 50}, 4), b = randomF32({50, 30}, 5);
  Tensor ga = randomF32({20, 64}, 6), gb = randomF32({48, 64}, 7);
  Tensor x = randomF32({1, 8, 12, 12}, 8), w = randomF32({16, 8, 3, 3}, 9), bias = randomF32({16}, 10);
  OneNode matmul("MatMul", 2), gemm("Gemm", 2), conv("Conv", 3);
  gemm.i("transB", 1);
  conv.ints("pads", {1, 1, 1, 1});
  const std::vector<std::pair<OneNode*, std::vector<const Tensor*>>> cases = {
      {&matmul, {&a, &b}}, {&gemm, {&ga, &gb}}, {&conv, {&x, &w, &bias}}};
  for (const auto& [node, in] : cases) {
    Tensor exact = runWith(*node, in, false), fast = runWith(*node, in, true);
    ASSERT_EQ(exact.shape(), fast.shape()) << node->node->opType();
    for (size_t i = 0; i < exact.data<float>().size(); ++i)
      ASSERT_NEAR(fast.data<float>()[i], exact.data<float>()[i], 1e-5) << node->node->opType() << " [" << i << "]";
  }
}

// MatMul's batch broadcasting against a double loop, with double and float32 sums: a weight shared
// by all of A's batches (one product of all of A's rows), broadcast batches on either side.
TEST(MatMul, BroadcastBatchesMatchADoubleLoop) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{5, 1, 8}, {8, 3}}, {{2, 3, 4, 8}, {1, 8, 6}}, {{4, 8}, {3, 8, 6}}, {{2, 4, 8}, {2, 8, 6}}, {{2, 1, 4, 8}, {3, 8, 6}}};
  for (const auto& [sa, sb] : cases) {
    Tensor a = randomF32(sa, 11), b = randomF32(sb, 12);
    const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
    // The output's batch dims, each operand's aligned to the right (1 where it has none).
    const size_t rank = std::max(sa.size(), sb.size()) - 2;
    auto dim = [&](const Shape& s, size_t d) { return d + s.size() - 2 >= rank ? s[d + s.size() - 2 - rank] : 1; };
    Shape batch;
    for (size_t d = 0; d < rank; ++d) batch.push_back(std::max(dim(sa, d), dim(sb, d)));
    for (bool float32_sums : {false, true}) {
      OneNode n("MatMul", 2);
      Tensor y = runWith(n, {&a, &b}, float32_sums);
      Shape want_shape = batch;
      want_shape.insert(want_shape.end(), {M, N});
      ASSERT_EQ(y.shape(), want_shape) << shapeToString(sa) << " x " << shapeToString(sb);
      int64_t batches = 1;
      for (int64_t d : batch) batches *= d;
      for (int64_t bi = 0; bi < batches; ++bi) {
        int64_t ia = 0, ib = 0, rest = bi;
        std::vector<int64_t> index(rank);
        for (size_t d = rank; d-- > 0;) index[d] = rest % batch[d], rest /= batch[d];
        for (size_t d = 0; d < rank; ++d) {
          ia = ia * dim(sa, d) + (dim(sa, d) == 1 ? 0 : index[d]);
          ib = ib * dim(sb, d) + (dim(sb, d) == 1 ? 0 : index[d]);
        }
        for (int64_t m = 0; m < M; ++m)
          for (int64_t j = 0; j < N; ++j) {
            double want = 0;
            for (int64_t k = 0; k < K; ++k)
              want += static_cast<double>(a.data<float>()[(ia * M + m) * K + k]) * b.data<float>()[(ib * K + k) * N + j];
            ASSERT_NEAR(y.data<float>()[(bi * M + m) * N + j], want, 1e-5)
                << shapeToString(sa) << " x " << shapeToString(sb) << " float32 sums " << float32_sums << " batch " << bi;
          }
      }
    }
  }
}

TEST(Evaluator, AnObserverSeesEveryValueAsItIsMadeAndInitializersServeAsOutputs) {
  ir::Graph g;
  ir::Value* x = g.addInput("x", {});
  ir::Value* w = g.addInitializer("w", f32({3}, {1, -2, 3}));
  ir::Value* y = g.addValue("y");
  ir::Value* z = g.addValue("z");
  g.addNode("Add", {x, w}, {y}, "add");
  g.addNode("Relu", {y}, {z}, "relu");
  g.addOutput(z);
  g.addOutput(w);
  g.addOutput(z);
  std::vector<std::pair<std::string, std::vector<float>>> seen;
  EvalContext ctx({{"", 17}});
  ctx.setObserver([&](const ir::Value& v, const RtValue& value) {
    auto d = value.tensor.data<float>();
    seen.emplace_back(v.name(), std::vector<float>(d.begin(), d.end()));
  });
  auto r = runGraph(g, {{"x", RtValue::of(f32({3}, {0.5f, 0.5f, -4}))}}, ctx);
  ASSERT_TRUE(r.ok()) << r.error().message();
  using Seen = std::vector<std::pair<std::string, std::vector<float>>>;
  EXPECT_EQ(seen, (Seen{{"y", {1.5f, -1.5f, -1}}, {"z", {1.5f, 0, 0}}}));
  ASSERT_EQ(r->size(), 3u);  // z twice (moved out only at its last mention), and the initializer
  EXPECT_EQ((*r)[0].tensor, (*r)[2].tensor);
  EXPECT_EQ((*r)[1].tensor, f32({3}, {1, -2, 3}));
  EXPECT_EQ((*r)[2].tensor, f32({3}, {1.5f, 0, 0}));
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
