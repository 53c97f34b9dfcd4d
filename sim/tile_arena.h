// The tiles' memories as one block of host memory: tile t's bytes start at offset(t). One block
// lets a vertex's field point into another tile's memory by its offset alone, which is how the
// engine shares read-only weight copies between tiles (sim/shared_weights.h). Tiles are 64-byte
// aligned and separated by a gap that AddressSanitizer builds poison, so a codelet writing past
// its tile is still caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace poprt::sim {

class TileArena {
 public:
  TileArena() = default;
  ~TileArena();
  TileArena(const TileArena&) = delete;
  TileArena& operator=(const TileArena&) = delete;

  // Where each tile starts in an arena for tiles of `sizes[t]` bytes: the same for every arena
  // of those sizes, so vertices resolved against it serve every engine of one executable.
  static std::vector<uint64_t> layout(const std::vector<uint64_t>& sizes, uint64_t* total = nullptr);
  // Zeroed memory of `sizes[t]` bytes for each tile t, at layout(sizes) (what was there before is
  // gone), and `scratch_bytes` after the tiles that no tile owns (the workers' scratch inputs).
  void reset(const std::vector<uint64_t>& sizes, uint64_t scratch_bytes = 0);
  uint64_t scratchOffset() const { return scratch_; }
  uint8_t* base() const { return base_; }
  uint64_t offset(uint32_t t) const { return offsets_[t]; }
  uint8_t* tile(uint32_t t) const { return base_ + offsets_[t]; }
  uint64_t size(uint32_t t) const { return sizes_[t]; }
  size_t tiles() const { return sizes_.size(); }

 private:
  void release();
  uint8_t* base_ = nullptr;
  size_t mapped_ = 0;
  uint64_t scratch_ = 0;
  std::vector<uint64_t> offsets_, sizes_;
};

}  // namespace poprt::sim
