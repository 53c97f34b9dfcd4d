#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;

struct LnForm {
  bool mul_self = false;       // d·d instead of Pow(d, 2)
  bool eps_first = false;      // Add(eps, var)
  bool reciprocal = false;     // d · Reciprocal(Sqrt(·)) instead of d / Sqrt(·)
  bool explicit_axis = false;  // axes [rank-1] instead of [-1]
  bool gamma = true, beta = true;
  bool params_rank3 = false;    // gamma/beta of shape [1, 1, C]
  bool commute_affine = false;  // gamma · y, beta + y
  bool axes_input = false;      // opset 18: ReduceMean axes as an input
  float eps = 1e-5f;
};

// Layer normalisation over the last axis of x [.., C] as PyTorch (opset < 17) and Paddle export it.
ir::Value* decomposedLayerNorm(Builder& b, ir::Value* x, int64_t rank, int64_t c, const LnForm& f) {
  const int64_t axis = f.explicit_axis ? rank - 1 : -1;
  auto mean = [&](ir::Value* v) {
    if (f.axes_input) return b.op("ReduceMean", {v, b.ints({axis})});
    return b.op("ReduceMean", {v}, {{"axes", std::vector<int64_t>{axis}}});
  };
  ir::Value* mu = mean(x);
  ir::Value* d = b.op("Sub", {x, mu});
  ir::Value* sq = f.mul_self ? b.op("Mul", {d, d}) : b.op("Pow", {d, b.constant(2.f)});
  ir::Value* var = mean(sq);
  ir::Value* ve = f.eps_first ? b.op("Add", {b.constant(f.eps), var}) : b.op("Add", {var, b.constant(f.eps)});
  ir::Value* sd = b.op("Sqrt", {ve});
  ir::Value* y = f.reciprocal ? b.op("Mul", {d, b.op("Reciprocal", {sd})}) : b.op("Div", {d, sd});
  Shape ps = f.params_rank3 ? Shape{1, 1, c} : Shape{c};
  if (f.gamma) {
    ir::Value* g = b.weight(ps, 11);
    y = f.commute_affine ? b.op("Mul", {g, y}) : b.op("Mul", {y, g});
  }
  if (f.beta) {
    ir::Value* be = b.weight(ps, 12);
    y = f.commute_affine ? b.op("Add", {be, y}) : b.op("Add", {y, be});
  }
  return y;
}

TEST(FuseLayerNorm, PyTorchOpset13BecomesGraphcoreLayerNorm) {
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* x = b.op("MatMul", {b.input("in", {2, 5, 16}), b.weight({16, 16}, 1)});
  ir::Value* y = decomposedLayerNorm(b, x, 3, 16, {});
  b.output(y);
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_layernorm"});
  EXPECT_EQ(counter(r, "layernorm_affine"), 1);
  EXPECT_TRUE(r.stats.near_misses.empty());
  EXPECT_EQ(opTypes(*m.graph), (Ops{"MatMul", "LayerNorm"}));
  const ir::Node* ln = findNode(*m.graph, "LayerNorm");
  ASSERT_NE(ln, nullptr);
  EXPECT_EQ(ln->domain(), "ai.graphcore");
  EXPECT_EQ(ln->attrInt("axis", 0), -1);
  EXPECT_EQ(ln->attrFloat("epsilon", 0), 1e-5f);
  EXPECT_EQ(ln->inputs().size(), 3u);
  EXPECT_EQ(ln->input(0), x);
  EXPECT_TRUE(ln->input(1)->isInitializer());  // gamma [16] is used as it is
  EXPECT_EQ(ln->input(1)->initializer()->shape(), (Shape{16}));
  EXPECT_EQ(y->producer(), ln);
  EXPECT_EQ(m.graph->outputs()[0], y);
  EXPECT_TRUE(importsGraphcore(m));
}

TEST(FuseLayerNorm, Opset17BecomesStandardLayerNormalization) {
  ir::Model m = emptyModel(17);
  Builder b(m);
  ir::Value* x = b.input("in", {3, 8});
  b.output(decomposedLayerNorm(b, x, 2, 8, {.eps = 1e-12f}));
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_layernorm"});
  EXPECT_EQ(opTypes(*m.graph), (Ops{"LayerNormalization"}));
  const ir::Node* ln = findNode(*m.graph, "LayerNormalization");
  EXPECT_EQ(ln->domain(), "");
  EXPECT_EQ(ln->attrFloat("epsilon", 0), 1e-12f);
  EXPECT_FALSE(importsGraphcore(m));
}

TEST(FuseLayerNorm, EveryWayOfWritingIt) {
  for (bool mul_self : {false, true})
    for (bool eps_first : {false, true})
      for (bool reciprocal : {false, true})
        for (bool explicit_axis : {false, true})
          for (int affine = 0; affine < 4; ++affine) {
            LnForm f{.mul_self = mul_self,
                     .eps_first = eps_first,
                     .reciprocal = reciprocal,
                     .explicit_axis = explicit_axis,
                     .gamma = affine != 0,
                     .beta = affine >= 2,
                     .params_rank3 = affine == 3,
                     .commute_affine = affine == 2};
            SCOPED_TRACE(::testing::Message() << "mul_self " << mul_self << " eps_first " << eps_first << " reciprocal "
                                              << reciprocal << " explicit_axis " << explicit_axis << " affine " << affine);
            ir::Model m = emptyModel(13);
            Builder b(m);
            ir::Value* x = b.input("in", {2, 4, 12});
            b.output(decomposedLayerNorm(b, x, 3, 12, f));
            PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_layernorm"});
            EXPECT_EQ(counter(r, affine ? "layernorm_affine" : "layernorm"), 1);
            EXPECT_EQ(opTypes(*m.graph), (Ops{"LayerNorm"}));
            const ir::Node* ln = findNode(*m.graph, "LayerNorm");
            ASSERT_NE(ln, nullptr);
            EXPECT_EQ(ln->inputs().size(), f.beta ? 3u : 2u);
            EXPECT_EQ(ln->input(1)->initializer()->shape(), (Shape{12}));  // [1,1,C] and ones become [C]
          }
}

TEST(FuseLayerNorm, Opset18AxesAsInput) {
  // ONNX 1.12's shape inference stops at opset 17: the types are given here.
  ir::Model m = emptyModel(18);
  Builder b(m);
  ir::Value* x = b.input("in", {2, 3, 8});
  ir::Value* y = decomposedLayerNorm(b, x, 3, 8, {.axes_input = true});
  b.output(y);
  for (const auto& n : m.graph->nodes()) {
    const std::string& op = n->opType();
    const ir::Node* p = n->input(0)->producer();
    const bool per_row = op == "ReduceMean" || op == "Sqrt" || (op == "Add" && p && p->opType() == "ReduceMean");
    n->output(0)->type = f32(per_row ? Shape{2, 3, 1} : Shape{2, 3, 8});
  }
  PassReport r = runPipelineChecked(m, {"fuse_layernorm"});
  EXPECT_EQ(counter(r, "layernorm_affine"), 1);
  EXPECT_EQ(opTypes(*m.graph), (Ops{"LayerNormalization"}));
}

TEST(FuseLayerNorm, StopsBeforeANonParameterAffine) {
  // LN(x)·gamma + residual: the residual Add is not a bias; it stays.
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* x = b.input("in", {2, 4, 8});
  ir::Value* ln = decomposedLayerNorm(b, x, 3, 8, {.beta = false});
  b.output(b.op("Add", {ln, x}));
  runPipelineChecked(m, {"infer_shapes", "fuse_layernorm"});
  EXPECT_EQ(opTypes(*m.graph), (Ops{"LayerNorm", "Add"}));

  // A "gamma" that varies along axis 1 is not a LayerNorm scale: the Mul stays.
  ir::Model m2 = emptyModel(13);
  Builder b2(m2);
  ir::Value* x2 = b2.input("in", {2, 4, 8});
  ir::Value* n2 = decomposedLayerNorm(b2, x2, 3, 8, {.gamma = false, .beta = false});
  b2.output(b2.op("Mul", {n2, b2.weight({4, 1}, 3)}));
  PassReport r2 = runPipelineChecked(m2, {"infer_shapes", "fuse_layernorm"});
  EXPECT_EQ(counter(r2, "layernorm"), 1);
  EXPECT_EQ(opTypes(*m2.graph), (Ops{"LayerNorm", "Mul"}));
}

TEST(FuseLayerNorm, DoesNotFireOnLookAlikes) {
  struct Case {
    const char* what;
    std::function<ir::Value*(Builder&, ir::Value*)> build;
  };
  auto tail = [](Builder& b, ir::Value* d, ir::Value* var) {
    return b.op("Div", {d, b.op("Sqrt", {b.op("Add", {var, b.constant(1e-5f)})})});
  };
  auto meanOf = [](Builder& b, ir::Value* v, int64_t axis, int64_t keepdims = 1) {
    return b.op("ReduceMean", {v}, {{"axes", std::vector<int64_t>{axis}}, {"keepdims", keepdims}});
  };
  std::vector<Case> cases = {
      {"mean over axis 1",
       [&](Builder& b, ir::Value* x) {
         ir::Value* d = b.op("Sub", {x, meanOf(b, x, 1)});
         return tail(b, d, meanOf(b, b.op("Pow", {d, b.constant(2.f)}), 1));
       }},
      {"variance over another axis",
       [&](Builder& b, ir::Value* x) {
         ir::Value* d = b.op("Sub", {x, meanOf(b, x, -1)});
         return tail(b, d, meanOf(b, b.op("Pow", {d, b.constant(2.f)}), 1));
       }},
      {"cubed instead of squared",
       [&](Builder& b, ir::Value* x) {
         ir::Value* d = b.op("Sub", {x, meanOf(b, x, -1)});
         return tail(b, d, meanOf(b, b.op("Pow", {d, b.constant(3.f)}), -1));
       }},
      {"epsilon is not a constant",
       [&](Builder& b, ir::Value* x) {
         ir::Value* d = b.op("Sub", {x, meanOf(b, x, -1)});
         ir::Value* var = meanOf(b, b.op("Pow", {d, b.constant(2.f)}), -1);
         return b.op("Div", {d, b.op("Sqrt", {b.op("Add", {var, b.op("Abs", {meanOf(b, x, -1)})})})});
       }},
      {"the mean is used elsewhere",
       [&](Builder& b, ir::Value* x) {
         ir::Value* mu = meanOf(b, x, -1);
         ir::Value* d = b.op("Sub", {x, mu});
         ir::Value* y = tail(b, d, meanOf(b, b.op("Pow", {d, b.constant(2.f)}), -1));
         return b.op("Add", {y, mu});
       }},
      {"x - mean is used elsewhere",
       [&](Builder& b, ir::Value* x) {
         ir::Value* d = b.op("Sub", {x, meanOf(b, x, -1)});
         ir::Value* y = tail(b, d, meanOf(b, b.op("Pow", {d, b.constant(2.f)}), -1));
         return b.op("Add", {y, d});
       }},
      {"divided by the variance, not its root",
       [&](Builder& b, ir::Value* x) {
         ir::Value* d = b.op("Sub", {x, meanOf(b, x, -1)});
         ir::Value* var = meanOf(b, b.op("Pow", {d, b.constant(2.f)}), -1);
         return b.op("Div", {d, b.op("Add", {var, b.constant(1e-5f)})});
       }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    ir::Model m = emptyModel(13);
    Builder b(m);
    ir::Value* x = b.input("in", {2, 4, 8});
    b.output(c.build(b, x));
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_layernorm"});
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(countOps(*m.graph, "LayerNorm"), 0);
    EXPECT_GE(r.stats.near_misses.size(), 1u);
  }
  // keepdims 0: the mean is [4, 4] and broadcasts against x [4, 4, 4] by the trailing dims — not a LayerNorm.
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* x = b.input("in", {4, 4, 4});
  ir::Value* d = b.op("Sub", {x, meanOf(b, x, -1, 0)});
  b.output(tail(b, d, meanOf(b, b.op("Pow", {d, b.constant(2.f)}), -1)));
  PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_layernorm"});
  EXPECT_FALSE(r.changed);
  ASSERT_EQ(r.stats.near_misses.size(), 1u);
  EXPECT_NE(r.stats.near_misses[0].find("keepdims"), std::string::npos);
}

}  // namespace
}  // namespace poprt::passes
