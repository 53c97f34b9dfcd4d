#include "lib/exec/executable.h"

#include <algorithm>

#include <functional>

#include "lib/support/cbor.h"

namespace poprt::exec {

std::string_view codeletName(Codelet codelet) {
  switch (codelet) {
#define POPRT_CODELET_NAME(name, id) \
  case Codelet::name: return #name;
    POPRT_CODELETS(POPRT_CODELET_NAME)
#undef POPRT_CODELET_NAME
  }
  return "unknown";
}

uint64_t HostStream::byteSize() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= d < 0 ? 0 : static_cast<uint64_t>(d);
  return n * dtypeSize(dtype);
}

namespace {

// The blob is one CBOR map (docs/POPEF.md); keys are written in sorted order.
void writeTarget(cbor::Writer& w, const Target& t) {
  w.map(14);
  w.text("bytes_per_tile"), w.uint(t.bytes_per_tile);
  w.text("clock_hz"), w.real(t.clock_hz);
  w.text("exchange_bytes_per_cycle"), w.uint(t.exchange_bytes_per_cycle);
  w.text("fp16_macs_per_cycle"), w.uint(t.fp16_macs_per_cycle);
  w.text("fp32_macs_per_cycle"), w.uint(t.fp32_macs_per_cycle);
  w.text("ipu_version"), w.text(t.ipu_version);
  w.text("link_bytes_per_cycle"), w.uint(t.link_bytes_per_cycle);
  w.text("link_latency_cycles"), w.uint(t.link_latency_cycles);
  w.text("name"), w.text(t.name);
  w.text("num_ipus"), w.uint(t.num_ipus);
  w.text("sync_cycles"), w.uint(t.sync_cycles);
  w.text("tiles_per_ipu"), w.uint(t.tiles_per_ipu);
  w.text("vector_width_fp32"), w.uint(t.vector_width_fp32);
  w.text("workers_per_tile"), w.uint(t.workers_per_tile);
}

void writeProgram(cbor::Writer& w, const Program& p) {
  w.map(2);
  w.text("name"), w.text(p.name);
  w.text("steps"), w.array(p.steps.size());
  for (const Step& s : p.steps) w.array(2), w.uint(static_cast<uint32_t>(s.kind)), w.uint(s.index);
}

template <class T>
void writeUints(cbor::Writer& w, const std::vector<T>& v) {
  w.array(v.size());
  for (T x : v) w.uint(x);
}

// Reading: every number is range-checked into its field.
Expected<uint32_t> u32(cbor::Reader& r) {
  POPRT_ASSIGN_OR_RETURN(uint64_t v, r.uint());
  if (v > UINT32_MAX) return Error("value " + std::to_string(v) + " does not fit 32 bits");
  return static_cast<uint32_t>(v);
}

// Reads an array, calling item() for each element.
Status readArray(cbor::Reader& r, const std::function<Status()>& item) {
  POPRT_ASSIGN_OR_RETURN(uint64_t n, r.array());
  for (uint64_t i = 0; i < n; ++i) POPRT_TRY(item());
  return okStatus();
}

// Reads an array of exactly `n` elements (a tuple).
Status readTuple(cbor::Reader& r, uint64_t n) {
  POPRT_ASSIGN_OR_RETURN(uint64_t got, r.array());
  if (got != n) return Error("expected " + std::to_string(n) + " items, got " + std::to_string(got));
  return okStatus();
}

Status readTarget(cbor::Reader& r, Target& t) {
  return r.map({"bytes_per_tile", "clock_hz", "exchange_bytes_per_cycle", "fp16_macs_per_cycle", "fp32_macs_per_cycle",
                "ipu_version", "link_bytes_per_cycle", "link_latency_cycles", "name", "num_ipus", "sync_cycles", "tiles_per_ipu",
                "vector_width_fp32", "workers_per_tile"},
               [&](std::string_view k) -> Status {
                 if (k == "bytes_per_tile") {
                   POPRT_ASSIGN_OR_RETURN(t.bytes_per_tile, r.uint());
                 } else if (k == "clock_hz") {
                   POPRT_ASSIGN_OR_RETURN(t.clock_hz, r.real());
                 } else if (k == "exchange_bytes_per_cycle") {
                   POPRT_ASSIGN_OR_RETURN(t.exchange_bytes_per_cycle, u32(r));
                 } else if (k == "fp16_macs_per_cycle") {
                   POPRT_ASSIGN_OR_RETURN(t.fp16_macs_per_cycle, u32(r));
                 } else if (k == "fp32_macs_per_cycle") {
                   POPRT_ASSIGN_OR_RETURN(t.fp32_macs_per_cycle, u32(r));
                 } else if (k == "ipu_version") {
                   POPRT_ASSIGN_OR_RETURN(t.ipu_version, r.text());
                 } else if (k == "name") {
                   POPRT_ASSIGN_OR_RETURN(t.name, r.text());
                 } else if (k == "link_bytes_per_cycle") {
                   POPRT_ASSIGN_OR_RETURN(t.link_bytes_per_cycle, u32(r));
                 } else if (k == "link_latency_cycles") {
                   POPRT_ASSIGN_OR_RETURN(t.link_latency_cycles, u32(r));
                 } else if (k == "num_ipus") {
                   POPRT_ASSIGN_OR_RETURN(t.num_ipus, u32(r));
                 } else if (k == "sync_cycles") {
                   POPRT_ASSIGN_OR_RETURN(t.sync_cycles, u32(r));
                 } else if (k == "tiles_per_ipu") {
                   POPRT_ASSIGN_OR_RETURN(t.tiles_per_ipu, u32(r));
                 } else if (k == "vector_width_fp32") {
                   POPRT_ASSIGN_OR_RETURN(t.vector_width_fp32, u32(r));
                 } else {
                   POPRT_ASSIGN_OR_RETURN(t.workers_per_tile, u32(r));
                 }
                 return okStatus();
               });
}

Status readProgram(cbor::Reader& r, Program& p) {
  return r.map({"name", "steps"}, [&](std::string_view k) -> Status {
    if (k == "name") {
      POPRT_ASSIGN_OR_RETURN(p.name, r.text());
      return okStatus();
    }
    return readArray(r, [&]() -> Status {
      POPRT_TRY(readTuple(r, 2));
      POPRT_ASSIGN_OR_RETURN(uint32_t kind, u32(r));
      if (kind > static_cast<uint32_t>(StepKind::HostCall)) return Error("unknown step kind " + std::to_string(kind));
      POPRT_ASSIGN_OR_RETURN(uint32_t index, u32(r));
      p.steps.push_back({static_cast<StepKind>(kind), index});
      return okStatus();
    });
  });
}

Status readStream(cbor::Reader& r, HostStream& hs) {
  std::string dtype;
  uint32_t role = 0, kind = 0;
  POPRT_TRY(r.map({"copies", "dtype", "kind", "name", "role", "shape"}, [&](std::string_view k) -> Status {
    if (k == "copies")
      return readArray(r, [&]() -> Status {
        POPRT_TRY(readTuple(r, 6));
        StreamCopy c;
        POPRT_ASSIGN_OR_RETURN(c.host_offset, r.uint());
        POPRT_ASSIGN_OR_RETURN(c.reps, r.uint());
        POPRT_ASSIGN_OR_RETURN(c.host_stride, r.uint());
        POPRT_ASSIGN_OR_RETURN(c.tile, u32(r));
        POPRT_ASSIGN_OR_RETURN(c.tile_offset, r.uint());
        POPRT_ASSIGN_OR_RETURN(c.bytes, r.uint());
        hs.copies.push_back(c);
        return okStatus();
      });
    if (k == "dtype") {
      POPRT_ASSIGN_OR_RETURN(dtype, r.text());
    } else if (k == "kind") {
      POPRT_ASSIGN_OR_RETURN(kind, u32(r));
    } else if (k == "name") {
      POPRT_ASSIGN_OR_RETURN(hs.name, r.text());
    } else if (k == "role") {
      POPRT_ASSIGN_OR_RETURN(role, u32(r));
    } else {
      return readArray(r, [&]() -> Status {
        POPRT_ASSIGN_OR_RETURN(int64_t d, r.sint());
        hs.shape.push_back(d);
        return okStatus();
      });
    }
    return okStatus();
  }));
  if (role > 3) return Error("stream '" + hs.name + "' has unknown role " + std::to_string(role));
  hs.role = static_cast<HostStream::Role>(role);
  auto value_kind = valueKindFromInt(kind);
  if (!value_kind) return Error("stream '" + hs.name + "' has an unknown value kind");
  hs.kind = *value_kind;
  auto dt = dtypeFromName(dtype);
  if (!dt || (dtypeSize(*dt) == 0 && *dt != DType::String)) return Error("stream '" + hs.name + "' has an unsupported dtype");
  hs.dtype = *dt;
  Shape known = hs.shape;
  for (int64_t& d : known)
    if (d == -1) d = 0;  // known at run time
  POPRT_TRY(checkedNumElements(known, int64_t{1} << 40));
  return okStatus();
}

Status readLayout(cbor::Reader& r, Layout& layout) {
  return r.map({"elem_bytes", "regions"}, [&](std::string_view k) -> Status {
    if (k == "elem_bytes") {
      POPRT_ASSIGN_OR_RETURN(layout.elem_bytes, u32(r));
      return okStatus();
    }
    return readArray(r, [&]() -> Status {
      POPRT_TRY(readTuple(r, 4));
      LayoutRegion g;
      POPRT_ASSIGN_OR_RETURN(g.begin, r.sint());
      POPRT_ASSIGN_OR_RETURN(g.count, r.sint());
      POPRT_ASSIGN_OR_RETURN(g.tile, u32(r));
      POPRT_ASSIGN_OR_RETURN(g.offset, r.uint());
      layout.regions.push_back(g);
      return okStatus();
    });
  });
}

Status readExchange(cbor::Reader& r, Exchange& ex) {
  return r.map({"copies", "gathers", "name"}, [&](std::string_view k) -> Status {
    if (k == "name") {
      POPRT_ASSIGN_OR_RETURN(ex.name, r.text());
      return okStatus();
    }
    if (k == "copies")
      return readArray(r, [&]() -> Status {
        POPRT_TRY(readTuple(r, 5));
        TileCopy c;
        POPRT_ASSIGN_OR_RETURN(c.src_tile, u32(r));
        POPRT_ASSIGN_OR_RETURN(c.src_offset, r.uint());
        POPRT_ASSIGN_OR_RETURN(c.dst_tile, u32(r));
        POPRT_ASSIGN_OR_RETURN(c.dst_offset, r.uint());
        POPRT_ASSIGN_OR_RETURN(c.bytes, r.uint());
        ex.copies.push_back(c);
        return okStatus();
      });
    return readArray(r, [&]() -> Status {
      POPRT_TRY(readTuple(r, 8));
      Gather g;
      POPRT_ASSIGN_OR_RETURN(g.layout, u32(r));
      POPRT_ASSIGN_OR_RETURN(g.begin, r.sint());
      POPRT_ASSIGN_OR_RETURN(g.count, r.sint());
      POPRT_ASSIGN_OR_RETURN(g.reps, r.sint());
      POPRT_ASSIGN_OR_RETURN(g.stride, r.sint());
      POPRT_ASSIGN_OR_RETURN(g.dst_tile, u32(r));
      POPRT_ASSIGN_OR_RETURN(g.dst_offset, r.uint());
      POPRT_ASSIGN_OR_RETURN(g.dst_stride, r.uint());
      ex.gathers.push_back(g);
      return okStatus();
    });
  });
}

Status readVertex(cbor::Reader& r, Vertex& vx) {
  POPRT_TRY(readTuple(r, 6));
  POPRT_ASSIGN_OR_RETURN(vx.tile, u32(r));
  POPRT_ASSIGN_OR_RETURN(uint32_t codelet, u32(r));
  if (codelet < 1 || codelet > kMaxCodelet) return Error("unknown codelet " + std::to_string(codelet));
  vx.codelet = static_cast<Codelet>(codelet);
  POPRT_ASSIGN_OR_RETURN(std::string dtype, r.text());
  auto dt = dtypeFromName(dtype);
  if (!dt) return Error("a vertex has an unknown dtype");
  vx.dtype = *dt;
  POPRT_TRY(readArray(r, [&]() -> Status {
    POPRT_ASSIGN_OR_RETURN(uint64_t items, r.array());  // [offset, bytes] or [offset, bytes, dtype]
    if (items != 2 && items != 3) return Error("a vertex field has " + std::to_string(items) + " items, expected 2 or 3");
    Field f;
    POPRT_ASSIGN_OR_RETURN(f.offset, r.uint());
    POPRT_ASSIGN_OR_RETURN(f.bytes, r.uint());
    if (items == 3) {
      POPRT_ASSIGN_OR_RETURN(std::string name, r.text());
      auto field_dt = dtypeFromName(name);
      if (!field_dt || *field_dt == DType::Undefined) return Error("a vertex field has an unknown dtype");
      f.dtype = *field_dt;
    }
    vx.fields.push_back(f);
    return okStatus();
  }));
  POPRT_TRY(readArray(r, [&]() -> Status {
    POPRT_ASSIGN_OR_RETURN(int64_t p, r.sint());
    vx.params.push_back(p);
    return okStatus();
  }));
  return readArray(r, [&]() -> Status {
    POPRT_ASSIGN_OR_RETURN(double f, r.real());
    vx.fparams.push_back(static_cast<float>(f));
    return okStatus();
  });
}

Status readComputeSet(cbor::Reader& r, ComputeSet& set) {
  return r.map({"name", "vertices"}, [&](std::string_view k) -> Status {
    if (k == "name") {
      POPRT_ASSIGN_OR_RETURN(set.name, r.text());
      return okStatus();
    }
    return readArray(r, [&]() -> Status {
      set.vertices.emplace_back();
      return readVertex(r, set.vertices.back());
    });
  });
}

Status readUint32s(cbor::Reader& r, std::vector<uint32_t>& out) {
  return readArray(r, [&]() -> Status {
    POPRT_ASSIGN_OR_RETURN(uint32_t v, u32(r));
    out.push_back(v);
    return okStatus();
  });
}

Status readHostProgram(cbor::Reader& r, HostProgram& hp) {
  return r.map({"inputs", "name", "nodes", "onnx", "outputs"}, [&](std::string_view k) -> Status {
    if (k == "inputs") return readUint32s(r, hp.inputs);
    if (k == "outputs") return readUint32s(r, hp.outputs);
    if (k == "name") {
      POPRT_ASSIGN_OR_RETURN(hp.name, r.text());
    } else if (k == "onnx") {
      POPRT_ASSIGN_OR_RETURN(std::vector<uint8_t> b, r.bytes());
      hp.onnx.assign(b.begin(), b.end());
    } else {
      return readArray(r, [&]() -> Status {
        POPRT_ASSIGN_OR_RETURN(std::string n, r.text());
        hp.nodes.push_back(std::move(n));
        return okStatus();
      });
    }
    return okStatus();
  });
}

}  // namespace

std::vector<uint8_t> serialize(const Executable& exe) {
  std::vector<uint8_t> out;
  cbor::Writer w(out);
  w.map(12);
  w.text("compute_sets"), w.array(exe.compute_sets.size());
  for (const auto& cs : exe.compute_sets) {
    w.map(2);
    w.text("name"), w.text(cs.name);
    w.text("vertices"), w.array(cs.vertices.size());
    for (const auto& v : cs.vertices) {
      w.array(6);
      w.uint(v.tile), w.uint(static_cast<uint32_t>(v.codelet)), w.text(dtypeName(v.dtype));
      w.array(v.fields.size());
      for (const auto& f : v.fields) {
        w.array(f.dtype == DType::Undefined ? 2 : 3), w.uint(f.offset), w.uint(f.bytes);
        if (f.dtype != DType::Undefined) w.text(dtypeName(f.dtype));
      }
      w.array(v.params.size());
      for (int64_t p : v.params) w.sint(p);
      w.array(v.fparams.size());
      for (float f : v.fparams) w.real(f);
    }
  }
  w.text("exchanges"), w.array(exe.exchanges.size());
  for (const auto& e : exe.exchanges) {
    w.map(3);
    w.text("copies"), w.array(e.copies.size());
    for (const auto& c : e.copies)
      w.array(5), w.uint(c.src_tile), w.uint(c.src_offset), w.uint(c.dst_tile), w.uint(c.dst_offset), w.uint(c.bytes);
    w.text("gathers"), w.array(e.gathers.size());
    for (const auto& g : e.gathers) {
      w.array(8);
      w.uint(g.layout), w.sint(g.begin), w.sint(g.count), w.sint(g.reps), w.sint(g.stride);
      w.uint(g.dst_tile), w.uint(g.dst_offset), w.uint(g.dst_stride);
    }
    w.text("name"), w.text(e.name);
  }
  w.text("host_programs"), w.array(exe.host_programs.size());
  for (const auto& h : exe.host_programs) {
    w.map(5);
    w.text("inputs"), writeUints(w, h.inputs);
    w.text("name"), w.text(h.name);
    w.text("nodes"), w.array(h.nodes.size());
    for (const auto& n : h.nodes) w.text(n);
    w.text("onnx"), w.bytes({reinterpret_cast<const uint8_t*>(h.onnx.data()), h.onnx.size()});
    w.text("outputs"), writeUints(w, h.outputs);
  }
  w.text("layouts"), w.array(exe.layouts.size());
  for (const auto& l : exe.layouts) {
    w.map(2);
    w.text("elem_bytes"), w.uint(l.elem_bytes);
    w.text("regions"), w.array(l.regions.size());
    for (const auto& r : l.regions) w.array(4), w.sint(r.begin), w.sint(r.count), w.uint(r.tile), w.uint(r.offset);
  }
  w.text("load"), writeProgram(w, exe.load);
  w.text("main"), writeProgram(w, exe.main);
  w.text("segments"), w.array(exe.segments.size());
  for (const auto& g : exe.segments) w.array(4), w.uint(g.ipu), w.uint(g.begin), w.uint(g.copies), w.uint(g.end);
  w.text("strategy"), w.uint(static_cast<uint32_t>(exe.strategy));
  w.text("streams"), w.array(exe.streams.size());
  for (const auto& s : exe.streams) {
    w.map(6);
    w.text("copies"), w.array(s.copies.size());
    for (const auto& c : s.copies)
      w.array(6), w.uint(c.host_offset), w.uint(c.reps), w.uint(c.host_stride), w.uint(c.tile), w.uint(c.tile_offset),
          w.uint(c.bytes);
    w.text("dtype"), w.text(dtypeName(s.dtype));
    w.text("kind"), w.uint(static_cast<uint32_t>(s.kind));
    w.text("name"), w.text(s.name);
    w.text("role"), w.uint(static_cast<uint32_t>(s.role));
    w.text("shape"), w.array(s.shape.size());
    for (int64_t d : s.shape) w.sint(d);
  }
  w.text("target"), writeTarget(w, exe.target);
  w.text("tile_bytes"), writeUints(w, exe.tile_bytes);
  w.text("version"), w.uint(kExecutableVersion);
  return out;
}

Expected<Executable> deserialize(std::span<const uint8_t> bytes, const std::string& source) {
  Executable exe;
  cbor::Reader r(bytes);
  uint64_t version = 0;
  Status st = r.map({"compute_sets", "exchanges", "host_programs", "layouts", "load", "main", "segments", "strategy", "streams",
                     "target", "tile_bytes", "version"},
                    [&](std::string_view k) -> Status {
                      if (k == "version") {
                        POPRT_ASSIGN_OR_RETURN(version, r.uint());
                        if (version != kExecutableVersion)
                          return Error("executable format version " + std::to_string(version) + " is not supported (expected " +
                                       std::to_string(kExecutableVersion) + ")");
                        return okStatus();
                      }
                      if (k == "target") return readTarget(r, exe.target);
                      if (k == "load") return readProgram(r, exe.load);
                      if (k == "main") return readProgram(r, exe.main);
                      if (k == "tile_bytes")
                        return readArray(r, [&]() -> Status {
                          POPRT_ASSIGN_OR_RETURN(uint64_t b, r.uint());
                          exe.tile_bytes.push_back(b);
                          return okStatus();
                        });
                      if (k == "streams")
                        return readArray(r, [&] {
                          exe.streams.emplace_back();
                          return readStream(r, exe.streams.back());
                        });
                      if (k == "segments")
                        return readArray(r, [&]() -> Status {
                          POPRT_TRY(readTuple(r, 4));
                          Segment g;
                          POPRT_ASSIGN_OR_RETURN(g.ipu, u32(r));
                          POPRT_ASSIGN_OR_RETURN(g.begin, u32(r));
                          POPRT_ASSIGN_OR_RETURN(g.copies, u32(r));
                          POPRT_ASSIGN_OR_RETURN(g.end, u32(r));
                          exe.segments.push_back(g);
                          return okStatus();
                        });
                      if (k == "strategy") {
                        POPRT_ASSIGN_OR_RETURN(uint32_t strategy, u32(r));
                        if (strategy > static_cast<uint32_t>(Strategy::Pipelined))
                          return Error("unknown strategy " + std::to_string(strategy));
                        exe.strategy = static_cast<Strategy>(strategy);
                        return okStatus();
                      }
                      if (k == "layouts")
                        return readArray(r, [&] {
                          exe.layouts.emplace_back();
                          return readLayout(r, exe.layouts.back());
                        });
                      if (k == "exchanges")
                        return readArray(r, [&] {
                          exe.exchanges.emplace_back();
                          return readExchange(r, exe.exchanges.back());
                        });
                      if (k == "host_programs")
                        return readArray(r, [&] {
                          exe.host_programs.emplace_back();
                          return readHostProgram(r, exe.host_programs.back());
                        });
                      return readArray(r, [&] {
                        exe.compute_sets.emplace_back();
                        return readComputeSet(r, exe.compute_sets.back());
                      });
                    });
  if (st.ok() && !r.atEnd()) st = Error("trailing bytes after the executable");
  if (!st.ok()) return st.error().withContext(source + ": malformed executable");
  if (auto valid = validate(exe); !valid.ok()) return valid.error().withContext(source);
  return exe;
}

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
