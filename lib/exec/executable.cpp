#include "lib/exec/executable.h"

#include <algorithm>

#include <functional>

#include "lib/exec/packed_tables.h"
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

// How the long tables were stored, to check against the version (a file mixing the forms is not
// one any version wrote): copies and regions as arrays until version 3, vertices until 4.
struct TableForms {
  bool arrays = false, packed = false;  // exchange copies and layout regions
  bool vertex_arrays = false, packed_vertices = false;
  Status check(uint64_t version) const {
    const bool packed_tables = version >= 4, vertices_packed = version >= 5;
    if (packed_tables ? arrays : packed)
      return Error(std::string("exchange copies or layout regions stored as ") + (packed_tables ? "arrays" : "packed bytes") +
                   " in a version " + std::to_string(version) + " executable");
    if (vertices_packed ? vertex_arrays : packed_vertices)
      return Error(std::string("vertices stored as ") + (vertices_packed ? "arrays" : "packed bytes") + " in a version " +
                   std::to_string(version) + " executable");
    return okStatus();
  }
};

Status readLayout(cbor::Reader& r, Layout& layout, TableForms& forms) {
  return r.map({"elem_bytes", "regions"}, [&](std::string_view k) -> Status {
    if (k == "elem_bytes") {
      POPRT_ASSIGN_OR_RETURN(layout.elem_bytes, u32(r));
      return okStatus();
    }
    if (r.nextIsBytes()) {
      forms.packed = true;
      POPRT_ASSIGN_OR_RETURN(const std::vector<uint8_t> packed, r.bytes());
      return unpackRegions(packed, layout.regions);
    }
    forms.arrays = true;
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

Status readExchange(cbor::Reader& r, Exchange& ex, TableForms& forms) {
  return r.map({"copies", "gathers", "name"}, [&](std::string_view k) -> Status {
    if (k == "name") {
      POPRT_ASSIGN_OR_RETURN(ex.name, r.text());
      return okStatus();
    }
    if (k == "copies" && r.nextIsBytes()) {
      forms.packed = true;
      POPRT_ASSIGN_OR_RETURN(const std::vector<uint8_t> packed, r.bytes());
      return unpackCopies(packed, ex.copies);
    }
    if (k == "copies") {
      forms.arrays = true;
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
    }
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
  std::vector<int64_t> params;
  POPRT_TRY(readArray(r, [&]() -> Status {
    POPRT_ASSIGN_OR_RETURN(int64_t p, r.sint());
    params.push_back(p);
    return okStatus();
  }));
  vx.params = std::move(params);
  std::vector<float> fparams;
  POPRT_TRY(readArray(r, [&]() -> Status {
    POPRT_ASSIGN_OR_RETURN(double f, r.real());
    fparams.push_back(static_cast<float>(f));
    return okStatus();
  }));
  vx.fparams = std::move(fparams);
  return okStatus();
}

Status readComputeSet(cbor::Reader& r, ComputeSet& set, TableForms& forms) {
  return r.map({"name", "vertices"}, [&](std::string_view k) -> Status {
    if (k == "name") {
      POPRT_ASSIGN_OR_RETURN(set.name, r.text());
      return okStatus();
    }
    if (r.nextIsBytes()) {
      forms.packed_vertices = true;
      POPRT_ASSIGN_OR_RETURN(const std::vector<uint8_t> packed, r.bytes());
      return unpackVertices(packed, set.vertices);
    }
    forms.vertex_arrays = true;
    return readArray(r, [&]() -> Status {
      Vertex& v = set.vertices.emplace_back();
      POPRT_TRY(readVertex(r, v));
      if (set.vertices.size() > 1) {  // share repeated params as the packed form does
        const Vertex& prev = set.vertices[set.vertices.size() - 2];
        if (v.params == prev.params) v.params = prev.params;
        if (v.fparams == prev.fparams) v.fparams = prev.fparams;
      }
      return okStatus();
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
    w.text("vertices"), w.bytes(packVertices(cs.vertices));
  }
  w.text("exchanges"), w.array(exe.exchanges.size());
  for (const auto& e : exe.exchanges) {
    w.map(3);
    w.text("copies"), w.bytes(packCopies(e.copies));
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
    w.text("regions"), w.bytes(packRegions(l.regions));
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
  TableForms table_forms;
  Status st = r.map({"compute_sets", "exchanges", "host_programs", "layouts", "load", "main", "segments", "strategy", "streams",
                     "target", "tile_bytes", "version"},
                    [&](std::string_view k) -> Status {
                      if (k == "version") {
                        POPRT_ASSIGN_OR_RETURN(version, r.uint());
                        if (version < 3 || version > kExecutableVersion)
                          return Error("executable format version " + std::to_string(version) +
                                       " is not supported (expected 3 to " + std::to_string(kExecutableVersion) + ")");
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
                          return readLayout(r, exe.layouts.back(), table_forms);
                        });
                      if (k == "exchanges")
                        return readArray(r, [&] {
                          exe.exchanges.emplace_back();
                          return readExchange(r, exe.exchanges.back(), table_forms);
                        });
                      if (k == "host_programs")
                        return readArray(r, [&] {
                          exe.host_programs.emplace_back();
                          return readHostProgram(r, exe.host_programs.back());
                        });
                      return readArray(r, [&] {
                        exe.compute_sets.emplace_back();
                        return readComputeSet(r, exe.compute_sets.back(), table_forms);
                      });
                    });
  if (st.ok() && !r.atEnd()) st = Error("trailing bytes after the executable");
  if (st.ok()) st = table_forms.check(version);
  if (!st.ok()) return st.error().withContext(source + ": malformed executable");
  if (auto valid = validate(exe); !valid.ok()) return valid.error().withContext(source);
  return exe;
}

}  // namespace poprt::exec
