#include <onnx/onnx_pb.h>

#include <cmath>

#include "lib/onnx/onnx_io.h"
#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;
using Ops = std::vector<std::string>;
using Perm = std::vector<int64_t>;

constexpr int64_t kB = 2, kS = 8, kHidden = 64, kHeads = 4, kHeadSize = 16;

// A float scalar as a Constant node, as PyTorch exports literals.
ir::Value* literal(Builder& b, float v) {
  Tensor t(DType::Float, {});
  t.data<float>()[0] = v;
  return b.op("Constant", {}, {{"value", t}});
}

// x.size()[i] as a 1-D tensor, the way torch.onnx writes it: Shape -> Gather -> Unsqueeze.
ir::Value* dimOf(Builder& b, ir::Value* x, int64_t i) {
  ir::Value* g = b.op("Gather", {b.op("Shape", {x}), b.scalarInt(i)}, {{"axis", int64_t{0}}});
  return b.op("Unsqueeze", {g, b.ints({0})});
}

// HF transpose_for_scores: view(B, S, H, D).permute(0, 2, 1, 3), the target shape from x.size().
ir::Value* splitHeads(Builder& b, ir::Value* x) {
  ir::Value* shape =
      b.op("Concat", {dimOf(b, x, 0), dimOf(b, x, 1), b.ints({kHeads}), b.ints({kHeadSize})}, {{"axis", int64_t{0}}});
  return b.op("Transpose", {b.op("Reshape", {x, shape})}, {{"perm", Perm{0, 2, 1, 3}}});
}

ir::Value* linear(Builder& b, ir::Value* x, int64_t in, int64_t out, uint32_t seed, bool bias_first) {
  ir::Value* mm = b.op("MatMul", {x, b.weight({in, out}, seed, 1.f / std::sqrt(float(in)))});
  ir::Value* bias = b.weight({out}, seed + 1000, 0.1f);
  return bias_first ? b.op("Add", {bias, mm}) : b.op("Add", {mm, bias});
}

// nn.LayerNorm as torch.onnx exports it below opset 17.
ir::Value* layerNorm(Builder& b, ir::Value* x, uint32_t seed) {
  const std::map<std::string, ir::AttributeValue> last = {{"axes", Perm{-1}}};
  ir::Value* d = b.op("Sub", {x, b.op("ReduceMean", {x}, last)});
  ir::Value* var = b.op("ReduceMean", {b.op("Pow", {d, literal(b, 2.f)})}, last);
  ir::Value* y = b.op("Div", {d, b.op("Sqrt", {b.op("Add", {var, literal(b, 1e-12f)})})});
  Tensor gamma = randomTensor({kHidden}, seed);
  for (float& g : gamma.data<float>()) g += 1.5f;
  return b.op("Add",
              {b.op("Mul", {y, b.graph().addInitializer(b.graph().uniqueName("ln_w"), gamma)}), b.weight({kHidden}, seed + 1)});
}

// HF BertLayer: self-attention (with the extended mask), output dense + residual + LayerNorm, an
// erf-GELU feed-forward + residual + LayerNorm.
ir::Value* bertLayer(Builder& b, ir::Value* h, ir::Value* ext_mask, uint32_t seed) {
  ir::Value* q = splitHeads(b, linear(b, h, kHidden, kHidden, seed, true));
  ir::Value* k = splitHeads(b, linear(b, h, kHidden, kHidden, seed + 1, false));
  ir::Value* v = splitHeads(b, linear(b, h, kHidden, kHidden, seed + 2, true));
  ir::Value* kt = b.op("Transpose", {k}, {{"perm", Perm{0, 1, 3, 2}}});
  ir::Value* scores = b.op("Div", {b.op("MatMul", {q, kt}), literal(b, std::sqrt(float(kHeadSize)))});
  ir::Value* probs = b.op("Softmax", {b.op("Add", {scores, ext_mask})}, {{"axis", int64_t{-1}}});
  ir::Value* ctx = b.op("Transpose", {b.op("MatMul", {probs, v})}, {{"perm", Perm{0, 2, 1, 3}}});
  ir::Value* merged_shape = b.op("Concat", {dimOf(b, ctx, 0), dimOf(b, ctx, 1), b.ints({kHidden})}, {{"axis", int64_t{0}}});
  ir::Value* merged = b.op("Reshape", {ctx, merged_shape});
  ir::Value* h1 = layerNorm(b, b.op("Add", {linear(b, merged, kHidden, kHidden, seed + 3, true), h}), seed + 4);
  ir::Value* i = linear(b, h1, kHidden, 2 * kHidden, seed + 5, true);
  ir::Value* erf = b.op("Erf", {b.op("Div", {i, literal(b, 1.4142135f)})});
  ir::Value* gelu = b.op("Mul", {b.op("Mul", {i, b.op("Add", {erf, literal(b, 1.f)})}), literal(b, 0.5f)});
  ir::Value* o = linear(b, gelu, 2 * kHidden, kHidden, seed + 6, true);
  return layerNorm(b, b.op("Add", {o, h1}), seed + 7);
}

// A 2-layer BERT encoder (hidden 64, 4 heads) as torch.onnx exports it at opset 13.
ir::Model bertEncoder(int layers = 2) {
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* h = b.input("hidden_states", {kB, kS, kHidden});
  ir::Value* mask = b.input("attention_mask", {kB, kS});
  // (1 - mask[:, None, None, :]) * -10000
  ir::Value* m4 = b.op("Unsqueeze", {b.op("Unsqueeze", {mask, b.ints({1})}), b.ints({2})});
  ir::Value* ext = b.op("Mul", {b.op("Sub", {literal(b, 1.f), m4}), literal(b, -10000.f)});
  for (int l = 0; l < layers; ++l) h = bertLayer(b, h, ext, static_cast<uint32_t>(100 * (l + 1)));
  b.output(h);
  return m;
}

TEST(FuseAttention, BertEncoderThroughTheDefaultPipeline) {
  ir::Model m = bertEncoder();
  const ir::Value* out = m.graph->outputs()[0];
  runPipelineChecked(m, {}, 1e-4);
  const ir::Graph& g = *m.graph;
  EXPECT_EQ(countOps(g, "MultiHeadAttention"), 2) << reportText();
  EXPECT_EQ(countOps(g, "LayerNorm"), 4);
  EXPECT_EQ(countOps(g, "Gelu"), 2);
  for (const char* gone : {"ReduceMean", "Sqrt", "Pow", "Erf", "Softmax", "Transpose", "Div", "Shape", "MatMul"})
    EXPECT_EQ(countOps(g, gone), 0) << gone;
  // Per layer: 6 projections (Gemms of the tokens' rows), 2 residual Adds; the mask: Unsqueeze x2,
  // one ElementwiseChain of Sub, Mul. The only Reshapes are the Gemms' row views (Q, K and V share theirs).
  EXPECT_EQ(countOps(g, "Gemm"), 12);
  EXPECT_EQ(countOps(g, "Reshape"), 20);
  for (const auto& n : g.nodes()) {
    if (n->opType() != "Reshape") continue;
    const bool into_gemm = !n->output(0)->uses().empty() && n->output(0)->uses().front().node->opType() == "Gemm";
    EXPECT_TRUE(into_gemm || n->input(0)->producer()->opType() == "Gemm") << n->describe();
  }
  EXPECT_EQ(g.outputs()[0], out);
  for (const auto& n : g.nodes()) {
    if (n->opType() != "MultiHeadAttention") continue;
    EXPECT_EQ(n->domain(), "ai.graphcore");
    EXPECT_EQ(n->attrInt("num_heads", 0), kHeads);
    EXPECT_FLOAT_EQ(n->attrFloat("scale", 0), 0.25f);
    ASSERT_EQ(n->inputs().size(), 4u);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(n->input(i)->producer()->input(0)->producer()->opType(), "Gemm");  // the projections
    EXPECT_EQ(n->input(3)->producer()->opType(), "ElementwiseChain");  // the extended mask: (1 - m) · -10000
    EXPECT_EQ(n->output(0)->type.toString(), "float32[2,8,64]");
  }
  EXPECT_TRUE(importsGraphcore(m));
}

TEST(FuseAttention, FusedModelExportsChecksAndImportsAgain) {
  ir::Model m = bertEncoder(1);
  auto inputs = randomInputs(*m.graph);
  auto reports = runPipeline(m, {});
  ASSERT_TRUE(reports.ok()) << reports.error().message();
  onnx::ModelProto proto = onnxio::exportModelProto(m);
  bool imports = false;
  for (const auto& op : proto.opset_import()) imports |= op.domain() == "ai.graphcore" && op.version() == 1;
  EXPECT_TRUE(imports);
  // The import runs ONNX's checker (custom domains are not schema-checked) and shape inference.
  auto again = onnxio::importModelProto(proto, "", "fused.onnx");
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(countOps(*again->graph, "MultiHeadAttention"), 1);
  auto a = ops::evaluateGraph(*m.graph, inputs, opsetsOf(m));
  auto b = ops::evaluateGraph(*again->graph, inputs, opsetsOf(*again));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE((*a)[0] == (*b)[0]);
  // An ai.graphcore op the registry does not know is refused like any unknown op.
  onnx::ModelProto bogus = proto;
  for (auto& node : *bogus.mutable_graph()->mutable_node())
    if (node.op_type() == "MultiHeadAttention") node.set_op_type("NoSuchFusedOp");
  auto unknown = onnxio::importModelProto(bogus, "", "bogus.onnx");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("ai.graphcore.NoSuchFusedOp"), std::string::npos);
  // Without the domain's opset import the same model is refused, naming the node.
  proto.mutable_opset_import()->RemoveLast();
  auto refused = onnxio::importModelProto(proto, "", "fused.onnx");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("ai.graphcore.MultiHeadAttention"), std::string::npos);
}

// One attention block with constant reshape targets; `scale_at` says where the 1/√D goes.
enum class ScaleAt { ScoresDiv, ScoresMul, Query, BothSides, None };

ir::Model attentionBlock(ScaleAt scale_at, bool mask, int64_t opset = 13) {
  ir::Model m = emptyModel(opset);
  Builder b(m);
  ir::Value* h = b.input("h", {kB, kS, kHidden});
  auto heads = [&](ir::Value* x, Perm perm) {
    return b.op("Transpose", {b.op("Reshape", {x, b.ints({0, 0, kHeads, kHeadSize})})}, {{"perm", perm}});
  };
  ir::Value* q = heads(linear(b, h, kHidden, kHidden, 1, false), {0, 2, 1, 3});
  ir::Value* kt = heads(linear(b, h, kHidden, kHidden, 2, false), {0, 2, 3, 1});
  ir::Value* v = heads(linear(b, h, kHidden, kHidden, 3, false), {0, 2, 1, 3});
  if (scale_at == ScaleAt::Query) q = b.op("Mul", {q, b.constant(0.25f)});
  if (scale_at == ScaleAt::BothSides) {
    q = b.op("Mul", {b.constant(0.5f), q});
    kt = b.op("Mul", {kt, b.constant(0.5f)});
  }
  ir::Value* s = b.op("MatMul", {q, kt});
  if (scale_at == ScaleAt::ScoresDiv) s = b.op("Div", {s, b.constant(4.f)});
  if (scale_at == ScaleAt::ScoresMul) s = b.op("Mul", {b.constant(0.25f), s});
  if (mask) s = b.op("Add", {b.input("mask", {kB, 1, 1, kS}), s});
  ir::Value* p = b.op("Softmax", {s}, {{"axis", int64_t{3}}});
  ir::Value* ctx = b.op("Transpose", {b.op("MatMul", {p, v})}, {{"perm", Perm{0, 2, 1, 3}}});
  b.output(b.op("Reshape", {ctx, b.ints({0, 0, -1})}));
  return m;
}

TEST(FuseAttention, ScaleOnScoresQueryOrBothSides) {
  const std::pair<ScaleAt, float> cases[] = {{ScaleAt::ScoresDiv, 0.25f},
                                             {ScaleAt::ScoresMul, 0.25f},
                                             {ScaleAt::Query, 0.25f},
                                             {ScaleAt::BothSides, 0.25f},
                                             {ScaleAt::None, 1.f}};
  for (auto [scale_at, scale] : cases)
    for (bool mask : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "scale_at " << static_cast<int>(scale_at) << " mask " << mask);
      ir::Model m = attentionBlock(scale_at, mask);
      const ir::Value* out = m.graph->outputs()[0];
      PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_attention"});
      EXPECT_EQ(counter(r, "attention"), 1);
      EXPECT_TRUE(r.stats.near_misses.empty());
      EXPECT_EQ(opTypes(*m.graph), (Ops{"MatMul", "Add", "MatMul", "Add", "MatMul", "Add", "MultiHeadAttention"}));
      const ir::Node* mha = findNode(*m.graph, "MultiHeadAttention");
      EXPECT_EQ(mha->output(0), out);  // the graph output is the same value
      EXPECT_FLOAT_EQ(mha->attrFloat("scale", 0), scale);
      EXPECT_EQ(mha->inputs().size(), mask ? 4u : 3u);
    }
}

// Paddle2ONNX's packed QKV: Reshape [0, S, 3, H, D], Transpose [2, 0, 3, 1, 4], the parts taken
// along axis 0 (Slice+Squeeze as at opset 9, Gather, or Split+Squeeze), q scaled after.
enum class Take { SliceSqueeze, Gather, SplitSqueeze };

ir::Model packedAttention(Take take, int64_t opset) {
  ir::Model m = emptyModel(opset);
  Builder b(m);
  ir::Value* h = b.input("h", {kB, kS, kHidden});
  ir::Value* qkv = linear(b, h, kHidden, 3 * kHidden, 4, false);
  ir::Value* t5 =
      b.op("Transpose", {b.op("Reshape", {qkv, b.ints({0, kS, 3, kHeads, kHeadSize})})}, {{"perm", Perm{2, 0, 3, 1, 4}}});
  std::vector<ir::Value*> parts;
  if (take == Take::SplitSqueeze) {
    for (ir::Value* p : b.ops("Split", {t5}, 3, {{"axis", int64_t{0}}}))
      parts.push_back(b.op("Squeeze", {p}, {{"axes", Perm{0}}}));
  } else {
    for (int64_t i = 0; i < 3; ++i) {
      if (take == Take::Gather) {
        parts.push_back(b.op("Gather", {t5, b.scalarInt(i)}, {{"axis", int64_t{0}}}));
      } else {
        ir::Value* s = b.op("Slice", {t5}, {{"axes", Perm{0}}, {"starts", Perm{i}}, {"ends", Perm{i + 1}}});
        parts.push_back(b.op("Squeeze", {s}, {{"axes", Perm{0}}}));
      }
    }
  }
  ir::Value* q = b.op("Mul", {parts[0], b.constant(0.25f)});
  ir::Value* kt = b.op("Transpose", {parts[1]}, {{"perm", Perm{0, 1, 3, 2}}});
  ir::Value* p = b.op("Softmax", {b.op("MatMul", {q, kt})}, {{"axis", int64_t{3}}});
  ir::Value* ctx = b.op("Transpose", {b.op("MatMul", {p, parts[2]})}, {{"perm", Perm{0, 2, 1, 3}}});
  b.output(b.op("Reshape", {ctx, b.ints({0, kS, kHidden})}));
  return m;
}

TEST(FuseAttention, PaddlePackedQkv) {
  for (Take take : {Take::SliceSqueeze, Take::Gather, Take::SplitSqueeze}) {
    SCOPED_TRACE(static_cast<int>(take));
    ir::Model m = packedAttention(take, take == Take::SliceSqueeze ? 9 : 11);
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_attention"});
    EXPECT_EQ(counter(r, "attention_packed_qkv"), 1);
    EXPECT_EQ(opTypes(*m.graph), (Ops{"MatMul", "Add", "Split", "MultiHeadAttention"}));
    const ir::Node* split = findNode(*m.graph, "Split");
    ASSERT_NE(split, nullptr);
    EXPECT_EQ(split->attrInt("axis", 0), -1);
    EXPECT_EQ(split->outputs().size(), 3u);
    EXPECT_EQ(split->output(0)->type.toString(), "float32[2,8,64]");
    const ir::Node* mha = findNode(*m.graph, "MultiHeadAttention");
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(mha->input(i), split->output(i));
    EXPECT_FLOAT_EQ(mha->attrFloat("scale", 0), 0.25f);
  }
}

TEST(FuseAttention, DoesNotFireOnLookAlikes) {
  // The scale after the mask: softmax((QKᵀ + M)·s) is not softmax(s·QKᵀ + M).
  {
    ir::Model m = emptyModel(13);
    Builder b(m);
    ir::Value* h = b.input("h", {kB, kS, kHidden});
    auto heads = [&](ir::Value* x, Perm perm) {
      return b.op("Transpose", {b.op("Reshape", {x, b.ints({0, 0, kHeads, kHeadSize})})}, {{"perm", perm}});
    };
    ir::Value* s = b.op("MatMul", {heads(h, {0, 2, 1, 3}), heads(h, {0, 2, 3, 1})});
    s = b.op("Mul", {b.op("Add", {s, b.input("mask", {kB, 1, 1, kS})}), b.constant(0.25f)});
    ir::Value* p = b.op("Softmax", {s}, {{"axis", int64_t{-1}}});
    ir::Value* ctx = b.op("Transpose", {b.op("MatMul", {p, heads(h, {0, 2, 1, 3})})}, {{"perm", Perm{0, 2, 1, 3}}});
    b.output(b.op("Reshape", {ctx, b.ints({0, 0, -1})}));
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_attention"});
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(r.stats.near_misses.size(), 1u);
  }
  // K not transposed (S == D so the MatMul still works): Q·K is not attention.
  {
    ir::Model m = emptyModel(13);
    Builder b(m);
    ir::Value* h = b.input("h", {kB, kHeadSize, kHidden});
    auto heads = [&](ir::Value* x) {
      return b.op("Transpose", {b.op("Reshape", {x, b.ints({0, 0, kHeads, kHeadSize})})}, {{"perm", Perm{0, 2, 1, 3}}});
    };
    ir::Value* p = b.op("Softmax", {b.op("MatMul", {heads(h), heads(h)})}, {{"axis", int64_t{-1}}});
    ir::Value* ctx = b.op("Transpose", {b.op("MatMul", {p, heads(h)})}, {{"perm", Perm{0, 2, 1, 3}}});
    b.output(b.op("Reshape", {ctx, b.ints({0, 0, -1})}));
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_attention"});
    EXPECT_FALSE(r.changed);
    ASSERT_EQ(r.stats.near_misses.size(), 1u);
    EXPECT_NE(r.stats.near_misses[0].find("K:"), std::string::npos);
  }
  // The probabilities are also returned: the Softmax must stay.
  {
    ir::Model m = attentionBlock(ScaleAt::ScoresDiv, true);
    const ir::Node* sm = findNode(*m.graph, "Softmax");
    m.graph->addOutput(sm->output(0));
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_attention"});
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(r.stats.near_misses.size(), 1u);
  }
  // Softmax over another axis; a plain classifier Softmax is not even a candidate.
  {
    ir::Model m = attentionBlock(ScaleAt::ScoresDiv, false);
    for (const auto& n : m.graph->nodes())
      if (n->opType() == "Softmax") n->attributes["axis"].value = int64_t{2};
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_attention"});
    EXPECT_FALSE(r.changed);
  }
  // Opset 11: Softmax without an axis means axis 1, not the last.
  {
    ir::Model m = attentionBlock(ScaleAt::ScoresDiv, false, 11);
    for (const auto& n : m.graph->nodes())
      if (n->opType() == "Softmax") n->attributes.erase("axis");
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_attention"});
    EXPECT_FALSE(r.changed);
  }
  // The packed QKV also feeds something else.
  {
    ir::Model m = packedAttention(Take::Gather, 11);
    const ir::Node* tr = nullptr;
    for (const auto& n : m.graph->nodes())
      if (n->opType() == "Transpose" && !tr) tr = n.get();
    Builder b(m);
    b.output(b.op("Neg", {tr->output(0)}));
    PassReport r = runPipelineChecked(m, {"infer_shapes", "fuse_attention"});
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(r.stats.near_misses.size(), 1u);
  }
}

}  // namespace
}  // namespace poprt::passes
