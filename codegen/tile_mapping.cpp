#include "codegen/tile_mapping.h"

#include <algorithm>

namespace poprt::codegen {

void gatherElements(const TileMapping& src, int64_t begin, int64_t count, size_t elem_size, uint32_t tile, uint64_t offset,
                    std::vector<exec::TileCopy>& copies) {
  int64_t end = begin + count;
  auto it = std::upper_bound(src.regions.begin(), src.regions.end(), begin,
                             [](int64_t value, const Region& r) { return value < r.begin + r.count; });
  for (; it != src.regions.end() && it->begin < end; ++it) {
    int64_t lo = std::max(begin, it->begin), hi = std::min(end, it->begin + it->count);
    if (lo >= hi) continue;
    uint64_t src_off = it->offset + static_cast<uint64_t>(lo - it->begin) * elem_size;
    uint64_t dst_off = offset + static_cast<uint64_t>(lo - begin) * elem_size;
    uint64_t bytes = static_cast<uint64_t>(hi - lo) * elem_size;
    // Merge with the previous copy when both sides continue it (a common case for row gathers).
    if (!copies.empty()) {
      auto& last = copies.back();
      if (last.src_tile == it->tile && last.dst_tile == tile && last.src_offset + last.bytes == src_off &&
          last.dst_offset + last.bytes == dst_off) {
        last.bytes += bytes;
        continue;
      }
    }
    copies.push_back({it->tile, src_off, tile, dst_off, bytes});
  }
}

}  // namespace poprt::codegen
