// Models sharded and pipelined over several IPUs: placement, IPU-Link copies, the verifier's
// stage checks and the pipelined estimate; every output compared with the reference evaluator.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "codegen/compiler.h"
#include "codegen/target.h"
#include "lib/ops/registry.h"
#include "sim/engine.h"
#include "sim/verify_popef.h"

namespace poprt::sim {
namespace {

Tensor randomTensor(Shape shape, uint32_t seed, float scale = 1.f) {
  Tensor t(DType::Float, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (float& x : t.data<float>()) x = dist(rng);
  return t;
}

ir::TensorType f32(Shape s) { return ir::TensorType::of(DType::Float, s); }

// x [rows, width] through `layers` MatMul+Relu pairs (mm<i>, relu<i>), weights scaled to keep
// values near 1; with `skip`, the output adds relu0's result back (read by the last stage).
ir::Model matmulChain(int layers, int64_t width, int64_t rows, bool skip = false) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* cur = g.addInput("x", f32({rows, width}));
  ir::Value* first = nullptr;
  for (int i = 0; i < layers; ++i) {
    const std::string n = std::to_string(i);
    ir::Value* w = g.addInitializer("w" + n, randomTensor({width, width}, 100 + i, 1.f / std::sqrt(static_cast<float>(width))));
    ir::Value* y = g.addValue("y" + n, f32({rows, width}));
    ir::Value* r = g.addValue("r" + n, f32({rows, width}));
    g.addNode("MatMul", {cur, w}, {y}, "mm" + n);
    g.addNode("Relu", {y}, {r}, "relu" + n);
    if (!first) first = r;
    cur = r;
  }
  if (skip) {
    ir::Value* out = g.addValue("out", f32({rows, width}));
    g.addNode("Add", {cur, first}, {out}, "skip");
    cur = out;
  }
  g.addOutput(cur);
  return m;
}

struct Compiled {
  codegen::CompileResult result;
  std::unique_ptr<Engine> engine;
};

Compiled compileAndLoad(const ir::Model& m, uint32_t ipus, uint32_t tiles, codegen::ShardingOptions sharding = {}) {
  auto target = codegen::makeTarget("ipu2", ipus, tiles);
  EXPECT_TRUE(target.ok());
  auto compiled = codegen::compile(m, {*target, 0.6, std::move(sharding)});
  EXPECT_TRUE(compiled.ok()) << compiled.error().message();
  if (!compiled.ok()) return {};
  // Through the serialised form, as popef-run sees it.
  auto exe = exec::deserialize(exec::serialize(compiled->executable), "test");
  EXPECT_TRUE(exe.ok()) << exe.error().message();
  std::map<std::string, Tensor> weights = compiled->weightData();
  auto engine = Engine::create(std::move(exe).value(), weights);
  EXPECT_TRUE(engine.ok()) << engine.error().message();
  return {std::move(compiled).value(), engine.ok() ? std::move(engine).value() : nullptr};
}

void expectNear(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  auto g = got.data<float>();
  auto w = want.data<float>();
  for (size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-4 + 1e-4 * std::fabs(w[i])) << "[" << i << "]";
}

// Six 256 KiB weights do not fit one 2-tile ipu2 (1.2 MiB); over two such IPUs they do:
// automatic placement puts three on each, and the activations cross once, over the IPU-Links.
TEST(Sharding, TwoIpusHoldWhatOneCannot) {
  const ir::Model m = matmulChain(6, 256, 1);
  auto one = codegen::compile(m, {*codegen::makeTarget("ipu2", 1, 2), 0.6});
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.error().message().find("out of tile memory on ipu2-2t"), std::string::npos) << one.error().message();
  Compiled c = compileAndLoad(m, 2, 2);
  ASSERT_TRUE(c.engine);
  const exec::Executable& exe = c.engine->executable();
  ASSERT_EQ(exe.segments.size(), 2u);
  EXPECT_EQ(exe.segments[0].ipu, 0u);
  EXPECT_EQ(exe.segments[1].ipu, 1u);
  EXPECT_EQ(exe.strategy, exec::Strategy::Sharded);
  for (uint32_t ipu = 0; ipu < 2; ++ipu) {
    uint64_t bytes = 0;
    for (uint32_t t = ipu * 2; t < ipu * 2 + 2; ++t) bytes += exe.tile_bytes[t];
    EXPECT_GT(bytes, uint64_t{3} * 256 * 1024) << "IPU " << ipu << " holds three weights";
  }
  // The copy between the segments is the one step that crosses the links: rows x width floats.
  uint64_t link_bytes = 0;
  for (const StepCycles& s : c.engine->stepCycles()) link_bytes += s.link_bytes;
  EXPECT_EQ(link_bytes, 256u * 4);
  ASSERT_EQ(c.engine->segmentCycles().size(), 2u);
  EXPECT_GE(c.engine->segmentCycles()[0].copies, exe.target.link_latency_cycles);
  // Sharded: a step of batches costs the batches one after another.
  EXPECT_EQ(c.engine->cyclesForBatches(3), 3 * c.engine->estimate().total());

  Tensor x = randomTensor({1, 256}, 7);
  auto want = ops::evaluateGraph(*m.graph, {{"x", x}});
  ASSERT_TRUE(want.ok()) << want.error().message();
  for (int run = 0; run < 2; ++run) {
    auto got = c.engine->runTensors({&x});
    ASSERT_TRUE(got.ok()) << got.error().message();
    expectNear((*got)[0], (*want)[0]);
  }
}

// `count` batches of x [4, 64] (seeds from `seed` on) run through the stages at once, each
// with its own input: each must get the evaluator's output.
void runBatchesAgainstTheEvaluator(Compiled& c, const ir::Model& m, int count, uint32_t seed) {
  std::vector<Tensor> xs, outs;
  std::vector<std::vector<InputBinding>> in(count);
  std::vector<std::vector<OutputBinding>> out(count);
  std::vector<Engine::Batch> batches;
  for (int b = 0; b < count; ++b) {
    xs.push_back(randomTensor({4, 64}, seed + b));
    outs.emplace_back(DType::Float, Shape{4, 64});
  }
  for (int b = 0; b < count; ++b) {
    in[b] = {InputBinding{xs[b].bytes(), nullptr}};
    out[b] = {OutputBinding{outs[b].bytes(), nullptr}};
    batches.push_back({in[b], out[b]});
  }
  Status st = c.engine->runBatches(batches);
  ASSERT_TRUE(st.ok()) << st.error().message();
  for (int b = 0; b < count; ++b) {
    SCOPED_TRACE("batch " + std::to_string(b));
    auto want = ops::evaluateGraph(*m.graph, {{"x", xs[b]}});
    ASSERT_TRUE(want.ok()) << want.error().message();
    expectNear(outs[b], (*want)[0]);
  }
}

// Three pipelined stages placed by hand on IPUs 2, 0 and 1, with a value (relu0) that stage 0
// makes and stage 2 reads: it is forwarded through stage 1. Five batches run through the stages
// at once, each with its own input, and each gets the evaluator's output.
TEST(Sharding, PipelinedStagesGiveEveryBatchItsOwnResult) {
  const ir::Model m = matmulChain(3, 64, 4, /*skip=*/true);
  codegen::ShardingOptions sharding;
  sharding.strategy = exec::Strategy::Pipelined;
  sharding.manual = {{"relu0", 2, 0}, {"relu1", 0, 1}, {"skip", 1, 2}};
  Compiled c = compileAndLoad(m, 3, 8, sharding);
  ASSERT_TRUE(c.engine);
  const exec::Executable& exe = c.engine->executable();
  EXPECT_EQ(exe.strategy, exec::Strategy::Pipelined);
  ASSERT_EQ(exe.segments.size(), 3u);
  EXPECT_EQ(exe.segments[0].ipu, 2u);
  EXPECT_EQ(exe.segments[1].ipu, 0u);
  EXPECT_EQ(exe.segments[2].ipu, 1u);

  runBatchesAgainstTheEvaluator(c, m, 5, 50);
  // The pipeline fills and drains: 6 batches in 8 phases, each as long as the slowest stage,
  // so less than 6 batches one after another.
  const auto& seg = c.engine->segmentCycles();
  uint64_t slowest = 0, copies = 0;
  for (const auto& s : seg) {
    slowest = std::max(slowest, s.compute);
    copies = std::max(copies, s.copies);
  }
  EXPECT_EQ(c.engine->cyclesForBatches(6), 8 * (slowest + copies));
  EXPECT_LT(c.engine->cyclesForBatches(6), 6 * c.engine->estimate().total());
}

// Stage 1 starts with a compute set (relu0 reads the value the link copy brought, in place) right
// after stage 0's link copy: the engine must not have relu0's vertices make that copy's moves
// (ExecutionPlan::vertex_moves), which run a phase later, while stage 0 already writes the next
// batch's value. Every batch gets the evaluator's output.
TEST(Sharding, APipelineStageStartingWithComputeReadsItsOwnBatch) {
  const ir::Model m = matmulChain(2, 64, 4);
  codegen::ShardingOptions sharding;
  sharding.strategy = exec::Strategy::Pipelined;
  sharding.manual = {{"mm0", 0, 0}, {"relu1", 1, 1}};
  Compiled c = compileAndLoad(m, 2, 8, sharding);
  ASSERT_TRUE(c.engine);
  const exec::Executable& exe = c.engine->executable();
  ASSERT_EQ(exe.segments.size(), 2u);
  ASSERT_EQ(exe.main.steps[exe.segments[0].end - 1].kind, exec::StepKind::Exchange);
  ASSERT_EQ(exe.main.steps[exe.segments[1].begin].kind, exec::StepKind::Compute);
  runBatchesAgainstTheEvaluator(c, m, 4, 70);
}

// A manual config may compile nodes out of graph order: here the host's int32 Add (second in the
// graph) runs in stage 0 before the Relu (first in the graph) in stage 1. Its host program must
// still hold the Add, not the node at its compile position.
TEST(Sharding, HostProgramsKeepTheirNodesWhenStagesReorderThem) {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", f32({2, 3}));
  ir::Value* i = g.addInput("i", ir::TensorType::of(DType::Int32, {2, 3}));
  ir::Value* y = g.addValue("y", f32({2, 3}));
  ir::Value* k = g.addValue("k", ir::TensorType::of(DType::Int32, {2, 3}));
  g.addNode("Relu", {x}, {y}, "relu");
  g.addNode("Add", {i, i}, {k}, "add_int");  // host: int32
  g.addOutput(y);
  g.addOutput(k);
  codegen::ShardingOptions sharding;
  sharding.manual = {{"relu", 1, 1}, {"add_int", 0, 0}};
  Compiled c = compileAndLoad(m, 2, 4, sharding);
  ASSERT_TRUE(c.engine);
  EXPECT_EQ(c.result.host_nodes, (std::vector<std::string>{"add_int"}));
  Tensor xt = randomTensor({2, 3}, 11);
  Tensor it(DType::Int32, {2, 3});
  for (int j = 0; j < 6; ++j) it.data<int32_t>()[j] = j - 2;
  auto got = c.engine->runTensors({&xt, &it});
  ASSERT_TRUE(got.ok()) << got.error().message();
  for (int j = 0; j < 6; ++j) {
    EXPECT_FLOAT_EQ((*got)[0].data<float>()[j], std::max(xt.data<float>()[j], 0.f));
    EXPECT_EQ((*got)[1].data<int32_t>()[j], 2 * (j - 2));
  }
}

// Automatic placement cuts four equal layers two and two.
TEST(Sharding, AutomaticPlacementBalancesTheWeights) {
  const ir::Model m = matmulChain(4, 64, 2);
  auto placed = codegen::placeNodes(*m.graph, 2, {});
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  EXPECT_EQ(placed->stage, (std::vector<uint32_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(placed->stage_ipu, (std::vector<uint32_t>{0, 1}));
}

TEST(Sharding, BadPlacementsAreNamed) {
  const ir::Model m = matmulChain(2, 8, 2);
  auto place = [&](std::vector<codegen::ShardEntry> entries, exec::Strategy strategy = exec::Strategy::Sharded) {
    auto placed = codegen::placeNodes(*m.graph, 2, {strategy, std::move(entries), "cfg.yaml"});
    return placed.ok() ? std::string() : placed.error().message();
  };
  EXPECT_EQ(place({{"nope", 0, -1}}), "cfg.yaml: node 'nope' is not in the model");
  EXPECT_EQ(place({{"mm0", 2, -1}}), "cfg.yaml: node 'mm0' is put on device 2, but --num_ipus is 2");
  // relu1 claims its ancestors first, so mm0 ends in stage 1 and relu0... reads nothing later;
  // a stage on two devices is refused before that.
  EXPECT_EQ(place({{"mm0", 0, 0}, {"relu1", 1, 0}}), "cfg.yaml: stage 0 is put on devices 0 and 1; a stage runs on one IPU");
  EXPECT_EQ(place({{"mm0", 1, 1}, {"relu0", 0, 0}}),
            "cfg.yaml: node 'relu0' (stage 0) reads 'y0' from node 'mm0' of the later stage 1");
  EXPECT_EQ(place({{"relu0", 0, 0}, {"relu1", 0, 1}}, exec::Strategy::Pipelined),
            "cfg.yaml: pipelined stages need an IPU each, and two stages share one");
}

// A pipelined program whose stage writes another IPU's tiles would race: the verifier refuses it.
TEST(Sharding, TheVerifierKeepsEachStageOnItsIpu) {
  const ir::Model m = matmulChain(2, 64, 4);
  auto target = codegen::makeTarget("ipu2", 2, 4);
  ASSERT_TRUE(target.ok());
  codegen::ShardingOptions sharding;
  sharding.strategy = exec::Strategy::Pipelined;
  auto compiled = codegen::compile(m, {*target, 0.6, sharding});
  ASSERT_TRUE(compiled.ok()) << compiled.error().message();
  exec::Executable exe = compiled->executable;
  ASSERT_TRUE(verifyExecutable(exe).ok());
  const exec::Segment first = exe.segments.at(0);
  for (uint32_t i = first.begin; i < first.copies; ++i) {
    const exec::Step& step = exe.main.steps[i];
    if (step.kind != exec::StepKind::Compute) continue;
    exec::Vertex& v = exe.compute_sets[step.index].vertices.at(0);
    v.tile = (v.tile + 4) % 8;  // the same tile of the other IPU: within bounds, so only this check can refuse it
    break;
  }
  Status st = verifyExecutable(exe);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("pipeline stage 0 (IPU 0), main program step"), std::string::npos) << st.error().message();
  EXPECT_NE(st.error().message().find("touches tiles of another IPU"), std::string::npos) << st.error().message();
}

}  // namespace
}  // namespace poprt::sim
