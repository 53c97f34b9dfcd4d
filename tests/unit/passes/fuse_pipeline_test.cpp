// The default pipeline with the folding fusions: every BatchNormalization after a Conv or a
// MatMul (+ Add) disappears and the outputs stay the same.
#include "tests/unit/passes/fuse_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;

TEST(FusePipeline, DefaultPipelineRemovesEveryBatchNorm) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  // Conv -> BN -> Relu -> Conv -> BN
  ir::Value* x = g.addInput("x", f32({1, 3, 8, 8}));
  ir::Value* c1 = f32Value(g, "c1", {1, 4, 8, 8});
  ir::Value* n1 = f32Value(g, "n1", {1, 4, 8, 8});
  ir::Value* r1 = f32Value(g, "r1", {1, 4, 8, 8});
  ir::Value* c2 = f32Value(g, "c2", {1, 5, 8, 8});
  ir::Value* y1 = f32Value(g, "y1", {1, 5, 8, 8});
  ir::Node* conv1 =
      g.addNode("Conv", {x, g.addInitializer("w1", randomTensor({4, 3, 3, 3}, 1)), g.addInitializer("b1", randomTensor({4}, 2))},
                {c1}, "conv1");
  conv1->attributes["pads"].value = std::vector<int64_t>{1, 1, 1, 1};
  addBatchNorm(g, c1, n1, 4, 1e-5f, 10, "bn1");
  g.addNode("Relu", {n1}, {r1}, "relu");
  g.addNode("Conv", {r1, g.addInitializer("w2", randomTensor({5, 4, 1, 1}, 3))}, {c2}, "conv2");
  addBatchNorm(g, c2, y1, 5, 1e-3f, 20, "bn2");
  // MatMul -> Add -> BN
  ir::Value* v = g.addInput("v", f32({3, 6}));
  ir::Value* mm = f32Value(g, "mm", {3, 4});
  ir::Value* biased = f32Value(g, "biased", {3, 4});
  ir::Value* y2 = f32Value(g, "y2", {3, 4});
  g.addNode("MatMul", {v, g.addInitializer("w3", randomTensor({6, 4}, 4))}, {mm}, "matmul");
  g.addNode("Add", {mm, g.addInitializer("b3", randomTensor({4}, 5))}, {biased}, "add");
  addBatchNorm(g, biased, y2, 4, 1e-5f, 30, "bn3");
  g.addOutput(y1);
  g.addOutput(y2);

  auto reports = runPassesChecked(m, {});  // the default pipeline
  ASSERT_FALSE(reports.empty());
  for (const auto& n : g.nodes()) EXPECT_NE(n->opType(), "BatchNormalization") << n->describe();
  // The second Conv's Relu fuses into it (fuse_conv_activation); no BatchNormalization is left.
  auto ops = opTypes(g);
  std::sort(ops.begin(), ops.end());
  EXPECT_EQ(ops, (Ops{"Conv", "ConvAct", "Gemm"}));
  // Only the folded weights are left: the originals went with dead-code elimination.
  for (const ir::Value* init : g.initializers()) EXPECT_NE(init->name().find("_folded"), std::string::npos) << init->name();
  EXPECT_EQ(g.outputs()[0]->name(), "y1");
  EXPECT_EQ(g.outputs()[1]->name(), "y2");
  int64_t folded = 0;
  for (const auto& r : reports)
    if (r.name == "fuse_batchnorm") folded = counter(r.stats, "conv") + counter(r.stats, "matmul");
  EXPECT_EQ(folded, 3);
}

}  // namespace
}  // namespace poprt::passes
