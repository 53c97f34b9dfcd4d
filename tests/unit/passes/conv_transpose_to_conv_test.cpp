#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;
using Ints = std::vector<int64_t>;

TEST(ConvTransposeToConv, KernelEqualToStridesBecomesA1x1ConvAndDepthToSpace) {
  // 2-D with a bias (UNet's up-conv, 2x2 at stride 2), 1-D at 3 and 3-D at (1, 2, 2), batch 2.
  struct Case {
    Shape x, w;
    Ints strides;
    bool bias;
  };
  for (const Case& c : {Case{{2, 3, 4, 5}, {3, 6, 2, 2}, {2, 2}, true}, Case{{2, 4, 7}, {4, 2, 3}, {3}, false},
                        Case{{1, 2, 3, 2, 2}, {2, 3, 1, 2, 2}, {1, 2, 2}, true}}) {
    SCOPED_TRACE(c.x.size());
    ir::Model m = emptyModel(13);
    Builder b(m);
    std::vector<ir::Value*> inputs = {b.input("x", c.x), b.weight(c.w, 1)};
    if (c.bias) inputs.push_back(b.weight({c.w[1]}, 2));
    ir::Value* y = b.op("ConvTranspose", inputs, {{"strides", c.strides}});
    b.output(y);
    // Checked against the evaluator's ConvTranspose before.
    PassReport r = runPipelineChecked(m, {"infer_shapes", "conv_transpose_to_conv"});
    EXPECT_EQ(counter(r, "conv_transposes_to_convs"), 1);
    EXPECT_EQ(opTypes(*m.graph), (Ops{"Conv", "Reshape", "Transpose", "Reshape"}));
    EXPECT_EQ(m.graph->outputs()[0], y);
  }
}

TEST(ConvTransposeToConv, OverlappingPaddedOrGroupedOnesStay) {
  for (const auto& attrs : std::vector<std::map<std::string, ir::AttributeValue>>{
           {{"strides", Ints{2, 2}}},                                  // a 3x3 kernel: windows overlap
           {{"strides", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}},      // pads
           {{"strides", Ints{3, 3}}, {"output_padding", Ints{1, 1}}},  // output padding
           {{"strides", Ints{3, 3}}, {"group", int64_t{2}}}}) {        // groups
    ir::Model m = emptyModel(13);
    Builder b(m);
    const bool grouped = attrs.count("group") > 0;
    b.output(b.op("ConvTranspose", {b.input("x", {1, 4, 3, 3}), b.weight({4, grouped ? 1 : 2, 3, 3}, 1)}, attrs));
    PassReport r = runPipelineChecked(m, {"infer_shapes", "conv_transpose_to_conv"});
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(r.stats.near_misses.size(), 1u);
    EXPECT_EQ(opTypes(*m.graph), (Ops{"ConvTranspose"}));
  }
}

}  // namespace
}  // namespace poprt::passes
