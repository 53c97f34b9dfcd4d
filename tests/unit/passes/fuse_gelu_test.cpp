#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;

// Where the 0.5 goes: (x·0.5)·A, (x·A)·0.5, (x·A)/2 or x·(A·0.5).
enum class Half { OnX, Last, LastDiv, OnA };

// x · 0.5 · A with A = 1 + f, the multiplications in the given order.
ir::Value* halfProduct(Builder& b, ir::Value* x, ir::Value* a, Half half, bool commute) {
  switch (half) {
    case Half::OnX: {
      ir::Value* h = commute ? b.op("Mul", {b.constant(0.5f), x}) : b.op("Mul", {x, b.constant(0.5f)});
      return commute ? b.op("Mul", {a, h}) : b.op("Mul", {h, a});
    }
    case Half::Last:
    case Half::LastDiv: {
      ir::Value* t = commute ? b.op("Mul", {a, x}) : b.op("Mul", {x, a});
      return half == Half::LastDiv ? b.op("Div", {t, b.constant(2.f)}) : b.op("Mul", {b.constant(0.5f), t});
    }
    case Half::OnA: {
      ir::Value* t = commute ? b.op("Mul", {b.constant(0.5f), a}) : b.op("Mul", {a, b.constant(0.5f)});
      return commute ? b.op("Mul", {t, x}) : b.op("Mul", {x, t});
    }
  }
  return nullptr;
}

ir::Value* erfGelu(Builder& b, ir::Value* x, bool div, bool add_commuted, Half half, bool commute) {
  ir::Value* s = div ? b.op("Div", {x, b.constant(1.4142135f)}) : b.op("Mul", {b.constant(0.70710678f), x});
  ir::Value* e = b.op("Erf", {s});
  ir::Value* a = add_commuted ? b.op("Add", {b.constant(1.f), e}) : b.op("Add", {e, b.constant(1.f)});
  return halfProduct(b, x, a, half, commute);
}

enum class Cube { Pow, XXThenX, XTimesXX };

ir::Value* tanhGelu(Builder& b, ir::Value* x, Cube cube, bool commute, Half half) {
  ir::Value* c = nullptr;
  if (cube == Cube::Pow) c = b.op("Pow", {x, b.constant(3.f)});
  if (cube == Cube::XXThenX) c = b.op("Mul", {b.op("Mul", {x, x}), x});
  if (cube == Cube::XTimesXX) c = b.op("Mul", {x, b.op("Mul", {x, x})});
  ir::Value* k = commute ? b.op("Mul", {b.constant(0.044715f), c}) : b.op("Mul", {c, b.constant(0.044715f)});
  ir::Value* inner = commute ? b.op("Add", {k, x}) : b.op("Add", {x, k});
  ir::Value* t = commute ? b.op("Mul", {inner, b.constant(0.7978845608f)}) : b.op("Mul", {b.constant(0.7978845608f), inner});
  ir::Value* th = b.op("Tanh", {t});
  ir::Value* a = commute ? b.op("Add", {th, b.constant(1.f)}) : b.op("Add", {b.constant(1.f), th});
  return halfProduct(b, x, a, half, commute);
}

void expectOneGelu(ir::Model& m, const std::string& approximate) {
  EXPECT_EQ(opTypes(*m.graph), (Ops{"MatMul", "Gelu"}));
  const ir::Node* gelu = findNode(*m.graph, "Gelu");
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->domain(), "ai.graphcore");
  EXPECT_EQ(gelu->attrString("approximate", ""), approximate);
  EXPECT_EQ(gelu->input(0)->producer()->opType(), "MatMul");
  EXPECT_TRUE(importsGraphcore(m));
}

TEST(FuseGelu, ErfFormInEveryExporterOrder) {
  for (bool div : {true, false})
    for (bool add_commuted : {false, true})
      for (Half half : {Half::OnX, Half::Last, Half::LastDiv, Half::OnA})
        for (bool commute : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "div " << div << " add_commuted " << add_commuted << " half "
                                            << static_cast<int>(half) << " commute " << commute);
          ir::Model m = emptyModel(13);
          Builder b(m);
          ir::Value* x = b.op("MatMul", {b.input("in", {2, 3, 8}), b.weight({8, 8}, 7)});
          ir::Value* y = erfGelu(b, x, div, add_commuted, half, commute);
          b.output(y);
          PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_gelu"});
          EXPECT_EQ(counter(r, "gelu_erf"), 1);
          EXPECT_TRUE(r.stats.near_misses.empty());
          expectOneGelu(m, "none");
          // The graph output is still the same value, produced by the Gelu.
          EXPECT_EQ(m.graph->outputs()[0], y);
          EXPECT_EQ(y->producer()->opType(), "Gelu");
        }
}

TEST(FuseGelu, TanhFormWithEachCube) {
  for (Cube cube : {Cube::Pow, Cube::XXThenX, Cube::XTimesXX})
    for (bool commute : {false, true})
      for (Half half : {Half::OnX, Half::Last, Half::OnA}) {
        SCOPED_TRACE(::testing::Message() << "cube " << static_cast<int>(cube) << " commute " << commute << " half "
                                          << static_cast<int>(half));
        ir::Model m = emptyModel(13);
        Builder b(m);
        ir::Value* x = b.op("MatMul", {b.input("in", {4, 16}), b.weight({16, 16}, 3)});
        b.output(tanhGelu(b, x, cube, commute, half));
        PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_gelu"});
        EXPECT_EQ(counter(r, "gelu_tanh"), 1);
        expectOneGelu(m, "tanh");
      }
}

TEST(FuseGelu, TwoGelusInOneGraph) {
  ir::Model m = emptyModel(17);
  Builder b(m);
  ir::Value* x = b.input("in", {3, 5});
  ir::Value* g1 = erfGelu(b, x, true, false, Half::Last, false);
  ir::Value* g2 = tanhGelu(b, g1, Cube::Pow, false, Half::OnX);
  b.output(g2);
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_gelu"});
  EXPECT_EQ(opTypes(*m.graph), (Ops{"Gelu", "Gelu"}));
  EXPECT_EQ(counter(r, "gelu_erf"), 1);
  EXPECT_EQ(counter(r, "gelu_tanh"), 1);
}

TEST(FuseGelu, DoesNotFireOnLookAlikes) {
  struct Case {
    const char* what;
    std::function<ir::Value*(Builder&, ir::Value*)> build;
    bool near_miss;
  };
  std::vector<Case> cases = {
      {"√2 written too coarsely",
       [](Builder& b, ir::Value* x) {
         ir::Value* a = b.op("Add", {b.op("Erf", {b.op("Div", {x, b.constant(1.41f)})}), b.constant(1.f)});
         return b.op("Mul", {b.op("Mul", {x, a}), b.constant(0.5f)});
       },
       true},
      {"no 0.5",
       [](Builder& b, ir::Value* x) {
         ir::Value* a = b.op("Add", {b.op("Erf", {b.op("Div", {x, b.constant(1.4142135f)})}), b.constant(1.f)});
         return b.op("Mul", {x, a});
       },
       true},
      {"0.6 instead of 0.5",
       [](Builder& b, ir::Value* x) {
         ir::Value* a = b.op("Add", {b.op("Erf", {b.op("Div", {x, b.constant(1.4142135f)})}), b.constant(1.f)});
         return b.op("Mul", {b.op("Mul", {x, a}), b.constant(0.6f)});
       },
       true},
      {"another value multiplied",
       [](Builder& b, ir::Value* x) {
         ir::Value* a = b.op("Add", {b.op("Erf", {b.op("Div", {x, b.constant(1.4142135f)})}), b.constant(1.f)});
         ir::Value* other = b.op("Neg", {x});
         return b.op("Mul", {b.op("Mul", {other, a}), b.constant(0.5f)});
       },
       true},
      {"+2 instead of +1",
       [](Builder& b, ir::Value* x) {
         ir::Value* a = b.op("Add", {b.op("Erf", {b.op("Div", {x, b.constant(1.4142135f)})}), b.constant(2.f)});
         return b.op("Mul", {b.op("Mul", {x, a}), b.constant(0.5f)});
       },
       true},
      {"a 0.5 of higher rank (broadcast grows the shape)",
       [](Builder& b, ir::Value* x) {
         ir::Value* a = b.op("Add", {b.op("Erf", {b.op("Div", {x, b.constant(1.4142135f)})}), b.constant(1.f)});
         return b.op("Mul", {b.op("Mul", {x, a}), b.constant(0.5f, {1, 1, 1})});
       },
       true},
      {"a plain Tanh activation",
       [](Builder& b, ir::Value* x) {
         return b.op("Tanh", {b.op("Mul", {x, b.constant(2.f)})});
       },
       false},
      {"tanh form with a wrong cube coefficient",
       [](Builder& b, ir::Value* x) {
         ir::Value* k = b.op("Mul", {b.op("Pow", {x, b.constant(3.f)}), b.constant(0.05f)});
         ir::Value* t = b.op("Mul", {b.constant(0.7978845608f), b.op("Add", {x, k})});
         ir::Value* a = b.op("Add", {b.op("Tanh", {t}), b.constant(1.f)});
         return b.op("Mul", {b.op("Mul", {x, a}), b.constant(0.5f)});
       },
       true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    ir::Model m = emptyModel(13);
    Builder b(m);
    ir::Value* x = b.input("in", {2, 6});
    b.output(c.build(b, x));
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_gelu"});
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(countOps(*m.graph, "Gelu"), 0);
    EXPECT_EQ(r.stats.near_misses.size(), c.near_miss ? 1u : 0u);
    EXPECT_FALSE(importsGraphcore(m));
  }
}

TEST(FuseGelu, KeepsChainsWhoseInteriorIsUsedOrReturned) {
  // erf(x/√2) is also a graph output: fusing would lose it.
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* x = b.input("in", {2, 6});
  ir::Value* e = b.op("Erf", {b.op("Div", {x, b.constant(1.4142135f)})});
  ir::Value* a = b.op("Add", {e, b.constant(1.f)});
  b.output(b.op("Mul", {b.op("Mul", {x, a}), b.constant(0.5f)}));
  b.output(e);
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_gelu"});
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.stats.near_misses.size(), 1u);

  // x·(1 + erf) is also read by another node.
  ir::Model m2 = emptyModel(13);
  Builder b2(m2);
  ir::Value* x2 = b2.input("in", {2, 6});
  ir::Value* a2 = b2.op("Add", {b2.op("Erf", {b2.op("Div", {x2, b2.constant(1.4142135f)})}), b2.constant(1.f)});
  ir::Value* xa = b2.op("Mul", {x2, a2});
  b2.output(b2.op("Mul", {xa, b2.constant(0.5f)}));
  b2.output(b2.op("Neg", {xa}));
  PassReport r2 = runPipelineChecked(m2, {"infer_shapes", "fuse_gelu"});
  EXPECT_FALSE(r2.changed);
  EXPECT_EQ(r2.stats.near_misses.size(), 1u);
}

}  // namespace
}  // namespace poprt::passes
