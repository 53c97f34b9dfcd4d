#include "tests/unit/passes/fuse_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;

TEST(FuseMatMulAddIntoGemm, EveryBiasShapeGemmAllowsEitherOperandOrder) {
  // [N], [1,N], [M,N], [M,1], scalar, [1], and a bias that is not a constant (a graph input).
  for (Shape bias_shape : {Shape{4}, Shape{1, 4}, Shape{3, 4}, Shape{3, 1}, Shape{}, Shape{1}}) {
    for (bool commuted : {false, true}) {
      for (bool constant : {true, false}) {
        ir::Model m = emptyModel();
        ir::Graph& g = *m.graph;
        ir::Value* a = g.addInput("a", f32({3, 5}));
        ir::Value* b = g.addInitializer("b", randomTensor({5, 4}, 1));
        ir::Value* bias = constant ? g.addInitializer("bias", randomTensor(bias_shape, 2)) : g.addInput("bias", f32(bias_shape));
        ir::Value* mm = f32Value(g, "mm", {3, 4});
        ir::Value* y = f32Value(g, "y", {3, 4});
        g.addNode("MatMul", {a, b}, {mm}, "matmul");
        g.addNode("Add", commuted ? std::vector<ir::Value*>{bias, mm} : std::vector<ir::Value*>{mm, bias}, {y}, "add");
        g.addOutput(y);
        PassStats s = runPassStats(m, "fuse_matmul_add_into_gemm");
        EXPECT_EQ(counter(s, "gemm"), 1) << shapeToString(bias_shape) << nearMisses(s);
        ASSERT_EQ(opTypes(g), (Ops{"Gemm"}));
        const ir::Node* gemm = g.nodes().front().get();
        EXPECT_EQ(gemm->input(0), a);
        EXPECT_EQ(gemm->input(1), b);
        EXPECT_EQ(gemm->input(2), bias);
        EXPECT_EQ(gemm->output(0), y);
        EXPECT_EQ(gemm->name(), "matmul");
      }
    }
  }
}

TEST(FuseMatMulAddIntoGemm, SymbolicBatchRows) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::TensorType t = f32({1, 5});
  (*t.dims)[0] = ir::Dim::symbolic("batch");
  ir::Value* a = g.addInput("a", t);
  ir::Value* b = g.addInitializer("b", randomTensor({5, 4}, 3));
  ir::TensorType o = f32({1, 4});
  (*o.dims)[0] = ir::Dim::symbolic("batch");
  ir::Value* mm = g.addValue("mm", o);
  ir::Value* y = g.addValue("y", o);
  g.addNode("MatMul", {a, b}, {mm}, "matmul");
  g.addNode("Add", {mm, g.addInitializer("bias", randomTensor({1, 4}, 4))}, {y}, "add");
  g.addOutput(y);
  PipelineOptions options;
  options.passes = {"fuse_matmul_add_into_gemm"};
  auto reports = runPipeline(m, options);
  ASSERT_TRUE(reports.ok());
  EXPECT_EQ(opTypes(g), (Ops{"Gemm"}));
}

// A with batch dims (a transformer's [batch, tokens, features]): a Gemm of its rows between two
// Reshapes, for every bias over the columns, constant or not, in either operand order. The checked
// run compares the evaluator's outputs before and after.
TEST(FuseMatMulAddIntoGemm, BatchedRowsBetweenReshapes) {
  for (Shape bias_shape : {Shape{4}, Shape{1, 4}, Shape{}, Shape{1}}) {
    for (bool commuted : {false, true}) {
      for (bool constant : {true, false}) {
        ir::Model m = emptyModel();
        ir::Graph& g = *m.graph;
        ir::Value* a = g.addInput("a", f32({2, 3, 3, 5}));
        ir::Value* b = g.addInitializer("b", randomTensor({5, 4}, 1));
        ir::Value* bias = constant ? g.addInitializer("bias", randomTensor(bias_shape, 2)) : g.addInput("bias", f32(bias_shape));
        ir::Value* mm = f32Value(g, "mm", {2, 3, 3, 4});
        ir::Value* y = f32Value(g, "y", {2, 3, 3, 4});
        g.addNode("MatMul", {a, b}, {mm}, "matmul");
        g.addNode("Add", commuted ? std::vector<ir::Value*>{bias, mm} : std::vector<ir::Value*>{mm, bias}, {y}, "add");
        g.addOutput(y);
        PassStats s = runPassStats(m, "fuse_matmul_add_into_gemm");
        EXPECT_EQ(counter(s, "gemm_of_rows"), 1) << shapeToString(bias_shape) << nearMisses(s);
        ASSERT_EQ(opTypes(g), (Ops{"Reshape", "Gemm", "Reshape"}));
        const ir::Node* gemm = std::next(g.nodes().begin())->get();
        EXPECT_EQ(gemm->name(), "matmul");
        EXPECT_EQ(gemm->input(0)->type.toString(), "float32[18,5]");
        EXPECT_EQ(gemm->input(0)->producer()->input(0), a);
        EXPECT_EQ(gemm->input(1), b);
        EXPECT_EQ(gemm->input(2), bias);
        EXPECT_EQ(gemm->output(0)->type.toString(), "float32[18,4]");
        EXPECT_EQ(g.nodes().back()->output(0), y);
      }
    }
  }
}

// A weight of no columns (a hostile or degenerate model): an empty output stays a MatMul + Add
// (a 0 in a Reshape's shape would copy a dim; the rewrite divided by N, a crash).
TEST(FuseMatMulAddIntoGemm, BatchedRowsOfAnEmptyOutputStay) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* mm = f32Value(g, "mm", {2, 3, 0});
  ir::Value* y = f32Value(g, "y", {2, 3, 0});
  g.addNode("MatMul", {g.addInput("a", f32({2, 3, 5})), g.addInitializer("b", randomTensor({5, 0}, 1))}, {mm}, "matmul");
  g.addNode("Add", {mm, g.addInitializer("bias", randomTensor({0}, 2))}, {y}, "add");
  g.addOutput(y);
  PassStats s = runPassStats(m, "fuse_matmul_add_into_gemm");
  EXPECT_EQ(opTypes(g), (Ops{"MatMul", "Add"}));
  EXPECT_TRUE(nearMissMentions(s, "'matmul' (MatMul) has rank 3 and no elements")) << nearMisses(s);
}

// Rows of a dynamic batch are not known before --input_shape fixes them: no Reshape to write.
TEST(FuseMatMulAddIntoGemm, SymbolicBatchOfA3DInputStays) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::TensorType t = f32({1, 3, 5}), o = f32({1, 3, 4});
  (*t.dims)[0] = (*o.dims)[0] = ir::Dim::symbolic("batch");
  ir::Value* mm = g.addValue("mm", o);
  ir::Value* y = g.addValue("y", o);
  g.addNode("MatMul", {g.addInput("a", t), g.addInitializer("b", randomTensor({5, 4}, 3))}, {mm}, "matmul");
  g.addNode("Add", {mm, g.addInitializer("bias", randomTensor({4}, 4))}, {y}, "add");
  g.addOutput(y);
  PipelineOptions options;
  options.passes = {"fuse_matmul_add_into_gemm"};
  auto reports = runPipeline(m, options);
  ASSERT_TRUE(reports.ok());
  EXPECT_EQ(opTypes(g), (Ops{"MatMul", "Add"}));
  ASSERT_EQ(reports->size(), 1u);
  EXPECT_TRUE(nearMissMentions(reports->front().stats, "'matmul' (MatMul) has rank 3 and a dynamic shape"))
      << nearMisses(reports->front().stats);
}

TEST(FuseMatMulAddIntoGemm, MustNotFire) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* a = g.addInput("a", f32({3, 5}));
  ir::Value* a3 = g.addInput("a3", f32({2, 3, 5}));
  ir::Value* a1 = g.addInput("a1", f32({5}));
  ir::Value* bvar = g.addInput("bvar", f32({5, 4}));
  ir::Value* b = g.addInitializer("b", randomTensor({5, 4}, 5));
  ir::Value* bias = g.addInitializer("bias", randomTensor({4}, 6));
  std::vector<ir::Value*> outputs;
  auto matmulAdd = [&](const std::string& name, ir::Value* x, ir::Value* w, ir::Value* c, Shape mm_shape, Shape out_shape) {
    ir::Value* mm = f32Value(g, name + "_mm", mm_shape);
    ir::Value* y = f32Value(g, name + "_y", out_shape);
    g.addNode("MatMul", {x, w}, {mm}, name);
    g.addNode("Add", {mm, c}, {y}, name + "_add");
    outputs.push_back(y);
    return mm;
  };
  matmulAdd("rank3", a3, b, g.addInitializer("row_bias", randomTensor({3, 1}, 8)), {2, 3, 4},
            {2, 3, 4});                               // 1. 3-D A, bias over rows
  matmulAdd("rank1", a1, b, bias, {4}, {4});          // 2. A is 1-D
  matmulAdd("var_b", a, bvar, bias, {3, 4}, {3, 4});  // 3. B is not a constant
  matmulAdd("big_bias", a, b, g.addInitializer("bias3", randomTensor({2, 3, 4}, 7)), {3, 4}, {2, 3, 4});  // 4. rank-3 bias
  outputs.push_back(matmulAdd("returned", a, b, bias, {3, 4}, {3, 4}));  // 5. the MatMul output is returned
  ir::Value* shared = matmulAdd("shared", a, b, bias, {3, 4}, {3, 4});   // 6. ... or used twice
  ir::Value* r = f32Value(g, "r", {3, 4});
  g.addNode("Relu", {shared}, {r}, "relu");
  outputs.push_back(r);
  for (ir::Value* v : outputs) g.addOutput(v);
  const Ops before = opTypes(g);
  PassStats s = runPassStats(m, "fuse_matmul_add_into_gemm");
  EXPECT_TRUE(s.counters.empty());
  EXPECT_EQ(opTypes(g), before);
  EXPECT_EQ(s.near_misses.size(), 6u) << nearMisses(s);
  EXPECT_TRUE(nearMissMentions(s, "has rank 3 and a bias of shape [3,1], not one over its columns")) << nearMisses(s);
  EXPECT_TRUE(nearMissMentions(s, "has rank 1: Gemm needs a 2-D A")) << nearMisses(s);
  EXPECT_TRUE(nearMissMentions(s, "B of node 'var_b' (MatMul) is not a constant")) << nearMisses(s);
  EXPECT_TRUE(nearMissMentions(s, "does not broadcast to [M, N] = [3, 4]")) << nearMisses(s);
  EXPECT_TRUE(nearMissMentions(s, "'returned' (MatMul) is a graph output")) << nearMisses(s);
  EXPECT_TRUE(nearMissMentions(s, "'shared' (MatMul) has 2 uses")) << nearMisses(s);
}

}  // namespace
}  // namespace poprt::passes
