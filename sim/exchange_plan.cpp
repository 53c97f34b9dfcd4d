#include "sim/exchange_plan.h"

namespace poprt::sim {

namespace {

class PlanBuilder {
 public:
  PlanBuilder(ExchangePlan& plan, const std::vector<uint64_t>& tile_offsets) : plan_(plan), tile_offsets_(tile_offsets) {}

  // `bytes` from arena offset `src` to offset `dst` of tile `dst_tile` (validated: inside the
  // tile, so under 4 GiB, merged or not). A move that continues the last one on both sides is
  // merged into it unless the merged source would read what its first part wrote (the source
  // before the destination and overlapping it), where one memmove differs from two.
  void add(uint32_t dst_tile, uint64_t dst, uint64_t src, uint64_t bytes) {
    if (bytes == 0) return;
    if (!plan_.runs.empty() && plan_.runs.back().dst_tile == dst_tile) {
      ExchangeMove& last = plan_.moves.back();
      const uint64_t last_dst = tile_offsets_[dst_tile] + last.dst;  // in the arena, as src is
      const bool reads_own_writes = last.src < last_dst && last.src + last.bytes + bytes > last_dst;
      if (uint64_t{last.dst} + last.bytes == dst && last.src + last.bytes == src && !reads_own_writes) {
        last.bytes += static_cast<uint32_t>(bytes);
        return;
      }
    } else {
      plan_.runs.push_back({dst_tile, 0});
    }
    plan_.moves.push_back({src, static_cast<uint32_t>(dst), static_cast<uint32_t>(bytes)});
    plan_.runs.back().end = plan_.moves.size();
  }
  uint64_t tileOffset(uint32_t tile) const { return tile_offsets_[tile]; }

 private:
  ExchangePlan& plan_;
  const std::vector<uint64_t>& tile_offsets_;
};

}  // namespace

std::vector<ExchangePlan> planExchanges(const exec::Executable& exe, const std::vector<uint64_t>& tile_offsets) {
  std::vector<ExchangePlan> plans(exe.exchanges.size());
  for (size_t i = 0; i < exe.exchanges.size(); ++i) {
    const exec::Exchange& ex = exe.exchanges[i];
    PlanBuilder plan(plans[i], tile_offsets);
    for (const auto& c : ex.copies) plan.add(c.dst_tile, c.dst_offset, plan.tileOffset(c.src_tile) + c.src_offset, c.bytes);
    for (const auto& g : ex.gathers) {
      const exec::Layout& layout = exe.layouts[g.layout];
      exec::forEachGatherPiece(layout, g, [&](const exec::LayoutRegion& region, int64_t first, int64_t n, uint64_t dst) {
        plan.add(g.dst_tile, dst,
                 plan.tileOffset(region.tile) + region.offset + static_cast<uint64_t>(first - region.begin) * layout.elem_bytes,
                 static_cast<uint64_t>(n) * layout.elem_bytes);
      });
    }
    plans[i].runs.shrink_to_fit();
    plans[i].moves.shrink_to_fit();
  }
  return plans;
}

uint64_t exchangeMoveBound(const exec::Executable& exe) {
  uint64_t moves = 0;
  for (const auto& ex : exe.exchanges) {
    moves += ex.copies.size();
    for (const auto& g : ex.gathers)
      exec::forEachGatherPiece(exe.layouts[g.layout], g, [&](const exec::LayoutRegion&, int64_t, int64_t, uint64_t) { ++moves; });
  }
  return moves;
}

}  // namespace poprt::sim
