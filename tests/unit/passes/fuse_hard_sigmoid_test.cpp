#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;
using Ints = std::vector<int64_t>;

// Clip(x + 3, 0, 6) / 6 as exporters write it: Clip's bounds as attributes before opset 11 and
// as constant inputs from 11; it divides by 6 or (`mul_by_sixth`) multiplies by 1/6; `swap` puts 3 first.
ir::Value* hardSigmoidChain(Builder& b, ir::Value* x, int64_t opset, bool mul_by_sixth = false, bool swap = false,
                            float clip_max = 6.f) {
  ir::Value* three = b.constant(3.f);
  ir::Value* shifted = swap ? b.op("Add", {three, x}) : b.op("Add", {x, three});
  ir::Value* clipped = opset < 11 ? b.op("Clip", {shifted}, {{"min", 0.f}, {"max", clip_max}})
                                  : b.op("Clip", {shifted, b.constant(0.f), b.constant(clip_max)});
  return mul_by_sixth ? b.op("Mul", {clipped, b.constant(1.f / 6)}) : b.op("Div", {clipped, b.constant(6.f)});
}

TEST(FuseHardSigmoid, ChainsBecomeHardSigmoidAtEveryOpset) {
  for (int64_t opset : {9, 13})
    for (bool mul : {false, true}) {
      SCOPED_TRACE(std::to_string(opset) + (mul ? " mul" : " div"));
      ir::Model m = emptyModel(opset);
      Builder b(m);
      // x in [-5, 5): x + 3 reaches both sides of the clip.
      ir::Value* x = b.op("Mul", {b.input("x", {2, 3, 4}), b.constant(5.f)});
      ir::Value* y = hardSigmoidChain(b, x, opset, mul, mul);
      b.output(y);
      // Checked against the evaluator before and after.
      PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_hard_sigmoid"});
      EXPECT_EQ(counter(r, "hard_sigmoid"), 1);
      EXPECT_EQ(opTypes(*m.graph), (Ops{"Mul", "HardSigmoid"}));
      const ir::Node* hs = findNode(*m.graph, "HardSigmoid");
      ASSERT_NE(hs, nullptr);
      EXPECT_FLOAT_EQ(hs->attrFloat("alpha", 0), 1.f / 6);
      EXPECT_FLOAT_EQ(hs->attrFloat("beta", 0), 0.5f);
      EXPECT_EQ(hs->output(0), y);
    }
}

TEST(FuseHardSigmoid, TimesXIsHardSwishFromOpset14) {
  for (int64_t opset : {13, 14}) {
    SCOPED_TRACE(opset);
    ir::Model m = emptyModel(opset);
    Builder b(m);
    ir::Value* x = b.op("Mul", {b.input("x", {2, 3, 4}), b.constant(5.f)});
    ir::Value* y = b.op("Mul", {hardSigmoidChain(b, x, opset), x});
    b.output(y);
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_hard_sigmoid"});
    EXPECT_EQ(counter(r, "hard_swish"), opset >= 14 ? 1 : 0);
    EXPECT_EQ(opTypes(*m.graph), (opset >= 14 ? Ops{"Mul", "HardSwish"} : Ops{"Mul", "HardSigmoid", "Mul"}));
    EXPECT_EQ(m.graph->outputs()[0], y);
  }
}

TEST(FuseHardSigmoid, ConvThenTheChainTimesItsOutputIsConvActHardSwishBeforeOpset14) {
  ir::Model m = emptyModel(9);
  Builder b(m);
  ir::Value* x = b.input("x", {1, 3, 8, 8});
  ir::Value* c = b.op("Conv", {x, b.weight({4, 3, 3, 3}, 1, 3.f), b.weight({4}, 2)}, {{"pads", Ints{1, 1, 1, 1}}});
  ir::Value* y = b.op("Mul", {c, hardSigmoidChain(b, c, 9)});
  b.output(y);
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_hard_sigmoid", "fuse_conv_activation"});
  EXPECT_EQ(counter(r, "conv_HardSwish"), 1);
  EXPECT_EQ(opTypes(*m.graph), (Ops{"ConvAct"}));
  EXPECT_EQ(findNode(*m.graph, "ConvAct")->attrString("activation", ""), "HardSwish");
}

// x · Clip(x + 3, 0, 6) / 6, as PaddlePaddle exports hardswish (`swap`: Clip's result first).
ir::Value* clippedProductChain(Builder& b, ir::Value* x, int64_t opset, bool swap = false) {
  ir::Value* shifted = b.op("Add", {x, b.constant(3.f)});
  ir::Value* clipped = opset < 11 ? b.op("Clip", {shifted}, {{"min", 0.f}, {"max", 6.f}})
                                  : b.op("Clip", {shifted, b.constant(0.f), b.constant(6.f)});
  ir::Value* product = swap ? b.op("Mul", {clipped, x}) : b.op("Mul", {x, clipped});
  return b.op("Div", {product, b.constant(6.f)});
}

TEST(FuseHardSigmoid, XTimesTheClipOverSixIsHardSwishOrXTimesHardSigmoid) {
  for (int64_t opset : {9, 13, 14})
    for (bool swap : {false, true}) {
      SCOPED_TRACE(std::to_string(opset) + (swap ? " clip first" : " x first"));
      ir::Model m = emptyModel(opset);
      Builder b(m);
      ir::Value* x = b.op("Mul", {b.input("x", {2, 3, 4}), b.constant(5.f)});  // x + 3 on both sides of the clip
      ir::Value* y = clippedProductChain(b, x, opset, swap);
      b.output(y);
      // Checked against the evaluator before and after.
      PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_hard_sigmoid"});
      EXPECT_EQ(counter(r, opset >= 14 ? "hard_swish" : "hard_sigmoid"), 1);
      EXPECT_EQ(opTypes(*m.graph), (opset >= 14 ? Ops{"Mul", "HardSwish"} : Ops{"Mul", "HardSigmoid", "Mul"}));
      EXPECT_EQ(m.graph->outputs()[0], y);
    }
}

TEST(FuseHardSigmoid, ConvThenXTimesTheClipOverSixIsConvActHardSwishBeforeOpset14) {
  ir::Model m = emptyModel(9);
  Builder b(m);
  ir::Value* x = b.input("x", {1, 3, 8, 8});
  ir::Value* c = b.op("Conv", {x, b.weight({4, 3, 3, 3}, 1, 3.f), b.weight({4}, 2)}, {{"pads", Ints{1, 1, 1, 1}}});
  b.output(clippedProductChain(b, c, 9));
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_hard_sigmoid", "fuse_conv_activation"});
  EXPECT_EQ(counter(r, "conv_HardSwish"), 1);
  EXPECT_EQ(opTypes(*m.graph), (Ops{"ConvAct"}));
}

TEST(FuseHardSigmoid, AProductOfAnotherValueOrWithASharedInteriorStaysAsItIs) {
  // (z · Clip(x + 3, 0, 6)) / 6 with z not x.
  ir::Model m = emptyModel(14);
  Builder b(m);
  ir::Value* x = b.input("x", {4});
  ir::Value* clipped = b.op("Clip", {b.op("Add", {x, b.constant(3.f)}), b.constant(0.f), b.constant(6.f)});
  b.output(b.op("Div", {b.op("Mul", {b.input("z", {4}), clipped}), b.constant(6.f)}));
  EXPECT_FALSE(runPipelineChecked(m, {"infer_shapes", "fuse_hard_sigmoid"}).changed);
  // The product is also a graph output.
  ir::Model m2 = emptyModel(14);
  Builder b2(m2);
  ir::Value* x2 = b2.input("x", {4});
  ir::Value* y2 = clippedProductChain(b2, x2, 14);
  b2.output(y2);
  b2.output(y2->producer()->input(0));
  EXPECT_FALSE(runPipelineChecked(m2, {"infer_shapes", "fuse_hard_sigmoid"}).changed);
  EXPECT_EQ(opTypes(*m2.graph), (Ops{"Add", "Clip", "Mul", "Div"}));
}

TEST(FuseHardSigmoid, OtherConstantsAndSharedInteriorsStayAsTheyAre) {
  // Clip to [0, 5]: a near miss, reported.
  ir::Model m = emptyModel(13);
  Builder b(m);
  b.output(hardSigmoidChain(b, b.input("x", {4}), 13, false, false, 5.f));
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_hard_sigmoid"});
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.stats.near_misses.size(), 1u);
  // The clipped value is also a graph output.
  ir::Model m2 = emptyModel(13);
  Builder b2(m2);
  ir::Value* x2 = b2.input("x", {4});
  ir::Value* clipped = b2.op("Clip", {b2.op("Add", {x2, b2.constant(3.f)}), b2.constant(0.f), b2.constant(6.f)});
  b2.output(b2.op("Div", {clipped, b2.constant(6.f)}));
  b2.output(clipped);
  PassReport r2 = runPipelineChecked(m2, {"infer_shapes", "fuse_hard_sigmoid"});
  EXPECT_FALSE(r2.changed);
  EXPECT_EQ(opTypes(*m2.graph), (Ops{"Add", "Clip", "Div"}));
  // Any other division is no candidate at all.
  ir::Model m3 = emptyModel(13);
  Builder b3(m3);
  b3.output(b3.op("Div", {b3.input("x", {4}), b3.constant(6.f)}));
  PassReport r3 = runPipelineChecked(m3, {"infer_shapes", "fuse_hard_sigmoid"});
  EXPECT_FALSE(r3.changed);
  EXPECT_TRUE(r3.stats.near_misses.empty());
}

}  // namespace
}  // namespace poprt::passes
