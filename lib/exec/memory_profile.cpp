#include "lib/exec/memory_profile.h"

#include <functional>

#include "lib/support/cbor.h"

namespace poprt::exec {
namespace {

Status readArray(cbor::Reader& r, const std::function<Status()>& item) {
  POPRT_ASSIGN_OR_RETURN(uint64_t n, r.array());
  for (uint64_t i = 0; i < n; ++i) POPRT_TRY(item());
  return okStatus();
}

Expected<uint32_t> u32(cbor::Reader& r) {
  POPRT_ASSIGN_OR_RETURN(uint64_t v, r.uint());
  if (v > UINT32_MAX) return Error("value " + std::to_string(v) + " does not fit 32 bits");
  return static_cast<uint32_t>(v);
}

// The profile describes `exe`: one entry per tile, each tile's figures within its memory, points
// in program order and within the main program, peaks naming a point.
Status checkAgainst(const MemoryProfile& p, const Executable& exe) {
  const size_t tiles = exe.tile_bytes.size();
  if (p.weights.size() != tiles || p.peaks.size() != tiles)
    return Error("it has " + std::to_string(p.weights.size()) + " weight and " + std::to_string(p.peaks.size()) +
                 " peak entries for " + std::to_string(tiles) + " tiles");
  for (size_t t = 0; t < tiles; ++t) {
    const TilePeak& peak = p.peaks[t];
    const uint64_t cap = exe.tile_bytes[t];
    if (p.weights[t] > cap || peak.activations > cap || peak.exchange_buffers > cap - peak.activations ||
        peak.activations + peak.exchange_buffers > cap - p.weights[t])
      return Error("tile " + std::to_string(t) + " holds more than the " + std::to_string(cap) + " bytes it needs");
    if (peak.point >= p.liveness.size() && (peak.activations || peak.exchange_buffers))
      return Error("tile " + std::to_string(t) + " peaks at a point that does not exist");
  }
  uint32_t steps = 0;
  for (const LivenessPoint& l : p.liveness) {
    if (l.program_steps < steps || l.program_steps > exe.main.steps.size())
      return Error("liveness point '" + l.node + "' is out of program order");
    steps = l.program_steps;
    if (l.busiest_tile >= tiles || l.busiest_bytes > exe.tile_bytes[l.busiest_tile])
      return Error("liveness point '" + l.node + "' names a bad busiest tile");
  }
  return okStatus();
}

}  // namespace

std::vector<uint8_t> serializeMemoryProfile(const MemoryProfile& p) {
  std::vector<uint8_t> out;
  cbor::Writer w(out);
  w.map(5);
  // Each point: [node, program_steps, activations, exchange_buffers, busiest_tile, busiest_bytes].
  w.text("liveness"), w.array(p.liveness.size());
  for (const LivenessPoint& l : p.liveness) {
    w.array(6);
    w.text(l.node), w.uint(l.program_steps), w.uint(l.activations), w.uint(l.exchange_buffers);
    w.uint(l.busiest_tile), w.uint(l.busiest_bytes);
  }
  // Pairs [node, op type], sorted by node (std::map), so the bytes are deterministic.
  w.text("op_types"), w.array(p.op_types.size());
  for (const auto& [node, type] : p.op_types) w.array(2), w.text(node), w.text(type);
  // Each tile: [activations, exchange_buffers, point].
  w.text("peaks"), w.array(p.peaks.size());
  for (const TilePeak& t : p.peaks) w.array(3), w.uint(t.activations), w.uint(t.exchange_buffers), w.uint(t.point);
  w.text("version"), w.uint(kMemoryProfileVersion);
  w.text("weights"), w.array(p.weights.size());
  for (uint64_t b : p.weights) w.uint(b);
  return out;
}

Expected<MemoryProfile> deserializeMemoryProfile(std::span<const uint8_t> bytes, const Executable& exe,
                                                 const std::string& source) {
  MemoryProfile p;
  cbor::Reader r(bytes);
  auto tuple = [&](uint64_t n) -> Status {
    POPRT_ASSIGN_OR_RETURN(uint64_t got, r.array());
    if (got != n) return Error("expected " + std::to_string(n) + " items, got " + std::to_string(got));
    return okStatus();
  };
  Status st = r.map({"liveness", "op_types", "peaks", "version", "weights"}, [&](std::string_view k) -> Status {
    if (k == "version") {
      POPRT_ASSIGN_OR_RETURN(uint64_t version, r.uint());
      if (version != kMemoryProfileVersion) return Error("profile version " + std::to_string(version) + " is not supported");
      return okStatus();
    }
    if (k == "liveness")
      return readArray(r, [&]() -> Status {
        POPRT_TRY(tuple(6));
        LivenessPoint l;
        POPRT_ASSIGN_OR_RETURN(l.node, r.text());
        POPRT_ASSIGN_OR_RETURN(l.program_steps, u32(r));
        POPRT_ASSIGN_OR_RETURN(l.activations, r.uint());
        POPRT_ASSIGN_OR_RETURN(l.exchange_buffers, r.uint());
        POPRT_ASSIGN_OR_RETURN(l.busiest_tile, u32(r));
        POPRT_ASSIGN_OR_RETURN(l.busiest_bytes, r.uint());
        p.liveness.push_back(std::move(l));
        return okStatus();
      });
    if (k == "op_types")
      return readArray(r, [&]() -> Status {
        POPRT_TRY(tuple(2));
        POPRT_ASSIGN_OR_RETURN(std::string node, r.text());
        POPRT_ASSIGN_OR_RETURN(std::string type, r.text());
        if (!p.op_types.emplace(std::move(node), std::move(type)).second) return Error("op_types: a node appears twice");
        return okStatus();
      });
    if (k == "peaks")
      return readArray(r, [&]() -> Status {
        POPRT_TRY(tuple(3));
        TilePeak t;
        POPRT_ASSIGN_OR_RETURN(t.activations, r.uint());
        POPRT_ASSIGN_OR_RETURN(t.exchange_buffers, r.uint());
        POPRT_ASSIGN_OR_RETURN(t.point, u32(r));
        p.peaks.push_back(t);
        return okStatus();
      });
    return readArray(r, [&]() -> Status {
      POPRT_ASSIGN_OR_RETURN(uint64_t b, r.uint());
      p.weights.push_back(b);
      return okStatus();
    });
  });
  if (st.ok() && !r.atEnd()) st = Error("trailing bytes after the profile");
  if (st.ok()) st = checkAgainst(p, exe);
  if (!st.ok()) return st.error().withContext(source + ": malformed profile");
  return p;
}

}  // namespace poprt::exec
