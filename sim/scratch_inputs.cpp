#include "sim/scratch_inputs.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "lib/support/log.h"
#include "sim/codelet_kinds.h"
#include "sim/field_liveness.h"

namespace poprt::sim {
namespace {

// A field that may be read from scratch, if the liveness proof agrees.
struct Candidate {
  uint32_t set = 0, vertex = 0;
  uint8_t field = 0;
};

// Per vertex, a bit per field (of its first 64) set when another field of the set (its own
// vertex's included) reads one of its bytes.
std::vector<uint64_t> sharedReads(std::span<const VertexView> vertices) {
  struct Read {
    uint64_t begin, end;
    uint32_t vertex, field;
  };
  std::vector<Read> reads;
  for (uint32_t j = 0; j < vertices.size(); ++j)
    for (uint32_t f = 1; f < vertices[j].fields.size(); ++f)
      if (vertices[j].fields[f].bytes > 0)
        reads.push_back({vertices[j].fields[f].offset, vertices[j].fields[f].offset + vertices[j].fields[f].bytes, j, f});
  std::sort(reads.begin(), reads.end(), [](const Read& a, const Read& b) { return a.begin < b.begin; });
  std::vector<uint64_t> shared(vertices.size(), 0);
  uint64_t max_end = 0;  // of the reads before
  for (size_t i = 0; i < reads.size(); ++i) {
    const Read& r = reads[i];
    const bool overlaps = max_end > r.begin || (i + 1 < reads.size() && reads[i + 1].begin < r.end);
    if (overlaps && r.field < 64) shared[r.vertex] |= uint64_t{1} << r.field;
    max_end = std::max(max_end, r.end);
  }
  return shared;
}

// Whether the moves [first, last) into `tile` fill field [begin, end) whole, none straddling its
// edges (their destinations never overlap: deferMovesToReaders defers none that do).
bool fillsWhole(const ExchangeMove* first, const ExchangeMove* last, uint64_t tile, uint64_t begin, uint64_t end) {
  uint64_t filled = 0;
  for (const ExchangeMove* m = first; m != last; ++m) {
    const uint64_t dst = tile + m->dst, dst_end = dst + m->bytes;
    if (dst_end <= begin || dst >= end) continue;
    if (dst < begin || dst_end > end) return false;
    filled += m->bytes;
  }
  return filled == end - begin;
}

// Vertex j's input planes of `plane` bytes, each inside one of its scratch moves [first, last):
// their sources' arena offsets appended to `out`; false (nothing appended) if a plane spans moves.
bool planeSources(const ExchangeMove* first, const ExchangeMove* last, uint64_t field_bytes, uint64_t plane,
                  std::vector<uint64_t>& out) {
  const size_t size = out.size();
  const ExchangeMove* m = first;  // the moves' destinations rise: deferMovesToReaders keeps their order
  for (uint64_t at = 0; at < field_bytes; at += plane) {
    while (m != last && m->dst + uint64_t{m->bytes} <= at) ++m;
    if (m == last || m->dst > at || m->dst + uint64_t{m->bytes} < at + plane) {
      out.resize(size);
      return false;
    }
    out.push_back(m->src + (at - m->dst));
  }
  return true;
}

// The scratch inputs of set `set` that a ConvPartial reads as whole channel planes, each plane in
// one piece where the exchange's sources hold it, become plane tables: the product reads them
// there and nothing is moved (light_resnet50: 20 of its 48 thousand 1x1 blocks a run).
void readPlanesAtSources(const PlannedSet& set, VertexMoves& vm) {
  VertexMoves out;
  out.plane_ends.reserve(vm.ends.size());
  out.scratch_ends.reserve(vm.ends.size());
  out.scratch_field = vm.scratch_field;
  const VertexRun* run = set.runs.data();
  for (uint32_t j = 0; j < vm.ends.size(); ++j) {
    while (run->end <= j) ++run;
    const uint32_t first = j ? vm.scratch_ends[j - 1] : 0, last = vm.scratch_ends[j];
    const VertexView& v = set.vertices[j];
    const auto* conv = std::get_if<exec::ConvPartialParams>(&run->params);
    const int64_t plane = conv && v.dtype == DType::Float && vm.scratch_field[j] == 1 ? convInputPlaneFloats(*conv) * 4 : 0;
    if (plane > 0 && v.fields[1].bytes % static_cast<uint64_t>(plane) == 0 &&
        planeSources(vm.scratch_moves.data() + first, vm.scratch_moves.data() + last, v.fields[1].bytes,
                     static_cast<uint64_t>(plane), out.planes)) {
      out.scratch_field[j] = 0;
    } else {
      out.scratch_moves.insert(out.scratch_moves.end(), vm.scratch_moves.begin() + first, vm.scratch_moves.begin() + last);
    }
    out.plane_ends.push_back(static_cast<uint32_t>(out.planes.size()));
    out.scratch_ends.push_back(static_cast<uint32_t>(out.scratch_moves.size()));
  }
  if (out.planes.empty()) return;
  vm.scratch_moves = std::move(out.scratch_moves);
  vm.scratch_ends = std::move(out.scratch_ends);
  vm.scratch_field = std::move(out.scratch_field);
  vm.planes = std::move(out.planes);
  vm.plane_ends = std::move(out.plane_ends);
}

}  // namespace

void moveInputsToScratch(const exec::Executable& exe, ExecutionPlan& plan, const std::vector<uint64_t>& tile_offsets) {
  // The main-program step of each set that has moves of its own (a set that runs once).
  std::vector<uint32_t> step_of(plan.sets.size(), 0);
  for (uint32_t i = 0; i < exe.main.steps.size(); ++i)
    if (exe.main.steps[i].kind == exec::StepKind::Compute) step_of[exe.main.steps[i].index] = i;
  std::vector<Candidate> candidates;
  std::vector<LivenessQuery> queries;
  for (uint32_t s = 0; s < plan.sets.size(); ++s) {
    const VertexMoves& vm = plan.vertex_moves[s];
    if (vm.ends.empty()) continue;
    const auto& vertices = plan.sets[s].vertices;
    const std::vector<uint64_t> shared = sharedReads(vertices);
    for (uint32_t j = 0; j < vertices.size(); ++j) {
      const VertexView& v = vertices[j];
      const uint32_t first = j ? vm.ends[j - 1] : 0;
      if (vm.ends[j] == first || v.fields.size() > kMaxScratchVertexFields) continue;
      const uint64_t tile = tile_offsets[v.tile], tile_end = tile + exe.tile_bytes[v.tile];
      // The largest field its moves fill whole (mostly its one input window).
      uint8_t best = 0;
      for (uint8_t f = 1; f < v.fields.size(); ++f) {
        const exec::Field& field = v.fields[f];
        const uint64_t begin = field.offset, end = begin + field.bytes;
        if (field.bytes < kMinScratchFieldBytes || field.bytes > kMaxScratchFieldBytes || begin < tile || end > tile_end)
          continue;
        if (best && v.fields[best].bytes >= field.bytes) continue;
        if (fillsWhole(vm.moves.data() + first, vm.moves.data() + vm.ends[j], tile, begin, end) && !(shared[j] >> f & 1))
          best = f;
      }
      if (!best) continue;
      candidates.push_back({s, j, best});
      queries.push_back({step_of[s], {v.fields[best].offset, v.fields[best].offset + v.fields[best].bytes}});
    }
  }
  const std::vector<bool> dead = deadAfter(exe, plan, tile_offsets, queries);
  uint64_t fields = 0, bytes = 0;
  for (size_t c = 0; c < candidates.size();) {
    // The candidates of one set, rebuilt together.
    const uint32_t s = candidates[c].set;
    VertexMoves& vm = plan.vertex_moves[s];
    const auto& vertices = plan.sets[s].vertices;
    VertexMoves out;
    out.ends.reserve(vm.ends.size());
    out.scratch_ends.reserve(vm.ends.size());
    out.scratch_field.assign(vm.ends.size(), 0);
    for (uint32_t j = 0; j < vm.ends.size(); ++j) {
      const uint32_t first = j ? vm.ends[j - 1] : 0;
      const bool scratch = c < candidates.size() && candidates[c].set == s && candidates[c].vertex == j && dead[c];
      const bool candidate = c < candidates.size() && candidates[c].set == s && candidates[c].vertex == j;
      const exec::Field* field = scratch ? &vertices[j].fields[candidates[c].field] : nullptr;
      const uint64_t tile = tile_offsets[vertices[j].tile];
      for (uint32_t i = first; i < vm.ends[j]; ++i) {
        const ExchangeMove& m = vm.moves[i];
        const uint64_t dst = tile + m.dst;
        if (field && dst >= field->offset && dst < field->offset + field->bytes)
          out.scratch_moves.push_back({m.src, static_cast<uint32_t>(dst - field->offset), m.bytes});
        else
          out.moves.push_back(m);
      }
      out.ends.push_back(static_cast<uint32_t>(out.moves.size()));
      out.scratch_ends.push_back(static_cast<uint32_t>(out.scratch_moves.size()));
      if (scratch) {
        out.scratch_field[j] = candidates[c].field;
        plan.scratch_field_bytes = std::max(plan.scratch_field_bytes, field->bytes);
        ++fields;
        bytes += field->bytes;
      }
      if (candidate) ++c;
    }
    if (out.scratch_moves.empty()) continue;
    out.moves.shrink_to_fit();
    vm = std::move(out);
    readPlanesAtSources(plan.sets[s], vm);
  }
  POPRT_LOG(Debug, "simulator: " << fields << " of " << candidates.size() << " candidate vertex inputs (" << bytes
                                 << " bytes a run) assembled in scratch");
}

}  // namespace poprt::sim
