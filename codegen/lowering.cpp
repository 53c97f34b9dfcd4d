#include "codegen/lowering.h"

#include <algorithm>

namespace poprt::codegen {

namespace {
constexpr int64_t kGrainBytes = 64;  // smallest piece of a tensor worth its own tile
}

Lowering::Lowering(const CompileOptions& options) : options_(options), alloc_(options.target.numTiles()) {
  exe_.target = options.target;
}

TileMapping Lowering::spreadLinear(int64_t numel, size_t elem_size) {
  TileMapping m;
  if (numel == 0) return m;
  const int64_t tiles = target().numTiles();
  int64_t grain = std::max<int64_t>(1, kGrainBytes / static_cast<int64_t>(elem_size));
  int64_t grains = (numel + grain - 1) / grain;
  int64_t used = std::min(tiles, grains);
  int64_t per_tile = ((grains + used - 1) / used) * grain;
  uint32_t tile = next_tile_;
  for (int64_t begin = 0; begin < numel; begin += per_tile) {
    int64_t count = std::min(per_tile, numel - begin);
    uint64_t offset = alloc_.allocate(tile, static_cast<uint64_t>(count) * elem_size);
    m.regions.push_back({begin, count, tile, offset});
    tile = static_cast<uint32_t>((tile + 1) % tiles);
  }
  next_tile_ = tile;
  return m;
}

uint64_t Lowering::operandOnTile(const ir::Value* v, int64_t begin, int64_t count, uint32_t tile) {
  const size_t esize = dtypeSize(v->type.dtype);
  const TileMapping& m = mapping(v);
  auto it = std::upper_bound(m.regions.begin(), m.regions.end(), begin,
                             [](int64_t value, const Region& r) { return value < r.begin + r.count; });
  if (it != m.regions.end() && it->tile == tile && it->begin <= begin && begin + count <= it->begin + it->count)
    return it->offset + static_cast<uint64_t>(begin - it->begin) * esize;
  auto key = std::make_tuple(v, begin, count, tile);
  if (auto hit = gathered_.find(key); hit != gathered_.end()) return hit->second;
  uint64_t offset = alloc_.allocate(tile, static_cast<uint64_t>(count) * esize);
  gatherElements(m, begin, count, esize, tile, offset, pending_exchange_.copies);
  gathered_[key] = offset;
  return offset;
}

void Lowering::beginNode(const std::string& name) {
  pending_exchange_ = exec::Exchange{name, {}};
  pending_set_ = exec::ComputeSet{name, {}};
}

void Lowering::endNode() {
  if (!pending_exchange_.copies.empty()) {
    exe_.main.steps.push_back({exec::StepKind::Exchange, static_cast<uint32_t>(exe_.exchanges.size())});
    exe_.exchanges.push_back(std::move(pending_exchange_));
  }
  if (!pending_set_.vertices.empty()) {
    exe_.main.steps.push_back({exec::StepKind::Compute, static_cast<uint32_t>(exe_.compute_sets.size())});
    exe_.compute_sets.push_back(std::move(pending_set_));
  }
  pending_exchange_ = {};
  pending_set_ = {};
}

}  // namespace poprt::codegen
