#include "codegen/merge_supersteps.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

namespace poprt::codegen {

namespace {

// Byte ranges of tile memory, kept sorted and coalesced per tile.
class TileRanges {
 public:
  void add(uint32_t tile, uint64_t begin, uint64_t end) {
    if (begin >= end) return;
    auto& m = ranges_[tile];
    auto it = m.upper_bound(begin);
    if (it != m.begin()) {
      auto prev = std::prev(it);
      if (prev->second >= begin) {
        begin = prev->first;
        end = std::max(end, prev->second);
        it = m.erase(prev);
      }
    }
    while (it != m.end() && it->first <= end) {
      end = std::max(end, it->second);
      it = m.erase(it);
    }
    m.emplace(begin, end);
  }

  bool overlaps(uint32_t tile, uint64_t begin, uint64_t end) const {
    if (begin >= end) return false;
    auto t = ranges_.find(tile);
    if (t == ranges_.end()) return false;
    auto it = t->second.lower_bound(end);  // the ranges starting before `end`: the last one reaches furthest
    if (it == t->second.begin()) return false;
    return std::prev(it)->second > begin;
  }

 private:
  std::unordered_map<uint32_t, std::map<uint64_t, uint64_t>> ranges_;  // begin -> end
};

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
    for (const auto& g : ex.gathers) {
      const exec::Layout& layout = exe.layouts[g.layout];
      exec::forEachGatherPiece(layout, g, [&](const exec::LayoutRegion& region, int64_t first, int64_t n, uint64_t dst) {
        const uint64_t bytes = static_cast<uint64_t>(n) * layout.elem_bytes;
        const uint64_t src = region.offset + static_cast<uint64_t>(first - region.begin) * layout.elem_bytes;
        out.push_back({Access::ExchangeRead, region.tile, src, src + bytes});
        out.push_back({Access::ExchangeWrite, g.dst_tile, dst, dst + bytes});
      });
    }
  }
  for (uint32_t c : s.compute_sets)
    for (const auto& v : exe.compute_sets[c].vertices)
      for (size_t f = 0; f < v.fields.size(); ++f)
        out.push_back({f == 0 ? Access::ComputeWrite : Access::ComputeRead, v.tile, v.fields[f].offset,
                       v.fields[f].offset + v.fields[f].bytes});
}

// What the open superstep touches, by kind.
struct Footprint {
  TileRanges ranges[4];

  void add(const std::vector<Access>& list) {
    for (const Access& a : list) ranges[a.kind].add(a.tile, a.begin, a.end);
  }

  // Whether a superstep making `list` accesses can run in the same superstep, after this one's
  // exchange and alongside its compute set, with the same results as after it.
  bool admits(const std::vector<Access>& list) const {
    auto hits = [&](const Access& a, std::initializer_list<Access::Kind> kinds) {
      for (Access::Kind k : kinds)
        if (ranges[k].overlaps(a.tile, a.begin, a.end)) return true;
      return false;
    };
    for (const Access& a : list) {
      switch (a.kind) {
        case Access::ExchangeRead:  // exchanges run at once, before any compute
          if (hits(a, {Access::ExchangeWrite, Access::ComputeWrite})) return false;
          break;
        case Access::ExchangeWrite:
          if (hits(a, {Access::ExchangeRead, Access::ExchangeWrite, Access::ComputeRead, Access::ComputeWrite}))
            return false;
          break;
        case Access::ComputeRead:
          if (hits(a, {Access::ComputeWrite})) return false;
          break;
        case Access::ComputeWrite:
          if (hits(a, {Access::ComputeRead, Access::ComputeWrite})) return false;
          break;
      }
    }
    return true;
  }

  // Whether a superstep making `list` accesses can move ahead of the ones this holds: neither
  // writes what the other reads or writes.
  bool commutes(const std::vector<Access>& list) const {
    for (const Access& a : list) {
      const bool writes = a.kind == Access::ExchangeWrite || a.kind == Access::ComputeWrite;
      for (Access::Kind k : {Access::ExchangeRead, Access::ExchangeWrite, Access::ComputeRead, Access::ComputeWrite}) {
        const bool other_writes = k == Access::ExchangeWrite || k == Access::ComputeWrite;
        if ((writes || other_writes) && ranges[k].overlaps(a.tile, a.begin, a.end)) return false;
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

}  // namespace

std::vector<uint32_t> mergeSupersteps(exec::Executable& exe) {
  const std::vector<exec::Step> old = exe.main.steps;
  // The program cut into supersteps; a barrier (stream or host step) is one of its own.
  std::vector<Superstep> units;
  std::vector<std::vector<Access>> unit_accesses;
  for (size_t i = 0; i < old.size(); ++i) {
    Superstep u;
    u.old_steps.push_back(i);
    if (old[i].kind == exec::StepKind::Exchange) {
      u.exchanges.push_back(old[i].index);
      u.names.push_back(exe.exchanges[old[i].index].name);
      if (i + 1 < old.size() && old[i + 1].kind == exec::StepKind::Compute) {
        u.old_steps.push_back(++i);
        u.compute_sets.push_back(old[i].index);
        const std::string& cs_name = exe.compute_sets[old[i].index].name;
        if (cs_name != u.names.back()) u.names.push_back(cs_name);  // an exchange-only node's, then another's
      }
    } else if (old[i].kind == exec::StepKind::Compute) {
      u.compute_sets.push_back(old[i].index);
      u.names.push_back(exe.compute_sets[old[i].index].name);
    }
    unit_accesses.emplace_back();
    accesses(exe, u, unit_accesses.back());
    units.push_back(std::move(u));
  }
  auto barrier = [&](size_t u) { return units[u].exchanges.empty() && units[u].compute_sets.empty(); };

  std::vector<exec::Exchange> exchanges;
  std::vector<exec::ComputeSet> compute_sets;
  std::vector<exec::Step> steps;
  std::vector<uint32_t> new_index(old.size());  // the new step each old step became part of
  auto emit = [&](const Superstep& s) {
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
  };

  // Each superstep in order takes in the later ones (up to kLookahead passed over, never past a
  // barrier) that it admits and that commute with those it passed over.
  std::vector<bool> taken(units.size(), false);
  for (size_t u = 0; u < units.size(); ++u) {
    if (taken[u]) continue;
    if (barrier(u)) {
      emit(units[u]);
      continue;
    }
    Superstep open = std::move(units[u]);
    Footprint footprint, passed;
    footprint.add(unit_accesses[u]);
    size_t passed_over = 0;
    for (size_t v = u + 1; v < units.size() && !barrier(v) && passed_over < kLookahead; ++v) {
      if (taken[v]) continue;
      if (footprint.admits(unit_accesses[v]) && passed.commutes(unit_accesses[v])) {
        auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
        append(open.exchanges, units[v].exchanges);
        append(open.compute_sets, units[v].compute_sets);
        append(open.names, units[v].names);
        append(open.old_steps, units[v].old_steps);
        footprint.add(unit_accesses[v]);
        taken[v] = true;
      } else {
        passed.add(unit_accesses[v]);
        ++passed_over;
      }
    }
    emit(open);
  }

  exe.main.steps = std::move(steps);
  exe.exchanges = std::move(exchanges);
  exe.compute_sets = std::move(compute_sets);
  // Old step counts -> new: a merged superstep covers every old step in it.
  std::vector<uint32_t> remap(old.size() + 1, 0);
  for (size_t i = 0; i < old.size(); ++i) remap[i + 1] = std::max(remap[i], new_index[i] + 1);
  return remap;
}

}  // namespace poprt::codegen
