#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;

TEST(ShapeFixpoint, FoldsShapeChainsThatNeedASecondInference) {
  // Reshape(x, Concat(Shape(x)[0], [-1])) is untyped until its target folds; the Shape of its
  // result then folds in the next round, and the second Reshape becomes a no-op.
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* x = b.input("x", {2, 3, 4});
  auto target = [&](ir::Value* v) {
    ir::Value* d0 =
        b.op("Unsqueeze", {b.op("Gather", {b.op("Shape", {v}), b.scalarInt(0)}, {{"axis", int64_t{0}}}), b.ints({0})});
    return b.op("Concat", {d0, b.ints({-1})}, {{"axis", int64_t{0}}});
  };
  ir::Value* r1 = b.op("Reshape", {x, target(x)});
  ir::Value* r2 = b.op("Reshape", {r1, target(r1)});
  b.output(b.op("Relu", {r2}));
  PassReport r = runPipelineChecked(m, {"infer_shapes", "shape_fixpoint"});
  EXPECT_EQ(opTypes(*m.graph), (Ops{"Reshape", "Relu"}));
  EXPECT_EQ(m.graph->outputs()[0]->type.toString(), "float32[2,12]");
  EXPECT_GE(counter(r, "folded"), 1);
}

TEST(ShapeFixpoint, StopsWhenNothingChanges) {
  // An inference Dropout is removed once; the loop must not see it again and again.
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* x = b.input("x", {2, 3});
  b.output(b.op("Relu", {b.op("Dropout", {x})}));
  PassReport r = runPipelineChecked(m, {"infer_shapes", "shape_fixpoint"});
  EXPECT_EQ(opTypes(*m.graph), (Ops{"Relu"}));
  EXPECT_EQ(counter(r, "dropout"), 1);
  EXPECT_LE(counter(r, "rounds"), 1);
}

}  // namespace
}  // namespace poprt::passes
