#include "tests/unit/passes/fuse_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;

TEST(FuseBatchNorm, GroupedDilatedStridedConvWithBiasIntoNewInitializers) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({2, 4, 7, 7}));
  ir::Value* w = g.addInitializer("w", randomTensor({6, 2, 3, 3}, 1));
  ir::Value* b = g.addInitializer("b", randomTensor({6}, 2));
  ir::Value* c = f32Value(g, "c", {2, 6, 3, 3});
  ir::Value* y = f32Value(g, "y", {2, 6, 3, 3});
  ir::Node* conv = g.addNode("Conv", {x, w, b}, {c}, "conv");
  conv->attributes["group"].value = int64_t{2};
  conv->attributes["strides"].value = std::vector<int64_t>{2, 2};
  conv->attributes["dilations"].value = std::vector<int64_t>{2, 2};
  conv->attributes["pads"].value = std::vector<int64_t>{1, 1, 1, 1};
  addBatchNorm(g, c, y, 6, 1e-3f, 10);
  g.addOutput(y);  // the BN's output is a graph output: the folded Conv produces that same Value
  PassStats s = runPassStats(m, "fuse_batchnorm");
  EXPECT_EQ(counter(s, "conv"), 1);
  ASSERT_EQ(opTypes(g), (Ops{"Conv"}));
  const ir::Node* fused = g.nodes().front().get();
  EXPECT_EQ(fused->output(0), y);
  EXPECT_EQ(g.outputs().front(), y);
  EXPECT_EQ(fused->input(0), x);
  EXPECT_NE(fused->input(1), w);  // new weights; the old ones are left for dead-code elimination
  EXPECT_NE(fused->input(2), b);
  EXPECT_TRUE(fused->input(1)->isInitializer());
  EXPECT_EQ(fused->attrInt("group", 1), 2);
  EXPECT_EQ(fused->attrInts("dilations"), (std::vector<int64_t>{2, 2}));
  EXPECT_TRUE(w->isInitializer());
}

TEST(FuseBatchNorm, ConvWithoutBiasGetsOneAndConv1D) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({1, 3, 8}));
  ir::Value* w = g.addInitializer("w", randomTensor({5, 3, 3}, 3));
  ir::Value* c = f32Value(g, "c", {1, 5, 6});
  ir::Value* d = f32Value(g, "d", {1, 5, 6});
  ir::Value* y = f32Value(g, "y", {1, 5, 6});
  g.addNode("Conv", {x, w}, {c}, "conv1d");
  addBatchNorm(g, c, d, 5, 1e-5f, 20);
  g.addNode("Relu", {d}, {y}, "relu");
  g.addOutput(y);
  runPassStats(m, "fuse_batchnorm");
  ASSERT_EQ(opTypes(g), (Ops{"Conv", "Relu"}));
  const ir::Node* fused = g.nodes().front().get();
  ASSERT_EQ(fused->inputs().size(), 3u);
  EXPECT_EQ(fused->input(2)->initializer()->shape(), (Shape{5}));
  EXPECT_EQ(fused->output(0), d);
}

TEST(FuseBatchNorm, GroupedConvTransposeFoldsPerOutputChannel) {
  for (int64_t group : {1, 2}) {
    ir::Model m = emptyModel();
    ir::Graph& g = *m.graph;
    ir::Value* x = g.addInput("x", f32({1, 4, 3, 3}));
    // [C_in, C_out/group, kH, kW]: 4 input channels, 3 * group output channels.
    ir::Value* w = g.addInitializer("w", randomTensor({4, 3, 2, 2}, 4));
    ir::Value* b = g.addInitializer("b", randomTensor({3 * group}, 5));
    ir::Value* c = f32Value(g, "c", {1, 3 * group, 6, 6});
    ir::Value* y = f32Value(g, "y", {1, 3 * group, 6, 6});
    ir::Node* ct = g.addNode("ConvTranspose", {x, w, b}, {c}, "deconv");
    ct->attributes["group"].value = group;
    ct->attributes["strides"].value = std::vector<int64_t>{2, 2};
    addBatchNorm(g, c, y, 3 * group, 1e-5f, 30);
    g.addOutput(y);
    PassStats s = runPassStats(m, "fuse_batchnorm");
    EXPECT_EQ(counter(s, "conv_transpose"), 1) << "group " << group;
    EXPECT_EQ(opTypes(g), (Ops{"ConvTranspose"}));
    EXPECT_EQ(g.nodes().front()->attrInt("group", 1), group);
  }
}

TEST(FuseBatchNorm, GemmTransBAlphaBetaAndEveryCShape) {
  struct Case {
    bool trans_b;
    Shape c_shape;  // empty: no C
  };
  for (const Case& k :
       {Case{false, {4}}, Case{true, {4}}, Case{true, {3, 4}}, Case{false, {3, 1}}, Case{false, {}}, Case{true, {1, 4}}}) {
    ir::Model m = emptyModel();
    ir::Graph& g = *m.graph;
    ir::Value* a = g.addInput("a", f32({3, 5}));
    ir::Value* b = g.addInitializer("b", randomTensor(k.trans_b ? Shape{4, 5} : Shape{5, 4}, 6));
    std::vector<ir::Value*> inputs = {a, b};
    if (!k.c_shape.empty()) inputs.push_back(g.addInitializer("c", randomTensor(k.c_shape, 7)));
    ir::Value* o = f32Value(g, "o", {3, 4});
    ir::Value* y = f32Value(g, "y", {3, 4});
    ir::Node* gemm = g.addNode("Gemm", inputs, {o}, "fc");
    gemm->attributes["transB"].value = int64_t{k.trans_b};
    gemm->attributes["alpha"].value = 0.7f;
    gemm->attributes["beta"].value = 1.3f;
    addBatchNorm(g, o, y, 4, 1e-5f, 40);
    g.addOutput(y);
    PassStats s = runPassStats(m, "fuse_batchnorm");
    EXPECT_EQ(counter(s, "gemm"), 1) << nearMisses(s);
    ASSERT_EQ(opTypes(g), (Ops{"Gemm"}));
    const ir::Node* fused = g.nodes().front().get();
    EXPECT_EQ(fused->attrInt("transB", 0), int64_t{k.trans_b});
    EXPECT_FLOAT_EQ(fused->attrFloat("alpha", 1), 0.7f);
    EXPECT_FLOAT_EQ(fused->attrFloat("beta", 0), 1.0f);
  }
}

TEST(FuseBatchNorm, MatMulWith2DInputBecomesGemm) {
  for (bool with_add : {false, true}) {
    ir::Model m = emptyModel();
    ir::Graph& g = *m.graph;
    ir::Value* x = g.addInput("x", f32({3, 5}));
    ir::Value* w = g.addInitializer("w", randomTensor({5, 4}, 8));
    ir::Value* mm = f32Value(g, "mm", {3, 4});
    ir::Value* y = f32Value(g, "y", {3, 4});
    g.addNode("MatMul", {x, w}, {mm}, "matmul");
    ir::Value* bn_in = mm;
    if (with_add) {  // MatMul -> Add (commuted, [1, N] bias) -> BN
      bn_in = f32Value(g, "biased", {3, 4});
      g.addNode("Add", {g.addInitializer("bias", randomTensor({1, 4}, 9)), mm}, {bn_in}, "add");
    }
    addBatchNorm(g, bn_in, y, 4, 1e-4f, 50);
    g.addOutput(y);
    PassStats s = runPassStats(m, "fuse_batchnorm");
    EXPECT_EQ(counter(s, "matmul"), 1) << nearMisses(s);
    ASSERT_EQ(opTypes(g), (Ops{"Gemm"}));
    EXPECT_EQ(g.nodes().front()->output(0), y);
    EXPECT_EQ(g.nodes().front()->input(2)->initializer()->shape(), (Shape{4}));
  }
}

TEST(FuseBatchNorm, ConvThenBiasAddThenBatchNorm) {
  // CNTK-style: the conv bias is a separate Add of a [C,1,1] constant.
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({1, 2, 5, 5}));
  ir::Value* w = g.addInitializer("w", randomTensor({3, 2, 3, 3}, 11));
  ir::Value* c = f32Value(g, "c", {1, 3, 3, 3});
  ir::Value* cb = f32Value(g, "cb", {1, 3, 3, 3});
  ir::Value* y = f32Value(g, "y", {1, 3, 3, 3});
  g.addNode("Conv", {x, w}, {c}, "conv");
  g.addNode("Add", {c, g.addInitializer("bias", randomTensor({3, 1, 1}, 12))}, {cb}, "bias_add");
  addBatchNorm(g, cb, y, 3, 1e-5f, 60);
  g.addOutput(y);
  PassStats s = runPassStats(m, "fuse_batchnorm");
  EXPECT_EQ(counter(s, "conv"), 1);
  EXPECT_EQ(opTypes(g), (Ops{"Conv"}));
}

TEST(FuseBatchNorm, MustNotFire) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({1, 2, 4, 4}));
  ir::Value* w = g.addInitializer("w", randomTensor({3, 2, 1, 1}, 13));
  // 1. The conv output has a second use.
  ir::Value* c1 = f32Value(g, "c1", {1, 3, 4, 4});
  ir::Value* y1 = f32Value(g, "y1", {1, 3, 4, 4});
  ir::Value* r1 = f32Value(g, "r1", {1, 3, 4, 4});
  g.addNode("Conv", {x, w}, {c1}, "conv_shared");
  addBatchNorm(g, c1, y1, 3, 1e-5f, 70, "bn_shared");
  g.addNode("Relu", {c1}, {r1}, "relu_shared");
  // 2. The conv output is a graph output.
  ir::Value* c2 = f32Value(g, "c2", {1, 3, 4, 4});
  ir::Value* y2 = f32Value(g, "y2", {1, 3, 4, 4});
  g.addNode("Conv", {x, w}, {c2}, "conv_returned");
  addBatchNorm(g, c2, y2, 3, 1e-5f, 80, "bn_returned");
  // 3. The mean is a graph input, not a constant.
  ir::Value* mean = g.addInput("mean", f32({3}));
  ir::Value* c3 = f32Value(g, "c3", {1, 3, 4, 4});
  ir::Value* y3 = f32Value(g, "y3", {1, 3, 4, 4});
  g.addNode("Conv", {x, w}, {c3}, "conv_mean");
  ir::Node* bn3 = addBatchNorm(g, c3, y3, 3, 1e-5f, 90, "bn_input_mean");
  bn3->setInput(3, mean);
  // 4. A rank-3 MatMul output: BN normalises axis 1 (3 steps), not the MatMul's columns.
  ir::Value* s = g.addInput("s", f32({2, 3, 5}));
  ir::Value* mw = g.addInitializer("mw", randomTensor({5, 4}, 14));
  ir::Value* mm = f32Value(g, "mm", {2, 3, 4});
  ir::Value* y4 = f32Value(g, "y4", {2, 3, 4});
  g.addNode("MatMul", {s, mw}, {mm}, "matmul3d");
  addBatchNorm(g, mm, y4, 3, 1e-5f, 100, "bn_rank3");
  // 5. Training mode.
  ir::Value* c5 = f32Value(g, "c5", {1, 3, 4, 4});
  ir::Value* y5 = f32Value(g, "y5", {1, 3, 4, 4});
  g.addNode("Conv", {x, w}, {c5}, "conv_train");
  addBatchNorm(g, c5, y5, 3, 1e-5f, 110, "bn_train")->attributes["training_mode"].value = int64_t{1};
  // 6. Not after a linear op.
  ir::Value* y6 = f32Value(g, "y6", {1, 2, 4, 4});
  addBatchNorm(g, x, y6, 2, 1e-5f, 120, "bn_on_input");
  // 7. IR < 4 style: the scale is an initializer also listed as a graph input (an overridable default).
  ir::Value* c7 = f32Value(g, "c7", {1, 3, 4, 4});
  ir::Value* y7 = f32Value(g, "y7", {1, 3, 4, 4});
  g.addNode("Conv", {x, w}, {c7}, "conv_default");
  ir::Value* scale_default = g.addInput("scale_default", f32({3}));
  g.setInitializer(scale_default, std::make_shared<const Tensor>(randomTensor({3}, 130)));
  addBatchNorm(g, c7, y7, 3, 1e-5f, 140, "bn_default")->setInput(1, scale_default);
  for (ir::Value* v : {y1, r1, c2, y2, y3, y4, y5, y6, y7}) g.addOutput(v);
  const size_t nodes = g.numNodes();
  PassStats st = runPassStats(m, "fuse_batchnorm");
  EXPECT_TRUE(st.counters.empty());
  EXPECT_EQ(g.numNodes(), nodes);
  EXPECT_EQ(st.near_misses.size(), 7u) << nearMisses(st);
  EXPECT_TRUE(nearMissMentions(st, "scale is a graph input with a default")) << nearMisses(st);
  EXPECT_TRUE(nearMissMentions(st, "'conv_shared' (Conv) has 2 uses")) << nearMisses(st);
  EXPECT_TRUE(nearMissMentions(st, "'conv_returned' (Conv) is a graph output")) << nearMisses(st);
  EXPECT_TRUE(nearMissMentions(st, "input_mean is not a constant")) << nearMisses(st);
  EXPECT_TRUE(nearMissMentions(st, "whose channels are on axis 2")) << nearMisses(st);
  EXPECT_TRUE(nearMissMentions(st, "training_mode")) << nearMisses(st);
  EXPECT_TRUE(nearMissMentions(st, "graph input")) << nearMisses(st);
}

}  // namespace
}  // namespace poprt::passes
