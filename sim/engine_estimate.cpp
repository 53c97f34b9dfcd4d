// The engine's static cost model: each main-program step's estimated cycles on the target
// (compute: the busiest tile's vertex cycles; exchange: the busiest sender's distinct bytes, or an
// IPU link's; a sync per device step), the per-segment totals a pipelined schedule is built from,
// and which supersteps carry enough work to split over the worker threads. docs/COST_MODEL.md.
#include <algorithm>
#include <map>
#include <tuple>

#include "lib/exec/cost_model.h"
#include "sim/codelets.h"
#include "sim/engine.h"

namespace poprt::sim {

using Role = exec::HostStream::Role;

namespace {

// Bytes [begin, end) of a tile's memory an exchange sends.
struct SentRange {
  uint32_t tile;
  uint64_t begin, end;
  auto operator<=>(const SentRange&) const = default;
};

// The most distinct bytes any one tile sends: overlapping ranges (one value broadcast to several
// tiles) count once. Groups `sends` by tile into `scratch` (a counting sort: an exchange of a big model lists
// millions of ranges, and one sort of them all was a tenth of its load), then sorts each tile's.
uint64_t busiestSender(std::vector<SentRange>& sends, std::vector<SentRange>& scratch, std::vector<size_t>& starts) {
  uint32_t tiles = 0;
  for (const SentRange& r : sends) tiles = std::max(tiles, r.tile + 1);
  starts.assign(static_cast<size_t>(tiles) + 1, 0);
  for (const SentRange& r : sends) ++starts[r.tile + 1];
  for (uint32_t t = 0; t < tiles; ++t) starts[t + 1] += starts[t];
  scratch.resize(sends.size());
  {
    std::vector<size_t> at(starts.begin(), starts.end() - 1);
    for (const SentRange& r : sends) scratch[at[r.tile]++] = r;
  }
  uint64_t most = 0;
  for (uint32_t t = 0; t < tiles; ++t) {
    const auto first = scratch.begin() + static_cast<std::ptrdiff_t>(starts[t]);
    const auto last = scratch.begin() + static_cast<std::ptrdiff_t>(starts[t + 1]);
    std::sort(first, last);
    uint64_t bytes = 0, covered_to = 0;
    for (auto it = first; it != last; ++it) {
      const uint64_t from = std::max(it->begin, covered_to);
      if (it->end > from) bytes += it->end - from;
      covered_to = std::max(covered_to, it->end);
    }
    most = std::max(most, bytes);
  }
  return most;
}

}  // namespace

// Below this much work a superstep runs on the calling thread: waking workers costs more.
constexpr uint64_t kParallelCycles = 20000;
constexpr uint64_t kParallelBytes = 64 * 1024;
constexpr size_t kParallelEntries = 256;

void Engine::computeEstimate() {
  const auto& t = exe_.target;
  const exec::CostModel cost(t);
  const size_t tiles = exe_.tile_bytes.size();
  std::vector<uint64_t> per_tile(tiles);
  std::vector<SentRange> sends, sends_by_tile;
  std::vector<size_t> tile_starts;
  std::map<std::tuple<uint32_t, int64_t, int64_t, int64_t, int64_t>, uint32_t> first_reader;  // gather source -> its dst
  exchange_split_.assign(exe_.exchanges.size(), Split::Inline);
  compute_split_.assign(exe_.compute_sets.size(), Split::Inline);
  auto busiest = [&] { return *std::max_element(per_tile.begin(), per_tile.end()); };
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> link_bytes;  // (from IPU, to IPU) -> bytes
  for (const exec::Step& step : exe_.main.steps) {
    std::fill(per_tile.begin(), per_tile.end(), 0);
    StepCycles& c = step_cycles_.emplace_back();
    switch (step.kind) {
      case exec::StepKind::StreamIn:
      case exec::StepKind::StreamOut:
        for (const auto& copy : exe_.streams[step.index].copies) {
          per_tile[copy.tile] += copy.tileBytes();
          c.bytes += copy.tileBytes();
        }
        c.exchange = cost.exchangeCycles(busiest());
        break;
      case exec::StepKind::Exchange: {
        // A tile sends and receives at once; the slower direction bounds it. The IPU's exchange
        // is time-deterministic: a tile puts data on its wires once and every receiver listening
        // in that cycle takes it, so a source range sent to many tiles costs its sender once.
        uint64_t total = 0;
        sends.clear();
        const auto& ex = exe_.exchanges[step.index];
        // `listed`: whether the sender's range is listed (a broadcast's copies after the first are not).
        auto move = [&](uint32_t src, uint64_t src_offset, uint32_t dst, uint64_t bytes, bool listed = true) {
          total += bytes;
          if (src == dst) return;  // a local copy costs no exchange
          per_tile[dst] += bytes;
          if (t.ipuOf(src) != t.ipuOf(dst)) {
            link_bytes[{t.ipuOf(src), t.ipuOf(dst)}] += bytes;
            c.link_bytes += bytes;
          }
          if (listed) sends.push_back({src, src_offset, src_offset + bytes});
          c.bytes += bytes;
        };
        for (const auto& copy : ex.copies) move(copy.src_tile, copy.src_offset, copy.dst_tile, copy.bytes);
        // A gather reading what an earlier one of the step read (a broadcast) adds no sends, bar
        // the pieces the earlier one found on its own tile; listing each once keeps the sort short.
        first_reader.clear();
        for (const auto& g : ex.gathers) {
          const exec::Layout& layout = exe_.layouts[g.layout];
          const auto emplaced =
              first_reader.try_emplace(std::make_tuple(g.layout, g.begin, g.count, g.reps, g.stride), g.dst_tile);
          const bool first_read = emplaced.second;
          const uint32_t first_dst = emplaced.first->second;
          exec::forEachGatherPiece(layout, g, [&](const exec::LayoutRegion& region, int64_t first, int64_t n, uint64_t) {
            move(region.tile, region.offset + static_cast<uint64_t>(first - region.begin) * layout.elem_bytes, g.dst_tile,
                 static_cast<uint64_t>(n) * layout.elem_bytes, first_read || region.tile == first_dst);
          });
        }
        const uint64_t sent = busiestSender(sends, sends_by_tile, tile_starts);
        c.exchange = cost.exchangeCycles(std::max(busiest(), sent));
        // Copies between IPUs share the links between each pair, and wait for their sync.
        if (!link_bytes.empty()) {
          uint64_t most = 0;
          for (const auto& [pair, bytes] : link_bytes) most = std::max(most, bytes);
          c.exchange = cost.linkedExchangeCycles(c.exchange, most);
          link_bytes.clear();
        }
        if (total >= kParallelBytes || ex.copies.size() + ex.gathers.size() >= kParallelEntries)
          exchange_split_[step.index] = Split::Cold;
        break;
      }
      case exec::StepKind::Compute: {
        const auto& cs = exe_.compute_sets[step.index];
        uint64_t total = 0;
        for (const auto& v : cs.vertices) {
          const uint64_t cycles = vertexCycles(v, t);
          per_tile[v.tile] += cycles;
          total += cycles;
        }
        c.compute = busiest();
        if (cs.vertices.size() > 1 && total >= kParallelCycles) compute_split_[step.index] = Split::Cold;
        break;
      }
      case exec::StepKind::HostCall: continue;  // host time is measured, not estimated; no device sync
    }
    c.sync = cost.syncCycles();
  }
  for (const StepCycles& c : step_cycles_) {
    estimate_.compute += c.compute;
    estimate_.exchange += c.exchange;
    estimate_.sync += c.sync;
  }
  for (const exec::Segment& g : exe_.segments) {
    SegmentCycles& s = segment_cycles_.emplace_back();
    s.ipu = g.ipu;
    for (uint32_t i = g.begin; i < g.end; ++i) (i < g.copies ? s.compute : s.copies) += step_cycles_[i].total();
  }
}

std::vector<StageSpan> Engine::schedule(uint64_t batches) const {
  std::vector<StageSpan> spans;
  const std::vector<SegmentCycles> one_ipu = {{0, estimate_.total(), 0}};
  const auto& stages = segment_cycles_.empty() ? one_ipu : segment_cycles_;
  if (exe_.strategy != exec::Strategy::Pipelined) {
    uint64_t at = 0;
    for (uint64_t b = 0; b < batches; ++b)
      for (uint32_t s = 0; s < stages.size(); ++s) {
        spans.push_back({s, static_cast<uint32_t>(b), false, at, stages[s].compute});
        at += stages[s].compute;
        if (stages[s].copies) spans.push_back({s, static_cast<uint32_t>(b), true, at, stages[s].copies});
        at += stages[s].copies;
      }
    return spans;
  }
  const auto [slowest_compute, slowest_copies] = slowestStage();
  const uint64_t phase = slowest_compute + slowest_copies;
  for (uint64_t t = 0; t + 1 < batches + stages.size(); ++t)
    for (uint32_t s = 0; s < stages.size(); ++s) {
      if (t < s || t - s >= batches) continue;
      const auto b = static_cast<uint32_t>(t - s);
      spans.push_back({s, b, false, t * phase, stages[s].compute});
      if (stages[s].copies) spans.push_back({s, b, true, t * phase + slowest_compute, stages[s].copies});
    }
  return spans;
}

std::pair<uint64_t, uint64_t> Engine::slowestStage() const {
  uint64_t compute = 0, copies = 0;
  for (const SegmentCycles& s : segment_cycles_) {
    compute = std::max(compute, s.compute);
    copies = std::max(copies, s.copies);
  }
  return {compute, copies};
}

uint64_t Engine::cyclesForBatches(uint64_t batches) const {
  if (exe_.strategy != exec::Strategy::Pipelined || batches == 0) return batches * estimate_.total();
  // Every phase lasts as long as the slowest stage, the last one too.
  const auto [slowest_compute, slowest_copies] = slowestStage();
  return (batches + segment_cycles_.size() - 1) * (slowest_compute + slowest_copies);
}

}  // namespace poprt::sim
