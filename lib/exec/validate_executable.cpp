// exec::validate: every index, size and byte range of an executable read from a PopEF checked
// against the memories and tables it refers to, before anything runs or is shown.
#include <algorithm>

#include "lib/exec/executable.h"

namespace poprt::exec {

namespace {

constexpr int64_t kCap = int64_t{1} << 50;  // on element counts, strides and repeats

// Bytes [offset, offset + bytes) lie in the memory of `tile`.
bool inTile(const Executable& exe, uint32_t tile, uint64_t offset, uint64_t bytes) {
  return tile < exe.tile_bytes.size() && offset <= exe.tile_bytes[tile] && bytes <= exe.tile_bytes[tile] - offset;
}

Status validateTarget(const Executable& exe) {
  const Target& t = exe.target;
  if (t.tiles_per_ipu == 0 || t.num_ipus == 0 || t.num_ipus > 64 || t.tiles_per_ipu > 8192)
    return Error("target has an invalid tile count");
  if (t.clock_hz <= 0 || t.exchange_bytes_per_cycle == 0 || t.workers_per_tile == 0 || t.vector_width_fp32 == 0 ||
      t.fp32_macs_per_cycle == 0 || t.link_bytes_per_cycle == 0)
    return Error("target figures are invalid");
  // An IPU tile holds 256-624 KiB; 4 GiB keeps every offset inside a tile 32 bits (sim/exchange_plan.h).
  if (t.bytes_per_tile > kMaxBytesPerTile)
    return Error("target has " + std::to_string(t.bytes_per_tile) + " bytes per tile, more than " +
                 std::to_string(kMaxBytesPerTile));
  if (exe.tile_bytes.size() != t.numTiles())
    return Error("tile memory table has " + std::to_string(exe.tile_bytes.size()) + " entries for " +
                 std::to_string(t.numTiles()) + " tiles");
  for (size_t i = 0; i < exe.tile_bytes.size(); ++i)
    if (exe.tile_bytes[i] > t.bytes_per_tile)
      return Error("tile " + std::to_string(i) + " needs " + std::to_string(exe.tile_bytes[i]) + " bytes, more than the " +
                   std::to_string(t.bytes_per_tile) + " it has");
  return okStatus();
}

Status validateStreams(const Executable& exe) {
  for (const auto& s : exe.streams) {
    bool dynamic = std::any_of(s.shape.begin(), s.shape.end(), [](int64_t d) { return d < 0; });
    if (dynamic && !s.copies.empty()) return Error("stream '" + s.name + "' has a run-time shape but tile copies");
    if ((s.dtype == DType::String || s.kind != ValueKind::Tensor) && !s.copies.empty())
      return Error("stream '" + s.name + "' holds strings, a sequence or an optional, but has tile copies");
    uint64_t size = s.byteSize();
    for (const auto& c : s.copies) {
      // Repeats move bytes each, so a tile's memory bounds their number (none may be empty).
      using u128 = unsigned __int128;
      if (c.reps == 0 || (c.reps > 1 && c.bytes == 0) || c.reps > (uint64_t{1} << 40))
        return Error("stream '" + s.name + "' has a copy with bad repeats");
      if (static_cast<u128>(c.host_offset) + static_cast<u128>(c.reps - 1) * c.host_stride + c.bytes > size)
        return Error("stream '" + s.name + "' copies outside its host buffer");
      if (static_cast<u128>(c.reps) * c.bytes > UINT64_MAX / 2 || !inTile(exe, c.tile, c.tile_offset, c.tileBytes()))
        return Error("stream '" + s.name + "' copies outside the memory of tile " + std::to_string(c.tile));
    }
  }
  return okStatus();
}

Status validateLayouts(const Executable& exe) {
  for (size_t i = 0; i < exe.layouts.size(); ++i) {
    const Layout& l = exe.layouts[i];
    if (l.elem_bytes != 1 && l.elem_bytes != 2 && l.elem_bytes != 4 && l.elem_bytes != 8)
      return Error("layout " + std::to_string(i) + " has an unsupported element size");
    int64_t next = 0;
    for (const auto& r : l.regions) {
      if (r.begin != next || r.count < 0 || r.count > kCap - next)
        return Error("layout " + std::to_string(i) + " has regions that do not cover its elements in order");
      if (!inTile(exe, r.tile, r.offset, static_cast<uint64_t>(r.count) * l.elem_bytes))
        return Error("layout " + std::to_string(i) + " has a region outside the memory of tile " + std::to_string(r.tile));
      next += r.count;
    }
  }
  return okStatus();
}

Status validateExchanges(const Executable& exe) {
  for (const auto& e : exe.exchanges) {
    for (const auto& c : e.copies)
      if (!inTile(exe, c.src_tile, c.src_offset, c.bytes) || !inTile(exe, c.dst_tile, c.dst_offset, c.bytes))
        return Error("exchange '" + e.name + "' copies outside tile memory");
    for (const auto& g : e.gathers) {
      if (g.layout >= exe.layouts.size()) return Error("exchange '" + e.name + "' gathers from a missing layout");
      const Layout& l = exe.layouts[g.layout];
      if (g.begin < 0 || g.count < 0 || g.reps < 0 || g.stride < 0 || g.begin > kCap || g.count > kCap || g.reps > kCap ||
          g.stride > kCap || g.dst_stride > static_cast<uint64_t>(kCap))
        return Error("exchange '" + e.name + "' has a gather with bad sizes");
      // Even a gather that moves nothing names a tile the engine looks up (fuzz_popef finding).
      if (g.dst_tile >= exe.tile_bytes.size())
        return Error("exchange '" + e.name + "' gathers to a missing tile " + std::to_string(g.dst_tile));
      if (g.reps == 0 || g.count == 0) continue;
      using u128 = unsigned __int128;
      const u128 last =
          static_cast<u128>(g.begin) + static_cast<u128>(g.reps - 1) * static_cast<u128>(g.stride) + static_cast<u128>(g.count);
      if (last > static_cast<u128>(l.numel())) return Error("exchange '" + e.name + "' gathers outside its layout");
      const u128 end = static_cast<u128>(g.dst_offset) + static_cast<u128>(g.reps - 1) * g.dst_stride +
                       static_cast<u128>(g.count) * l.elem_bytes;
      if (g.dst_tile >= exe.tile_bytes.size() || end > static_cast<u128>(exe.tile_bytes[g.dst_tile]))
        return Error("exchange '" + e.name + "' gathers outside the memory of tile " + std::to_string(g.dst_tile));
    }
  }
  return okStatus();
}

}  // namespace

Status validate(const Executable& exe) {
  POPRT_TRY(validateTarget(exe));
  POPRT_TRY(validateStreams(exe));
  POPRT_TRY(validateLayouts(exe));
  POPRT_TRY(validateExchanges(exe));
  const Target& t = exe.target;
  for (const auto& cs : exe.compute_sets)
    for (const auto& v : cs.vertices) {
      if (v.tile >= exe.tile_bytes.size()) return Error("compute set '" + cs.name + "' has a vertex on a missing tile");
      for (const auto& f : v.fields)
        if (!inTile(exe, v.tile, f.offset, f.bytes))
          return Error("compute set '" + cs.name + "' has a vertex field outside the memory of tile " + std::to_string(v.tile));
    }
  for (const auto& h : exe.host_programs)
    for (const auto* list : {&h.inputs, &h.outputs})
      for (uint32_t i : *list)
        if (i >= exe.streams.size()) return Error("host program '" + h.name + "' refers to a missing stream");
  for (const Program* p : {&exe.load, &exe.main})
    for (const Step& s : p->steps) {
      size_t limit = s.kind == StepKind::Exchange   ? exe.exchanges.size()
                     : s.kind == StepKind::Compute  ? exe.compute_sets.size()
                     : s.kind == StepKind::HostCall ? exe.host_programs.size()
                                                    : exe.streams.size();
      if (s.index >= limit) return Error("program '" + p->name + "' refers to a missing step " + std::to_string(s.index));
    }
  if (exe.strategy == Strategy::Pipelined && exe.segments.empty()) return Error("a pipelined program has no stages");
  uint32_t next = 0;
  for (const Segment& g : exe.segments) {
    if (g.ipu >= t.num_ipus) return Error("a segment runs on IPU " + std::to_string(g.ipu) + " of " + std::to_string(t.num_ipus));
    if (g.begin != next || g.copies < g.begin || g.end < g.copies)
      return Error("segments do not cover the main program in order");
    next = g.end;
  }
  if (!exe.segments.empty() && next != exe.main.steps.size()) return Error("segments do not cover the main program in order");
  return okStatus();
}

}  // namespace poprt::exec
