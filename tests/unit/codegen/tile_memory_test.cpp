// The per-tile allocator (first fit, coalescing, high-water mark) and the liveness on top of it.
#include <gtest/gtest.h>

#include "codegen/tile_allocator.h"
#include "codegen/tile_memory.h"
#include "lib/exec/memory_profile.h"

namespace poprt::codegen {
namespace {

TEST(TileAllocator, ReusesFreedMemoryFirstFitAndCoalesces) {
  TileAllocator a(2);
  EXPECT_EQ(a.allocate(0, 100), 0u);
  EXPECT_EQ(a.allocate(0, 8), 104u);  // 8-byte aligned
  EXPECT_EQ(a.allocate(0, 64), 112u);
  EXPECT_EQ(a.peak(0), 176u);
  EXPECT_EQ(a.peak(1), 0u);
  a.free(0, 0);
  a.free(0, 104);                      // coalesces with [0, 104)
  EXPECT_EQ(a.allocate(0, 110), 0u);   // fits the merged 112 bytes
  EXPECT_EQ(a.allocate(0, 16), 176u);  // nothing freed fits: the top
  a.free(0, 112);
  a.free(0, 176);                       // [112, 192) ends at the top
  EXPECT_EQ(a.allocate(0, 200), 112u);  // so it grows upwards
  EXPECT_EQ(a.peak(0), 312u);
  EXPECT_EQ(a.blockAt(0, 150), 112u);
  EXPECT_FALSE(a.blockAt(0, 400).has_value());
  EXPECT_EQ(a.allocate(1, 0), 0u);  // no block
  EXPECT_FALSE(a.blockAt(1, 0).has_value());
}

// Memory freed as cooling is taken again only when no other freed range fits, until endCooling.
TEST(TileAllocator, RecentlyFreedMemoryIsTakenLast) {
  TileAllocator a(1);
  const uint64_t x = a.allocate(0, 64), y = a.allocate(0, 64);
  a.allocate(0, 8);  // keeps y's range below the top
  a.free(0, x, /*cooling=*/true);
  a.free(0, y);                     // [0, 128) free, [0, 64) of it cooling
  EXPECT_EQ(a.allocate(0, 32), y);  // outside the cooling range
  EXPECT_EQ(a.allocate(0, 64), x);  // nothing else fits: the cooling range after all
  a.free(0, x, /*cooling=*/true);
  a.endCooling();
  EXPECT_EQ(a.allocate(0, 16), x);  // no longer cooling: plain first fit
}

TEST(TileAllocator, PersistentMemoryGoesAboveTheMainRegionsPeak) {
  TileAllocator a(2);
  const uint64_t w = a.allocatePersistent(0, 10);
  EXPECT_EQ(w, TileAllocator::kPersistent);
  const uint64_t x = a.allocate(0, 1000);
  EXPECT_EQ(x, 0u);  // the main region is not displaced by it
  a.free(0, x);
  const uint64_t w2 = a.allocatePersistent(0, 20);
  EXPECT_EQ(a.allocate(0, 500), 0u);
  EXPECT_EQ(a.blockAt(0, w2 + 4), w2);
  EXPECT_EQ(a.peak(0), 1000u + 16 + 24);
  EXPECT_EQ(a.relocate(0, w), 1000u);  // right above every byte the main region ever used
  EXPECT_EQ(a.relocate(0, w2 + 4), 1020u);
  EXPECT_EQ(a.relocate(0, 96), 96u);
  EXPECT_EQ(a.relocate(1, a.allocatePersistent(1, 8)), 0u);  // a tile with weights only
  EXPECT_EQ(a.peaks(), (std::vector<uint64_t>{1040, 8}));
}

TEST(TileMemory, ViewsKeepMemoryAliveAndNodeBuffersDieWithTheirNode) {
  ir::Graph g;
  const ir::Value* x = g.addValue("x", ir::TensorType::of(DType::Float, {16}));
  const ir::Value* view = g.addValue("view", ir::TensorType::of(DType::Float, {4, 4}));
  TileMemory mem(1, 1 << 20);
  TileAllocator& a = mem.allocator();
  TileMapping m{{{0, 16, 0, a.allocate(0, 64)}}};
  mem.holdMapping(x, m);
  mem.holdMapping(view, m);
  const uint64_t copy = a.allocate(0, 32);
  mem.holdCopy(x, 0, copy);
  a.allocate(0, 128);  // an operand window nobody holds
  mem.endStep("n0");
  EXPECT_FALSE(a.blockAt(0, 96).has_value());  // the window died with its node
  mem.release(x);
  EXPECT_EQ(a.blockAt(0, 0), 0u);                // the view still holds x's memory
  EXPECT_FALSE(a.blockAt(0, copy).has_value());  // x's copies are gone
  mem.release(view);
  EXPECT_FALSE(a.blockAt(0, 0).has_value());
  EXPECT_EQ(a.allocate(0, 96), 0u);  // all reusable
}

TEST(TileMemory, RemembersWhatLivedOnATileWhenItWentOverCapacity) {
  ir::Graph g;
  const ir::Value* w = g.addValue("w", ir::TensorType::of(DType::Float, {256}));
  const ir::Value* y = g.addValue("y", ir::TensorType::of(DType::Float, {8}));
  TileMemory mem(2, 1000);
  TileAllocator& a = mem.allocator();
  mem.holdMapping(w, {{{0, 256, 0, a.allocatePersistent(0, 1024)}}});
  mem.endStep("load_w");
  mem.holdMapping(y, {{{0, 8, 0, a.allocate(0, 32)}}});
  a.allocate(0, 512);
  mem.endStep("mm");
  EXPECT_EQ(mem.describePeak(0, 2), "at node 'mm': w 1.0 KiB, buffers of node 'mm' 512 B and 1 more, 32 B");
  EXPECT_EQ(mem.describePeak(1, 2), "");  // never over capacity
  EXPECT_EQ(mem.peaks()[0], 1568u);
}

// The memory profile the reports draw: live bytes by kind at the end of each step, the busiest
// tile, and what filled each tile at its own peak; all sizes worked out by hand (8-byte blocks).
TEST(TileMemory, RecordsLivenessByKindAndEachTilesPeak) {
  ir::Graph g;
  const ir::Value* x = g.addValue("x", ir::TensorType::of(DType::Float, {16}));
  const ir::Value* y = g.addValue("y", ir::TensorType::of(DType::Float, {4}));
  const ir::Value* w = g.addValue("w", ir::TensorType::of(DType::Float, {3}));
  TileMemory mem(2, 1 << 20);
  TileAllocator& a = mem.allocator();
  mem.holdMapping(w, {{{0, 3, 1, a.allocatePersistent(1, 12)}}});  // weights: 16 bytes on tile 1, not live memory
  mem.holdMapping(x, {{{0, 16, 0, a.allocate(0, 64)}}});           // an activation on tile 0
  mem.holdCopy(x, 1, a.allocate(1, 30));                           // a copy of it on tile 1: 32 bytes
  a.allocate(0, 128);                                              // node 0's window on tile 0
  mem.endStep("n0", 3);
  mem.release(x);
  mem.holdMapping(y, {{{0, 4, 1, a.allocate(1, 16)}}});
  mem.endStep("n1", 5);

  const exec::MemoryProfile p = mem.memoryProfile();
  ASSERT_EQ(p.liveness.size(), 2u);
  const exec::LivenessPoint& p0 = p.liveness[0];
  EXPECT_EQ(p0.node, "n0");
  EXPECT_EQ(p0.program_steps, 3u);
  EXPECT_EQ(p0.activations, 64u);
  EXPECT_EQ(p0.exchange_buffers, 32u + 128u);
  EXPECT_EQ(p0.busiest_tile, 0u);
  EXPECT_EQ(p0.busiest_bytes, 64u + 128u);
  const exec::LivenessPoint& p1 = p.liveness[1];  // x and its copy are gone, the window died with n0
  EXPECT_EQ(p1.activations, 16u);
  EXPECT_EQ(p1.exchange_buffers, 0u);
  EXPECT_EQ(p1.busiest_tile, 1u);
  EXPECT_EQ(p1.busiest_bytes, 16u);
  EXPECT_EQ(p.weights, (std::vector<uint64_t>{0, 16}));
  ASSERT_EQ(p.peaks.size(), 2u);
  EXPECT_EQ(p.peaks[0].activations, 64u);
  EXPECT_EQ(p.peaks[0].exchange_buffers, 128u);
  EXPECT_EQ(p.peaks[0].point, 0u);
  EXPECT_EQ(p.peaks[1].activations, 0u);  // tile 1 peaked at n0 with the copy (32 > 16)
  EXPECT_EQ(p.peaks[1].exchange_buffers, 32u);
  EXPECT_EQ(p.peaks[1].point, 0u);
}

exec::Executable twoTileExecutable() {
  exec::Executable exe;
  exe.target.tiles_per_ipu = 2;
  exe.tile_bytes = {256, 64};
  exe.main.steps.resize(5);
  return exe;
}

exec::MemoryProfile smallProfile() {
  exec::MemoryProfile p;
  p.weights = {16, 0};
  p.peaks = {{64, 128, 0}, {0, 32, 1}};
  p.liveness = {{"n0", 3, 64, 160, 0, 192}, {"", 5, 16, 0, 1, 16}};
  p.op_types = {{"n0", "Conv"}, {"n1", "ai.graphcore.Gelu"}};
  return p;
}

TEST(MemoryProfile, RoundTripsThroughItsBlob) {
  const exec::MemoryProfile p = smallProfile();
  const std::vector<uint8_t> bytes = exec::serializeMemoryProfile(p);
  auto back = exec::deserializeMemoryProfile(bytes, twoTileExecutable(), "m.popef");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->weights, p.weights);
  EXPECT_EQ(back->op_types, p.op_types);
  ASSERT_EQ(back->liveness.size(), 2u);
  EXPECT_EQ(back->liveness[0].node, "n0");
  EXPECT_EQ(back->liveness[0].busiest_bytes, 192u);
  EXPECT_EQ(back->liveness[1].program_steps, 5u);
  EXPECT_EQ(back->peaks[1].exchange_buffers, 32u);
  EXPECT_EQ(back->peaks[1].point, 1u);
  EXPECT_EQ(exec::serializeMemoryProfile(*back), bytes);  // deterministic
}

TEST(MemoryProfile, RefusesOneThatDoesNotFitItsExecutable) {
  auto refused = [](const exec::MemoryProfile& p, const exec::Executable& exe) {
    auto r = exec::deserializeMemoryProfile(exec::serializeMemoryProfile(p), exe, "m.popef");
    return r.ok() ? std::string() : r.error().message();
  };
  const exec::Executable exe = twoTileExecutable();
  exec::MemoryProfile p = smallProfile();
  p.weights.push_back(0);  // three tiles
  EXPECT_NE(refused(p, exe).find("for 2 tiles"), std::string::npos) << refused(p, exe);
  p = smallProfile();
  p.peaks[1].exchange_buffers = 64;  // 64 live bytes + nothing else fits, 72 would not
  EXPECT_EQ(refused(p, exe), "");
  p.peaks[1].activations = 8;
  EXPECT_NE(refused(p, exe).find("tile 1 holds more"), std::string::npos) << refused(p, exe);
  p = smallProfile();
  p.liveness[1].program_steps = 2;  // before the point ahead of it
  EXPECT_NE(refused(p, exe).find("out of program order"), std::string::npos) << refused(p, exe);
  p = smallProfile();
  p.liveness[0].busiest_tile = 2;
  EXPECT_NE(refused(p, exe).find("bad busiest tile"), std::string::npos) << refused(p, exe);
  std::vector<uint8_t> bytes = exec::serializeMemoryProfile(smallProfile());
  bytes.pop_back();
  auto cut = exec::deserializeMemoryProfile(bytes, exe, "m.popef");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().message().rfind("m.popef: malformed profile", 0), 0u) << cut.error().message();
}

}  // namespace
}  // namespace poprt::codegen
