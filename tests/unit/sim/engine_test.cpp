// Whole graphs through codegen and the simulator, compared with the reference evaluator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <random>

#include "codegen/compiler.h"
#include "codegen/target.h"
#include "lib/exec/codelets.h"
#include "lib/exec/vertex_params.h"
#include "lib/ops/registry.h"
#include "lib/support/half.h"
#include "sim/codelets.h"
#include "sim/engine.h"
#include "tests/unit/sim/codelet_test_util.h"

namespace poprt::sim {
namespace {

using codelet_test::setParam;

Tensor randomTensor(Shape shape, uint32_t seed) {
  Tensor t(DType::Float, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (float& x : t.data<float>()) x = dist(rng);
  return t;
}

ir::TensorType f32(Shape s) { return ir::TensorType::of(DType::Float, s); }

// Compiles `g` for a target, runs it on the simulator and on the evaluator, and compares.
// A float32 tensor rounded to float16.
Tensor halfOf(const Tensor& t) {
  Tensor h(DType::Float16, t.shape());
  auto src = t.data<float>();
  auto* dst = reinterpret_cast<uint16_t*>(h.bytes().data());
  for (size_t i = 0; i < src.size(); ++i) dst[i] = floatToHalfBits(src[i]);
  return h;
}

void expectSimMatchesReference(const ir::Model& m, const std::vector<std::pair<std::string, Tensor>>& inputs, uint32_t tiles) {
  const ir::Graph& g = *m.graph;
  auto target = codegen::makeTarget("ipu2", 1, tiles);
  ASSERT_TRUE(target.ok());
  auto compiled = codegen::compile(m, {*target, 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  // Through the serialised form, as popef-run sees it.
  auto bytes = exec::serialize(compiled->executable);
  auto exe = exec::deserialize(bytes, "test");
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  std::map<std::string, Tensor> weights = compiled->weightData();
  auto engine = Engine::create(std::move(exe).value(), weights);
  ASSERT_TRUE(engine.ok()) << engine.error().message();
  std::vector<const Tensor*> args;
  for (const auto& [name, t] : inputs) args.push_back(&t);
  auto want = ops::evaluateGraph(g, inputs);
  ASSERT_TRUE(want.ok()) << want.error().message();
  // Twice: the second run checks that the main program leaves the weights the load program wrote.
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    auto got = (*engine)->runTensors(args);
    ASSERT_TRUE(got.ok()) << got.error().message();
    ASSERT_EQ(got->size(), want->size());
    for (size_t o = 0; o < want->size(); ++o) {
      ASSERT_EQ((*got)[o].shape(), (*want)[o].shape());
      auto gd = (*got)[o].data<float>();
      auto wd = (*want)[o].data<float>();
      for (size_t i = 0; i < wd.size(); ++i)
        ASSERT_NEAR(gd[i], wd[i], 1e-4 + 1e-4 * std::fabs(wd[i])) << "output " << o << " [" << i << "]";
    }
  }
  EXPECT_GT((*engine)->estimate().total(), 0u);
}

TEST(Engine, MlpOnSeveralTileCounts) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({5, 33}));
  ir::Value* w1 = g.addInitializer("w1", randomTensor({33, 70}, 1));
  ir::Value* b1 = g.addInitializer("b1", randomTensor({70}, 2));
  ir::Value* w2 = g.addInitializer("w2", randomTensor({9, 70}, 3));
  ir::Value* b2 = g.addInitializer("b2", randomTensor({5, 1}, 4));
  ir::Value* h0 = g.addValue("h0", f32({5, 70}));
  ir::Value* h1 = g.addValue("h1", f32({5, 70}));
  ir::Value* h2 = g.addValue("h2", f32({5, 70}));
  ir::Value* y = g.addValue("y", f32({5, 9}));
  g.addNode("MatMul", {x, w1}, {h0}, "fc1");
  g.addNode("Add", {h0, b1}, {h1}, "bias");
  g.addNode("Relu", {h1}, {h2}, "relu");
  ir::Node* gemm = g.addNode("Gemm", {h2, w2, b2}, {y}, "fc2");
  gemm->attributes["transB"].value = int64_t{1};
  gemm->attributes["alpha"].value = 0.5f;
  g.addOutput(y);
  for (uint32_t tiles : {1u, 4u, 64u, 1472u}) {
    SCOPED_TRACE(tiles);
    expectSimMatchesReference(m, {{"x", randomTensor({5, 33}, 9)}}, tiles);
  }
}

TEST(Engine, BatchedMatMulWithBroadcastBatch) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* a = g.addInput("a", f32({2, 3, 4, 6}));
  ir::Value* b = g.addInput("b", f32({3, 6, 5}));
  ir::Value* y = g.addValue("y", f32({2, 3, 4, 5}));
  g.addNode("MatMul", {a, b}, {y}, "bmm");
  g.addOutput(y);
  expectSimMatchesReference(m, {{"a", randomTensor({2, 3, 4, 6}, 5)}, {"b", randomTensor({3, 6, 5}, 6)}}, 16);
}

// A weight shared by every batch entry: the lowering runs the entries' rows as one matrix.
TEST(Engine, BatchedMatMulWithASharedWeight) {
  for (uint32_t tiles : {1u, 5u, 64u}) {
    SCOPED_TRACE(tiles);
    ir::Model m;
    m.opset_imports = {{"", 17}};
    ir::Graph& g = *m.graph;
    ir::Value* a = g.addInput("a", f32({2, 3, 7, 6}));
    ir::Value* w = g.addInitializer("w", randomTensor({6, 11}, 7));
    ir::Value* y = g.addValue("y", f32({2, 3, 7, 11}));
    g.addNode("MatMul", {a, w}, {y}, "mm");
    g.addOutput(y);
    expectSimMatchesReference(m, {{"a", randomTensor({2, 3, 7, 6}, 8)}}, tiles);
  }
}

// An attention's scores (a batched MatMul, whose output a tile holds as pieces of rows) plus a
// bias per head broadcast over the batch (row runs, each row's bias slice with a skip), times a
// scalar (one element for any run of outputs) plus a bias over the columns (the rows' union).
TEST(Engine, BroadcastBinariesOverPiecesOfMatMulRows) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* q = g.addInput("q", f32({2, 3, 24, 16}));
  ir::Value* k = g.addInput("k", f32({2, 3, 16, 24}));
  ir::Value* s = g.addValue("s", f32({2, 3, 24, 24}));
  ir::Value* biased = g.addValue("biased", f32({2, 3, 24, 24}));
  ir::Value* scaled = g.addValue("scaled", f32({2, 3, 24, 24}));
  ir::Value* y = g.addValue("y", f32({2, 3, 24, 24}));
  g.addNode("MatMul", {q, k}, {s}, "scores");
  g.addNode("Add", {s, g.addInitializer("head_bias", randomTensor({3, 24, 24}, 21))}, {biased}, "head_bias_add");
  g.addNode("Mul", {biased, g.addInitializer("scale", randomTensor({}, 22))}, {scaled}, "scale_mul");
  g.addNode("Add", {scaled, g.addInitializer("col_bias", randomTensor({24}, 23))}, {y}, "col_bias_add");
  g.addOutput(y);
  for (uint32_t tiles : {4u, 64u, 1472u}) {
    SCOPED_TRACE(tiles);
    expectSimMatchesReference(m, {{"q", randomTensor({2, 3, 24, 16}, 24)}, {"k", randomTensor({2, 3, 16, 24}, 25)}}, tiles);
  }
  // The row runs are there to be checked: some Binary vertex of the head-bias Add covers rows.
  auto target = codegen::makeTarget("ipu2", 1, 64);
  ASSERT_TRUE(target.ok());
  auto compiled = codegen::compile(m, {*target, 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  int64_t most_rows = 0;
  for (const auto& cs : compiled->executable.compute_sets)
    for (const auto& v : cs.vertices)
      if (v.codelet == exec::Codelet::Binary && cs.name == "head_bias_add") {
        auto p = exec::decodeParams<exec::BinaryParams>(v);
        ASSERT_TRUE(p.ok()) << p.error().message();
        most_rows = std::max(most_rows, p->rows());
      }
  EXPECT_GT(most_rows, 1);
}

size_t countVertices(const exec::Executable& exe, exec::Codelet codelet) {
  size_t n = 0;
  for (const auto& cs : exe.compute_sets)
    for (const auto& v : cs.vertices) n += v.codelet == codelet;
  return n;
}

// Runs a compiled model of one input on the engine.
Expected<std::vector<Tensor>> runCompiled(const codegen::CompileResult& compiled, const Tensor& input) {
  POPRT_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(compiled.executable, compiled.weightData()));
  return engine->runTensors({&input});
}

// A float16 output of float32 sums rounded once: within half a float16 step of the exact sum
// (and a float32 error).
void expectRoundedOnce(uint16_t got, double want) {
  const double step = want == 0 ? 0 : std::ldexp(1.0, std::ilogb(want) - 10);
  EXPECT_LE(std::fabs(halfBitsToFloat(got) - want), 0.5 * step + 1e-4 * std::fabs(want));
}

// A quantizer over a run-time scale as one ElementwiseChain: Round(x / s), Max(-20), Min(m), with
// s = m / 127 and m = ReduceMax(x) on the device. The device's result equals the unfused ops'
// evaluated by the reference, bit for bit, on every tile count; in float16 it is one rounding of
// the float32 steps.
TEST(Engine, AnElementwiseChainEqualsItsOpsOneAfterAnother) {
  const Tensor x = [] {
    Tensor t = randomTensor({6, 40}, 81);
    for (float& e : t.data<float>()) e *= 50.f;
    return t;
  }();
  auto model = [](bool fused, DType dt) {
    ir::Model m;
    m.opset_imports = {{"", 17}, {"ai.graphcore", 1}};
    ir::Graph& g = *m.graph;
    auto type = [&](Shape s) { return ir::TensorType::of(dt, std::move(s)); };
    auto scalar = [&](const char* name, float v) {
      Tensor t(DType::Float, {});
      t.data<float>()[0] = v;
      if (dt == DType::Float16) t = halfOf(t);
      return g.addInitializer(name, std::move(t));
    };
    ir::Value* in = g.addInput("x", type({6, 40}));
    ir::Value* mx = g.addValue("m", type({}));
    ir::Node* reduce = g.addNode("ReduceMax", {in}, {mx}, "max");
    reduce->attributes["keepdims"].value = int64_t{0};
    ir::Value* s = g.addValue("s", type({}));
    g.addNode("Div", {mx, scalar("c127", 127.f)}, {s}, "scale");
    ir::Value* lo = scalar("lo", -20.f);
    ir::Value* y = g.addValue("y", type({6, 40}));
    if (fused) {
      ir::Node* chain = g.addNode("ElementwiseChain", {in, s, lo, mx}, {y}, "quantize", "ai.graphcore");
      chain->attributes["ops"].value = std::vector<std::string>{"Div", "Round", "Max", "Min"};
      chain->attributes["operands"].value = std::vector<int64_t>{1, 0, 2, 3};
    } else {
      ir::Value *q = g.addValue("q", type({6, 40})), *r = g.addValue("r", type({6, 40})), *c = g.addValue("c", type({6, 40}));
      g.addNode("Div", {in, s}, {q}, "div");
      g.addNode("Round", {q}, {r}, "round");
      g.addNode("Max", {r, lo}, {c}, "max_lo");
      g.addNode("Min", {c, mx}, {y}, "min_m");
    }
    g.addOutput(y);
    return m;
  };
  const ir::Model fused = model(true, DType::Float), unfused = model(false, DType::Float);
  auto want = ops::evaluateGraph(*unfused.graph, {{"x", x}});
  ASSERT_TRUE(want.ok()) << want.error().message();
  for (uint32_t tiles : {1u, 4u, 64u}) {
    SCOPED_TRACE(tiles);
    auto compiled = codegen::compile(fused, {*codegen::makeTarget("ipu2", 1, tiles), 0.6});
    ASSERT_TRUE(compiled.ok()) << compiled.error().message();
    EXPECT_GT(countVertices(compiled->executable, exec::Codelet::ElementwiseChain), 0u);
    EXPECT_EQ(countVertices(compiled->executable, exec::Codelet::Binary), 1u) << "only the scale's Div";
    auto engine = Engine::create(compiled->executable, compiled->weightData());
    ASSERT_TRUE(engine.ok()) << engine.error().message();
    auto got = (*engine)->runTensors({&x});
    ASSERT_TRUE(got.ok()) << got.error().message();
    EXPECT_TRUE((*got)[0] == (*want)[0]) << "the device's chain is not the ops' bits";
  }
  // float16: the steps in float32, one rounding (integers up to 127: exact in float16, as are the
  // float32 quotients' roundings here but for a tie, so the result equals the float32 one).
  const ir::Model half = model(true, DType::Float16);
  const Tensor x16 = halfOf(x);
  auto want16 = ops::evaluateGraph(*half.graph, {{"x", x16}});
  ASSERT_TRUE(want16.ok()) << want16.error().message();
  auto compiled = codegen::compile(half, {*codegen::makeTarget("ipu2", 1, 4), 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  auto engine = Engine::create(compiled->executable, compiled->weightData());
  ASSERT_TRUE(engine.ok()) << engine.error().message();
  auto got16 = (*engine)->runTensors({&x16});
  ASSERT_TRUE(got16.ok()) << got16.error().message();
  EXPECT_TRUE((*got16)[0] == (*want16)[0]) << "float16 chain differs from the evaluator's";
}

// K much longer than M x N: the planner splits K over the tiles, and the next superstep adds the
// partial sums (with Gemm's C added once and GemmAct's activation after the sum).
TEST(Engine, MatMulsWithKSplitMatchTheReference) {
  struct Case {
    const char* op;
    bool trans_a, trans_b;
  };
  for (const Case& c : {Case{"MatMul", false, false}, Case{"Gemm", true, true}, Case{"GemmAct", false, true}}) {
    SCOPED_TRACE(c.op);
    const bool gemm = std::string(c.op) != "MatMul";
    ir::Model m;
    m.opset_imports = {{"", 17}, {"ai.graphcore", 1}};
    ir::Graph& g = *m.graph;
    const Shape a_shape = !gemm ? Shape{3, 5, 700} : c.trans_a ? Shape{700, 15} : Shape{15, 700};
    const Shape y_shape = gemm ? Shape{15, 6} : Shape{3, 5, 6};
    ir::Value* a = g.addInput("a", f32(a_shape));
    ir::Value* w = g.addInitializer("w", randomTensor(c.trans_b ? Shape{6, 700} : Shape{700, 6}, 51));
    ir::Value* y = g.addValue("y", f32(y_shape));
    std::vector<ir::Value*> ins{a, w};
    if (gemm) ins.push_back(g.addInitializer("c", randomTensor({6}, 52)));
    ir::Node* n = g.addNode(c.op, ins, {y}, "mm", std::string(c.op) == "GemmAct" ? "ai.graphcore" : "");
    if (gemm) {
      n->attributes["transA"].value = int64_t{c.trans_a};
      n->attributes["transB"].value = int64_t{c.trans_b};
      n->attributes["alpha"].value = 0.5f;
      n->attributes["beta"].value = 2.0f;
    }
    if (std::string(c.op) == "GemmAct") n->attributes["activation"].value = std::string("Relu");
    g.addOutput(y);
    auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 16), 0.6});
    ASSERT_TRUE(compiled.ok()) << compiled.error().message();
    EXPECT_GT(countVertices(compiled->executable, exec::Codelet::Reduce), 0u) << "K was not split";
    expectSimMatchesReference(m, {{"a", randomTensor(a_shape, 53)}}, 16);
  }
}

// A split K's sums are reduced a whole number of rows on each tile (reductionSlice), so a bias
// over the columns after it takes one Binary vertex a reducing tile, not one each for a partial
// first row, the rows between and a partial last.
TEST(Engine, ReducedMatMulRowsTakeOneBiasVertexATile) {
  const int64_t M = 60, K = 4000, N = 48;
  const uint32_t tiles = 64;
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* a = g.addInput("a", f32({M, K}));
  ir::Value* s = g.addValue("s", f32({M, N}));
  ir::Value* y = g.addValue("y", f32({M, N}));
  g.addNode("MatMul", {a, g.addInitializer("w", randomTensor({K, N}, 71))}, {s}, "mm");
  g.addNode("Mul", {s, g.addInitializer("scale", randomTensor({N}, 72))}, {y}, "column_scale");
  g.addOutput(y);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, tiles), 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  const size_t reducers = countVertices(compiled->executable, exec::Codelet::Reduce);
  ASSERT_GT(reducers, 1u) << "K was not split";
  size_t scale_vertices = 0;
  for (const auto& cs : compiled->executable.compute_sets)
    if (cs.name == "column_scale") scale_vertices += cs.vertices.size();
  EXPECT_EQ(scale_vertices, reducers);
  expectSimMatchesReference(m, {{"a", randomTensor({M, K}, 73)}}, tiles);
}

// In float16 the partial sums stay float32: only the sum is rounded, once.
TEST(Engine, Float16MatMulWithKSplitRoundsOnlyTheSum) {
  const int64_t M = 6, K = 1000, N = 5;
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  const Tensor a16 = halfOf(randomTensor({M, K}, 61)), w16 = halfOf(randomTensor({K, N}, 62));
  ir::Value* a = g.addInput("a", ir::TensorType::of(DType::Float16, {M, K}));
  ir::Value* w = g.addInitializer("w", w16);
  ir::Value* y = g.addValue("y", ir::TensorType::of(DType::Float16, {M, N}));
  g.addNode("MatMul", {a, w}, {y}, "mm");
  g.addOutput(y);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 16), 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  ASSERT_GT(countVertices(compiled->executable, exec::Codelet::Reduce), 0u) << "K was not split";
  auto got = runCompiled(*compiled, a16);
  ASSERT_TRUE(got.ok()) << got.error().message();
  const auto* ga = reinterpret_cast<const uint16_t*>(a16.bytes().data());
  const auto* gw = reinterpret_cast<const uint16_t*>(w16.bytes().data());
  const auto* gy = reinterpret_cast<const uint16_t*>((*got)[0].bytes().data());
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double want = 0;
      for (int64_t k = 0; k < K; ++k)
        want += static_cast<double>(halfBitsToFloat(ga[i * K + k])) * halfBitsToFloat(gw[k * N + j]);
      SCOPED_TRACE(std::to_string(i) + "," + std::to_string(j));
      expectRoundedOnce(gy[i * N + j], want);
    }
}

// Adds a node with integer-list attributes.
ir::Node* addWindowNode(ir::Graph& g, const std::string& op, std::vector<ir::Value*> ins, ir::Value* out, const std::string& name,
                        std::map<std::string, std::vector<int64_t>> ints, const std::string& domain = "") {
  ir::Node* n = g.addNode(op, std::move(ins), {out}, name, domain);
  for (auto& [k, v] : ints) n->attributes[k].value = v;
  return n;
}

// Conv, ConvAct (depthwise, strided, asymmetric pads), MaxPool, AveragePool and the global pools,
// all on the device, for 4, 64 and 1472 tiles.
TEST(Engine, ConvNetOnSeveralTileCounts) {
  ir::Model m;
  m.opset_imports = {{"", 17}, {"ai.graphcore", 1}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({2, 3, 10, 9}));
  ir::Value* w1 = g.addInitializer("w1", randomTensor({8, 3, 3, 3}, 31));
  ir::Value* b1 = g.addInitializer("b1", randomTensor({8}, 32));
  ir::Value* w2 = g.addInitializer("w2", randomTensor({8, 1, 3, 3}, 33));
  ir::Value* b2 = g.addInitializer("b2", randomTensor({8}, 34));
  ir::Value* w3 = g.addInitializer("w3", randomTensor({6, 4, 1, 1}, 35));
  ir::Value* c1 = g.addValue("c1", f32({2, 8, 10, 9}));
  ir::Value* r1 = g.addValue("r1", f32({2, 8, 10, 9}));
  ir::Value* p1 = g.addValue("p1", f32({2, 8, 5, 5}));
  ir::Value* c2 = g.addValue("c2", f32({2, 8, 3, 2}));
  ir::Value* p2 = g.addValue("p2", f32({2, 8, 3, 2}));
  ir::Value* c3 = g.addValue("c3", f32({2, 6, 3, 2}));
  ir::Value* gavg = g.addValue("gavg", f32({2, 6, 1, 1}));
  ir::Value* gmax = g.addValue("gmax", f32({2, 8, 1, 1}));
  addWindowNode(g, "Conv", {x, w1, b1}, c1, "conv1", {{"pads", {1, 1, 1, 1}}, {"kernel_shape", {3, 3}}});
  g.addNode("Relu", {c1}, {r1}, "relu1");
  addWindowNode(g, "MaxPool", {r1}, p1, "maxpool", {{"kernel_shape", {3, 3}}, {"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}});
  ir::Node* dw =
      addWindowNode(g, "ConvAct", {p1, w2, b2}, c2, "dwconv", {{"strides", {2, 2}}, {"pads", {1, 0, 1, 1}}}, "ai.graphcore");
  dw->attributes["group"].value = int64_t{8};
  dw->attributes["activation"].value = std::string("HardSwish");
  ir::Node* avg = addWindowNode(g, "AveragePool", {c2}, p2, "avgpool", {{"kernel_shape", {2, 2}}, {"pads", {0, 0, 1, 1}}});
  avg->attributes["count_include_pad"].value = int64_t{1};
  ir::Node* grouped = addWindowNode(g, "Conv", {p2, w3}, c3, "grouped1x1", {});
  grouped->attributes["group"].value = int64_t{2};
  g.addNode("GlobalAveragePool", {c3}, {gavg}, "gap");
  g.addNode("GlobalMaxPool", {c2}, {gmax}, "gmp");
  g.addOutput(gavg);
  g.addOutput(gmax);
  g.addOutput(p1);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 4), 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  EXPECT_TRUE(compiled->host_nodes.empty()) << compiled->host_nodes[0] << ": " << compiled->host_reasons[0];
  for (uint32_t tiles : {4u, 64u, 1472u}) {
    SCOPED_TRACE(tiles);
    expectSimMatchesReference(m, {{"x", randomTensor({2, 3, 10, 9}, 36)}}, tiles);
  }
}

// Late-layer convolutions (few pixels, many input channels) split their input channels: partial
// sums, added up in a second superstep with the bias and the activation. A 2048 -> 64 ConvAct at
// 7x7 on 1472 tiles and a 3x3 256 -> 32 Conv at 9x9 (odd sizes: the last channel blocks and the
// reduction slices come out short), both against the evaluator.
TEST(Engine, ConvsSplitOverInputChannelsSumTheirPartials) {
  ir::Model m;
  m.opset_imports = {{"", 17}, {"ai.graphcore", 1}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({1, 2048, 7, 7}));
  ir::Value* w1 = g.addInitializer("w1", randomTensor({64, 2048, 1, 1}, 71));
  ir::Value* b1 = g.addInitializer("b1", randomTensor({64}, 72));
  ir::Value* v = g.addInput("v", f32({1, 250, 9, 9}));
  ir::Value* w2 = g.addInitializer("w2", randomTensor({33, 250, 3, 3}, 73));
  ir::Value* y1 = g.addValue("y1", f32({1, 64, 7, 7}));
  ir::Value* y2 = g.addValue("y2", f32({1, 33, 9, 9}));
  ir::Node* ca = addWindowNode(g, "ConvAct", {x, w1, b1}, y1, "conv_act", {}, "ai.graphcore");
  ca->attributes["activation"].value = std::string("Relu");
  addWindowNode(g, "Conv", {v, w2}, y2, "conv3x3", {{"pads", {1, 1, 1, 1}}});
  g.addOutput(y1);
  g.addOutput(y2);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 1472), 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  // Both split: each ends with a superstep of Reduce vertices.
  int reductions = 0;
  for (const auto& cs : compiled->executable.compute_sets)
    reductions += !cs.vertices.empty() && cs.vertices[0].codelet == exec::Codelet::Reduce;
  EXPECT_EQ(reductions, 2);
  expectSimMatchesReference(m, {{"x", randomTensor({1, 2048, 7, 7}, 74)}, {"v", randomTensor({1, 250, 9, 9}, 75)}}, 1472);
}

// A float16 conv splits its input channels as a float32 one does: the blocks write float32
// partial sums, and the sum (with the bias and the activation) is rounded once.
TEST(Engine, Float16ConvSplitOverInputChannelsRoundsOnlyTheSum) {
  const int64_t C = 2048, M = 64, P = 49;
  ir::Model m;
  m.opset_imports = {{"", 17}, {"ai.graphcore", 1}};
  ir::Graph& g = *m.graph;
  const Tensor x16 = halfOf(randomTensor({1, C, 7, 7}, 91)), w16 = halfOf(randomTensor({M, C, 1, 1}, 92)),
               b16 = halfOf(randomTensor({M}, 93));
  ir::Value* x = g.addInput("x", ir::TensorType::of(DType::Float16, {1, C, 7, 7}));
  ir::Value* y = g.addValue("y", ir::TensorType::of(DType::Float16, {1, M, 7, 7}));
  ir::Node* ca =
      addWindowNode(g, "ConvAct", {x, g.addInitializer("w", w16), g.addInitializer("b", b16)}, y, "conv_act", {}, "ai.graphcore");
  ca->attributes["activation"].value = std::string("Relu");
  g.addOutput(y);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 1472), 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  ASSERT_GT(countVertices(compiled->executable, exec::Codelet::Reduce), 0u) << "the conv was not split";
  auto got = runCompiled(*compiled, x16);
  ASSERT_TRUE(got.ok()) << got.error().message();
  const auto* gx = reinterpret_cast<const uint16_t*>(x16.bytes().data());
  const auto* gw = reinterpret_cast<const uint16_t*>(w16.bytes().data());
  const auto* gb = reinterpret_cast<const uint16_t*>(b16.bytes().data());
  const auto* gy = reinterpret_cast<const uint16_t*>((*got)[0].bytes().data());
  for (int64_t o = 0; o < M; ++o)
    for (int64_t i = 0; i < P; ++i) {
      double want = halfBitsToFloat(gb[o]);
      for (int64_t c = 0; c < C; ++c)
        want += static_cast<double>(halfBitsToFloat(gw[o * C + c])) * halfBitsToFloat(gx[c * P + i]);
      SCOPED_TRACE(std::to_string(o) + "," + std::to_string(i));
      expectRoundedOnce(gy[o * P + i], std::max(want, 0.0));
    }
}

// A split conv's reduction slices cross channels, so its output has several regions per slice;
// the elementwise ops after it (Relu, an Add of an operand laid out elsewhere, a LeakyRelu) run a
// vertex per slice, not per region, and still match the evaluator.
TEST(Engine, ElementwiseOpsAfterASplitConvRunAVertexPerSlice) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({1, 512, 14, 14}));
  ir::Value* z = g.addInput("z", f32({1, 64, 14, 14}));
  ir::Value* w = g.addInitializer("w", randomTensor({64, 512, 1, 1}, 81));
  ir::Value* c = g.addValue("c", f32({1, 64, 14, 14}));
  ir::Value* r = g.addValue("r", f32({1, 64, 14, 14}));
  ir::Value* s = g.addValue("s", f32({1, 64, 14, 14}));
  ir::Value* y = g.addValue("y", f32({1, 64, 14, 14}));
  addWindowNode(g, "Conv", {x, w}, c, "conv", {});
  g.addNode("Relu", {c}, {r}, "relu");
  g.addNode("Add", {r, z}, {s}, "add");
  g.addNode("LeakyRelu", {s}, {y}, "leaky_relu");
  g.addOutput(y);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 1472), 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  size_t slices = 0;
  std::map<std::string, size_t> elementwise;  // vertices per node
  for (const auto& cs : compiled->executable.compute_sets)
    for (const auto& v : cs.vertices) {
      if (v.codelet == exec::Codelet::Reduce) ++slices;
      if (cs.name != "conv") ++elementwise[cs.name];
    }
  ASSERT_GT(slices, 0u) << "the conv was not split";
  EXPECT_EQ(elementwise.size(), 3u);
  for (const auto& [node, vertices] : elementwise) EXPECT_LE(vertices, slices) << node;
  expectSimMatchesReference(m, {{"x", randomTensor({1, 512, 14, 14}, 82)}, {"z", randomTensor({1, 64, 14, 14}, 83)}}, 1472);
}

// 1-D and 3-D windows, dilations, auto_pad and ceil_mode.
TEST(Engine, Conv1dAnd3dWithAutoPadAndCeilMode) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* a = g.addInput("a", f32({3, 4, 17}));
  ir::Value* v = g.addInput("v", f32({1, 2, 5, 6, 7}));
  ir::Value* wa = g.addInitializer("wa", randomTensor({6, 2, 3}, 41));
  ir::Value* wv = g.addInitializer("wv", randomTensor({3, 2, 2, 3, 2}, 42));
  ir::Value* bv = g.addInitializer("bv", randomTensor({3}, 43));
  ir::Value* ca = g.addValue("ca", f32({3, 6, 9}));
  ir::Value* pa = g.addValue("pa", f32({3, 6, 5}));
  ir::Value* cv = g.addValue("cv", f32({1, 3, 5, 3, 7}));
  ir::Value* pv = g.addValue("pv", f32({1, 3, 3, 2, 3}));
  ir::Node* conv1d = addWindowNode(g, "Conv", {a, wa}, ca, "conv1d", {{"strides", {2}}, {"dilations", {2}}});
  conv1d->attributes["group"].value = int64_t{2};
  conv1d->attributes["auto_pad"].value = std::string("SAME_UPPER");
  ir::Node* mp = addWindowNode(g, "MaxPool", {ca}, pa, "maxpool1d", {{"kernel_shape", {2}}, {"strides", {2}}});
  mp->attributes["ceil_mode"].value = int64_t{1};
  ir::Node* conv3d = addWindowNode(g, "Conv", {v, wv, bv}, cv, "conv3d", {{"strides", {1, 2, 1}}});
  conv3d->attributes["auto_pad"].value = std::string("SAME_LOWER");
  ir::Node* ap = addWindowNode(g, "AveragePool", {cv}, pv, "avgpool3d", {{"kernel_shape", {2, 2, 3}}, {"strides", {2, 2, 2}}});
  ap->attributes["ceil_mode"].value = int64_t{1};
  g.addOutput(pa);
  g.addOutput(pv);
  for (uint32_t tiles : {4u, 64u, 1472u}) {
    SCOPED_TRACE(tiles);
    auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, tiles), 0.6});
    ASSERT_TRUE(compiled.ok()) << compiled.error().message();
    EXPECT_TRUE(compiled->host_nodes.empty()) << compiled->host_nodes[0] << ": " << compiled->host_reasons[0];
    expectSimMatchesReference(m, {{"a", randomTensor({3, 4, 17}, 44)}, {"v", randomTensor({1, 2, 5, 6, 7}, 45)}}, tiles);
  }
}

// A Conv no split of which fits the budget runs on the host, with the reason; a MaxPool whose
// Indices are used too.
TEST(Compile, WindowOpsThatCannotRunOnTheDeviceFallBackToTheHost) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({1, 4096, 8, 8}));
  ir::Value* w = g.addInitializer("w", randomTensor({2, 4096, 3, 3}, 51));
  ir::Value* c = g.addValue("c", f32({1, 2, 8, 8}));
  ir::Value* p = g.addValue("p", f32({1, 2, 4, 4}));
  ir::Value* idx = g.addValue("idx", ir::TensorType::of(DType::Int64, {1, 2, 4, 4}));
  ir::Value* r = g.addValue("r", f32({1, 2, 4, 4}));
  addWindowNode(g, "Conv", {x, w}, c, "wide_conv", {{"pads", {1, 1, 1, 1}}});
  ir::Node* mp = g.addNode("MaxPool", {c}, {p, idx}, "maxpool_with_indices");
  mp->attributes["kernel_shape"].value = std::vector<int64_t>{2, 2};
  mp->attributes["strides"].value = std::vector<int64_t>{2, 2};
  g.addNode("Relu", {p}, {r}, "relu");
  g.addOutput(r);
  g.addOutput(idx);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 1), 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  ASSERT_EQ(compiled->host_nodes, (std::vector<std::string>{"wide_conv", "maxpool_with_indices"}));
  EXPECT_NE(compiled->host_reasons[0].find("bytes per tile"), std::string::npos) << compiled->host_reasons[0];
  EXPECT_NE(compiled->host_reasons[1].find("'idx' is used"), std::string::npos) << compiled->host_reasons[1];
  EXPECT_EQ(compiled->device_nodes, (std::vector<std::string>{"relu"}));
  auto exe = exec::deserialize(exec::serialize(compiled->executable), "test");
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  std::map<std::string, Tensor> weights = compiled->weightData();
  auto engine = Engine::create(std::move(exe).value(), weights);
  ASSERT_TRUE(engine.ok()) << engine.error().message();
  Tensor xt = randomTensor({1, 4096, 8, 8}, 52);
  auto got = (*engine)->runTensors({&xt});
  ASSERT_TRUE(got.ok()) << got.error().message();
  auto want = ops::evaluateGraph(g, {{"x", xt}});
  ASSERT_TRUE(want.ok()) << want.error().message();
  for (size_t i = 0; i < 16 * 2; ++i) EXPECT_NEAR((*got)[0].data<float>()[i], (*want)[0].data<float>()[i], 1e-4);
}

// Operand windows live in node-local scratch: a chain of convs needs about one conv's scratch,
// not the sum of all of them.
TEST(Compile, ConvOperandWindowsShareScratchMemory) {
  auto build = [](int layers) {
    ir::Model m;
    m.opset_imports = {{"", 17}};
    ir::Graph& g = *m.graph;
    ir::Value* cur = g.addInput("x", f32({1, 16, 32, 32}));
    for (int i = 0; i < layers; ++i) {
      ir::Value* w = g.addInitializer("w" + std::to_string(i), randomTensor({16, 16, 3, 3}, 60 + i));
      ir::Value* y = g.addValue("y" + std::to_string(i), f32({1, 16, 32, 32}));
      addWindowNode(g, "Conv", {cur, w}, y, "conv" + std::to_string(i), {{"pads", {1, 1, 1, 1}}});
      cur = y;
    }
    g.addOutput(cur);
    auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 16), 0.6});
    EXPECT_TRUE(compiled.ok()) << compiled.error().message();
    uint64_t total = 0;
    for (uint64_t b : compiled->executable.tile_bytes) total += b;
    return total;
  };
  const uint64_t one = build(1), eight = build(8);
  // Each extra layer adds its output (64 KiB) and its weights (9 KiB), not its input windows.
  EXPECT_LT(eight - one, 7u * (65536 + 9216) * 11 / 10) << one << " " << eight;
}

// y = Relu(x) with x float32[8], compiled for a 4-tile target.
exec::Executable compileRelu() {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({8}));
  ir::Value* y = g.addValue("y", f32({8}));
  g.addNode("Relu", {x}, {y}, "relu");
  g.addOutput(y);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 4), 0.6});
  EXPECT_TRUE(compiled.ok());
  return compiled->executable;
}

Tensor int64s(std::vector<int64_t> v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>().begin());
  return t;
}

TEST(Engine, LayoutOpsRunAsCopiesAndMatchTheEvaluator) {
  ir::Model m;
  m.opset_imports = {{"", 13}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({2, 3, 4}));
  ir::Value* t = g.addValue("t", f32({2, 4, 3}));
  ir::Value* tt = g.addValue("tt", f32({2, 3, 4}));
  ir::Value* c = g.addValue("c", f32({2, 6, 4}));
  ir::Value* s = g.addValue("s", f32({2, 3, 2}));
  ir::Value* p = g.addValue("p", f32({2, 5, 5}));
  ir::Value* r = g.addValue("r", f32({10, 5}));
  ir::Value* gth = g.addValue("gth", f32({3, 5}));
  ir::Value* sp0 = g.addValue("sp0", f32({4, 5}));
  ir::Value* sp1 = g.addValue("sp1", f32({6, 5}));
  ir::Value* rs = g.addValue("rs", f32({2, 6, 8}));
  ir::Node* tr = g.addNode("Transpose", {x}, {t}, "transpose");
  tr->attributes["perm"].value = std::vector<int64_t>{0, 2, 1};
  ir::Node* back = g.addNode("Transpose", {t}, {tt}, "transpose_back");
  back->attributes["perm"].value = std::vector<int64_t>{0, 2, 1};
  ir::Node* cat = g.addNode("Concat", {x, tt}, {c}, "concat");
  cat->attributes["axis"].value = int64_t{1};
  g.addNode("Slice",
            {c, g.addInitializer("starts", int64s({1, 3})), g.addInitializer("ends", int64s({100, 1})),
             g.addInitializer("axes", int64s({1, 2})), g.addInitializer("steps", int64s({2, -1}))},
            {s}, "slice");  // rows 1,3,5 of axis 1; columns 3 down to 2 of axis 2
  Tensor fill(DType::Float, {});
  fill.data<float>()[0] = 2.5f;
  g.addNode("Pad", {s, g.addInitializer("pads", int64s({0, 1, 1, 0, 1, 2})), g.addInitializer("value", fill)}, {p}, "pad");
  g.addNode("Reshape", {p, g.addInitializer("shape", int64s({10, 5}))}, {r}, "reshape");  // a view
  g.addNode("Gather", {r, g.addInitializer("idx", int64s({9, 0, -1}))}, {gth}, "gather");
  ir::Node* split = g.addNode("Split", {r, g.addInitializer("split", int64s({4, 6}))}, {sp0, sp1}, "split");
  split->attributes["axis"].value = int64_t{0};
  Tensor scales(DType::Float, {3});
  std::copy_n(std::vector<float>{1, 1, 2}.begin(), 3, scales.data<float>().begin());
  ir::Node* resize = g.addNode("Resize", {c, nullptr, g.addInitializer("scales", scales)}, {rs}, "resize_nearest");
  resize->attributes["mode"].value = std::string("nearest");
  for (ir::Value* out : {gth, sp0, sp1, rs}) g.addOutput(out);
  // Every one of them must be on the device (pure copies), none on the host.
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 8), 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  EXPECT_TRUE(compiled->host_nodes.empty()) << compiled->host_nodes.size()
                                            << " on the host, first: " << compiled->host_reasons[0];
  expectSimMatchesReference(m, {{"x", randomTensor({2, 3, 4}, 21)}}, 8);
}

TEST(Engine, RefusesVertexOutsideTileMemory) {
  exec::Executable exe = compileRelu();
  exe.compute_sets[0].vertices[0].fields[0].offset = exe.tile_bytes[exe.compute_sets[0].vertices[0].tile];
  auto engine = Engine::create(exe, {});
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.error().message().find("outside the memory"), std::string::npos) << engine.error().message();
}

TEST(Engine, RefusesGathersOutsideTheirLayoutOrTile) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({1, 2, 6, 6}));
  ir::Value* w = g.addInitializer("w", randomTensor({3, 2, 3, 3}, 71));
  ir::Value* y = g.addValue("y", f32({1, 3, 6, 6}));
  addWindowNode(g, "Conv", {x, w}, y, "conv", {{"pads", {1, 1, 1, 1}}});
  g.addOutput(y);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 4), 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  const exec::Executable& good = compiled->executable;
  ASSERT_FALSE(good.layouts.empty());
  ASSERT_FALSE(good.exchanges.empty());
  ASSERT_FALSE(good.exchanges[0].gathers.empty());
  ASSERT_TRUE(exec::validate(good).ok());
  auto refused = [&](auto mutate, const std::string& what) {
    exec::Executable bad = good;
    mutate(bad);
    Status st = exec::validate(bad);
    ASSERT_FALSE(st.ok()) << what;
    EXPECT_NE(st.error().message().find(what), std::string::npos) << st.error().message();
    // And through the serialised form, as a hostile PopEF would arrive.
    EXPECT_FALSE(exec::deserialize(exec::serialize(bad), "test").ok());
  };
  refused([](exec::Executable& e) { e.exchanges[0].gathers[0].count = int64_t{1} << 40; }, "gathers outside its layout");
  refused(
      [](exec::Executable& e) {
        e.exchanges[0].gathers[0].reps = 1000;
        e.exchanges[0].gathers[0].stride = 1000;
      },
      "gathers outside its layout");
  refused(
      [](exec::Executable& e) {
        e.exchanges[0].gathers[0].reps = 1000;
        e.exchanges[0].gathers[0].stride = 0;
        e.exchanges[0].gathers[0].dst_stride = 4096;
      },
      "gathers outside the memory of tile");
  refused([](exec::Executable& e) { e.exchanges[0].gathers[0].dst_offset = e.tile_bytes[e.exchanges[0].gathers[0].dst_tile]; },
          "gathers outside the memory of tile");
  refused([](exec::Executable& e) { e.exchanges[0].gathers[0].dst_stride = uint64_t{1} << 60; }, "bad sizes");
  refused([](exec::Executable& e) { e.exchanges[0].gathers[0].begin = -1; }, "bad sizes");
  refused([](exec::Executable& e) { e.exchanges[0].gathers[0].layout = 99; }, "missing layout");
  refused([](exec::Executable& e) { e.layouts[0].regions[0].offset = e.tile_bytes[e.layouts[0].regions[0].tile]; },
          "region outside the memory");
  refused([](exec::Executable& e) { e.layouts[0].regions[0].begin = 1; }, "do not cover");
  refused([](exec::Executable& e) { e.layouts[0].elem_bytes = 3; }, "element size");
}

TEST(Engine, RefusesWrongInputShape) {
  auto engine = Engine::create(compileRelu(), {});
  ASSERT_TRUE(engine.ok());
  Tensor wrong(DType::Float, {7});
  auto r = (*engine)->runTensors({&wrong});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("input 'x'"), std::string::npos);
}

TEST(Compile, HostFallbackRunsWhatTheDeviceCannot) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({2, 3}));
  ir::Value* i = g.addInput("i", ir::TensorType::of(DType::Int32, {2, 3}));
  ir::Value* y = g.addValue("y", f32({2, 3}));
  ir::Value* k = g.addValue("k", ir::TensorType::of(DType::Int32, {2, 3}));
  ir::Value* z = g.addValue("z", f32({2, 3}));
  ir::Value* u = g.addValue("u");
  u->type.dtype = DType::Float;
  u->type.dims = std::vector<ir::Dim>{ir::Dim::symbolic("n"), ir::Dim::fixed(3)};  // known only at run time
  g.addNode("Relu", {x}, {y}, "relu");                                             // device
  g.addNode("Add", {i, i}, {k}, "add");                                            // host: int32
  g.addNode("Mul", {y, y}, {z}, "mul");                                            // device
  g.addNode("Sub", {z, y}, {u}, "sub");  // host: run-time output shape; reads device values
  g.addOutput(z);
  g.addOutput(k);
  g.addOutput(u);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 4), 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  EXPECT_EQ(compiled->device_nodes, (std::vector<std::string>{"relu", "mul"}));
  EXPECT_EQ(compiled->host_nodes, (std::vector<std::string>{"add", "sub"}));
  EXPECT_EQ(compiled->executable.host_programs.size(), 2u);
  auto exe = exec::deserialize(exec::serialize(compiled->executable), "test");
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  auto engine = Engine::create(std::move(exe).value(), {});
  ASSERT_TRUE(engine.ok()) << engine.error().message();
  Tensor xt = randomTensor({2, 3}, 11);
  Tensor it(DType::Int32, {2, 3});
  for (int j = 0; j < 6; ++j) it.data<int32_t>()[j] = j - 2;
  auto got = (*engine)->runTensors({&xt, &it});
  ASSERT_TRUE(got.ok()) << got.error().message();
  ASSERT_EQ(got->size(), 3u);
  for (int j = 0; j < 6; ++j) {
    float r = std::max(xt.data<float>()[j], 0.f);
    EXPECT_FLOAT_EQ((*got)[0].data<float>()[j], r * r);
    EXPECT_EQ((*got)[1].data<int32_t>()[j], 2 * (j - 2));
    EXPECT_FLOAT_EQ((*got)[2].data<float>()[j], r * r - r);
  }
  EXPECT_EQ((*got)[2].shape(), (Shape{2, 3}));
}

// A converted model's float16 constant (ViT's class token) concatenated with an activation is the
// model's data: the Concat runs on the device, as in float32 (integer host data moved only to be
// moved back would stay on the host).
TEST(Compile, AFloat16ConstantJoinsAnActivationOnTheDevice) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", ir::TensorType::of(DType::Float16, {1, 2, 3}));
  Tensor token(DType::Float16, {1, 1, 3});
  for (int j = 0; j < 3; ++j) token.data<Half>()[j] = Half(0.25f * static_cast<float>(j + 1));
  ir::Value* c = g.addInitializer("token", token);
  ir::Value* y = g.addValue("y", ir::TensorType::of(DType::Float16, {1, 3, 3}));
  g.addNode("Concat", {c, x}, {y}, "concat")->attributes["axis"].value = int64_t{1};
  g.addOutput(y);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 4), 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  ASSERT_EQ(compiled->device_nodes, std::vector<std::string>{"concat"}) << compiled->host_reasons.at(0);
  Tensor xt(DType::Float16, {1, 2, 3});
  for (int j = 0; j < 6; ++j) xt.data<Half>()[j] = Half(static_cast<float>(j) - 2.5f);
  auto got = runCompiled(*compiled, xt);
  ASSERT_TRUE(got.ok()) << got.error().message();
  for (int j = 0; j < 9; ++j)
    EXPECT_EQ((*got)[0].data<Half>()[j].bits, (j < 3 ? token.data<Half>()[j] : xt.data<Half>()[j - 3]).bits) << j;
}

// Three 1 MiB weights on a 4-tile ipu2 (624 KiB a tile): each matmul has a plan, but the weights
// never die, so the program does not fit; the error names the tiles and what lives on them.
// x [rows, n] through `layers` MatMuls mm<i> by [n, n] weights w<i>: zeros, or `weight(i)`.
ir::Model matMulChain(int64_t rows, int64_t n, int layers, const std::function<Tensor(int)>& weight = nullptr) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* cur = g.addInput("x", f32({rows, n}));
  for (int i = 0; i < layers; ++i) {
    ir::Value* w = g.addInitializer("w" + std::to_string(i), weight ? weight(i) : Tensor(DType::Float, {n, n}));
    ir::Value* y = g.addValue("y" + std::to_string(i), f32({rows, n}));
    g.addNode("MatMul", {cur, w}, {y}, "mm" + std::to_string(i));
    cur = y;
  }
  g.addOutput(cur);
  return m;
}

TEST(Compile, OutOfMemoryNamesTheWorstTiles) {
  const ir::Model m = matMulChain(1, 512, 3);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 4), 0.6});
  ASSERT_FALSE(compiled.ok());
  const std::string msg = compiled.error().message();
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find("out of tile memory on ipu2-4t: 4 of 4 tiles need more than 624.0 KiB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("worst: tile "), std::string::npos) << msg;
  EXPECT_NE(msg.find("at node 'mm2': "), std::string::npos) << msg;  // where it peaked, then the biggest holders
  for (const char* w : {"w0 256.0 KiB", "w1 256.0 KiB", "w2 256.0 KiB"}) EXPECT_NE(msg.find(w), std::string::npos) << msg;
}

// compile() tries placements with stop_when_over: 1 MiB weights on 4 tiles (256 KiB each a tile)
// never die, so a chain of them goes over the tiles' 624 KiB at some layer. The stop names the
// first layer at which the chain cut there, compiled in full, does not fit either.
TEST(Compile, StopsAtTheFirstNodeOverTheTiles) {
  const codegen::CompileOptions full{*codegen::makeTarget("ipu2", 1, 4), 0.6};
  int first_over = 0;
  while (codegen::compile(matMulChain(1, 512, first_over + 1), full).ok()) ASSERT_LT(++first_over, 4);
  codegen::CompileOptions stop = full;
  stop.stop_when_over = true;
  auto stopped = codegen::compile(matMulChain(1, 512, 5), stop);
  ASSERT_FALSE(stopped.ok());
  const std::string msg = stopped.error().message();
  EXPECT_EQ(msg.rfind("out of tile memory on ipu2-4t", 0), 0u) << msg;
  EXPECT_NE(msg.find("(stopped after node 'mm" + std::to_string(first_over) + "')"), std::string::npos) << msg;
}

// A stop names the node to serialise when --serialize_matmul can split it (a MatMul of a constant
// weight). With a memo (poprt-convert's, which serialises that node and compiles again) compile()
// gives that stop instead of compiling the whole program for its report, and remembers the
// placement that got furthest; without one the error is the full report, as before.
TEST(Compile, AMemoGetsTheStopThatNamesTheNodeToSerialize) {
  const ir::Model m = matMulChain(1, 512, 5);
  const codegen::CompileOptions options{*codegen::makeTarget("ipu2", 1, 4), 0.6};
  codegen::PlacementMemo memo;
  auto stopped = codegen::compile(m, options, &memo);
  ASSERT_FALSE(stopped.ok());
  const std::string msg = stopped.error().message();
  EXPECT_NE(msg.find("(stopped after node 'mm"), std::string::npos) << msg;
  const auto node = codegen::nodeToSerialize(msg);
  ASSERT_TRUE(node.has_value()) << msg;
  EXPECT_NE(msg.find("(stopped after node '" + *node + "')"), std::string::npos) << msg;
  EXPECT_TRUE(memo.stopped);
  EXPECT_LT(memo.first, codegen::placements(options).size());
  auto report = codegen::compile(m, options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message().find("worst: tile "), std::string::npos) << report.error().message();
  EXPECT_EQ(report.error().message().find("stopped after"), std::string::npos) << report.error().message();
}

// Weights small enough to stay as slices on the tiles that read them fill 40% of each tile; the
// report names those slices by their weight too.
TEST(Compile, OutOfMemoryNamesResidentWeightSlices) {
  const ir::Model m = matMulChain(256, 128, 12);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 2), 0.6});
  ASSERT_FALSE(compiled.ok());
  const std::string msg = compiled.error().message();
  EXPECT_NE(msg.find("out of tile memory on ipu2-2t"), std::string::npos) << msg;
  EXPECT_NE(msg.find("slices of w"), std::string::npos) << msg;
}

// Nine 64 KiB weights on a 4-tile ipu2 (23% of its memory): with 40% of each tile for resident
// weight slices the program does not fit, so compile() tries again with 30% (the rest gathered
// when used), says so, and the program still computes the chain right.
TEST(Compile, OutOfMemoryRetriesWithFewerResidentWeights) {
  const ir::Model m = matMulChain(256, 128, 9, [](int i) {
    Tensor wt = randomTensor({128, 128}, 90 + i);
    for (float& x : wt.data<float>()) x *= 0.15f;  // keeps the chain's values near 1 (float32 tolerances)
    return wt;
  });
  codegen::CompileOptions options{*codegen::makeTarget("ipu2", 1, 4), 0.6};
  ASSERT_LT(codegen::weightShare(m, options.target), codegen::kRetryResidentShare);  // so 40% is tried first
  auto compiled = codegen::compile(m, options);
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  ASSERT_EQ(compiled->warnings.size(), 1u);
  EXPECT_NE(compiled->warnings[0].find("fit only with weights kept resident on at most 30% of each tile (not 40%)"),
            std::string::npos)
      << compiled->warnings[0];
  options.resident_weight_share = codegen::kRetryResidentShare;  // fits at once: nothing to say
  options.only_copy_resident_share = codegen::kRetryResidentShare;
  auto direct = codegen::compile(m, options);
  ASSERT_TRUE(direct.ok()) << direct.error().message();
  EXPECT_TRUE(direct->warnings.empty());
  expectSimMatchesReference(m, {{"x", randomTensor({256, 128}, 99)}}, 4);
}

// A model whose weights take between 30% and half of the memory starts at the 30% placement: the
// warning says why, not that 40% failed. Above half (VGG-11-BN) and below 30% it starts at the
// options' own.
TEST(Compile, WeightsOfATransformersShareStartAtFewerResidentWeights) {
  const codegen::CompileOptions options{*codegen::makeTarget("ipu2", 1, 4), 0.6};  // 2,496 KiB
  const auto first = [&](int layers) {
    const double share = codegen::weightShare(matMulChain(1, 256, layers), options.target);  // 256 KiB a layer
    return codegen::placements(options, share).front().resident_weight_share;
  };
  EXPECT_NEAR(codegen::weightShare(matMulChain(1, 256, 4), options.target), 1024.0 / 2496.0, 1e-12);
  EXPECT_EQ(first(2), options.resident_weight_share);  // 20%
  EXPECT_EQ(first(4), codegen::kRetryResidentShare);   // 41%
  EXPECT_EQ(first(6), options.resident_weight_share);  // 62%
  // Options already at the 30% share: nothing to put first (the next placement only has smaller
  // temporaries, which would cost plans for nothing).
  codegen::CompileOptions thirty = options;
  thirty.resident_weight_share = thirty.only_copy_resident_share = codegen::kRetryResidentShare;
  EXPECT_EQ(codegen::placements(thirty, 0.41).front().temporaries_scale, 1.0);
  const ir::Model m = matMulChain(1, 256, 4, [](int i) {
    Tensor wt = randomTensor({256, 256}, 70 + i);
    for (float& x : wt.data<float>()) x *= 0.1f;
    return wt;
  });
  auto compiled = codegen::compile(m, options);
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  ASSERT_EQ(compiled->warnings.size(), 1u);
  EXPECT_NE(compiled->warnings[0].find("the weights take 41% of the IPUs' memory, so the program was compiled with "
                                       "weights kept resident on at most 30% of each tile (not 40%)"),
            std::string::npos)
      << compiled->warnings[0];
  expectSimMatchesReference(m, {{"x", randomTensor({1, 256}, 79)}}, 4);
}

// A weight bigger than the tiles' resident share, read as one slice per tile (a classifier's
// columns): each slice is the weight's only copy, so it stays resident past the share instead of
// being spread and gathered again into the same tiles (which would not fit two tiles).
TEST(Compile, OnlyCopiesOfAWeightStayResidentPastTheShare) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({1, 384}));
  Tensor wt = randomTensor({384, 448}, 31);  // 672 KiB: 336 KiB a tile, more than 40% of 624 KiB
  ir::Value* w = g.addInitializer("w", std::move(wt));
  ir::Value* y = g.addValue("y", f32({1, 448}));
  g.addNode("MatMul", {x, w}, {y}, "classifier");
  g.addOutput(y);
  codegen::CompileOptions options{*codegen::makeTarget("ipu2", 1, 2), 0.6};
  auto compiled = codegen::compile(m, options);
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  EXPECT_TRUE(compiled->warnings.empty()) << compiled->warnings.front();
  options.only_copy_resident_share = options.resident_weight_share;  // as before: spread, then gathered
  EXPECT_FALSE(codegen::compile(m, options).ok());
  expectSimMatchesReference(m, {{"x", randomTensor({1, 384}, 32)}}, 2);
}

// Memory is reused once values die: a value stays while a view of it lives (v reads r1's memory
// after r1's last reader), and a weight first used late is not in memory earlier steps wrote.
TEST(Engine, FreedMemoryIsReusedWithoutCorruptingViewsOrWeights) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({4, 16}));
  ir::Value* flat = g.addInitializer("flat", int64s({64}));
  ir::Value* square = g.addInitializer("square", int64s({4, 16}));
  ir::Value* w = g.addInitializer("w", randomTensor({16, 8}, 21));
  auto value = [&](const char* name, Shape s) { return g.addValue(name, f32(std::move(s))); };
  ir::Value *r1 = value("r1", {4, 16}), *v = value("v", {64}), *n = value("n", {4, 16}), *e = value("e", {4, 16});
  ir::Value *t = value("t", {64}), *s = value("s", {64}), *s2 = value("s2", {4, 16}), *y = value("y", {4, 8});
  g.addNode("Relu", {x}, {r1}, "relu");
  g.addNode("Reshape", {r1, flat}, {v}, "view");
  g.addNode("Neg", {r1}, {n}, "neg");  // r1's last reader; v still needs its memory
  g.addNode("Exp", {n}, {e}, "exp");
  g.addNode("Reshape", {e, flat}, {t}, "flat_t");
  g.addNode("Add", {v, t}, {s}, "add");
  g.addNode("Reshape", {s, square}, {s2}, "square_s");
  g.addNode("MatMul", {s2, w}, {y}, "mm");
  g.addOutput(y);
  for (uint32_t tiles : {1u, 4u}) {
    SCOPED_TRACE(tiles);
    expectSimMatchesReference(m, {{"x", randomTensor({4, 16}, 22)}}, tiles);
  }
}

// A chain of elementwise ops needs about two layers' memory, not one per layer.
TEST(Compile, ElementwiseChainsReuseMemory) {
  auto busiest = [](int layers) {
    ir::Model m;
    m.opset_imports = {{"", 17}};
    ir::Graph& g = *m.graph;
    ir::Value* cur = g.addInput("x", f32({64, 256}));
    for (int i = 0; i < layers; ++i) {
      ir::Value* y = g.addValue("y" + std::to_string(i), f32({64, 256}));
      g.addNode(i % 2 ? "Relu" : "Neg", {cur}, {y}, "op" + std::to_string(i));
      cur = y;
    }
    g.addOutput(cur);
    auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 4), 0.6});
    EXPECT_TRUE(compiled.ok()) << compiled.error().message();
    return *std::max_element(compiled->executable.tile_bytes.begin(), compiled->executable.tile_bytes.end());
  };
  EXPECT_EQ(busiest(12), busiest(2));
}

}  // namespace
}  // namespace poprt::sim

namespace poprt::sim {
namespace {

// y = relu(x @ w): one weight, so a scrambled memory shows in the results.
struct MatMulRelu {
  ir::Model m;
  std::unique_ptr<Engine> engine;
  MatMulRelu() {
    m.opset_imports = {{"", 17}};
    ir::Graph& g = *m.graph;
    ir::Value* x = g.addInput("x", f32({3, 5}));
    ir::Value* w = g.addInitializer("w", randomTensor({5, 4}, 21));
    ir::Value* h = g.addValue("h", f32({3, 4}));
    ir::Value* y = g.addValue("y", f32({3, 4}));
    g.addNode("MatMul", {x, w}, {h}, "matmul");
    g.addNode("Relu", {h}, {y}, "relu");
    g.addOutput(y);
    auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 4), 0.6});
    EXPECT_TRUE(compiled.ok()) << compiled.error().message();
    std::map<std::string, Tensor> weights = compiled->weightData();
    auto e = Engine::create(compiled->executable, weights);
    EXPECT_TRUE(e.ok()) << e.error().message();
    engine = std::move(e).value();
  }
  std::map<std::string, Tensor> weights() const { return {{"w", *m.graph->findLocalValue("w")->initializer()}}; }
};

TEST(Engine, RunsStraightFromAndIntoCallerMemory) {
  MatMulRelu f;
  Tensor x = randomTensor({3, 5}, 22);
  auto want = ops::evaluateGraph(*f.m.graph, {{"x", x}});
  ASSERT_TRUE(want.ok());
  std::vector<float> y(12 + 2, -9.f);  // two guard floats after the output
  InputBinding in{x.bytes()};
  OutputBinding out{{reinterpret_cast<uint8_t*>(y.data()), 48}};
  RunTimes times;
  ASSERT_TRUE(f.engine->run({&in, 1}, {&out, 1}, &times).ok());
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(y[i], (*want)[0].data<float>()[i], 1e-5) << i;
  EXPECT_EQ(y[12], -9.f);
  EXPECT_EQ(y[13], -9.f);
  EXPECT_GT(times.compute, 0.0);
  // A binding of the wrong size is refused before anything runs.
  InputBinding short_in{x.bytes().subspan(4)};
  Status st = f.engine->run({&short_in, 1}, {&out, 1});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("input 'x' is 56 bytes, the model expects 60"), std::string::npos) << st.error().message();
}

TEST(Engine, ReloadRestoresAScrambledMemory) {
  MatMulRelu f;
  Tensor x = randomTensor({3, 5}, 23);
  auto want = ops::evaluateGraph(*f.m.graph, {{"x", x}});
  ASSERT_TRUE(want.ok());
  auto close = [&](const Tensor& got) {
    for (int i = 0; i < 12; ++i)
      if (std::fabs(got.data<float>()[i] - (*want)[0].data<float>()[i]) > 1e-5) return false;
    return true;
  };
  auto w = f.engine->readWeight("w");
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(*w == *f.m.graph->findLocalValue("w")->initializer());
  f.engine->scramble(1);
  EXPECT_FALSE(*f.engine->readWeight("w") == *w);
  auto broken = f.engine->runTensors({&x});
  ASSERT_TRUE(broken.ok());
  EXPECT_FALSE(close((*broken)[0]));  // the weights are gone
  ASSERT_TRUE(f.engine->reload(f.weights()).ok());
  auto fixed = f.engine->runTensors({&x});
  ASSERT_TRUE(fixed.ok());
  EXPECT_TRUE(close((*fixed)[0]));
  EXPECT_FALSE(f.engine->readWeight("nope").ok());
}

// The figures the profile reports show per step: one entry per main-program step whose sums are
// the estimate, the bytes each stream or exchange moves, the FLOPs of a conv's vertices, and a
// wall time per step when asked. The byte and FLOP counts are worked out from the shapes.
TEST(Engine, FiguresPerStepAddUpToTheEstimate) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({1, 2, 6, 6}));
  ir::Value* w = g.addInitializer("w", randomTensor({3, 2, 3, 3}, 5));
  ir::Value* y = g.addValue("y", f32({1, 3, 4, 4}));
  addWindowNode(g, "Conv", {x, w}, y, "conv", {{"kernel_shape", {3, 3}}});  // no padding: every tap counts
  g.addOutput(y);
  auto compiled = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 4), 0.6});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  std::map<std::string, Tensor> weights = compiled->weightData();
  auto engine = Engine::create(compiled->executable, weights);
  ASSERT_TRUE(engine.ok()) << engine.error().message();
  const exec::Executable& exe = (*engine)->executable();
  const auto& steps = (*engine)->stepCycles();
  ASSERT_EQ(steps.size(), exe.main.steps.size());
  CycleEstimate sum;
  uint64_t flops = 0, streamed_in = 0, streamed_out = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    sum.compute += steps[i].compute;
    sum.exchange += steps[i].exchange;
    sum.sync += steps[i].sync;
    const exec::Step& step = exe.main.steps[i];
    if (step.kind == exec::StepKind::Compute) {
      EXPECT_GT(steps[i].compute, 0u);
      for (const auto& v : exe.compute_sets[step.index].vertices) flops += vertexFlops(v);
    }
    if (step.kind == exec::StepKind::StreamIn) streamed_in += steps[i].bytes;
    if (step.kind == exec::StepKind::StreamOut) streamed_out += steps[i].bytes;
  }
  EXPECT_EQ(sum.compute, (*engine)->estimate().compute);
  EXPECT_EQ(sum.exchange, (*engine)->estimate().exchange);
  EXPECT_EQ(sum.sync, (*engine)->estimate().sync);
  EXPECT_EQ(flops, 2u * (3 * 4 * 4) * (2 * 3 * 3));  // 2 x outputs x MACs per output
  EXPECT_EQ(streamed_in, 2u * 6 * 6 * 4);
  EXPECT_EQ(streamed_out, 3u * 4 * 4 * 4);

  Tensor in = randomTensor({1, 2, 6, 6}, 6);
  Tensor out(DType::Float, {1, 3, 4, 4});
  InputBinding ib{in.bytes(), nullptr};
  OutputBinding ob{out.bytes(), nullptr};
  std::vector<double> wall;
  RunTimes times;
  times.step_seconds = &wall;
  ASSERT_TRUE((*engine)->run({&ib, 1}, {&ob, 1}, &times).ok());
  ASSERT_EQ(wall.size(), exe.main.steps.size());
  for (double s : wall) EXPECT_GE(s, 0.0);
}

TEST(Codelets, FlopsOfAMatMulVertex) {
  exec::Vertex v;
  v.codelet = exec::Codelet::MatMul;
  v.params = {2, 3, 4, 0, 0, exec::kBiasNone};
  v.fparams = {1, 1};  // alpha, beta
  EXPECT_EQ(vertexFlops(v), 2u * 2 * 3 * 4);
  setParam(v, 5, exec::kBiasRow);  // plus one add per output
  EXPECT_EQ(vertexFlops(v), 2u * 2 * 3 * 4 + 2 * 4);
}

}  // namespace
}  // namespace poprt::sim
