// Shared weight copies (sim/shared_weights.h) on small hand-built executables: the expected
// outputs are worked out by hand from the weights, so a vertex reading the wrong copy shows.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "lib/ops/scalar_math.h"
#include "sim/engine.h"
#include "sim/shared_weights.h"
#include "sim/tile_arena.h"

namespace poprt::sim {
namespace {

using Role = exec::HostStream::Role;
using exec::StepKind;

exec::Vertex relu(uint32_t tile, exec::Field out, exec::Field in) {
  exec::Vertex v;
  v.tile = tile;
  v.codelet = exec::Codelet::Unary;
  v.fields = {out, in};
  v.params = {static_cast<int64_t>(ops::UnaryFn::Relu), static_cast<int64_t>(in.bytes / 4)};
  return v;
}

// Weight w (float32[8]) goes to tiles 0..2 by `copies`; on each tile a Relu vertex reads
// `reads[t]` and writes bytes [32, 32 + its size), which stream out as y<t>.
exec::Executable weightsOnThreeTiles(std::vector<exec::StreamCopy> copies, std::vector<exec::Field> reads) {
  exec::Executable e;
  e.target = {"test-3t", "ipu2", 1, 3, 1024, 6, 1.0e9, 4, 10, 16, 64, 2};
  e.tile_bytes = {64, 64, 64};
  e.streams.push_back({"w", Role::Weight, DType::Float, {8}, std::move(copies)});
  exec::ComputeSet cs{"relu", {}};
  for (uint32_t t = 0; t < 3; ++t) {
    const uint64_t n = reads[t].bytes;
    cs.vertices.push_back(relu(t, {32, n}, reads[t]));
    e.streams.push_back({"y" + std::to_string(t), Role::Output, DType::Float, {static_cast<int64_t>(n / 4)}, {{0, t, 32, n}}});
  }
  e.compute_sets.push_back(std::move(cs));
  e.load.steps = {{StepKind::StreamIn, 0}};
  e.main.steps = {{StepKind::Compute, 0}, {StepKind::StreamOut, 1}, {StepKind::StreamOut, 2}, {StepKind::StreamOut, 3}};
  return e;
}

Tensor weight() {
  Tensor w(DType::Float, {8});
  const float values[8] = {-1, 2, -3, 4, -5, 6, -7, 8};
  for (int i = 0; i < 8; ++i) w.data<float>()[i] = values[i];
  return w;
}

std::vector<std::vector<float>> run(const exec::Executable& e) {
  auto engine = Engine::create(e, {{"w", weight()}}, 1);
  EXPECT_TRUE(engine.ok()) << engine.error().message();
  if (!engine.ok()) return {};
  auto outs = (*engine)->runTensors({});
  EXPECT_TRUE(outs.ok()) << outs.error().message();
  std::vector<std::vector<float>> values;
  for (const Tensor& t : *outs) values.emplace_back(t.data<float>().begin(), t.data<float>().end());
  return values;
}

uint64_t sharedFields(const exec::Executable& e) { return makeExecutionPlan(e).shared_fields; }

TEST(SharedWeights, IdenticalCopiesAreReadFromTheFirst) {
  // Tiles 0 and 1 hold w[0..4); tile 2 holds w[4..8).
  exec::Executable e = weightsOnThreeTiles({{0, 0, 0, 16}, {0, 1, 0, 16}, {16, 2, 0, 16}}, {{0, 16}, {0, 16}, {0, 16}});
  EXPECT_EQ(sharedFields(e), 1u);  // tile 1's; tile 2's bytes are other weights
  TileArena arena;
  arena.reset(e.tile_bytes);
  const ExecutionPlan r = makeExecutionPlan(e);
  // Fields as offsets from the arena's base: tile 1's weights are tile 0's copy, its output its own.
  EXPECT_EQ(r.sets[0].vertices[1].fields[1].offset, arena.offset(0));
  EXPECT_EQ(r.sets[0].vertices[1].fields[0].offset, arena.offset(1) + 32);
  EXPECT_EQ(r.sets[0].vertices[2].fields[1].offset, arena.offset(2));
  const auto y = run(e);
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[0], (std::vector<float>{0, 2, 0, 4}));
  EXPECT_EQ(y[1], (std::vector<float>{0, 2, 0, 4}));
  EXPECT_EQ(y[2], (std::vector<float>{0, 6, 0, 8}));
}

TEST(SharedWeights, ACopyTheProgramOverwritesIsReadWhereItIs) {
  exec::Executable e = weightsOnThreeTiles({{0, 0, 0, 16}, {0, 1, 0, 16}, {0, 2, 0, 16}}, {{0, 16}, {0, 16}, {0, 16}});
  // Before the Relus, a Fill writes 5s over tile 1's copy of w.
  exec::Vertex fill;
  fill.tile = 1;
  fill.codelet = exec::Codelet::Fill;
  fill.fields = {{0, 16}};
  fill.params = {4};
  fill.fparams = {5.f};
  e.compute_sets.insert(e.compute_sets.begin(), exec::ComputeSet{"fill", {fill}});
  e.main.steps = {{StepKind::Compute, 0},
                  {StepKind::Compute, 1},
                  {StepKind::StreamOut, 1},
                  {StepKind::StreamOut, 2},
                  {StepKind::StreamOut, 3}};
  EXPECT_EQ(sharedFields(e), 1u);  // tile 2 reads tile 0's copy; tile 1 its own
  const auto y = run(e);
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[0], (std::vector<float>{0, 2, 0, 4}));
  EXPECT_EQ(y[1], (std::vector<float>{5, 5, 5, 5}));
  EXPECT_EQ(y[2], (std::vector<float>{0, 2, 0, 4}));
}

TEST(SharedWeights, StridedCopiesShareOnlyTheSameBytes) {
  // Rows of 2 floats every 4 floats of w: tile 0 holds w[0,1,4,5], tile 1 w[0,1,4,5] too, tile 2
  // w[1,2,5,6]. Tile 0 reads all four, tile 1 the middle two (w[1], w[4]: across a row end),
  // tile 2 its first two (w[1], w[2]: one row).
  exec::StreamCopy rows0{0, 0, 0, 8, 2, 16}, rows1{0, 1, 0, 8, 2, 16}, rows2{4, 2, 0, 8, 2, 16};
  exec::Executable e = weightsOnThreeTiles({rows0, rows1, rows2}, {{0, 16}, {4, 8}, {0, 8}});
  EXPECT_EQ(sharedFields(e), 0u);  // no two fields hold the same bytes of w
  auto y = run(e);
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[0], (std::vector<float>{0, 2, 0, 6}));
  EXPECT_EQ(y[1], (std::vector<float>{2, 0}));
  EXPECT_EQ(y[2], (std::vector<float>{2, 0}));
  // Tile 2 reading the same row pair as tile 1 (w[1], w[4]) from a copy laid out alike shares it.
  e.streams[0].copies[2] = {0, 2, 0, 8, 2, 16};
  e.compute_sets[0].vertices[2].fields[1] = {4, 8};
  EXPECT_EQ(sharedFields(e), 1u);
  y = run(e);
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[2], (std::vector<float>{2, 0}));
}

// Weight copies that overlap on a tile hold what the last one loaded: none of them is a copy to
// share. Tile 0 gets w[0..4) at bytes [16, 32), then all of w over [0, 32), then w[0] at [4, 8):
// its bytes [16, 32) end up holding w[4..8), not the w[0..4) tile 1 reads.
TEST(SharedWeights, OverlappingCopiesAreNotShared) {
  exec::Executable e = weightsOnThreeTiles({{0, 0, 16, 16}, {0, 0, 0, 32}, {0, 0, 4, 4}, {0, 1, 0, 16}, {16, 2, 0, 16}},
                                           {{16, 16}, {0, 16}, {0, 16}});
  EXPECT_EQ(sharedFields(e), 0u);
  const auto y = run(e);
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[0], (std::vector<float>{0, 6, 0, 8}));
  EXPECT_EQ(y[1], (std::vector<float>{0, 2, 0, 4}));
  EXPECT_EQ(y[2], (std::vector<float>{0, 6, 0, 8}));
}

// The runtime's replicas: a second engine of the same executable runs the first one's resolved
// vertices (one copy between them) in memory of its own.
TEST(SharedWeights, EnginesOfOneExecutableShareTheirPlan) {
  auto exe = std::make_shared<const exec::Executable>(
      weightsOnThreeTiles({{0, 0, 0, 16}, {0, 1, 0, 16}, {16, 2, 0, 16}}, {{0, 16}, {0, 16}, {0, 16}}));
  auto first = Engine::create(exe, {{"w", weight()}}, 1);
  ASSERT_TRUE(first.ok()) << first.error().message();
  auto second = Engine::create(exe, {{"w", weight()}}, 1, (*first)->plan());
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_EQ((*second)->plan().get(), (*first)->plan().get());
  (*first)->scramble(7);  // the second engine's tiles are its own
  auto outs = (*second)->runTensors({});
  ASSERT_TRUE(outs.ok()) << outs.error().message();
  ASSERT_EQ(outs->size(), 3u);
  EXPECT_EQ((*outs)[2].data<float>()[1], 6.f);
  EXPECT_EQ((*outs)[1].data<float>()[3], 4.f);
  // Vertices resolved for another executable are refused.
  auto other = std::make_shared<const exec::Executable>(exec::Executable{});
  auto wrong = Engine::create(other, {}, 1, (*first)->plan());
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message().find("another executable"), std::string::npos) << wrong.error().message();
}

}  // namespace
}  // namespace poprt::sim
