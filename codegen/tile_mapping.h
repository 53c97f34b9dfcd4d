// Where a tensor's elements live: regions of consecutive elements, each at a tile-memory offset.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/exec/executable.h"

namespace poprt::codegen {

struct Region {
  int64_t begin = 0;  // first element
  int64_t count = 0;
  uint32_t tile = 0;
  uint64_t offset = 0;  // byte offset in the tile's memory
};

struct TileMapping {
  std::vector<Region> regions;  // sorted by begin, non-overlapping, covering the tensor
};

// Appends to `copies` the tile-to-tile copies that gather elements [begin, begin+count) of a tensor
// mapped by `src` into one contiguous buffer at (tile, offset).
void gatherElements(const TileMapping& src, int64_t begin, int64_t count, size_t elem_size, uint32_t tile, uint64_t offset,
                    std::vector<exec::TileCopy>& copies);

}  // namespace poprt::codegen
