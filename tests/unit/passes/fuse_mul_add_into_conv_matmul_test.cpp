#include "tests/unit/passes/fuse_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;

TEST(FuseMulAddIntoConvMatMul, ConvChainOfMulDivAddSubFoldsIntoOneConv) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({2, 3, 6, 6}));
  ir::Value* w = g.addInitializer("w", randomTensor({4, 3, 3, 3}, 1));
  ir::Value* b = g.addInitializer("b", randomTensor({4}, 2));
  Shape out = {2, 4, 4, 4};
  ir::Value* c = f32Value(g, "c", out);
  ir::Value* v1 = f32Value(g, "v1", out);
  ir::Value* v2 = f32Value(g, "v2", out);
  ir::Value* v3 = f32Value(g, "v3", out);
  ir::Value* v4 = f32Value(g, "v4", out);
  ir::Value* y = f32Value(g, "y", out);
  g.addNode("Conv", {x, w, b}, {c}, "conv");
  g.addNode("Mul", {g.addInitializer("scale", randomTensor({4, 1, 1}, 3)), c}, {v1}, "mul");  // commuted
  g.addNode("Div", {v1, g.addInitializer("div", positiveTensor({1, 4, 1, 1}, 4))}, {v2}, "div");
  g.addNode("Add", {v2, g.addInitializer("shift", randomTensor({1, 4, 1, 1}, 5))}, {v3}, "add");
  g.addNode("Sub", {v3, g.addInitializer("three", randomTensor({}, 6))}, {v4}, "sub");  // scalar
  g.addNode("Sub", {g.addInitializer("one", randomTensor({1}, 7)), v4}, {y}, "rsub");   // k - x
  g.addOutput(y);
  PassStats s = runPassStats(m, "fuse_mul_add_into_conv_matmul");
  EXPECT_EQ(counter(s, "mul_into_conv"), 1);
  EXPECT_EQ(counter(s, "div_into_conv"), 1);
  EXPECT_EQ(counter(s, "add_into_conv"), 1);
  EXPECT_EQ(counter(s, "sub_into_conv"), 2);
  ASSERT_EQ(opTypes(g), (Ops{"Conv"}));
  const ir::Node* fused = g.nodes().front().get();
  EXPECT_EQ(fused->output(0), y);
  EXPECT_EQ(fused->input(0), x);
  EXPECT_NE(fused->input(1), w);
  EXPECT_TRUE(w->isInitializer());  // left for dead-code elimination
}

TEST(FuseMulAddIntoConvMatMul, ConvTransposeAndGemm) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({1, 4, 3, 3}));
  ir::Value* w = g.addInitializer("w", randomTensor({4, 2, 3, 3}, 8));
  ir::Value* c = f32Value(g, "c", {1, 4, 5, 5});
  ir::Value* y = f32Value(g, "y", {1, 4, 5, 5});
  ir::Node* ct = g.addNode("ConvTranspose", {x, w}, {c}, "deconv");
  ct->attributes["group"].value = int64_t{2};
  g.addNode("Mul", {c, g.addInitializer("s", randomTensor({4, 1, 1}, 9))}, {y}, "mul");
  ir::Value* a = g.addInput("a", f32({3, 5}));
  ir::Value* gb = g.addInitializer("gb", randomTensor({4, 5}, 10));
  ir::Value* o = f32Value(g, "o", {3, 4});
  ir::Value* z = f32Value(g, "z", {3, 4});
  ir::Node* gemm = g.addNode("Gemm", {a, gb, g.addInitializer("gc", randomTensor({3, 4}, 11))}, {o}, "fc");
  gemm->attributes["transB"].value = int64_t{1};
  gemm->attributes["beta"].value = 0.5f;
  g.addNode("Add", {g.addInitializer("three", randomTensor({}, 12)), o}, {z}, "add3");  // hard-sigmoid's x + 3
  g.addOutput(y);
  g.addOutput(z);
  PassStats s = runPassStats(m, "fuse_mul_add_into_conv_matmul");
  EXPECT_EQ(counter(s, "mul_into_conv_transpose"), 1);
  EXPECT_EQ(counter(s, "add_into_gemm"), 1);
  EXPECT_EQ(opTypes(g), (Ops{"ConvTranspose", "Gemm"}));
}

TEST(FuseMulAddIntoConvMatMul, MatMulScalesWeightsAndKeepsOrMakesItsBias) {
  // Rank 3: MatMul -> Add -> Mul becomes MatMul -> Add; rank 2: a Gemm; a lone Mul: just MatMul.
  for (int rank : {2, 3}) {
    for (bool with_add : {false, true}) {
      ir::Model m = emptyModel();
      ir::Graph& g = *m.graph;
      Shape in = rank == 2 ? Shape{3, 5} : Shape{2, 3, 5};
      Shape out = rank == 2 ? Shape{3, 4} : Shape{2, 3, 4};
      ir::Value* x = g.addInput("x", f32(in));
      ir::Value* w = g.addInitializer("w", randomTensor({5, 4}, 13));
      ir::Value* mm = f32Value(g, "mm", out);
      ir::Value* y = f32Value(g, "y", out);
      g.addNode("MatMul", {x, w}, {mm}, "matmul");
      ir::Value* mul_in = mm;
      if (with_add) {
        mul_in = f32Value(g, "biased", out);
        g.addNode("Add", {mm, g.addInitializer("bias", randomTensor({4}, 14))}, {mul_in}, "add");
      }
      g.addNode("Mul", {mul_in, g.addInitializer("s", randomTensor({1, 4}, 15))}, {y}, "mul");
      g.addOutput(y);
      PassStats s = runPassStats(m, "fuse_mul_add_into_conv_matmul");
      EXPECT_EQ(counter(s, "mul_into_matmul"), 1) << nearMisses(s);
      Ops expected = !with_add ? Ops{"MatMul"} : rank == 2 ? Ops{"Gemm"} : Ops{"MatMul", "Add"};
      EXPECT_EQ(opTypes(g), expected) << "rank " << rank << " add " << with_add;
      EXPECT_EQ(g.nodes().back()->output(0), y);
    }
  }
}

TEST(FuseMulAddIntoConvMatMul, MustNotFire) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({1, 4, 4, 4}));
  ir::Value* w = g.addInitializer("w", randomTensor({4, 4, 1, 1}, 16));
  Shape out = {1, 4, 4, 4};
  std::vector<ir::Value*> outputs;
  auto conv = [&](const std::string& name) {
    ir::Value* c = f32Value(g, name + "_out", out);
    g.addNode("Conv", {x, w}, {c}, name);
    return c;
  };
  auto node = [&](const std::string& op, std::vector<ir::Value*> in, const std::string& name, Shape shape) {
    ir::Value* v = f32Value(g, name + "_out", std::move(shape));
    g.addNode(op, in, {v}, name);
    return v;
  };
  // 1. A [4] constant broadcasts along the width, not the channels (same shape, different meaning).
  outputs.push_back(node("Add", {conv("c1"), g.addInitializer("k1", randomTensor({4}, 17))}, "add_width", out));
  // 2. A constant of higher rank than the output broadcasts the output.
  outputs.push_back(
      node("Mul", {conv("c2"), g.addInitializer("k2", randomTensor({1, 1, 4, 1, 1}, 18))}, "mul_rank5", {1, 1, 4, 4, 4}));
  // 3. Hard-swish: x + 3 where x also feeds the Mul: the conv output has two uses.
  ir::Value* c3 = conv("c3");
  ir::Value* plus3 = node("Add", {c3, g.addInitializer("k3", randomTensor({}, 19))}, "add_shared", out);
  outputs.push_back(node("Mul", {c3, plus3}, "hardswish_mul", out));
  // 4. x * sigmoid(x): not a constant, not a candidate (no near miss).
  ir::Value* c4 = conv("c4");
  outputs.push_back(node("Mul", {c4, node("Sigmoid", {c4}, "sigmoid", out)}, "silu_mul", out));
  // 5. Division by zero.
  Tensor zeros(DType::Float, {4, 1, 1});
  outputs.push_back(node("Div", {conv("c5"), g.addInitializer("k5", zeros)}, "div_zero", out));
  // 6. A MatMul whose weight is not a constant.
  ir::Value* a = g.addInput("a", f32({3, 5}));
  ir::Value* bw = g.addInput("bw", f32({5, 4}));
  outputs.push_back(node("Mul", {node("MatMul", {a, bw}, "matmul_var", {3, 4}), g.addInitializer("k6", randomTensor({4}, 20))},
                         "mul_var_weight", {3, 4}));
  // 7. A bare MatMul + Add: left to fuse_matmul_add_into_gemm, not reported.
  ir::Value* cw = g.addInitializer("cw", randomTensor({5, 4}, 21));
  outputs.push_back(node("Add", {node("MatMul", {a, cw}, "matmul_const", {3, 4}), g.addInitializer("k7", randomTensor({4}, 22))},
                         "matmul_bias", {3, 4}));
  // 8. IR < 4 style: the bias is an initializer also listed as a graph input.
  ir::Value* k8 = g.addInput("k8", f32({4, 1, 1}));
  g.setInitializer(k8, std::make_shared<const Tensor>(randomTensor({4, 1, 1}, 23)));
  outputs.push_back(node("Add", {conv("c8"), k8}, "add_default", out));
  // 9. A MatMul output of unknown rank and a [1, N] constant: it could add a dim.
  const ir::TensorType unknown{DType::Float, std::nullopt, {}, ValueKind::Tensor};
  ir::Value* r9 = g.addValue("r9", unknown);
  ir::Value* mm_unknown = g.addValue("mm_unknown", unknown);
  g.addNode("Relu", {a}, {r9}, "relu_unknown");
  g.addNode("MatMul", {r9, cw}, {mm_unknown}, "matmul_unknown");
  outputs.push_back(node("Mul", {mm_unknown, g.addInitializer("k9", randomTensor({1, 4}, 24))}, "mul_unknown_rank", {3, 4}));
  for (ir::Value* v : outputs) g.addOutput(v);
  const Ops before = opTypes(g);
  PassStats s = runPassStats(m, "fuse_mul_add_into_conv_matmul");
  EXPECT_TRUE(s.counters.empty());
  EXPECT_EQ(opTypes(g), before);
  EXPECT_EQ(s.near_misses.size(), 7u) << nearMisses(s);
  EXPECT_TRUE(nearMissMentions(s, "graph input with a default")) << nearMisses(s);
  EXPECT_TRUE(nearMissMentions(s, "rank is unknown")) << nearMisses(s);
  EXPECT_TRUE(nearMissMentions(s, "varies along axis 3")) << nearMisses(s);
  EXPECT_TRUE(nearMissMentions(s, "higher rank")) << nearMisses(s);
  EXPECT_TRUE(nearMissMentions(s, "'c3' (Conv) has 2 uses")) << nearMisses(s);
  EXPECT_TRUE(nearMissMentions(s, "divides by zero")) << nearMisses(s);
  EXPECT_TRUE(nearMissMentions(s, "weight (input 1) is not a constant")) << nearMisses(s);
}

TEST(FuseMulAddIntoConvMatMul, MatMulOfUnknownRankTakesAPerColumnScale) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  const ir::TensorType unknown{DType::Float, std::nullopt, {}, ValueKind::Tensor};
  ir::Value* x = g.addInput("x", f32({2, 3, 5}));
  ir::Value* r = g.addValue("r", unknown);  // as after a Reshape shape inference could not follow
  ir::Value* mm = g.addValue("mm", unknown);
  ir::Value* y = g.addValue("y", unknown);
  g.addNode("Relu", {x}, {r}, "relu");
  g.addNode("MatMul", {r, g.addInitializer("w", randomTensor({5, 4}, 1))}, {mm}, "matmul");
  g.addNode("Mul", {mm, g.addInitializer("s", randomTensor({4}, 2))}, {y}, "mul");
  g.addOutput(y);
  PassStats s = runPassStats(m, "fuse_mul_add_into_conv_matmul");
  EXPECT_EQ(counter(s, "mul_into_matmul"), 1) << nearMisses(s);
  EXPECT_EQ(opTypes(g), (Ops{"Relu", "MatMul"}));
}

}  // namespace
}  // namespace poprt::passes
