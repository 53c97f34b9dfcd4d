#include "sim/scratch_inputs.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lib/support/log.h"
#include "sim/codelets.h"
#include "sim/field_liveness.h"
#include "sim/tile_arena.h"

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

// A field's rows of `row` bytes, each inside one of the moves [first, last) that fill it (their dst
// offsets in the field): their sources' arena offsets appended to `out`; false (nothing appended)
// if a row spans moves. The moves are walked once, in order: a vertex's moves from two runs of the
// exchange into its tile may not rise, and then this gives up rather than search.
bool rowSources(const ExchangeMove* first, const ExchangeMove* last, uint64_t field_bytes, uint64_t row,
                std::vector<uint64_t>& out) {
  const size_t size = out.size();
  const ExchangeMove* m = first;
  for (uint64_t at = 0; at < field_bytes; at += row) {
    while (m != last && m->dst + uint64_t{m->bytes} <= at) ++m;
    // A row read as floats where it lies: at a 4-byte boundary (exchange copies need not be).
    if (m == last || m->dst > at || m->dst + uint64_t{m->bytes} < at + row || (m->src + (at - m->dst)) % 4 != 0) {
      out.resize(size);
      return false;
    }
    out.push_back(m->src + (at - m->dst));
  }
  return true;
}

// The moves [first, last) that fill a field whole (dst offsets in it) as moves into the copy its
// codelet assembles it in (`places`), split where they cross a line of the input and clipped to
// what the copy keeps, appended to `out`; false (nothing appended) if a move is not whole floats.
bool copyPieces(const ExchangeMove* first, const ExchangeMove* last, const InputCopyPlaces& places,
                std::vector<ExchangeMove>& out) {
  const size_t size = out.size();
  const int64_t floats = places.channels * places.rows * places.cols;
  for (const ExchangeMove* m = first; m != last; ++m) {
    if (m->dst % 4 != 0 || m->bytes % 4 != 0) {
      out.resize(size);
      return false;
    }
    const int64_t begin = m->dst / 4, end = std::min<int64_t>(begin + m->bytes / 4, floats);
    for (int64_t e = begin; e < end;) {
      const int64_t line = e / places.cols, x = e % places.cols, n = std::min(end - e, places.cols - x);
      const int64_t c = line / places.rows, y = line % places.rows - places.first_row;
      const int64_t lo = std::max<int64_t>(x - places.first_col, 0), hi = std::min(x - places.first_col + n, places.line);
      if (y >= 0 && y < places.lines && hi > lo) {
        const int64_t from = e + lo - (x - places.first_col);  // the input float copied to column lo
        out.push_back({m->src + static_cast<uint64_t>(from - begin) * 4,
                       static_cast<uint32_t>((c * places.plane + y * places.line + lo) * 4),
                       static_cast<uint32_t>((hi - lo) * 4)});
      }
      e += n;
    }
  }
  return true;
}

// Whether move m into the tile at arena offset `tile` writes into `field` (it then lies wholly in
// it: the candidates' moves fill their fields whole, none straddling an edge).
bool lands(const ExchangeMove& m, uint64_t tile, const exec::Field& field) {
  const uint64_t dst = tile + m.dst;
  return dst >= field.offset && dst < field.offset + field.bytes;
}

// Vertex j's moves into `field` (of its tile at arena offset `tile`), dst offsets in the field.
void movesInto(const VertexMoves& vm, uint32_t j, uint64_t tile, const exec::Field& field, std::vector<ExchangeMove>& into) {
  into.clear();
  for (uint32_t i = j ? vm.ends[j - 1] : 0; i < vm.ends[j]; ++i) {
    const ExchangeMove& m = vm.moves[i];
    if (lands(m, tile, field)) into.push_back({m.src, static_cast<uint32_t>(tile + m.dst - field.offset), m.bytes});
  }
}

// The bytes of a row when field f of a vertex of these params may be read as rows where the
// exchange's sources hold them (inputRowFloats); else 0.
uint64_t rowBytes(const VertexView& v, uint8_t f, const VertexParams& params) {
  return f == 1 && v.dtype == DType::Float ? static_cast<uint64_t>(inputRowFloats(params)) * 4 : 0;
}

// A candidate field proven dead after its set.
struct DeadField {
  uint32_t vertex = 0;
  uint8_t field = 0;
  uint64_t row_bytes = 0;  // rowBytes
};

constexpr uint32_t kNoLeader = UINT32_MAX;
constexpr size_t kGathersAHash = 4;

// Among a set's dead fields, those whose moves gather the same bytes the same way into a field of
// the same size (a layer's input vector broadcast to every vertex that computes one of its
// outputs: mobilenetv3_small_feat's squeeze-and-excitation products gather 144 floats in 144 moves
// for each of 1,150 vertices): leader[j] is the first vertex of j's kind, that first one's own when
// another shares it, kNoLeader for the rest. Fields read as rows at the sources move nothing at
// all: they are left out.
std::vector<uint32_t> sameGathers(const VertexMoves& vm, std::span<const VertexView> vertices,
                                  const std::vector<DeadField>& fields, const std::vector<uint64_t>& tile_offsets) {
  std::vector<uint32_t> leader(vertices.size(), kNoLeader);
  std::unordered_multimap<uint64_t, std::pair<uint32_t, uint8_t>> first_of;  // by a hash of the gather
  std::vector<ExchangeMove> mine, theirs;
  std::vector<uint64_t> rows;
  for (const auto& [j, f, row] : fields) {
    const exec::Field& field = vertices[j].fields[f];
    movesInto(vm, j, tile_offsets[vertices[j].tile], field, mine);
    rows.clear();
    if (row > 0 && field.bytes % row == 0 && rowSources(mine.data(), mine.data() + mine.size(), field.bytes, row, rows)) continue;
    uint64_t hash = field.bytes * 0x9E3779B97F4A7C15ull ^ f;
    for (const ExchangeMove& m : mine)
      hash = (hash ^ m.src ^ (uint64_t{m.dst} << 32) ^ (uint64_t{m.bytes} << 48)) * 0x100000001B3ull;
    bool found = false;
    for (auto [at, end] = first_of.equal_range(hash); at != end && !found; ++at) {
      const auto [k, g] = at->second;
      if (g != f || vertices[k].fields[g].bytes != field.bytes) continue;
      movesInto(vm, k, tile_offsets[vertices[k].tile], vertices[k].fields[g], theirs);
      if (theirs == mine) leader[j] = leader[k] = k, found = true;
    }
    // At most kGathersAHash kept a hash: a PopEF made to collide costs a few comparisons a field.
    if (!found && first_of.count(hash) < kGathersAHash) first_of.emplace(hash, std::make_pair(j, f));
  }
  return leader;
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
        if (field.bytes == 0 || field.bytes > kMaxScratchFieldBytes || begin < tile || end > tile_end) continue;
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
  uint64_t scratch_fields = 0, row_fields = 0, copy_fields = 0, shared_fields = 0, bytes = 0;
  // Row tables take 8 bytes a row of as little as 4, and the same tile bytes can be a field of any
  // number of sets: all of them together take at most a word per 8 bytes of the arena (what the
  // verifier let the tiles take already), and index within 32 bits.
  uint64_t arena = 0;
  TileArena::layout(exe.tile_bytes, &arena);
  const uint64_t max_table_entries = std::min<uint64_t>(arena / 8, UINT32_MAX);
  uint64_t table_entries = 0;
  // So do the moves into codelets' copies (16 bytes each), apart.
  const uint64_t max_copy_moves = std::min<uint64_t>(arena / 16, UINT32_MAX);
  uint64_t copy_moves = 0;
  std::vector<ExchangeMove> into;  // a field's moves, dst an offset in it
  for (size_t c = 0; c < candidates.size();) {
    // The candidates of one set, rebuilt together.
    const uint32_t s = candidates[c].set;
    VertexMoves& vm = plan.vertex_moves[s];
    const PlannedSet& set = plan.sets[s];
    VertexMoves out;
    out.ends.reserve(vm.ends.size());
    out.scratch_ends.reserve(vm.ends.size());
    out.row_ends.reserve(vm.ends.size());
    out.copy_ends.reserve(vm.ends.size());
    out.scratch_field.assign(vm.ends.size(), 0);
    const VertexRun* run = set.runs.data();
    std::optional<InputCopyPlaces> places;  // of the run, when every vertex of it is float32
    // Fields gathered the same way read the first one's, whose moves go back to the exchange right
    // before the set (so they are made before any vertex of any worker runs); a set after something
    // else makes no such moves.
    const uint32_t step = step_of[s];
    const bool after_exchange = step > 0 && exe.main.steps[step - 1].kind == exec::StepKind::Exchange;
    std::vector<DeadField> dead_fields;
    for (size_t k = c; after_exchange && k < candidates.size() && candidates[k].set == s; ++k) {
      const uint32_t j = candidates[k].vertex;
      while (run->end <= j) ++run;  // the candidates come in vertex order
      if (dead[k]) dead_fields.push_back({j, candidates[k].field, rowBytes(set.vertices[j], candidates[k].field, run->params)});
    }
    run = set.runs.data();
    const std::vector<uint32_t> leader = sameGathers(vm, set.vertices, dead_fields, tile_offsets);
    std::vector<ExchangeMove> made_before;  // the leaders' moves, for the exchange
    std::vector<ExchangeRun> made_before_runs;
    for (uint32_t j = 0; j < vm.ends.size(); ++j) {
      if (j == 0 || run->end <= j) {
        const uint32_t run_begin = j;
        while (run->end <= j) ++run;
        places = inputCopyPlaces(run->params);
        for (uint32_t k = run_begin; k < run->end && places; ++k)
          if (set.vertices[k].dtype != DType::Float) places.reset();
      }
      const VertexView& v = set.vertices[j];
      const uint32_t first = j ? vm.ends[j - 1] : 0;
      const bool candidate = c < candidates.size() && candidates[c].set == s && candidates[c].vertex == j;
      const uint8_t f = candidate && dead[c] ? candidates[c].field : 0;
      if (candidate) ++c;
      const exec::Field* field = f ? &v.fields[f] : nullptr;
      const uint64_t tile = tile_offsets[v.tile];
      into.clear();
      if (field) movesInto(vm, j, tile, *field, into);
      const size_t kept = out.moves.size();
      for (uint32_t i = first; i < vm.ends[j]; ++i)
        if (!field || !lands(vm.moves[i], tile, *field)) out.moves.push_back(vm.moves[i]);
      const uint32_t lead = f ? leader[j] : kNoLeader;
      // Read as rows where the sources hold them, or moved straight into the copy the codelet
      // assembles it in, or assembled in scratch, or (a field too small for scratch to gain)
      // moved into the tile after all. A copy's moves are at most the field's and one a line more.
      const uint64_t row = rowBytes(v, f, run->params);
      const uint64_t most_pieces = places ? into.size() + static_cast<uint64_t>(places->channels * places->rows) : 0;
      if (lead == j) {  // made by the exchange into its tile, for the others to read
        for (const ExchangeMove& m : into)
          made_before.push_back({m.src, static_cast<uint32_t>(field->offset - tile + m.dst), m.bytes});
        made_before_runs.push_back({v.tile, made_before.size()});
      } else if (lead != kNoLeader) {  // reads the leader's field; its own, dead after the set, is not written
        plan.sets[s].fields[static_cast<size_t>(field - set.fields.data())].offset = set.vertices[lead].fields[f].offset;
        ++shared_fields;
        bytes += field->bytes;
      } else if (row > 0 && field->bytes % row == 0 && table_entries + field->bytes / row <= max_table_entries &&
                 rowSources(into.data(), into.data() + into.size(), field->bytes, row, out.rows)) {
        ++row_fields;
        bytes += field->bytes;
        table_entries += field->bytes / row;
      } else if (f == 1 && places && copy_moves + most_pieces <= max_copy_moves &&
                 copyPieces(into.data(), into.data() + into.size(), *places, out.copy_moves)) {
        ++copy_fields;
        bytes += field->bytes;
        copy_moves += most_pieces;
      } else if (field && field->bytes >= kMinScratchFieldBytes) {
        out.scratch_moves.insert(out.scratch_moves.end(), into.begin(), into.end());
        out.scratch_field[j] = f;
        plan.scratch_field_bytes = std::max(plan.scratch_field_bytes, field->bytes);
        ++scratch_fields;
        bytes += field->bytes;
      } else if (field) {
        out.moves.resize(kept);
        out.moves.insert(out.moves.end(), vm.moves.begin() + first, vm.moves.begin() + vm.ends[j]);
      }
      out.ends.push_back(static_cast<uint32_t>(out.moves.size()));
      out.scratch_ends.push_back(static_cast<uint32_t>(out.scratch_moves.size()));
      out.row_ends.push_back(static_cast<uint32_t>(out.rows.size()));
      out.copy_ends.push_back(static_cast<uint32_t>(out.copy_moves.size()));
    }
    if (out.moves.size() == vm.moves.size()) continue;  // every field moved into its tile still
    if (!made_before.empty()) {
      ExchangePlan& exchange = plan.exchanges[exe.main.steps[step - 1].index];
      const size_t at = exchange.moves.size();
      exchange.moves.insert(exchange.moves.end(), made_before.begin(), made_before.end());
      for (ExchangeRun r : made_before_runs) exchange.runs.push_back({r.dst_tile, at + r.end});
    }
    if (out.scratch_moves.empty()) out.scratch_ends.clear(), out.scratch_field.clear();
    if (out.rows.empty()) out.row_ends.clear();
    if (out.copy_moves.empty()) out.copy_ends.clear();
    out.moves.shrink_to_fit();
    vm = std::move(out);
  }
  POPRT_LOG(Debug, "simulator: of " << candidates.size() << " candidate vertex inputs, " << row_fields
                                    << " read as rows where the exchange's sources hold them, " << copy_fields
                                    << " moved straight into their codelets' copies, " << shared_fields
                                    << " read another vertex's field gathered the same way and " << scratch_fields
                                    << " assembled in scratch, not in their tiles (" << bytes << " bytes a run)");
}

}  // namespace poprt::sim
