#include "codegen/tile_memory.h"

#include <algorithm>
#include <map>

#include "lib/support/bytes.h"

namespace poprt::codegen {

TileMemory::TileMemory(uint32_t tiles, uint64_t capacity)
    : alloc_(tiles), capacity_(capacity), peaks_(tiles), live_(tiles, {0, 0}), tile_peaks_(tiles) {}

uint32_t TileMemory::label(const std::string& text, Kind kind) {
  auto [it, added] = label_ids_.try_emplace(text, static_cast<uint32_t>(labels_.size()));
  if (added) {
    labels_.push_back(text);
    label_kinds_.push_back(kind);
  }
  return it->second;
}

void TileMemory::count(uint32_t tile, uint64_t start, const TileAllocator::Block& b, bool adding) {
  if ((start & TileAllocator::kPersistent) || b.label == 0) return;  // weights are counted apart
  uint64_t& bytes = live_[tile][static_cast<size_t>(label_kinds_[b.label])];
  bytes = adding ? bytes + b.bytes : bytes - b.bytes;
}

void TileMemory::freeBlock(uint32_t tile, uint64_t start) {
  count(tile, start, alloc_.block(tile, start), false);
  alloc_.free(tile, start, /*cooling=*/true);
}

void TileMemory::hold(const ir::Value* v, std::vector<std::pair<uint32_t, uint64_t>> blocks, uint32_t label) {
  auto& held = held_[v];
  for (const auto& block : blocks) {
    if (!held.insert(block).second) continue;
    TileAllocator::Block& b = alloc_.block(block.first, block.second);
    ++b.holders;
    if (b.label == 0) {  // named after its first holder: a view's memory keeps its input's name
      b.label = label;
      count(block.first, block.second, b, true);
    }
  }
}

void TileMemory::holdMapping(const ir::Value* v, const TileMapping& m) {
  std::vector<std::pair<uint32_t, uint64_t>> blocks;
  for (const Region& r : m.regions) {
    if (r.count == 0) continue;
    auto start = alloc_.blockAt(r.tile, r.offset);
    POPRT_CHECK(start.has_value(),
                "the mapping of '" + v->name() + "' points at unallocated memory on tile " + std::to_string(r.tile));
    blocks.emplace_back(r.tile, *start);
  }
  if (!blocks.empty()) hold(v, std::move(blocks), label(v->name(), Kind::Activation));
}

void TileMemory::holdCopy(const ir::Value* v, uint32_t tile, uint64_t start) {
  POPRT_CHECK(alloc_.blockAt(tile, start) == start, "a copy of '" + v->name() + "' is not an allocated block");
  hold(v, {{tile, start}}, label("copies of " + v->name(), Kind::ExchangeBuffer));
}

void TileMemory::nameResidentSlice(const ir::Value* v, uint32_t tile, uint64_t start) {
  alloc_.block(tile, start).label = label("slices of " + v->name(), Kind::Activation);
}

void TileMemory::release(const ir::Value* v) {
  auto it = held_.find(v);
  if (it == held_.end()) return;
  for (const auto& [tile, start] : it->second)
    if (--alloc_.block(tile, start).holders == 0 && !(start & TileAllocator::kPersistent)) freeBlock(tile, start);
  held_.erase(it);
}

void TileMemory::endStep(const std::string& node, uint32_t program_steps) {
  std::vector<std::pair<uint32_t, uint64_t>> unheld;
  for (const auto& [tile, start] : alloc_.takeNew()) {
    TileAllocator::Block* live = alloc_.liveBlock(tile, start);
    if (!live) continue;  // freed since
    TileAllocator::Block& b = *live;
    if (b.holders > 0) continue;
    if (b.label == 0) {
      b.label = label("buffers of node '" + node + "'", Kind::ExchangeBuffer);
      count(tile, start, b, true);
    }
    unheld.emplace_back(tile, start);
  }
  // Every live block is labelled now, so live_ holds the step's peak.
  exec::LivenessPoint point{node, program_steps};
  const auto index = static_cast<uint32_t>(liveness_.size());
  for (uint32_t t = 0; t < alloc_.tiles(); ++t) {
    const auto [activations, exchange] = live_[t];
    point.activations += activations;
    point.exchange_buffers += exchange;
    if (activations + exchange > point.busiest_bytes) {
      point.busiest_bytes = activations + exchange;
      point.busiest_tile = t;
    }
    exec::TilePeak& peak = tile_peaks_[t];
    if (activations + exchange > peak.activations + peak.exchange_buffers) peak = {activations, exchange, index};
  }
  liveness_.push_back(std::move(point));
  // Nothing is freed during a step, so what lives now is what lived when the step peaked.
  for (uint32_t t = 0; t < alloc_.tiles(); ++t) {
    const uint64_t top = alloc_.peak(t);
    if (top <= capacity_ || top == peaks_[t].top) continue;
    std::map<uint32_t, uint64_t> by_label;
    for (const auto& [start, b] : alloc_.liveBlocks(t)) by_label[b.label] += b.bytes;
    for (const auto& [start, b] : alloc_.persistentBlocks(t)) by_label[b.label] += b.bytes;
    Peak& p = peaks_[t];
    p.top = top;
    p.step = node;
    p.contents.clear();
    for (const auto& [l, bytes] : by_label) p.contents.emplace_back(bytes, l);
    std::sort(p.contents.begin(), p.contents.end(), [&](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : labels_[a.second] < labels_[b.second];
    });
  }
  // What died by the end of the step before is like any free memory from the next one on.
  alloc_.endCooling();
  for (const auto& [tile, start] : unheld) freeBlock(tile, start);
}

exec::MemoryProfile TileMemory::memoryProfile() const {
  exec::MemoryProfile p;
  for (uint32_t t = 0; t < alloc_.tiles(); ++t) p.weights.push_back(alloc_.persistentBytes(t));
  p.peaks = tile_peaks_;
  p.liveness = liveness_;
  return p;
}

std::string TileMemory::describePeak(uint32_t tile, size_t items) const {
  const Peak& p = peaks_.at(tile);
  if (p.top == 0) return "";
  std::string s = "at " + (p.step.empty() ? std::string("the end") : "node '" + p.step + "'") + ": ";
  uint64_t rest = 0;
  for (size_t i = 0; i < p.contents.size(); ++i) {
    if (i < items) {
      s += (i ? ", " : "") + labels_[p.contents[i].second] + " " + humanBytes(p.contents[i].first);
    } else {
      rest += p.contents[i].first;
    }
  }
  if (p.contents.size() > items) s += " and " + std::to_string(p.contents.size() - items) + " more, " + humanBytes(rest);
  return s;
}

}  // namespace poprt::codegen
