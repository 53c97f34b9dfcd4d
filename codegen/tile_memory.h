// Liveness of tile memory: which values hold each block, so that memory is reused once every
// value holding it is dead. A value holds the blocks under its mapping (a view holds its input's
// blocks, so memory outlives every alias) and the operand copies made of it; blocks nobody holds
// when a step ends are the step's own buffers (operand windows, scratch) and are freed then.
// Also remembers what lived on each tile that went over its capacity when its memory peaked,
// for the out-of-memory report, and records the memory profile of the program (live bytes by
// kind after every step, and what filled each tile at its peak) for the profile reports.
#pragma once

#include <array>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/tile_allocator.h"
#include "codegen/tile_mapping.h"
#include "lib/exec/memory_profile.h"
#include "lib/ir/graph.h"

namespace poprt::codegen {

class TileMemory {
 public:
  TileMemory(uint32_t tiles, uint64_t capacity);

  TileAllocator& allocator() { return alloc_; }
  const TileAllocator& allocator() const { return alloc_; }
  // `v` holds the blocks under its mapping `m` (its own, or the one it shares as a view).
  void holdMapping(const ir::Value* v, const TileMapping& m);
  // `v` holds the block starting at (tile, start): a copy of some of its elements.
  void holdCopy(const ir::Value* v, uint32_t tile, uint64_t start);
  // The persistent block at (tile, start) holds a resident slice of weight `v` (for the
  // out-of-memory report: persistent blocks are never freed, so nothing else names them).
  void nameResidentSlice(const ir::Value* v, uint32_t tile, uint64_t start);
  // `v` is dead: the blocks no live value holds any more are freed (the next step takes them only
  // when nothing else freed fits: TileAllocator's cooling).
  void release(const ir::Value* v);
  // Ends a step (a node's stream-ins, exchange and compute set; "" for the final stream-outs):
  // records the peaks of tiles over capacity and a liveness point (`program_steps`: main-program
  // steps emitted so far), then frees the blocks allocated since the last step that no value holds.
  void endStep(const std::string& node, uint32_t program_steps = 0);

  std::vector<uint64_t> peaks() const { return alloc_.peaks(); }
  // What lived on `tile` when its memory last rose above the capacity, biggest first, at most
  // `items` of them: "at node 'mm': w 816.0 KiB, copies of x 4.0 KiB and 3 more, 1.2 KiB"; "" if the
  // tile never went over.
  std::string describePeak(uint32_t tile, size_t items) const;
  // The node whose step `tile` peaked at ("" for the end of the program).
  const std::string& peakStep(uint32_t tile) const { return peaks_.at(tile).step; }

  // The liveness points and per-tile peaks recorded by endStep, with each tile's persistent region
  // (weights) as it stands now; op_types are the caller's to fill.
  exec::MemoryProfile memoryProfile() const;

 private:
  // What a main-region block holds, from how it was first claimed.
  enum class Kind : uint8_t { Activation, ExchangeBuffer };
  uint32_t label(const std::string& text, Kind kind);
  void hold(const ir::Value* v, std::vector<std::pair<uint32_t, uint64_t>> blocks, uint32_t label);
  // Keeps live_ in step as a main-region block gets its label or is freed.
  void count(uint32_t tile, uint64_t start, const TileAllocator::Block& b, bool adding);
  void freeBlock(uint32_t tile, uint64_t start);

  struct Peak {
    uint64_t top = 0;
    std::string step;
    std::vector<std::pair<uint64_t, uint32_t>> contents;  // (bytes, label), biggest first
  };
  TileAllocator alloc_;
  uint64_t capacity_;
  std::vector<std::string> labels_{""};  // label 0: not known yet
  std::vector<Kind> label_kinds_{Kind::Activation};
  std::unordered_map<std::string, uint32_t> label_ids_;
  std::unordered_map<const ir::Value*, std::set<std::pair<uint32_t, uint64_t>>> held_;  // (tile, start)
  std::vector<Peak> peaks_;                                                             // per tile
  // Live labelled main-region bytes per tile, [activations, exchange buffers].
  std::vector<std::array<uint64_t, 2>> live_;
  std::vector<exec::LivenessPoint> liveness_;
  std::vector<exec::TilePeak> tile_peaks_;
};

}  // namespace poprt::codegen
