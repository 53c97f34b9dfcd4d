#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ints = std::vector<int64_t>;

// A 3x3 conv of dilation `d` with pads `pad` (all four) and strides `stride` over x [1, 4, h, w].
ir::Value* dilatedConv(Builder& b, ir::Value* x, int64_t d, Ints pads, int64_t stride = 1) {
  return b.op("Conv", {x, b.weight({6, 4, 3, 3}, 1), b.weight({6}, 2)},
              {{"kernel_shape", Ints{3, 3}}, {"dilations", Ints{d, d}}, {"pads", pads}, {"strides", Ints{stride, stride}}});
}

const ir::Node& onlyConv(const ir::Model& m) {
  const ir::Node* conv = findNode(*m.graph, "Conv");
  EXPECT_NE(conv, nullptr);
  return *conv;
}

TEST(TrimConvTaps, ADilationPastTheMapLeavesTheCentreTap) {
  // ASPP at dilation 24 over 6x6: the outer taps read padding for every output.
  ir::Model m = emptyModel(13);
  Builder b(m);
  b.output(dilatedConv(b, b.input("x", {1, 4, 6, 6}), 24, {24, 24, 24, 24}));
  // Checked against the evaluator before and after.
  PassReport r = runPipelineChecked(m, {"infer_shapes", "trim_conv_taps"});
  EXPECT_EQ(counter(r, "convs_trimmed"), 1);
  EXPECT_EQ(counter(r, "taps_dropped"), 8);
  const ir::Node& conv = onlyConv(m);
  EXPECT_EQ(conv.attrInts("pads"), (Ints{0, 0, 0, 0}));
  EXPECT_EQ(conv.attrInts("kernel_shape"), (Ints{1, 1}));
  EXPECT_EQ(constantOf(conv.input(1))->shape(), (Shape{6, 4, 1, 1}));
}

TEST(TrimConvTaps, OneSideOrOneDimAlone) {
  // 8 rows, pads 5 before and 0 after, dilation 5: 3 output rows, and the first tap reads rows -5
  // to -3 only. 12 columns with pads 1: every tap reads some column.
  ir::Model m = emptyModel(13);
  Builder b(m);
  b.output(dilatedConv(b, b.input("x", {1, 4, 8, 12}), 5, {5, 1, 0, 1}));
  PassReport r = runPipelineChecked(m, {"infer_shapes", "trim_conv_taps"});
  EXPECT_EQ(counter(r, "convs_trimmed"), 1);
  const ir::Node& conv = onlyConv(m);
  // Rows: taps 1 and 2 (rows o and o + 5) stay, pad 0 before; columns: all three read the input.
  EXPECT_EQ(constantOf(conv.input(1))->shape(), (Shape{6, 4, 2, 3}));
  EXPECT_EQ(conv.attrInts("pads"), (Ints{0, 1, 0, 1}));
}

TEST(TrimConvTaps, StridedOutputsThatReachEveryTapStay) {
  // Every tap reads the input for some output: nothing to trim.
  ir::Model m = emptyModel(13);
  Builder b(m);
  b.output(dilatedConv(b, b.input("x", {1, 4, 9, 9}), 4, {4, 4, 4, 4}, 2));
  EXPECT_FALSE(runPipelineChecked(m, {"infer_shapes", "trim_conv_taps"}).changed);
  // Trimming would need a negative pad: one output (stride 5), whose taps read rows -1, 1 and 3 of
  // 2; dropping tap 0 would leave pad 1 - 2 before.
  ir::Model m2 = emptyModel(13);
  Builder b2(m2);
  b2.output(dilatedConv(b2, b2.input("x", {1, 4, 2, 2}), 2, {1, 1, 2, 2}, 5));
  EXPECT_FALSE(runPipelineChecked(m2, {"infer_shapes", "trim_conv_taps"}).changed);
}

}  // namespace
}  // namespace poprt::passes
