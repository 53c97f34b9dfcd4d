#include "tests/unit/passes/pass_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;

TEST(ConstantFolding, FoldsConstantChainsAndShapeOfStaticTensors) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({2, 3, 4}));
  ir::Value* a = g.addInitializer("a", randomTensor({3, 4}, 5));
  ir::Value* b = g.addInitializer("b", randomTensor({3, 4}, 6));
  ir::Value* ab = g.addValue("ab", f32({3, 4}));
  ir::Value* shape = g.addValue("shape", ir::TensorType::of(DType::Int64, {3}));
  ir::Value* flat = g.addInitializer("flat", int64s({2, 12}));
  ir::Value* y0 = g.addValue("y0", f32({2, 3, 4}));
  ir::Value* y = g.addValue("y", f32({2, 3, 4}));
  ir::Value* z = g.addValue("z", f32({2, 12}));
  ir::Value* w = g.addValue("w", f32({2, 3, 4}));
  g.addNode("Add", {a, b}, {ab}, "const_add");     // constant: folds
  g.addNode("Shape", {x}, {shape}, "shape_of_x");  // static shape: folds
  g.addNode("Mul", {x, ab}, {y0}, "mul");          // depends on x: stays
  g.addNode("Reshape", {y0, shape}, {y}, "reshape_back");
  g.addNode("Reshape", {y, flat}, {z}, "flatten");
  g.addNode("Relu", {y}, {w}, "relu");
  g.addOutput(z);
  g.addOutput(w);
  EXPECT_TRUE(runPassChecked(m, "constant_folding"));
  EXPECT_EQ(opTypes(g), (Ops{"Mul", "Reshape", "Reshape", "Relu"}));
  EXPECT_TRUE(ab->isInitializer());
  EXPECT_EQ(shape->initializer()->data<int64_t>()[2], 4);
}

TEST(ConstantFolding, LeavesRandomOpsGraphInputsAndLargeResults) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({2}));
  // An initializer that is also a graph input is a default the caller may override.
  ir::Value* d = g.addInput("d", f32({2}));
  g.setInitializer(d, std::make_shared<const Tensor>(randomTensor({2}, 3)));
  ir::Value* dd = g.addValue("dd", f32({2}));
  ir::Value* y = g.addValue("y", f32({2}));
  g.addNode("Neg", {d}, {dd}, "neg_default");
  g.addNode("Add", {x, dd}, {y}, "add");
  g.addOutput(y);
  EXPECT_FALSE(runPassChecked(m, "constant_folding"));
  EXPECT_EQ(opTypes(g), (Ops{"Neg", "Add"}));
}

TEST(ConstantFolding, RespectsMaxTensorSize) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({64}));
  ir::Value* c = g.addInitializer("c", randomTensor({64}, 2));
  ir::Value* cc = g.addValue("cc", f32({64}));
  ir::Value* y = g.addValue("y", f32({64}));
  g.addNode("Exp", {c}, {cc}, "exp");
  g.addNode("Mul", {x, cc}, {y}, "mul");
  g.addOutput(y);
  PipelineOptions options;
  options.passes = {"constant_folding"};
  options.max_tensor_size = 100;  // 64 floats = 256 bytes: too big
  auto reports = runPipeline(m, options);
  ASSERT_TRUE(reports.ok());
  EXPECT_FALSE(reports->front().changed);
  EXPECT_EQ(reports->front().stats.near_misses.size(), 1u);
}

TEST(IdentityElimination, RemovesNoOpsAndMergesPairs) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({2, 3}));
  ir::Value* a = g.addValue("a", f32({2, 3}));
  ir::Value* b = g.addValue("b", f32({2, 3}));
  ir::Value* c = g.addValue("c", f32({3, 2}));
  ir::Value* d = g.addValue("d", f32({2, 3}));
  ir::Value* e = g.addValue("e", f32({2, 3}));
  ir::Value* y = g.addValue("y", f32({2, 3}));
  g.addNode("Identity", {x}, {a}, "id");
  ir::Node* cast = g.addNode("Cast", {a}, {b}, "cast_same");
  cast->attributes["to"].value = int64_t{1};
  g.addNode("Transpose", {b}, {c}, "t1");
  g.addNode("Transpose", {c}, {d}, "t2");  // undoes t1
  ir::Node* drop = g.addNode("Dropout", {d}, {e}, "dropout");
  (void)drop;
  g.addNode("Relu", {e}, {y}, "relu");
  g.addOutput(y);
  EXPECT_TRUE(runPassChecked(m, "identity_elimination"));
  // Relu now reads x; the removed nodes are left for dead-code elimination.
  EXPECT_EQ(g.nodes().back()->input(0), x);
  EXPECT_TRUE(runPassChecked(m, "dead_code_elimination"));
  EXPECT_EQ(opTypes(g), (Ops{"Relu"}));
}

// Dropout in training mode passes X unchanged only when its ratio is a constant 0 (torchvision's
// Swin exports its attention dropout so); a real ratio drops elements and stays.
TEST(IdentityElimination, TrainingDropoutGoesOnlyWithRatioZero) {
  for (float ratio : {0.0f, 0.5f}) {
    ir::Model m = emptyModel();
    ir::Graph& g = *m.graph;
    ir::Value* x = g.addInput("x", f32({2, 3}));
    Tensor r(DType::Float, {});
    r.data<float>()[0] = ratio;
    Tensor training(DType::Bool, {});
    training.data<bool>()[0] = true;
    ir::Value* e = g.addValue("e", f32({2, 3}));
    ir::Value* y = g.addValue("y", f32({2, 3}));
    g.addNode("Dropout", {x, g.addInitializer("ratio", std::move(r)), g.addInitializer("training", std::move(training))}, {e},
              "dropout");
    g.addNode("Relu", {e}, {y}, "relu");
    g.addOutput(y);
    EXPECT_EQ(runPassChecked(m, "identity_elimination"), ratio == 0.0f) << "ratio " << ratio;
    EXPECT_EQ(g.nodes().back()->input(0) == x, ratio == 0.0f) << "ratio " << ratio;
  }
}

TEST(IdentityElimination, KeepsGraphOutputsAndRealWork) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({2, 3}));
  ir::Value* a = g.addValue("a", f32({3, 2}));
  ir::Value* y = g.addValue("y", f32({2, 3}));
  ir::Node* t = g.addNode("Transpose", {x}, {a}, "real_transpose");
  t->attributes["perm"].value = std::vector<int64_t>{1, 0};
  g.addNode("Identity", {x}, {y}, "returned");  // its output is a graph output: it stays
  g.addOutput(a);
  g.addOutput(y);
  EXPECT_FALSE(runPassChecked(m, "identity_elimination"));
  EXPECT_EQ(opTypes(g), (Ops{"Transpose", "Identity"}));
}

TEST(DeadCode, RemovesUnusedNodesAndInitializersButKeepsOutputs) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({4}));
  ir::Value* w = g.addInitializer("unused_w", randomTensor({4}, 1));
  ir::Value* a = g.addValue("a", f32({4}));
  ir::Value* b = g.addValue("b", f32({4}));
  ir::Value* y = g.addValue("y", f32({4}));
  g.addNode("Mul", {x, w}, {a}, "dead_mul");
  g.addNode("Neg", {a}, {b}, "dead_neg");
  g.addNode("Relu", {x}, {y}, "live");
  g.addOutput(y);
  EXPECT_TRUE(runPassChecked(m, "dead_code_elimination"));
  EXPECT_EQ(opTypes(g), (Ops{"Relu"}));
  EXPECT_TRUE(g.initializers().empty());
  EXPECT_FALSE(runPassChecked(m, "dead_code_elimination"));  // nothing left to remove
}

TEST(PassManager, UnknownPassesAreErrorsListingTheKnownOnes) {
  PipelineOptions options;
  options.passes = {"constant_folding", "no_such_pass"};
  auto r = resolvePipeline(options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("unknown pass 'no_such_pass' (passes: infer_shapes,"), std::string::npos);
  options.passes = {};
  options.skip_passes = {"constant_folding"};
  auto p = resolvePipeline(options);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(std::count(p->begin(), p->end(), "constant_folding"), 0);
}

}  // namespace
}  // namespace poprt::passes

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;

TEST(CommonSubexpressions, MergesDuplicateInitializersAndNodes) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({2, 3}));
  ir::Value* w1 = g.addInitializer("w1", randomTensor({3}, 7));
  ir::Value* w2 = g.addInitializer("w2", randomTensor({3}, 7));  // same bytes as w1
  ir::Value* w3 = g.addInitializer("w3", randomTensor({3}, 8));  // different
  ir::Value* a = g.addValue("a", f32({2, 3}));
  ir::Value* b = g.addValue("b", f32({2, 3}));
  ir::Value* c = g.addValue("c", f32({2, 3}));
  ir::Value* s = g.addValue("s", f32({2, 3}));
  ir::Value* y = g.addValue("y", f32({2, 3}));
  g.addNode("Mul", {x, w1}, {a}, "mul1");
  g.addNode("Mul", {x, w2}, {b}, "mul2");  // same as mul1 once w2 is w1
  g.addNode("Mul", {x, w3}, {c}, "mul3");  // different weight: stays
  g.addNode("Add", {a, b}, {s}, "add");
  g.addNode("Add", {s, c}, {y}, "add2");
  g.addOutput(y);
  EXPECT_TRUE(runPassChecked(m, "common_subexpression_elimination"));
  EXPECT_EQ(g.nodes().front()->output(0)->uses().size(), 2u);  // Add reads mul1 twice now
  EXPECT_TRUE(runPassChecked(m, "dead_code_elimination"));
  EXPECT_EQ(opTypes(g), (std::vector<std::string>{"Mul", "Mul", "Add", "Add"}));
}

TEST(CommonSubexpressions, KeepsDifferentAttributesAndReturnedOutputs) {
  ir::Model m = emptyModel();
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({2, 3}));
  ir::Value* a = g.addValue("a", f32({3, 2}));
  ir::Value* b = g.addValue("b", f32({3, 2}));
  ir::Value* c = g.addValue("c", f32({2, 3}));
  ir::Value* d = g.addValue("d", f32({2, 3}));
  ir::Node* t1 = g.addNode("Transpose", {x}, {a}, "t1");
  t1->attributes["perm"].value = std::vector<int64_t>{1, 0};
  ir::Node* t2 = g.addNode("Transpose", {x}, {b}, "t2");
  t2->attributes["perm"].value = std::vector<int64_t>{1, 0};
  ir::Node* s1 = g.addNode("Softmax", {x}, {c}, "softmax_axis1");
  s1->attributes["axis"].value = int64_t{1};
  ir::Node* s0 = g.addNode("Softmax", {x}, {d}, "softmax_axis0");
  s0->attributes["axis"].value = int64_t{0};
  for (ir::Value* v : {a, b, c, d}) g.addOutput(v);  // every output returned: nothing may merge
  EXPECT_FALSE(runPassChecked(m, "common_subexpression_elimination"));
  EXPECT_EQ(g.numNodes(), 4u);
}

}  // namespace
}  // namespace poprt::passes
