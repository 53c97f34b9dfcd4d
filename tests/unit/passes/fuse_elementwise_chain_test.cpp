#include "passes/fp16_options.h"
#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;
using Ints = std::vector<int64_t>;
using Strings = std::vector<std::string>;

// A dynamic quantizer as quantized_to_float writes it: Round(x / d), then Max(·, -zp) and
// Min(·, 255 - zp), d and zp computed at run time (here: graph inputs of one value). Its scalar
// arithmetic (255 - zp, then · 1) is a chain of its own. Exact steps: equal to the bit.
TEST(FuseElementwiseChain, ADynamicQuantizerIsOneChain) {
  ir::Model m = emptyModel(17);
  Builder b(m);
  ir::Value* x = b.input("x", {2, 3, 8});
  ir::Value* d = b.input("d", {});
  ir::Value* zp = b.op("Mul", {b.input("zp", {}), b.constant(100.f)});
  ir::Value* top = b.op("Mul", {b.op("Sub", {b.constant(255.f), zp}), b.constant(1.f)});
  ir::Value* q = b.op("Round", {b.op("Div", {x, d})});
  ir::Value* y = b.op("Min", {b.op("Max", {q, b.op("Neg", {zp})}), top});
  b.output(y);
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_elementwise_chain"}, 0.0);
  EXPECT_EQ(counter(r, "chains"), 2) << reportText();
  EXPECT_EQ(counter(r, "ops_fused"), 6);  // Neg(zp) alone: a chain needs two ops
  EXPECT_TRUE(importsGraphcore(m));
  const ir::Node* chain = m.graph->outputs()[0]->producer();
  ASSERT_EQ(chain->opType(), "ElementwiseChain");
  EXPECT_EQ(chain->domain(), "ai.graphcore");
  EXPECT_EQ(std::get<Strings>(chain->attributes.at("ops").value), (Strings{"Div", "Round", "Max", "Min"}));
  EXPECT_EQ(chain->attrInts("operands"), (Ints{1, 0, 2, 3}));
  EXPECT_EQ(chain->input(1), d);
  // 255 - zp, then · 1: the constant is the running value, zp its operand, first.
  const ir::Node* scalar = chain->input(3)->producer();
  ASSERT_EQ(scalar->opType(), "ElementwiseChain");
  EXPECT_EQ(std::get<Strings>(scalar->attributes.at("ops").value), (Strings{"Sub", "Mul"}));
  EXPECT_EQ(scalar->attrInts("operands"), (Ints{1, 2}));
}

// An operand on the left of a Sub or Div is the step's first operand (-j), and a unary function
// other than Round runs in float32 (the evaluator's Exp in double: within an ulp).
TEST(FuseElementwiseChain, OperandsFirstAndUnaryFunctions) {
  ir::Model m = emptyModel(17);
  Builder b(m);
  ir::Value* x = b.input("x", {4, 5});
  ir::Value* s = b.input("s", {1});
  ir::Value* y = b.op("Exp", {b.op("Div", {s, b.op("Sub", {b.constant(2.f), x})})});
  b.output(b.op("Abs", {y}));
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_elementwise_chain"}, 1e-6);
  EXPECT_EQ(counter(r, "ops_fused"), 4) << reportText();
  EXPECT_EQ(opTypes(*m.graph), (Ops{"ElementwiseChain"}));
  const ir::Node* chain = findNode(*m.graph, "ElementwiseChain");
  EXPECT_EQ(std::get<Strings>(chain->attributes.at("ops").value), (Strings{"Sub", "Div", "Exp", "Abs"}));
  EXPECT_EQ(chain->attrInts("operands"), (Ints{-1, -2, 0, 0}));
  EXPECT_EQ(chain->input(0), x);
}

TEST(FuseElementwiseChain, MustNotFire) {
  struct Case {
    const char* what;
    std::function<void(Builder&)> build;
  };
  const std::vector<Case> cases = {{"one op",
                                    [](Builder& b) {
                                      b.output(b.op("Mul", {b.input("x", {4}), b.constant(2.f)}));
                                    }},
                                   {"an operand of more than one value",
                                    [](Builder& b) {
                                      b.output(b.op("Round", {b.op("Add", {b.input("x", {2, 4}), b.constant(1.f, {4})})}));
                                    }},
                                   {"a value inside used twice",
                                    [](Builder& b) {
                                      ir::Value* t = b.op("Mul", {b.input("x", {4}), b.constant(2.f)});
                                      b.output(b.op("Round", {t}));
                                      b.output(b.op("Neg", {t}));
                                    }},
                                   {"a value inside returned",
                                    [](Builder& b) {
                                      ir::Value* t = b.op("Mul", {b.input("x", {4}), b.constant(2.f)});
                                      b.output(t);
                                      b.output(b.op("Round", {t}));
                                    }},
                                   {"a one value that broadcasts the running value to a higher rank",
                                    [](Builder& b) {
                                      b.output(b.op("Round", {b.op("Add", {b.input("x", {4}), b.constant(1.f, {1, 1})})}));
                                    }},
                                   {"two full tensors",
                                    [](Builder& b) {
                                      b.output(b.op("Round", {b.op("Add", {b.input("x", {4}), b.input("z", {4})})}));
                                    }},
                                   {"an activation after (an Activation vertex, not a Unary one)",
                                    [](Builder& b) {
                                      b.output(b.op("LeakyRelu", {b.op("Mul", {b.input("x", {4}), b.constant(2.f)})}));
                                    }},
                                   {"x times itself", [](Builder& b) {
                                      ir::Value* x = b.input("x", {1});
                                      b.output(b.op("Round", {b.op("Mul", {x, x})}));
                                    }}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ir::Model m = emptyModel(17);
    Builder b(m);
    c.build(b);
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_elementwise_chain"}, 0.0);
    EXPECT_EQ(counter(r, "chains"), 0) << reportText();
    EXPECT_EQ(countOps(*m.graph, "ElementwiseChain"), 0);
  }
}

// Through the default pipeline, a dynamically quantized MatMul's quantizer is one chain (after
// quantized_to_float and the folds), and the model still equals the evaluator's before.
TEST(FuseElementwiseChain, DynamicQuantizeLinearThroughTheDefaultPipeline) {
  ir::Model m = emptyModel(17);
  Builder b(m);
  ir::Value* x = b.input("x", {3, 16});
  auto q = b.ops("DynamicQuantizeLinear", {x}, 3);
  Tensor w(DType::Int8, {16, 4});
  int8_t k = -60;
  for (int8_t& e : w.data<int8_t>()) e = k = static_cast<int8_t>(k + 37);
  ir::Value* wq = b.graph().addInitializer("wq", std::move(w));
  Tensor wzp(DType::Int8, {});
  ir::Value* acc = b.op("MatMulInteger", {q[0], wq, q[2], b.graph().addInitializer("wzp", std::move(wzp))});
  ir::Value* f = b.op("Cast", {acc}, {{"to", int64_t{1}}});
  b.output(b.op("Mul", {f, b.op("Mul", {q[1], b.constant(0.02f)})}));
  PassReport r = runPipelineChecked(m, {}, 1e-5);
  EXPECT_GE(countOps(*m.graph, "ElementwiseChain"), 1) << reportText();
  EXPECT_EQ(countOps(*m.graph, "Round"), 0) << reportText();
  EXPECT_EQ(countOps(*m.graph, "DynamicQuantizeLinear"), 0);
  // Still the quantizer's integer arithmetic: float_to_half and the PopEF keep it unrounded.
  for (const auto& n : m.graph->nodes())
    if (n->opType() == "ElementwiseChain") EXPECT_TRUE(isIntegerArithmetic(*n)) << n->describe();
}

// A chain takes at most 64 steps (a vertex's params hold them): 70 Negs are two chains.
TEST(FuseElementwiseChain, ChainsStopAtTheStepCap) {
  ir::Model m = emptyModel(17);
  Builder b(m);
  ir::Value* v = b.input("x", {4});
  for (int k = 0; k < 70; ++k) v = b.op("Neg", {v});
  b.output(v);
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_elementwise_chain"}, 0.0);
  EXPECT_EQ(counter(r, "chains"), 2);
  EXPECT_EQ(countOps(*m.graph, "ElementwiseChain"), 2);
  for (const auto& n : m.graph->nodes()) EXPECT_LE(n->attrInts("operands").size(), 64u);
}

// A node --fp16_skip_node_names names is not fused: the PopEF finds its weights by its name.
TEST(FuseElementwiseChain, NodesNamedToStayFloat32StayThemselves) {
  ir::Model m = emptyModel(17);
  Builder b(m);
  b.output(b.op("Neg", {b.op("Round", {b.op("Div", {b.input("x", {4}), b.constant(3.f)})})}));
  PipelineOptions options;
  options.passes = {"infer_shapes", "fuse_elementwise_chain"};
  options.fp16.skip_node_names = {"n1_Round"};  // the Builder names nodes n<k>_<op>
  runOptionsChecked(m, options, 0.0, true);
  EXPECT_EQ(opTypes(*m.graph), (Ops{"Div", "Round", "Neg"}));
}

// --fp16_skip_op_types finds a chain by its steps' op types, as it found the ops.
TEST(FuseElementwiseChain, SkipOpTypesKeysAreItsSteps) {
  ir::Model m = emptyModel(17);
  Builder b(m);
  b.output(b.op("Round", {b.op("Div", {b.input("x", {4}), b.constant(3.f)})}));
  runPipelineChecked(m, {"infer_shapes", "fuse_elementwise_chain"}, 0.0);
  const ir::Node* chain = findNode(*m.graph, "ElementwiseChain");
  ASSERT_NE(chain, nullptr);
  EXPECT_EQ(skipOpTypeKeys(*chain), (Strings{"ElementwiseChain", "Div", "Round"}));
  EXPECT_FALSE(isIntegerArithmetic(*chain));
}

}  // namespace
}  // namespace poprt::passes
