#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;
using Ints = std::vector<int64_t>;

// x [1, 4, 5, 5] -> `affine` -> a 1x1 Conv (or 3x3 with `pads`) to 6 channels, with a bias.
ir::Value* convAfter(Builder& b, ir::Value* h, Ints kernel = {1, 1}, Ints pads = {0, 0, 0, 0}) {
  return b.op("Conv", {h, b.weight({6, 4, kernel[0], kernel[1]}, 1), b.weight({6}, 2)}, {{"pads", pads}});
}

TEST(FoldAffineIntoConvInput, ScaleAndShiftBeforeAConvThatPadsNothing) {
  // Mul then Add (PP-OCR's learnable affine), Add alone, Div alone, and a 3x3 conv without pads.
  for (int form = 0; form < 4; ++form) {
    SCOPED_TRACE(form);
    ir::Model m = emptyModel(13);
    Builder b(m);
    ir::Value* x = b.input("x", {1, 4, 5, 5});
    ir::Value* h = form == 0 || form == 3 ? b.op("Add", {b.op("Mul", {x, b.constant(1.7f)}), b.constant(-0.4f)})
                   : form == 1            ? b.op("Add", {b.constant(0.25f), x})
                                          : b.op("Div", {x, b.constant(4.0f)});
    b.output(form == 3 ? convAfter(b, h, {3, 3}) : convAfter(b, h));
    // Checked against the evaluator before and after.
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fold_affine_into_conv_input"});
    EXPECT_EQ(counter(r, "affines_into_conv_inputs"), 1);
    EXPECT_EQ(opTypes(*m.graph), (Ops{"Conv"}));
  }
}

TEST(FoldAffineIntoConvInput, APaddedConvOrASharedAffineStays) {
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* h = b.op("Add", {b.op("Mul", {b.input("x", {1, 4, 5, 5}), b.constant(1.7f)}), b.constant(-0.4f)});
  b.output(convAfter(b, h, {3, 3}, {1, 1, 1, 1}));
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fold_affine_into_conv_input"});
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.stats.near_misses.size(), 1u);
  // The affine's result is also a graph output.
  ir::Model m2 = emptyModel(13);
  Builder b2(m2);
  ir::Value* h2 = b2.op("Add", {b2.input("x", {1, 4, 5, 5}), b2.constant(0.5f)});
  b2.output(convAfter(b2, h2));
  b2.output(h2);
  EXPECT_FALSE(runPipelineChecked(m2, {"infer_shapes", "fold_affine_into_conv_input"}).changed);
  EXPECT_EQ(opTypes(*m2.graph), (Ops{"Add", "Conv"}));
}

}  // namespace
}  // namespace poprt::passes
