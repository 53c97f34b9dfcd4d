#include "codegen/merge_supersteps.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

namespace poprt::codegen {

namespace {

// One access of tile memory by a superstep.
struct Access {
  enum Kind { ExchangeRead, ExchangeWrite, ComputeRead, ComputeWrite } kind;
  uint32_t tile;
  uint64_t begin, end;
};

// A superstep: its exchange and compute set (either may be absent) and the old steps they were.
struct Superstep {
  std::vector<uint32_t> exchanges, compute_sets;  // merged in order
  std::vector<std::string> names;                 // the node of each merged superstep
  std::vector<size_t> old_steps;
};

void accesses(const exec::Executable& exe, const Superstep& s, std::vector<Access>& out) {
  out.clear();
  for (uint32_t e : s.exchanges) {
    const exec::Exchange& ex = exe.exchanges[e];
    for (const auto& c : ex.copies) {
      out.push_back({Access::ExchangeRead, c.src_tile, c.src_offset, c.src_offset + c.bytes});
      out.push_back({Access::ExchangeWrite, c.dst_tile, c.dst_offset, c.dst_offset + c.bytes});
    }
  }
  // Gathers as the bounds of what they touch, not piece by piece (a conv's window gathers have
  // millions): per layout, the union of the element spans the gathers reach, and every layout
  // region those spans overlap read whole; per gather, the span of its destination. Coarser is
  // safe: it can only keep apart steps that could have merged.
  std::map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> spans;  // layout -> element spans
  for (uint32_t e : s.exchanges)
    for (const auto& g : exe.exchanges[e].gathers) {
      if (g.count <= 0 || g.reps <= 0) continue;
      spans[g.layout].emplace_back(g.begin, g.begin + (g.reps - 1) * g.stride + g.count);
      const uint64_t row = static_cast<uint64_t>(g.count) * exe.layouts[g.layout].elem_bytes;
      out.push_back({Access::ExchangeWrite, g.dst_tile, g.dst_offset,
                     g.dst_offset + static_cast<uint64_t>(g.reps - 1) * g.dst_stride + row});
    }
  for (auto& [index, list] : spans) {
    const exec::Layout& layout = exe.layouts[index];
    std::sort(list.begin(), list.end());
    auto it = layout.regions.begin();  // the regions before it are listed
    for (const auto& [first, last] : list) {
      it = std::upper_bound(it, layout.regions.end(), first,
                            [](int64_t e, const exec::LayoutRegion& r) { return e < r.begin + r.count; });
      for (; it != layout.regions.end() && it->begin < last; ++it)
        out.push_back(
            {Access::ExchangeRead, it->tile, it->offset, it->offset + static_cast<uint64_t>(it->count) * layout.elem_bytes});
    }
  }
  for (uint32_t c : s.compute_sets)
    for (const auto& v : exe.compute_sets[c].vertices)
      for (size_t f = 0; f < v.fields.size(); ++f)
        out.push_back({f == 0 ? Access::ComputeWrite : Access::ComputeRead, v.tile, v.fields[f].offset,
                       v.fields[f].offset + v.fields[f].bytes});
}

// Byte ranges of tile memory, sorted by (tile, start) and coalesced, for overlap queries.
class Ranges {
 public:
  void add(uint32_t tile, uint64_t begin, uint64_t end) {
    if (begin >= end) return;
    // A vertex's or copy's pieces mostly follow each other: extending the last range keeps the
    // list (and the sort below, most of a big model's merge time) short.
    if (!ranges_.empty() && ranges_.back().tile == tile && ranges_.back().end == begin) {
      ranges_.back().end = end;
      return;
    }
    ranges_.push_back({tile, begin, end});
  }
  void finish() {
    sortByTileAndBegin();
    std::vector<Range> merged;
    for (const Range& r : ranges_) {
      if (!merged.empty() && merged.back().tile == r.tile && r.begin <= merged.back().end)
        merged.back().end = std::max(merged.back().end, r.end);
      else
        merged.push_back(r);
    }
    ranges_ = std::move(merged);
  }
  bool overlaps(uint32_t tile, uint64_t begin, uint64_t end) const {
    if (begin >= end) return false;
    // The last range starting before `end` on this tile reaches furthest.
    auto it = std::lower_bound(ranges_.begin(), ranges_.end(), Range{tile, end, 0});
    if (it == ranges_.begin()) return false;
    --it;
    return it->tile == tile && it->end > begin;
  }

  // Whether a range of `other` overlaps one of these. Both lists are sorted by (tile, begin) and
  // coalesced: a short one is looked up range by range, lists of a size are walked side by side
  // (two footprints of a whole-model superstep have a range or more per tile each).
  bool overlapsAny(const Ranges& other) const {
    const Ranges& small = other.ranges_.size() <= ranges_.size() ? other : *this;
    const Ranges& big = &small == &other ? *this : other;
    if (small.ranges_.size() * 16 < big.ranges_.size())
      return std::any_of(small.ranges_.begin(), small.ranges_.end(),
                         [&](const Range& r) { return big.overlaps(r.tile, r.begin, r.end); });
    auto a = ranges_.begin(), b = other.ranges_.begin();
    while (a != ranges_.end() && b != other.ranges_.end()) {
      if (a->tile != b->tile)
        a->tile < b->tile ? ++a : ++b;
      else if (a->end <= b->begin)
        ++a;
      else if (b->end <= a->begin)
        ++b;
      else
        return true;
    }
    return false;
  }

  struct Range {
    uint32_t tile;
    uint64_t begin, end;
    auto operator<=>(const Range&) const = default;
  };

 private:
  // By tile with a counting sort (a superstep touches every tile, a few ranges each), then each
  // tile's few ranges by begin; ranges that start together merge in finish() whatever their ends.
  void sortByTileAndBegin() {
    auto by_begin = [](const Range& a, const Range& b) { return a.begin < b.begin; };
    if (ranges_.size() < 64) {
      std::sort(ranges_.begin(), ranges_.end(),
                [](const Range& a, const Range& b) { return a.tile != b.tile ? a.tile < b.tile : a.begin < b.begin; });
      return;
    }
    uint32_t tiles = 0;
    for (const Range& r : ranges_) tiles = std::max(tiles, r.tile + 1);
    std::vector<size_t> start(static_cast<size_t>(tiles) + 1, 0);
    for (const Range& r : ranges_) ++start[r.tile + 1];
    for (size_t t = 0; t < tiles; ++t) start[t + 1] += start[t];
    std::vector<Range> sorted(ranges_.size());
    std::vector<size_t> next(start.begin(), start.end() - 1);
    for (const Range& r : ranges_) sorted[next[r.tile]++] = r;
    for (size_t t = 0; t < tiles; ++t)
      std::sort(sorted.begin() + static_cast<std::ptrdiff_t>(start[t]),
                sorted.begin() + static_cast<std::ptrdiff_t>(start[t + 1]), by_begin);
    ranges_ = std::move(sorted);
  }

  std::vector<Range> ranges_;
};

// What one superstep touches, by kind of access.
struct Footprint {
  Ranges ranges[4];

  explicit Footprint(const std::vector<Access>& list) {
    for (const Access& a : list) ranges[a.kind].add(a.tile, a.begin, a.end);
    for (Ranges& r : ranges) r.finish();
  }

  // Whether a superstep with footprint `other` can run in the same superstep as this one, after
  // its exchange and alongside its compute set, with the same results as after it. Checked range
  // by coalesced range: a conv's reduction copies make tens of thousands of accesses, mostly
  // adjacent.
  bool admits(const Footprint& other) const {
    auto hits = [&](Access::Kind kind, std::initializer_list<Access::Kind> kinds) {
      return std::any_of(kinds.begin(), kinds.end(), [&](Access::Kind k) { return ranges[k].overlapsAny(other.ranges[kind]); });
    };
    // Exchanges run at once, before any compute.
    return !hits(Access::ExchangeRead, {Access::ExchangeWrite, Access::ComputeWrite}) &&
           !hits(Access::ExchangeWrite,
                 {Access::ExchangeRead, Access::ExchangeWrite, Access::ComputeRead, Access::ComputeWrite}) &&
           !hits(Access::ComputeRead, {Access::ComputeWrite}) &&
           !hits(Access::ComputeWrite, {Access::ComputeRead, Access::ComputeWrite});
  }

  // Whether a superstep with footprint `other` can move ahead of this one: neither writes what
  // the other reads or writes.
  bool commutes(const Footprint& other) const {
    for (Access::Kind a : {Access::ExchangeRead, Access::ExchangeWrite, Access::ComputeRead, Access::ComputeWrite}) {
      const bool writes = a == Access::ExchangeWrite || a == Access::ComputeWrite;
      for (Access::Kind k : {Access::ExchangeRead, Access::ExchangeWrite, Access::ComputeRead, Access::ComputeWrite}) {
        const bool other_writes = k == Access::ExchangeWrite || k == Access::ComputeWrite;
        if ((writes || other_writes) && ranges[k].overlapsAny(other.ranges[a])) return false;
      }
    }
    return true;
  }
};

// How many later supersteps one may pass over looking for one to take in.
constexpr size_t kLookahead = 8;

std::string joinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : " + ") + n;
  return out;
}

// The program cut into supersteps (an exchange and the compute set after it, or either alone);
// a barrier (stream or host step) is one of its own. `bound`: old steps that start a segment part.
std::vector<Superstep> cutSupersteps(const exec::Executable& exe, const std::vector<bool>& bound) {
  const std::vector<exec::Step>& old = exe.main.steps;
  std::vector<Superstep> units;
  for (size_t i = 0; i < old.size(); ++i) {
    Superstep u;
    u.old_steps.push_back(i);
    if (old[i].kind == exec::StepKind::Exchange) {
      u.exchanges.push_back(old[i].index);
      u.names.push_back(exe.exchanges[old[i].index].name);
      if (i + 1 < old.size() && old[i + 1].kind == exec::StepKind::Compute && !bound[i + 1]) {
        u.old_steps.push_back(++i);
        u.compute_sets.push_back(old[i].index);
        const std::string& cs_name = exe.compute_sets[old[i].index].name;
        if (cs_name != u.names.back()) u.names.push_back(cs_name);  // an exchange-only node's, then another's
      }
    } else if (old[i].kind == exec::StepKind::Compute) {
      u.compute_sets.push_back(old[i].index);
      u.names.push_back(exe.compute_sets[old[i].index].name);
    }
    units.push_back(std::move(u));
  }
  return units;
}

// The merged program as it is written: each superstep's exchanges and compute sets joined into
// one of each (moved out of `exe`), and where every old step went.
struct MergedProgram {
  std::vector<exec::Exchange> exchanges;
  std::vector<exec::ComputeSet> compute_sets;
  std::vector<exec::Step> steps;
  std::vector<uint32_t> new_index;  // the new step each old step became part of

  void emit(exec::Executable& exe, const std::vector<exec::Step>& old, const Superstep& s) {
    if (s.exchanges.empty() && s.compute_sets.empty()) {  // a barrier, as it was
      new_index[s.old_steps[0]] = static_cast<uint32_t>(steps.size());
      steps.push_back(old[s.old_steps[0]]);
      return;
    }
    const bool merged = s.names.size() > 1;
    const std::string name = joinNames(s.names);
    std::optional<uint32_t> ex_step, cs_step;
    if (!s.exchanges.empty()) {
      exec::Exchange ex = std::move(exe.exchanges[s.exchanges[0]]);
      for (size_t i = 1; i < s.exchanges.size(); ++i) {
        auto& more = exe.exchanges[s.exchanges[i]];
        ex.copies.insert(ex.copies.end(), more.copies.begin(), more.copies.end());
        ex.gathers.insert(ex.gathers.end(), more.gathers.begin(), more.gathers.end());
      }
      if (merged) ex.name = name;
      ex_step = static_cast<uint32_t>(steps.size());
      steps.push_back({exec::StepKind::Exchange, static_cast<uint32_t>(exchanges.size())});
      exchanges.push_back(std::move(ex));
    }
    if (!s.compute_sets.empty()) {
      exec::ComputeSet cs = std::move(exe.compute_sets[s.compute_sets[0]]);
      for (size_t i = 1; i < s.compute_sets.size(); ++i) {
        auto& more = exe.compute_sets[s.compute_sets[i]].vertices;
        cs.vertices.insert(cs.vertices.end(), more.begin(), more.end());
      }
      if (merged) cs.name = name;
      cs_step = static_cast<uint32_t>(steps.size());
      steps.push_back({exec::StepKind::Compute, static_cast<uint32_t>(compute_sets.size())});
      compute_sets.push_back(std::move(cs));
    }
    for (size_t i : s.old_steps) new_index[i] = old[i].kind == exec::StepKind::Exchange ? *ex_step : *cs_step;
  }
};

}  // namespace

std::vector<uint32_t> mergeSupersteps(exec::Executable& exe) {
  const std::vector<exec::Step> old = exe.main.steps;
  // Nothing merges across a segment's bounds (its IPU's steps, its IPU-Link copies).
  std::vector<bool> bound(old.size() + 1, false);
  for (const exec::Segment& g : exe.segments) bound[g.begin] = bound[g.copies] = bound[g.end] = true;
  std::vector<Superstep> units = cutSupersteps(exe, bound);
  auto barrier = [&](size_t u) { return units[u].exchanges.empty() && units[u].compute_sets.empty(); };
  auto starts_segment_part = [&](size_t u) { return bound[units[u].old_steps[0]]; };
  // Each superstep's footprint, made when first needed and dropped once emitted.
  std::vector<std::optional<Footprint>> footprints(units.size());
  std::vector<Access> scratch;
  auto footprintOf = [&](size_t u) -> const Footprint& {
    if (!footprints[u]) {
      accesses(exe, units[u], scratch);
      footprints[u].emplace(scratch);
    }
    return *footprints[u];
  };
  MergedProgram merged;
  merged.new_index.resize(old.size());
  auto emit = [&](const Superstep& s) { merged.emit(exe, old, s); };

  // Each superstep in order takes in the later ones (up to kLookahead passed over, never past a
  // barrier) that it admits and that commute with those it passed over.
  std::vector<bool> taken(units.size(), false);
  for (size_t u = 0; u < units.size(); ++u) {
    if (taken[u]) continue;
    if (barrier(u)) {
      emit(units[u]);
      continue;
    }
    footprintOf(u);  // before units[u] moves
    std::vector<size_t> members = {u}, passed;
    Superstep open = std::move(units[u]);
    for (size_t v = u + 1; v < units.size() && !barrier(v) && !starts_segment_part(v) && passed.size() < kLookahead; ++v) {
      if (taken[v]) continue;
      const Footprint& fv = footprintOf(v);
      const bool joins = std::all_of(members.begin(), members.end(), [&](size_t m) { return footprintOf(m).admits(fv); }) &&
                         std::all_of(passed.begin(), passed.end(), [&](size_t p) { return footprintOf(p).commutes(fv); });
      if (!joins) {
        passed.push_back(v);
        continue;
      }
      auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
      append(open.exchanges, units[v].exchanges);
      append(open.compute_sets, units[v].compute_sets);
      append(open.names, units[v].names);
      append(open.old_steps, units[v].old_steps);
      members.push_back(v);
      taken[v] = true;
    }
    emit(open);
    for (size_t m : members) footprints[m].reset();
  }

  exe.main.steps = std::move(merged.steps);
  exe.exchanges = std::move(merged.exchanges);
  exe.compute_sets = std::move(merged.compute_sets);
  // Old step counts -> new: a merged superstep covers every old step in it.
  std::vector<uint32_t> remap(old.size() + 1, 0);
  for (size_t i = 0; i < old.size(); ++i) remap[i + 1] = std::max(remap[i], merged.new_index[i] + 1);
  for (exec::Segment& g : exe.segments) {
    g.begin = remap[g.begin];
    g.copies = remap[g.copies];
    g.end = remap[g.end];
  }
  return remap;
}

}  // namespace poprt::codegen
