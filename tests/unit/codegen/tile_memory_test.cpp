// The per-tile allocator (first fit, coalescing, high-water mark) and the liveness on top of it.
#include <gtest/gtest.h>

#include "codegen/tile_allocator.h"
#include "codegen/tile_memory.h"

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
  a.free(0, 176);                      // [112, 192) ends at the top
  EXPECT_EQ(a.allocate(0, 200), 112u);  // so it grows upwards
  EXPECT_EQ(a.peak(0), 312u);
  EXPECT_EQ(a.blockAt(0, 150), 112u);
  EXPECT_FALSE(a.blockAt(0, 400).has_value());
  EXPECT_EQ(a.allocate(1, 0), 0u);  // no block
  EXPECT_FALSE(a.blockAt(1, 0).has_value());
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
  EXPECT_EQ(a.blockAt(0, 0), 0u);  // the view still holds x's memory
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

}  // namespace
}  // namespace poprt::codegen
