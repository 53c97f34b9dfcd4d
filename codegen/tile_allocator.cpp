#include "codegen/tile_allocator.h"

#include <algorithm>

#include "lib/support/status.h"

namespace poprt::codegen {
namespace {
uint64_t align8(uint64_t bytes) { return (bytes + 7) & ~uint64_t{7}; }
}  // namespace

uint64_t TileAllocator::place(uint32_t tile, uint64_t start, uint64_t bytes) {
  Tile& t = tiles_[tile];
  // At the top (most blocks), the new one comes last: no search.
  t.live.emplace_hint(start >= t.top ? t.live.end() : t.live.lower_bound(start), start, Block{bytes, 0, 0});
  t.top = std::max(t.top, start + bytes);
  new_.emplace_back(tile, start);
  return start;
}

std::optional<uint64_t> TileAllocator::firstFit(const Tile& t, uint64_t bytes, bool avoid_cooling) const {
  for (const auto& [start, size] : t.free) {
    uint64_t at = start;
    // Past every cooling range it overlaps, until it overlaps none or leaves the free range.
    for (bool moved = avoid_cooling; moved && at + bytes <= start + size;) {
      moved = false;
      for (const auto& [c_start, c_end] : t.cooling)
        if (c_start < at + bytes && at < c_end) {
          at = align8(c_end);
          moved = true;
        }
    }
    if (at + bytes <= start + size) return at;
  }
  return std::nullopt;
}

uint64_t TileAllocator::take(uint32_t tile, uint64_t at, uint64_t bytes) {
  Tile& t = tiles_[tile];
  auto it = std::prev(t.free.upper_bound(at));  // the free range holding `at`
  const auto [start, size] = *it;
  t.free.erase(it);
  if (at > start) t.free.emplace(start, at - start);
  if (at + bytes < start + size) t.free.emplace(at + bytes, start + size - at - bytes);
  return place(tile, at, bytes);
}

uint64_t TileAllocator::allocate(uint32_t tile, uint64_t bytes) {
  Tile& t = tiles_.at(tile);
  bytes = align8(bytes);
  if (bytes == 0) return 0;
  if (auto at = firstFit(t, bytes, /*avoid_cooling=*/true)) return take(tile, *at, bytes);
  if (auto at = firstFit(t, bytes, /*avoid_cooling=*/false)) return take(tile, *at, bytes);
  // Nothing freed is big enough: a free range ending at the top grows upwards, else the top.
  if (!t.free.empty()) {
    auto last = std::prev(t.free.end());
    if (last->first + last->second == t.top) {
      const uint64_t start = last->first;
      t.free.erase(last);
      return place(tile, start, bytes);
    }
  }
  return place(tile, t.top, bytes);
}

void TileAllocator::endCooling() {
  for (Tile& t : tiles_) t.cooling.clear();
}

uint64_t TileAllocator::allocatePersistent(uint32_t tile, uint64_t bytes) {
  Tile& t = tiles_.at(tile);
  bytes = align8(bytes);
  if (bytes == 0) return 0;
  const uint64_t start = t.persistent_top;
  t.persistent.emplace_back(start, Block{bytes, 0, 0});  // above every other
  t.persistent_top += bytes;
  return start | kPersistent;
}

void TileAllocator::free(uint32_t tile, uint64_t start, bool cooling) {
  POPRT_CHECK(!(start & kPersistent), "freeing persistent memory");
  Tile& t = tiles_.at(tile);
  auto it = t.live.find(start);
  POPRT_CHECK(it != t.live.end(), "freeing a block that is not allocated");
  uint64_t bytes = it->second.bytes;
  t.live.erase(it);
  if (cooling) t.cooling.emplace_back(start, start + bytes);
  // Coalesce with the free ranges just below and just above.
  auto next = t.free.lower_bound(start);
  if (next != t.free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      bytes += prev->second;
      t.free.erase(prev);
    }
  }
  if (next != t.free.end() && start + bytes == next->first) {
    bytes += next->second;
    t.free.erase(next);
  }
  t.free.emplace(start, bytes);
}

namespace {
// The first of a tile's persistent blocks (sorted by start) starting after `offset`.
template <class Blocks>
auto persistentAfter(Blocks& blocks, uint64_t offset) {
  return std::upper_bound(blocks.begin(), blocks.end(), offset, [](uint64_t o, const auto& b) { return o < b.first; });
}
}  // namespace

std::optional<uint64_t> TileAllocator::blockAt(uint32_t tile, uint64_t offset) const {
  const Tile& t = tiles_.at(tile);
  if (offset & kPersistent) {
    offset &= ~kPersistent;
    auto it = persistentAfter(t.persistent, offset);
    if (it == t.persistent.begin() || offset >= std::prev(it)->first + std::prev(it)->second.bytes) return std::nullopt;
    return std::prev(it)->first | kPersistent;
  }
  auto it = t.live.upper_bound(offset);
  if (it == t.live.begin()) return std::nullopt;
  --it;
  if (offset < it->first + it->second.bytes) return it->first;
  return std::nullopt;
}

TileAllocator::Block* TileAllocator::liveBlock(uint32_t tile, uint64_t start) {
  auto& live = tiles_.at(tile).live;
  auto it = live.find(start);
  return it == live.end() ? nullptr : &it->second;
}

TileAllocator::Block& TileAllocator::block(uint32_t tile, uint64_t start) {
  Tile& t = tiles_.at(tile);
  if (!(start & kPersistent)) return t.live.at(start);
  auto it = persistentAfter(t.persistent, start & ~kPersistent);
  POPRT_CHECK(it != t.persistent.begin() && std::prev(it)->first == (start & ~kPersistent), "no persistent block starts there");
  return std::prev(it)->second;
}

uint64_t TileAllocator::relocate(uint32_t tile, uint64_t offset) const {
  return offset & kPersistent ? tiles_.at(tile).top + (offset & ~kPersistent) : offset;
}

std::vector<uint64_t> TileAllocator::peaks() const {
  std::vector<uint64_t> out;
  out.reserve(tiles_.size());
  for (const Tile& t : tiles_) out.push_back(t.top + t.persistent_top);
  return out;
}

}  // namespace poprt::codegen
