#include "sim/exchange_plan.h"

#include <algorithm>
#include <optional>

#include "sim/byte_ranges.h"

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

namespace {

// Bytes of one compute set that its vertices read, joined where they overlap or touch: a move
// into a cluster is made before `first`, the first vertex reading any of it, when every reader is
// on `tile` and the cluster lies in that tile.
struct ReadCluster {
  uint64_t begin = 0, end = 0;
  uint32_t first = 0, tile = 0;
  bool one_tile = true;
};

std::vector<ReadCluster> readClusters(std::span<const VertexView> vertices, const std::vector<uint64_t>& tile_offsets) {
  struct Read {
    uint64_t begin, end;
    uint32_t vertex;
  };
  std::vector<Read> reads;
  for (uint32_t j = 0; j < vertices.size(); ++j)
    for (size_t f = 1; f < vertices[j].fields.size(); ++f)
      if (vertices[j].fields[f].bytes > 0)
        reads.push_back({vertices[j].fields[f].offset, vertices[j].fields[f].offset + vertices[j].fields[f].bytes, j});
  std::sort(reads.begin(), reads.end(), [](const Read& a, const Read& b) { return a.begin < b.begin; });
  std::vector<ReadCluster> clusters;
  for (const Read& r : reads) {
    const uint32_t tile = vertices[r.vertex].tile;
    const bool in_tile = r.begin >= tile_offsets[tile] && (tile + 1 == tile_offsets.size() || r.end <= tile_offsets[tile + 1]);
    if (clusters.empty() || r.begin >= clusters.back().end) {
      clusters.push_back({r.begin, r.end, r.vertex, tile, in_tile});
      continue;
    }
    ReadCluster& c = clusters.back();
    c.end = std::max(c.end, r.end);
    c.one_tile = c.one_tile && in_tile && tile == c.tile;
    c.first = std::min(c.first, r.vertex);
  }
  return clusters;
}

// Each run's destinations in order, none overlapping another (within the run or across runs),
// as the exchange codegen writes does: what each move writes, sorted and joined where they touch;
// nullopt when not so (such an exchange keeps all its moves).
std::optional<std::vector<ByteRange>> orderedDestinations(const ExchangePlan& exchange,
                                                          const std::vector<uint64_t>& tile_offsets) {
  struct Span {
    uint64_t tile, begin, end;  // the destination tile's arena offset, and the run's bytes there
    size_t first, last;         // moves
  };
  std::vector<Span> spans;
  size_t begin = 0;
  for (const ExchangeRun& run : exchange.runs) {
    const uint64_t tile = tile_offsets[run.dst_tile];
    for (size_t i = begin + 1; i < run.end; ++i)
      if (exchange.moves[i].dst < uint64_t{exchange.moves[i - 1].dst} + exchange.moves[i - 1].bytes) return std::nullopt;
    if (run.end > begin) {
      const ExchangeMove& last = exchange.moves[run.end - 1];
      spans.push_back({tile, tile + exchange.moves[begin].dst, tile + last.dst + last.bytes, begin, run.end});
    }
    begin = run.end;
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  std::vector<ByteRange> written;
  for (size_t s = 0; s < spans.size(); ++s) {
    if (s > 0 && spans[s].begin < spans[s - 1].end) return std::nullopt;
    for (size_t i = spans[s].first; i < spans[s].last; ++i) {
      const uint64_t at = spans[s].tile + exchange.moves[i].dst;
      const ByteRange r{at, at + exchange.moves[i].bytes};
      if (!written.empty() && r.begin <= written.back().end)
        written.back().end = std::max(written.back().end, r.end);
      else
        written.push_back(r);
    }
  }
  return written;
}

}  // namespace

VertexMoves deferMovesToReaders(ExchangePlan& exchange, std::span<const VertexView> vertices,
                                const std::vector<uint64_t>& tile_offsets) {
  VertexMoves out;
  if (exchange.moves.empty() || vertices.empty()) return out;
  // Moves whose destinations overlap keep their order, and a move reading what another writes
  // reads it at its place in the exchange: an exchange with either keeps its moves.
  const auto moved_to = orderedDestinations(exchange, tile_offsets);
  if (!moved_to) return out;
  RangeCursor read_moved(*moved_to);
  for (const ExchangeMove& m : exchange.moves)
    if (read_moved.overlaps(m.src, m.src + m.bytes)) return out;
  const std::vector<ReadCluster> clusters = readClusters(vertices, tile_offsets);
  std::vector<ByteRange> set_writes;
  for (const VertexView& v : vertices)
    if (!v.fields.empty()) set_writes.push_back({v.fields[0].offset, v.fields[0].offset + v.fields[0].bytes});
  set_writes = mergeRanges(std::move(set_writes));
  RangeCursor read_written(set_writes);

  std::vector<std::vector<ExchangeMove>> by_vertex(vertices.size());
  ExchangePlan kept;
  size_t begin = 0;
  for (const ExchangeRun& run : exchange.runs) {
    const uint64_t tile = tile_offsets[run.dst_tile];
    // Destinations rise within a run: the clusters and the set's writes are walked, not searched.
    auto cluster = std::upper_bound(clusters.begin(), clusters.end(), tile + (run.end > begin ? exchange.moves[begin].dst : 0),
                                    [](uint64_t at, const ReadCluster& c) { return at < c.begin; });
    if (cluster != clusters.begin()) --cluster;
    auto write = std::lower_bound(set_writes.begin(), set_writes.end(), ByteRange{tile, 0});
    if (write != set_writes.begin()) --write;
    for (size_t i = begin; i < run.end; ++i) {
      const ExchangeMove& m = exchange.moves[i];
      const uint64_t dst = tile + m.dst, dst_end = dst + m.bytes;
      while (cluster != clusters.end() && cluster->end <= dst) ++cluster;
      while (write != set_writes.end() && write->end <= dst) ++write;
      // The cluster holding the destination whole, all of its readers on this tile.
      const bool read_here = cluster != clusters.end() && cluster->begin <= dst && dst_end <= cluster->end && cluster->one_tile &&
                             cluster->tile == run.dst_tile;
      const bool set_writes_dst = write != set_writes.end() && write->begin < dst_end;
      if (read_here && !set_writes_dst && !read_written.overlaps(m.src, m.src + m.bytes)) {
        by_vertex[cluster->first].push_back(m);
        continue;
      }
      if (kept.runs.empty() || kept.runs.back().dst_tile != run.dst_tile) kept.runs.push_back({run.dst_tile, 0});
      kept.moves.push_back(m);
      kept.runs.back().end = kept.moves.size();
    }
    begin = run.end;
  }
  if (kept.moves.size() == exchange.moves.size()) return out;  // nothing deferred
  kept.runs.shrink_to_fit();
  kept.moves.shrink_to_fit();
  exchange = std::move(kept);
  out.ends.reserve(vertices.size());
  for (auto& moves : by_vertex) {
    out.moves.insert(out.moves.end(), moves.begin(), moves.end());
    out.ends.push_back(static_cast<uint32_t>(out.moves.size()));
  }
  return out;
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
