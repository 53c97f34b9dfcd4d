#include "sim/field_liveness.h"

#include <algorithm>

#include "sim/tile_arena.h"

namespace poprt::sim {
namespace {

// Live bytes of the arena as bits, one per 4-byte granule (a float; light_resnet50's 416 MB
// arena takes 13 MB while a plan is made). A granule's liveness depends on the reads and writes of
// its own bytes alone, so only the pages holding queried bytes are tracked: the rest of a step's
// footprint (mostly the moves' sources) costs two lookups. The work on tracked bits has a budget
// (a PopEF may declare a gigabyte-wide operand a thousand times over one queried page); past it,
// the walk is abandoned and nothing is proven dead.
class LiveGranules {
 public:
  LiveGranules(uint64_t bytes, std::span<const LivenessQuery> queries)
      : words_(bytes / kGranule / 64 + 1, 0), tracked_before_(bytes / kPage + 2, 0) {
    std::vector<bool> tracked(tracked_before_.size() - 1, false);
    for (const LivenessQuery& q : queries)
      for (uint64_t p = q.range.begin / kPage; p * kPage < q.range.end; ++p) tracked[p] = true;
    for (size_t p = 0; p < tracked.size(); ++p) tracked_before_[p + 1] = tracked_before_[p] + tracked[p];
    budget_ = static_cast<int64_t>(kBudgetPerWord * words_.size() + kBudgetBase);
  }
  bool exhausted() const { return budget_ < 0; }

  // Read: every granule [begin, end) touches is alive.
  void read(uint64_t begin, uint64_t end) {
    if (end > begin && tracked(begin, end)) setBits(begin / kGranule, (end + kGranule - 1) / kGranule, true);
  }
  // Written whole: the granules [begin, end) covers are dead.
  void write(uint64_t begin, uint64_t end) {
    const uint64_t first = (begin + kGranule - 1) / kGranule, last = end / kGranule;
    if (last > first && tracked(begin, end)) setBits(first, last, false);
  }
  bool anyAlive(uint64_t begin, uint64_t end) const {
    if (end <= begin) return false;
    const uint64_t first = begin / kGranule, last = (end + kGranule - 1) / kGranule;
    for (uint64_t w = first / 64; w <= (last - 1) / 64; ++w)
      if (words_[w] & mask(w, first, last)) return true;
    return false;
  }
  void unite(const LiveGranules& other) {
    budget_ -= static_cast<int64_t>(words_.size());
    for (size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
  }

 private:
  static constexpr uint64_t kGranule = 4, kPage = 4096;
  // Word operations a walk may make per word of the bitmap, and on top: light_resnet50's plan
  // takes 28 a word (46 million), light_densenet121's 44, yolox_nano's 58 (24 million); a
  // hostile PopEF gets a walk in proportion to its arena.
  static constexpr uint64_t kBudgetPerWord = 256, kBudgetBase = uint64_t{1} << 28;
  bool tracked(uint64_t begin, uint64_t end) const {
    const uint64_t last = std::min<uint64_t>((end + kPage - 1) / kPage, tracked_before_.size() - 1);
    return tracked_before_[last] > tracked_before_[std::min<uint64_t>(begin / kPage, last)];
  }
  // The bits of word w within granules [first, last).
  static uint64_t mask(uint64_t w, uint64_t first, uint64_t last) {
    const uint64_t lo = std::max(first, w * 64) - w * 64, hi = std::min(last, w * 64 + 64) - w * 64;
    const uint64_t upper = hi == 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1;
    return upper & ~((uint64_t{1} << lo) - 1);
  }
  void setBits(uint64_t first, uint64_t last, bool alive) {
    budget_ -= static_cast<int64_t>((last - 1) / 64 - first / 64 + 1);
    if (budget_ < 0) return;
    for (uint64_t w = first / 64; w <= (last - 1) / 64; ++w) {
      const uint64_t m = mask(w, first, last);
      words_[w] = alive ? words_[w] | m : words_[w] & ~m;
    }
  }
  std::vector<uint64_t> words_;           // by granule
  std::vector<uint32_t> tracked_before_;  // by page: how many pages before it are tracked
  int64_t budget_ = 0;
};

// Walks programs backwards: what is alive before a step is what it reads, and what was alive after
// it that it does not write whole.
class BackwardWalk {
 public:
  BackwardWalk(const exec::Executable& exe, const ExecutionPlan& plan, const std::vector<uint64_t>& tile_offsets)
      : exe_(exe), plan_(plan), tile_offsets_(tile_offsets) {}

  void step(const exec::Step& s, LiveGranules& live) const {
    switch (s.kind) {
      case exec::StepKind::StreamIn:
      case exec::StepKind::StreamOut:
        for (const auto& c : exe_.streams[s.index].copies)
          exec::forEachStreamPiece(c, [&](uint64_t, uint64_t tile, uint64_t n) {
            const uint64_t at = tile_offsets_[c.tile] + tile;
            s.kind == exec::StepKind::StreamIn ? live.write(at, at + n) : live.read(at, at + n);
          });
        break;
      case exec::StepKind::Exchange: moves(plan_.exchanges[s.index], live); break;
      case exec::StepKind::Compute: {
        const auto& vertices = plan_.sets[s.index].vertices;
        for (const VertexView& v : vertices)
          if (!v.fields.empty()) live.write(v.fields[0].offset, v.fields[0].offset + v.fields[0].bytes);
        for (const VertexView& v : vertices)
          for (size_t f = 1; f < v.fields.size(); ++f) live.read(v.fields[f].offset, v.fields[f].offset + v.fields[f].bytes);
        // The moves its vertices make come before them.
        const VertexMoves& vm = plan_.vertex_moves[s.index];
        for (size_t j = 0; j < vm.ends.size(); ++j) {
          const uint64_t tile = tile_offsets_[vertices[j].tile];
          for (size_t i = j ? vm.ends[j - 1] : 0; i < vm.ends[j]; ++i)
            live.write(tile + vm.moves[i].dst, tile + vm.moves[i].dst + vm.moves[i].bytes);
        }
        for (const ExchangeMove& m : vm.moves) live.read(m.src, m.src + m.bytes);
        break;
      }
      case exec::StepKind::HostCall: break;  // host memory only
    }
  }

  void program(const exec::Program& p, LiveGranules& live) const {
    for (size_t i = p.steps.size(); i-- > 0;) step(p.steps[i], live);
  }

 private:
  void moves(const ExchangePlan& exchange, LiveGranules& live) const {
    size_t begin = 0;
    for (const ExchangeRun& run : exchange.runs) {
      const uint64_t tile = tile_offsets_[run.dst_tile];
      for (size_t i = begin; i < run.end; ++i)
        live.write(tile + exchange.moves[i].dst, tile + exchange.moves[i].dst + exchange.moves[i].bytes);
      begin = run.end;
    }
    for (const ExchangeMove& m : exchange.moves) live.read(m.src, m.src + m.bytes);
  }

  const exec::Executable& exe_;
  const ExecutionPlan& plan_;
  const std::vector<uint64_t>& tile_offsets_;
};

}  // namespace

std::vector<bool> deadAfter(const exec::Executable& exe, const ExecutionPlan& plan, const std::vector<uint64_t>& tile_offsets,
                            std::span<const LivenessQuery> queries) {
  std::vector<bool> dead(queries.size(), false);
  if (queries.empty() || exe.strategy == exec::Strategy::Pipelined) return dead;
  uint64_t arena = 0;
  TileArena::layout(exe.tile_bytes, &arena);
  const BackwardWalk walk(exe, plan, tile_offsets);
  // Alive at the start of main when nothing follows the run; then what a next run needs, with or
  // without the load program between (the walk's second pass reaches the fixed point: what is
  // alive at the end can only add bytes that nothing in main writes).
  LiveGranules live(arena, queries);
  walk.program(exe.main, live);
  LiveGranules after_reload = live;
  walk.program(exe.load, after_reload);
  if (after_reload.exhausted()) return dead;
  live.unite(after_reload);
  // A run that stops at a step that can fail (a host program; a host buffer streamed in, which a
  // host program may have left unfilled) is followed by a run from the start, without the rest of
  // the failed run's writes: what that run needs is alive there too.
  auto canFail = [&](const exec::Step& step) {
    return step.kind == exec::StepKind::HostCall ||
           (step.kind == exec::StepKind::StreamIn && exe.streams[step.index].role != exec::HostStream::Role::Input);
  };
  const bool failures = std::any_of(exe.main.steps.begin(), exe.main.steps.end(), canFail);
  const LiveGranules restart = failures ? live : LiveGranules(0, {});
  std::vector<ByteRange> weights;
  for (const auto& s : exe.streams)
    if (s.role == exec::HostStream::Role::Weight)
      for (const auto& c : s.copies)
        weights.push_back({tile_offsets[c.tile] + c.tile_offset, tile_offsets[c.tile] + c.tile_offset + c.tileBytes()});
  weights = mergeRanges(std::move(weights));
  // Queries by step, latest first, answered as the walk passes them.
  std::vector<size_t> order(queries.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return queries[a].step > queries[b].step; });
  size_t next = 0;
  for (size_t i = exe.main.steps.size(); i-- > 0;) {
    for (; next < order.size() && queries[order[next]].step >= i; ++next) {
      const LivenessQuery& q = queries[order[next]];
      dead[order[next]] =
          q.step == i && !live.anyAlive(q.range.begin, q.range.end) && !overlapsAny(weights, q.range.begin, q.range.end);
    }
    walk.step(exe.main.steps[i], live);
    if (failures && canFail(exe.main.steps[i])) live.unite(restart);
  }
  if (live.exhausted()) std::fill(dead.begin(), dead.end(), false);
  return dead;
}

}  // namespace poprt::sim
