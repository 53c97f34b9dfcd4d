#include <limits>

#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;
using Ints = std::vector<int64_t>;
using Attrs = std::map<std::string, ir::AttributeValue>;

struct Act {
  const char* op;
  Attrs attrs;
  std::vector<float> clip;  // Clip bounds as inputs (opset >= 11)
};

const std::vector<Act>& activations() {
  static const std::vector<Act> acts = {
      {"Relu", {}, {}},
      {"Clip", {}, {0.f, 6.f}},
      {"Clip", {}, {-0.5f}},  // min only
      {"LeakyRelu", {{"alpha", 0.1f}}, {}},
      {"LeakyRelu", {}, {}},  // default alpha
      {"Sigmoid", {}, {}},
      {"HardSigmoid", {{"alpha", 1.f / 6}, {"beta", 0.5f}}, {}},
      {"HardSigmoid", {}, {}},
      {"HardSwish", {}, {}},
      {"Tanh", {}, {}},
  };
  return acts;
}

ir::Value* activate(Builder& b, ir::Value* x, const Act& a) {
  std::vector<ir::Value*> ins = {x};
  for (float v : a.clip) ins.push_back(b.constant(v));
  return b.op(a.op, ins, a.attrs);
}

TEST(FuseConvActivation, ConvWithEachActivation) {
  for (const Act& a : activations()) {
    SCOPED_TRACE(a.op);
    ir::Model m = emptyModel(14);
    Builder b(m);
    ir::Value* x = b.input("x", {1, 3, 9, 9});
    ir::Value* c = b.op("Conv", {x, b.weight({4, 3, 3, 3}, 1), b.weight({4}, 2)},
                        {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}});
    ir::Value* y = activate(b, c, a);
    b.output(y);
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_conv_activation"});
    EXPECT_EQ(counter(r, std::string("conv_") + a.op), 1);
    EXPECT_EQ(opTypes(*m.graph), (Ops{"ConvAct"}));
    const ir::Node* f = findNode(*m.graph, "ConvAct");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->domain(), "ai.graphcore");
    EXPECT_EQ(f->attrString("activation", ""), a.op);
    EXPECT_EQ(f->attrInts("strides"), (Ints{2, 2}));
    EXPECT_EQ(f->inputs().size(), 3u);
    EXPECT_EQ(f->output(0), y);
    EXPECT_EQ(y->type.toString(), "float32[1,4,5,5]");
    EXPECT_TRUE(importsGraphcore(m));
  }
}

TEST(FuseConvActivation, GemmKeepsItsAlphaBetaApartFromTheActivations) {
  for (const Act& a : activations()) {
    SCOPED_TRACE(a.op);
    ir::Model m = emptyModel(14);
    Builder b(m);
    ir::Value* x = b.input("x", {3, 8});
    ir::Value* g =
        b.op("Gemm", {x, b.weight({6, 8}, 1), b.weight({6}, 2)}, {{"transB", int64_t{1}}, {"alpha", 0.7f}, {"beta", 1.3f}});
    b.output(activate(b, g, a));
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_conv_activation"});
    EXPECT_EQ(counter(r, std::string("gemm_") + a.op), 1);
    EXPECT_EQ(opTypes(*m.graph), (Ops{"GemmAct"}));
    const ir::Node* f = findNode(*m.graph, "GemmAct");
    EXPECT_FLOAT_EQ(f->attrFloat("alpha", 0), 0.7f);
    EXPECT_FLOAT_EQ(f->attrFloat("beta", 0), 1.3f);
  }
}

TEST(FuseConvActivation, ClipBoundsAsAttributesBeforeOpset11) {
  ir::Model m = emptyModel(9);
  Builder b(m);
  ir::Value* x = b.input("x", {1, 2, 5, 5});
  ir::Value* c = b.op("Conv", {x, b.weight({2, 2, 1, 1}, 1)});
  b.output(b.op("Clip", {c}, {{"min", 0.f}, {"max", 0.25f}}));
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_conv_activation"});
  EXPECT_EQ(counter(r, "conv_Clip"), 1);
  const ir::Node* f = findNode(*m.graph, "ConvAct");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->attrFloat("activation_min", -1), 0.f);
  EXPECT_EQ(f->attrFloat("activation_max", -1), 0.25f);
  EXPECT_EQ(f->inputs().size(), 2u);
}

// SiLU as exporters write it, y · Sigmoid(y) in either order, after a Conv or a Gemm: the Swish
// activation, checked against the unfused pair by the evaluator.
TEST(FuseConvActivation, SigmoidGateOnItsOwnOutputIsSwish) {
  for (bool gate_first : {false, true}) {
    SCOPED_TRACE(gate_first);
    ir::Model m = emptyModel(11);
    Builder b(m);
    ir::Value* x = b.input("x", {1, 3, 6, 6});
    ir::Value* c = b.op("Conv", {x, b.weight({4, 3, 3, 3}, 1, 3.f), b.weight({4}, 2)}, {{"pads", Ints{1, 1, 1, 1}}});
    ir::Value* s = b.op("Sigmoid", {c});
    ir::Value* y = gate_first ? b.op("Mul", {s, c}) : b.op("Mul", {c, s});
    b.output(y);
    ir::Value* g = b.op("Gemm", {b.input("a", {2, 5}), b.weight({5, 3}, 3, 3.f)});
    b.output(b.op("Mul", {g, b.op("Sigmoid", {g})}));
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_conv_activation"});
    EXPECT_EQ(counter(r, "conv_Swish"), 1);
    EXPECT_EQ(counter(r, "gemm_Swish"), 1);
    EXPECT_EQ(opTypes(*m.graph), (Ops{"ConvAct", "GemmAct"}));
    EXPECT_EQ(findNode(*m.graph, "ConvAct")->attrString("activation", ""), "Swish");
    EXPECT_EQ(findNode(*m.graph, "ConvAct")->output(0), y);
  }
}

// A Linear layer on [batch, tokens, features] then an activation, as torch exports it: the
// default pipeline makes the Linear a Gemm of rows between Reshapes, and the activation after the
// second Reshape becomes the Gemm's epilogue, the Reshape moving after it (the activation's output
// keeps its name as the graph output). Each activation, checked against the evaluator.
TEST(FuseConvActivation, AGemmOfRowsTakesTheActivationAfterItsReshape) {
  for (const Act& a : activations()) {
    SCOPED_TRACE(a.op);
    ir::Model m = emptyModel(17);
    Builder b(m);
    ir::Value* x = b.input("x", {2, 3, 8});
    ir::Value* linear = b.op("Add", {b.op("MatMul", {x, b.weight({8, 5}, 3)}), b.weight({5}, 4)});
    ir::Value* y = activate(b, linear, a);
    b.output(y);
    PassReport r = runPipelineChecked(m, {});
    EXPECT_EQ(opTypes(*m.graph), (Ops{"Reshape", "GemmAct", "Reshape"})) << reportText();
    EXPECT_EQ(m.graph->outputs()[0], y);
    EXPECT_EQ(y->producer()->opType(), "Reshape");
    EXPECT_EQ(y->producer()->input(0)->producer()->attrString("activation", ""), a.op);
  }
}

// Not when the Reshape's output is needed too (or is a graph output), nor for a Conv.
TEST(FuseConvActivation, AReshapeWhoseOutputIsUsedElsewhereStays) {
  ir::Model m = emptyModel(17);
  Builder b(m);
  ir::Value* x = b.input("x", {2, 3, 8});
  ir::Value* linear = b.op("Add", {b.op("MatMul", {x, b.weight({8, 5}, 3)}), b.weight({5}, 4)});
  b.output(b.op("Relu", {linear}));
  b.output(linear);
  runPipelineChecked(m, {});
  EXPECT_EQ(opTypes(*m.graph), (Ops{"Reshape", "Gemm", "Reshape", "Relu"})) << reportText();
}

TEST(FuseConvActivation, DoesNotFireWhenTheConvOutputIsNeededElsewhere) {
  // x·tanh(x) reads the Conv output twice (and is no gated activation ConvAct has).
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* x = b.input("x", {1, 2, 5, 5});
  ir::Value* c = b.op("Conv", {x, b.weight({2, 2, 1, 1}, 1)});
  b.output(b.op("Mul", {c, b.op("Tanh", {c})}));
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_conv_activation"});
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.stats.near_misses.size(), 1u);
  EXPECT_EQ(opTypes(*m.graph), (Ops{"Conv", "Tanh", "Mul"}));

  // The Conv output is itself a graph output.
  ir::Model m2 = emptyModel(13);
  Builder b2(m2);
  ir::Value* c2 = b2.op("Conv", {b2.input("x", {1, 2, 5, 5}), b2.weight({2, 2, 1, 1}, 1)});
  b2.output(b2.op("Relu", {c2}));
  b2.output(c2);
  PassReport r2 = runPipelineChecked(m2, {"infer_shapes", "fuse_conv_activation"});
  EXPECT_FALSE(r2.changed);
  EXPECT_EQ(r2.stats.near_misses.size(), 1u);

  // Clip with a bound computed at run time; an activation not in the list (Elu) is no candidate.
  ir::Model m3 = emptyModel(13);
  Builder b3(m3);
  ir::Value* x3 = b3.input("x", {1, 2, 5, 5});
  ir::Value* c3 = b3.op("Conv", {x3, b3.weight({2, 2, 1, 1}, 1)});
  ir::Value* hi = b3.op("ReduceMax", {x3}, {{"keepdims", int64_t{0}}});
  b3.output(b3.op("Clip", {c3, b3.constant(0.f), hi}));
  b3.output(b3.op("Elu", {b3.op("Conv", {x3, b3.weight({2, 2, 1, 1}, 2)})}));
  PassReport r3 = runPipelineChecked(m3, {"infer_shapes", "fuse_conv_activation"});
  EXPECT_FALSE(r3.changed);
  EXPECT_EQ(r3.stats.near_misses.size(), 1u);
}

TEST(GraphcoreOps, EvaluatorsAgreeWithKnownValues) {
  ir::Graph g;
  auto evalOne = [&](const std::string& op, std::vector<const Tensor*> in, Attrs attrs) {
    std::vector<ir::Value*> ins;
    for (size_t i = 0; i < in.size(); ++i) ins.push_back(g.addValue(g.uniqueName("in")));
    ir::Node* n = g.addNode(op, ins, {g.addValue(g.uniqueName("out"))}, "", "ai.graphcore");
    for (auto& [k, v] : attrs) n->attributes[k].value = v;
    auto out = ops::evaluateNode(*n, in);
    EXPECT_TRUE(out.ok()) << out.error().message();
    return out.ok() ? (*out)[0] : Tensor();
  };
  Tensor x(DType::Float, {3});
  x.data<float>()[0] = -1.f;
  x.data<float>()[1] = 0.f;
  x.data<float>()[2] = 1.f;
  Tensor erf = evalOne("Gelu", {&x}, {});
  EXPECT_NEAR(erf.data<float>()[0], -0.15865525f, 1e-7);
  EXPECT_NEAR(erf.data<float>()[2], 0.84134475f, 1e-7);
  Tensor tanh = evalOne("Gelu", {&x}, {{"approximate", std::string("tanh")}});
  EXPECT_NEAR(tanh.data<float>()[2], 0.84119199f, 1e-7);
  // LayerNorm of [-1, 0, 1]: mean 0, var 2/3.
  Tensor ones(DType::Float, {3});
  for (float& v : ones.data<float>()) v = 1.f;
  Tensor ln = evalOne("LayerNorm", {&x, &ones}, {{"epsilon", 0.f}});
  EXPECT_NEAR(ln.data<float>()[2], 1.22474487f, 1e-6);
  // Attention with one key: the output is V whatever the scores.
  Tensor q = randomTensor({1, 2, 4}, 1), k = randomTensor({1, 1, 4}, 2), v = randomTensor({1, 1, 6}, 3);
  Tensor y = evalOne("MultiHeadAttention", {&q, &k, &v}, {{"num_heads", int64_t{2}}});
  ASSERT_EQ(y.shape(), (Shape{1, 2, 6}));
  for (int i = 0; i < 2; ++i)
    for (int e = 0; e < 6; ++e) EXPECT_NEAR(y.data<float>()[i * 6 + e], v.data<float>()[e], 1e-6);
  // A -inf mask entry drops that key: two keys, the second masked, gives the first's V.
  Tensor k2 = randomTensor({1, 2, 4}, 4), v2 = randomTensor({1, 2, 6}, 5), mask(DType::Float, {2});
  mask.data<float>()[1] = -std::numeric_limits<float>::infinity();
  Tensor y2 = evalOne("MultiHeadAttention", {&q, &k2, &v2, &mask}, {{"num_heads", int64_t{2}}, {"scale", 0.3f}});
  for (int e = 0; e < 6; ++e) EXPECT_NEAR(y2.data<float>()[e], v2.data<float>()[e], 1e-6);
  // Bad attributes are errors, not crashes.
  ir::Node* bad = g.addNode("ConvAct", {}, {g.addValue("bad_out")}, "", "ai.graphcore");
  bad->attributes["activation"].value = std::string("Swish");
  EXPECT_FALSE(ops::evaluateNode(*bad, {&x, &x}).ok());
}

}  // namespace
}  // namespace poprt::passes
