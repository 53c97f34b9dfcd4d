// Per-tile memory allocation. The main region: first fit among freed ranges (8-byte aligned,
// freed neighbours coalesce; recently freed ones last), else above everything allocated so far. The persistent region, for
// data that lives for the whole program (weights): bump-allocated, and placed above the main
// region's high-water mark once that is known (relocate()). A tile needs both. The allocator knows
// addresses only; who holds a block, and so when it dies, is TileMemory's business.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace poprt::codegen {

class TileAllocator {
 public:
  // Persistent offsets carry this bit until relocate() places the region.
  static constexpr uint64_t kPersistent = uint64_t{1} << 62;

  struct Block {
    uint64_t bytes = 0;    // rounded up to 8
    uint32_t label = 0;    // what the block holds, for reports (TileMemory's label ids; 0: not yet known)
    uint32_t holders = 0;  // live values holding it (TileMemory)
  };

  explicit TileAllocator(uint32_t tiles) : tiles_(tiles) {}

  // Main region: first fit among freed ranges, else at the top. Zero bytes give offset 0, no block.
  uint64_t allocate(uint32_t tile, uint64_t bytes);
  // Persistent region: memory no step of the program may ever use for anything else (the load
  // program writes weights before the main program runs). Returns kPersistent | region offset.
  uint64_t allocatePersistent(uint32_t tile, uint64_t bytes);
  // `start` must be a live block's start in the main region (persistent blocks are never freed).
  // A `cooling` block's memory is taken again only when nothing else freed fits, until
  // endCooling(): so the node after the one that last read it rarely writes there, and the two
  // can share a superstep (codegen/merge_supersteps.h).
  void free(uint32_t tile, uint64_t start, bool cooling = false);
  void endCooling();

  // The live block holding byte `offset` (provisional for persistent ones): its start, or nullopt.
  std::optional<uint64_t> blockAt(uint32_t tile, uint64_t offset) const;
  Block& block(uint32_t tile, uint64_t start);
  // The live main-region block starting at `start`, or nullptr.
  Block* liveBlock(uint32_t tile, uint64_t start);
  const std::map<uint64_t, Block>& liveBlocks(uint32_t tile) const { return tiles_.at(tile).live; }
  // By region offset, ascending (they are only ever appended).
  const std::vector<std::pair<uint64_t, Block>>& persistentBlocks(uint32_t tile) const { return tiles_.at(tile).persistent; }
  // Main-region blocks allocated since the last call, as (tile, start), for their owner to claim.
  std::vector<std::pair<uint32_t, uint64_t>> takeNew() { return std::exchange(new_, {}); }

  // The final offset of `offset`: persistent ones move right above the main region's high-water
  // mark. Only once nothing more is allocated.
  uint64_t relocate(uint32_t tile, uint64_t offset) const;

  uint32_t tiles() const { return static_cast<uint32_t>(tiles_.size()); }
  // Bytes the tile needs: the main region's high-water mark plus the persistent region.
  uint64_t peak(uint32_t tile) const { return tiles_.at(tile).top + tiles_.at(tile).persistent_top; }
  std::vector<uint64_t> peaks() const;
  // Bytes of the persistent region alone.
  uint64_t persistentBytes(uint32_t tile) const { return tiles_.at(tile).persistent_top; }

 private:
  struct Tile {
    std::map<uint64_t, Block> live;
    std::map<uint64_t, uint64_t> free;  // start -> bytes, below top, never adjacent to each other
    uint64_t top = 0;                   // high-water mark: nothing was ever allocated above it
    // By offset in the persistent region: appended in order, so a sorted array (a big model's
    // tiles hold hundreds of weight slices, looked up by binary search on every use).
    std::vector<std::pair<uint64_t, Block>> persistent;
    uint64_t persistent_top = 0;
    std::vector<std::pair<uint64_t, uint64_t>> cooling;  // [start, end) freed since endCooling()
  };
  uint64_t place(uint32_t tile, uint64_t start, uint64_t bytes);
  // The lowest start of `bytes` within a free range (outside the cooling ones if asked).
  std::optional<uint64_t> firstFit(const Tile& t, uint64_t bytes, bool avoid_cooling) const;
  uint64_t take(uint32_t tile, uint64_t at, uint64_t bytes);  // from the free range holding `at`
  std::vector<Tile> tiles_;
  std::vector<std::pair<uint32_t, uint64_t>> new_;
};

}  // namespace poprt::codegen
