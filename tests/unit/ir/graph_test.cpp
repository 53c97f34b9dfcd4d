#include <gtest/gtest.h>

#include "lib/ir/graph.h"

namespace poprt::ir {
namespace {

TensorType f32(Shape s) { return TensorType::of(DType::Float, s); }

TEST(Graph, UseListsFollowInputs) {
  Graph g;
  Value* x = g.addInput("x", f32({2}));
  Value* y = g.addValue("y");
  Node* n = g.addNode("Relu", {x}, {y}, "r");
  ASSERT_EQ(x->uses().size(), 1u);
  EXPECT_EQ(x->uses()[0].node, n);
  EXPECT_EQ(y->producer(), n);
  Value* z = g.addInput("z", f32({2}));
  n->setInput(0, z);
  EXPECT_TRUE(x->uses().empty());
  EXPECT_EQ(z->uses().size(), 1u);
}

TEST(Graph, TopoSortReordersStably) {
  Graph g;
  Value* x = g.addInput("x", f32({2}));
  Value* a = g.addValue("a");
  Value* b = g.addValue("b");
  Value* c = g.addValue("c");
  // Listed out of order: c needs b, b needs a.
  g.addNode("Neg", {b}, {c}, "third");
  g.addNode("Neg", {x}, {a}, "first");
  g.addNode("Neg", {a}, {b}, "second");
  g.addOutput(c);
  EXPECT_FALSE(verify(g).ok());
  ASSERT_TRUE(g.topoSort().ok());
  std::vector<std::string> order;
  for (const auto& n : g.nodes()) order.push_back(n->name());
  EXPECT_EQ(order, (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_TRUE(verify(g).ok()) << verify(g).error().message();
}

TEST(Graph, TopoSortReportsCycle) {
  Graph g;
  Value* a = g.addValue("a");
  Value* b = g.addValue("b");
  g.addNode("Neg", {b}, {a}, "n1");
  g.addNode("Neg", {a}, {b}, "n2");
  auto st = g.topoSort();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("cycle"), std::string::npos);
}

TEST(Graph, VerifyRejectsUseBeforeDefinition) {
  Graph g;
  Value* x = g.addInput("x", f32({1}));
  Value* a = g.addValue("a");
  Value* b = g.addValue("b");
  g.addNode("Neg", {a}, {b}, "uses_a_early");
  g.addNode("Neg", {x}, {a}, "defines_a");
  g.addOutput(b);
  auto st = verify(g);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("'a' is not defined before it is used"), std::string::npos);
}

TEST(Graph, SetNodeOutputSlipsANodeBeforeAnOutput) {
  // relu makes h; a Cast then makes the graph output y, which keeps its Value and name.
  Graph g;
  Value* x = g.addInput("x", f32({2}));
  Value* y = g.addValue("y", f32({2}));
  Node* relu = g.addNode("Relu", {x}, {y}, "r");
  g.addOutput(y);
  Value* h = g.addValue("h", TensorType::of(DType::Float16, {2}));
  g.setNodeOutput(relu, 0, h);
  EXPECT_EQ(h->producer(), relu);
  EXPECT_EQ(y->producer(), nullptr);
  Node* cast = g.addNode("Cast", {h}, {y}, "c");
  EXPECT_EQ(y->producer(), cast);
  EXPECT_EQ(g.outputs()[0], y);
  EXPECT_TRUE(verify(g).ok());
}

TEST(Graph, ReplaceAllUsesAndRemoveNode) {
  Graph g;
  Value* x = g.addInput("x", f32({3}));
  Value* a = g.addValue("a", f32({3}));
  Value* y = g.addValue("y", f32({3}));
  Node* id = g.addNode("Identity", {x}, {a}, "id");
  g.addNode("Relu", {a}, {y}, "relu");
  g.addOutput(y);
  g.replaceAllUses(a, x);
  EXPECT_TRUE(a->uses().empty());
  g.removeNode(id);
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_EQ(x->uses().size(), 1u);  // only Relu now
  EXPECT_TRUE(verify(g).ok());
}

TEST(Graph, SubgraphSeesOuterValues) {
  Graph g;
  Value* x = g.addInput("x", f32({1}));
  Value* cond = g.addInput("cond", TensorType::of(DType::Bool, {}));
  Value* y = g.addValue("y");
  Node* n = g.addNode("If", {cond}, {y}, "if");
  auto then_g = std::make_shared<Graph>("then", &g);
  Value* t = then_g->addValue("t");
  then_g->addNode("Neg", {x}, {t}, "neg_outer");
  then_g->addOutput(t);
  n->attributes["then_branch"].value = then_g;
  g.addOutput(y);
  EXPECT_TRUE(verify(g).ok()) << verify(g).error().message();
  EXPECT_EQ(then_g->findValue("x"), x);
  EXPECT_EQ(x->uses().size(), 1u);
  std::string text = print(g);
  EXPECT_NE(text.find("graph then("), std::string::npos) << text;
  EXPECT_NE(text.find("%t: "), std::string::npos) << text;
}

TEST(TensorType, PrintsSymbolicAndUnknownDims) {
  TensorType t;
  t.dtype = DType::Float16;
  t.dims = std::vector<Dim>{Dim::fixed(1), Dim::symbolic("batch"), Dim::symbolic("")};
  EXPECT_EQ(t.toString(), "float16[1,batch,?]");
  EXPECT_FALSE(t.hasStaticShape());
  EXPECT_EQ(TensorType::of(DType::Int64, {2, 3}).numElements(), 6);
}

TEST(Print, ShowsNodesAttributesAndInitializers) {
  Graph g;
  Value* x = g.addInput("x", f32({2, 2}));
  Tensor w(DType::Float, {2, 2});
  Value* wv = g.addInitializer("w", w);
  Value* y = g.addValue("y", f32({2, 2}));
  Node* n = g.addNode("Gemm", {x, wv}, {y}, "fc");
  n->attributes["transB"].value = int64_t{1};
  g.addOutput(y);
  EXPECT_EQ(print(g),
            "graph main(%x: float32[2,2]) {\n"
            "  %w: float32[2,2] = initializer\n"
            "  %y: float32[2,2] = Gemm(%x, %w) {transB=1}  # fc\n"
            "  return %y\n"
            "}\n");
}

}  // namespace
}  // namespace poprt::ir
