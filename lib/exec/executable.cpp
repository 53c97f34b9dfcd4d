#include "lib/exec/executable.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace poprt::exec {

using nlohmann::json;

uint64_t HostStream::byteSize() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= d < 0 ? 0 : static_cast<uint64_t>(d);
  return n * dtypeSize(dtype);
}

namespace {

json targetToJson(const Target& t) {
  return {{"name", t.name}, {"ipu_version", t.ipu_version}, {"num_ipus", t.num_ipus},
          {"tiles_per_ipu", t.tiles_per_ipu}, {"bytes_per_tile", t.bytes_per_tile},
          {"workers_per_tile", t.workers_per_tile}, {"clock_hz", t.clock_hz},
          {"exchange_bytes_per_cycle", t.exchange_bytes_per_cycle}, {"sync_cycles", t.sync_cycles},
          {"fp32_macs_per_cycle", t.fp32_macs_per_cycle}, {"fp16_macs_per_cycle", t.fp16_macs_per_cycle},
          {"vector_width_fp32", t.vector_width_fp32}};
}

Target targetFromJson(const json& j) {
  Target t;
  t.name = j.at("name").get<std::string>();
  t.ipu_version = j.at("ipu_version").get<std::string>();
  t.num_ipus = j.at("num_ipus").get<uint32_t>();
  t.tiles_per_ipu = j.at("tiles_per_ipu").get<uint32_t>();
  t.bytes_per_tile = j.at("bytes_per_tile").get<uint64_t>();
  t.workers_per_tile = j.at("workers_per_tile").get<uint32_t>();
  t.clock_hz = j.at("clock_hz").get<double>();
  t.exchange_bytes_per_cycle = j.at("exchange_bytes_per_cycle").get<uint32_t>();
  t.sync_cycles = j.at("sync_cycles").get<uint32_t>();
  t.fp32_macs_per_cycle = j.at("fp32_macs_per_cycle").get<uint32_t>();
  t.fp16_macs_per_cycle = j.at("fp16_macs_per_cycle").get<uint32_t>();
  t.vector_width_fp32 = j.at("vector_width_fp32").get<uint32_t>();
  return t;
}

json programToJson(const Program& p) {
  json steps = json::array();
  for (const Step& s : p.steps) steps.push_back({static_cast<uint32_t>(s.kind), s.index});
  return {{"name", p.name}, {"steps", steps}};
}

Program programFromJson(const json& j) {
  Program p;
  p.name = j.at("name").get<std::string>();
  for (const auto& s : j.at("steps")) {
    uint32_t kind = s.at(0).get<uint32_t>();
    if (kind > static_cast<uint32_t>(StepKind::HostCall)) throw std::runtime_error("unknown step kind " + std::to_string(kind));
    p.steps.push_back({static_cast<StepKind>(kind), s.at(1).get<uint32_t>()});
  }
  return p;
}

}  // namespace

std::vector<uint8_t> serialize(const Executable& exe) {
  json j;
  j["version"] = kExecutableVersion;
  j["target"] = targetToJson(exe.target);
  j["tile_bytes"] = exe.tile_bytes;
  json streams = json::array();
  for (const auto& s : exe.streams) {
    json copies = json::array();
    for (const auto& c : s.copies) copies.push_back({c.host_offset, c.tile, c.tile_offset, c.bytes});
    streams.push_back({{"name", s.name}, {"role", static_cast<uint32_t>(s.role)}, {"dtype", dtypeName(s.dtype)},
                       {"shape", s.shape}, {"copies", copies}, {"kind", static_cast<uint32_t>(s.kind)}});
  }
  j["streams"] = streams;
  json layouts = json::array();
  for (const auto& l : exe.layouts) {
    json regions = json::array();
    for (const auto& r : l.regions) regions.push_back({r.begin, r.count, r.tile, r.offset});
    layouts.push_back({{"elem_bytes", l.elem_bytes}, {"regions", regions}});
  }
  j["layouts"] = layouts;
  json exchanges = json::array();
  for (const auto& e : exe.exchanges) {
    json copies = json::array();
    for (const auto& c : e.copies) copies.push_back({c.src_tile, c.src_offset, c.dst_tile, c.dst_offset, c.bytes});
    json gathers = json::array();
    for (const auto& g : e.gathers)
      gathers.push_back({g.layout, g.begin, g.count, g.reps, g.stride, g.dst_tile, g.dst_offset, g.dst_stride});
    exchanges.push_back({{"name", e.name}, {"copies", copies}, {"gathers", gathers}});
  }
  j["exchanges"] = exchanges;
  json sets = json::array();
  for (const auto& cs : exe.compute_sets) {
    json vertices = json::array();
    for (const auto& v : cs.vertices) {
      json fields = json::array();
      for (const auto& f : v.fields) fields.push_back({f.offset, f.bytes});
      vertices.push_back({v.tile, static_cast<uint32_t>(v.codelet), dtypeName(v.dtype), fields, v.params, v.fparams});
    }
    sets.push_back({{"name", cs.name}, {"vertices", vertices}});
  }
  j["compute_sets"] = sets;
  json hosts = json::array();
  for (const auto& h : exe.host_programs)
    hosts.push_back({{"name", h.name}, {"onnx", json::binary(std::vector<uint8_t>(h.onnx.begin(), h.onnx.end()))},
                     {"inputs", h.inputs}, {"outputs", h.outputs}, {"nodes", h.nodes}});
  j["host_programs"] = hosts;
  j["load"] = programToJson(exe.load);
  j["main"] = programToJson(exe.main);
  return json::to_cbor(j);
}

Expected<Executable> deserialize(std::span<const uint8_t> bytes, const std::string& source) {
  Executable exe;
  try {
    json j = json::from_cbor(bytes.begin(), bytes.end());
    uint32_t version = j.at("version").get<uint32_t>();
    if (version != kExecutableVersion)
      return Error(source + ": executable format version " + std::to_string(version) + " is not supported (expected " +
                   std::to_string(kExecutableVersion) + ")");
    exe.target = targetFromJson(j.at("target"));
    exe.tile_bytes = j.at("tile_bytes").get<std::vector<uint64_t>>();
    for (const auto& s : j.at("streams")) {
      HostStream hs;
      hs.name = s.at("name").get<std::string>();
      uint32_t role = s.at("role").get<uint32_t>();
      if (role > 3) return Error(source + ": stream '" + hs.name + "' has unknown role " + std::to_string(role));
      hs.role = static_cast<HostStream::Role>(role);
      auto kind = valueKindFromInt(s.at("kind").get<uint32_t>());
      if (!kind) return Error(source + ": stream '" + hs.name + "' has an unknown value kind");
      hs.kind = *kind;
      auto dt = dtypeFromName(s.at("dtype").get<std::string>());
      if (!dt || (dtypeSize(*dt) == 0 && *dt != DType::String))
        return Error(source + ": stream '" + hs.name + "' has an unsupported dtype");
      hs.dtype = *dt;
      hs.shape = s.at("shape").get<Shape>();
      Shape known = hs.shape;
      for (int64_t& d : known)
        if (d == -1) d = 0;  // known at run time
      POPRT_TRY(checkedNumElements(known, int64_t{1} << 40));
      for (const auto& c : s.at("copies"))
        hs.copies.push_back({c.at(0).get<uint64_t>(), c.at(1).get<uint32_t>(), c.at(2).get<uint64_t>(), c.at(3).get<uint64_t>()});
      exe.streams.push_back(std::move(hs));
    }
    for (const auto& l : j.at("layouts")) {
      Layout layout;
      layout.elem_bytes = l.at("elem_bytes").get<uint32_t>();
      for (const auto& r : l.at("regions"))
        layout.regions.push_back({r.at(0).get<int64_t>(), r.at(1).get<int64_t>(), r.at(2).get<uint32_t>(), r.at(3).get<uint64_t>()});
      exe.layouts.push_back(std::move(layout));
    }
    for (const auto& e : j.at("exchanges")) {
      Exchange ex;
      ex.name = e.at("name").get<std::string>();
      for (const auto& c : e.at("copies"))
        ex.copies.push_back({c.at(0).get<uint32_t>(), c.at(1).get<uint64_t>(), c.at(2).get<uint32_t>(),
                             c.at(3).get<uint64_t>(), c.at(4).get<uint64_t>()});
      for (const auto& g : e.at("gathers"))
        ex.gathers.push_back({g.at(0).get<uint32_t>(), g.at(1).get<int64_t>(), g.at(2).get<int64_t>(), g.at(3).get<int64_t>(),
                              g.at(4).get<int64_t>(), g.at(5).get<uint32_t>(), g.at(6).get<uint64_t>(), g.at(7).get<uint64_t>()});
      exe.exchanges.push_back(std::move(ex));
    }
    for (const auto& cs : j.at("compute_sets")) {
      ComputeSet set;
      set.name = cs.at("name").get<std::string>();
      for (const auto& v : cs.at("vertices")) {
        Vertex vx;
        vx.tile = v.at(0).get<uint32_t>();
        uint32_t codelet = v.at(1).get<uint32_t>();
        if (codelet < 1 || codelet > kMaxCodelet) return Error(source + ": compute set '" + set.name + "' uses unknown codelet " + std::to_string(codelet));
        vx.codelet = static_cast<Codelet>(codelet);
        auto dt = dtypeFromName(v.at(2).get<std::string>());
        if (!dt) return Error(source + ": compute set '" + set.name + "' has a vertex with an unknown dtype");
        vx.dtype = *dt;
        for (const auto& f : v.at(3)) vx.fields.push_back({f.at(0).get<uint64_t>(), f.at(1).get<uint64_t>()});
        vx.params = v.at(4).get<std::vector<int64_t>>();
        vx.fparams = v.at(5).get<std::vector<float>>();
        set.vertices.push_back(std::move(vx));
      }
      exe.compute_sets.push_back(std::move(set));
    }
    for (const auto& h : j.at("host_programs")) {
      HostProgram hp;
      hp.name = h.at("name").get<std::string>();
      const auto& bin = h.at("onnx").get_binary();
      hp.onnx.assign(bin.begin(), bin.end());
      hp.inputs = h.at("inputs").get<std::vector<uint32_t>>();
      hp.outputs = h.at("outputs").get<std::vector<uint32_t>>();
      hp.nodes = h.at("nodes").get<std::vector<std::string>>();
      exe.host_programs.push_back(std::move(hp));
    }
    exe.load = programFromJson(j.at("load"));
    exe.main = programFromJson(j.at("main"));
  } catch (const std::exception& e) {
    return Error(source + ": malformed executable: " + e.what());
  }
  if (auto st = validate(exe); !st.ok()) return st.error().withContext(source);
  return exe;
}

Status validate(const Executable& exe) {
  const Target& t = exe.target;
  if (t.tiles_per_ipu == 0 || t.num_ipus == 0 || t.num_ipus > 64 || t.tiles_per_ipu > 8192)
    return Error("target has an invalid tile count");
  if (t.clock_hz <= 0 || t.exchange_bytes_per_cycle == 0 || t.workers_per_tile == 0 || t.vector_width_fp32 == 0 ||
      t.fp32_macs_per_cycle == 0)
    return Error("target figures are invalid");
  if (exe.tile_bytes.size() != t.numTiles())
    return Error("tile memory table has " + std::to_string(exe.tile_bytes.size()) + " entries for " +
                 std::to_string(t.numTiles()) + " tiles");
  for (size_t i = 0; i < exe.tile_bytes.size(); ++i)
    if (exe.tile_bytes[i] > t.bytes_per_tile)
      return Error("tile " + std::to_string(i) + " needs " + std::to_string(exe.tile_bytes[i]) + " bytes, more than the " +
                   std::to_string(t.bytes_per_tile) + " it has");
  auto inTile = [&](uint32_t tile, uint64_t offset, uint64_t bytes) {
    return tile < exe.tile_bytes.size() && offset <= exe.tile_bytes[tile] && bytes <= exe.tile_bytes[tile] - offset;
  };
  for (const auto& s : exe.streams) {
    bool dynamic = std::any_of(s.shape.begin(), s.shape.end(), [](int64_t d) { return d < 0; });
    if (dynamic && !s.copies.empty()) return Error("stream '" + s.name + "' has a run-time shape but tile copies");
    if ((s.dtype == DType::String || s.kind != ValueKind::Tensor) && !s.copies.empty())
      return Error("stream '" + s.name + "' holds strings, a sequence or an optional, but has tile copies");
    uint64_t size = s.byteSize();
    for (const auto& c : s.copies) {
      if (c.host_offset > size || c.bytes > size - c.host_offset)
        return Error("stream '" + s.name + "' copies outside its host buffer");
      if (!inTile(c.tile, c.tile_offset, c.bytes))
        return Error("stream '" + s.name + "' copies outside the memory of tile " + std::to_string(c.tile));
    }
  }
  constexpr int64_t kCap = int64_t{1} << 50;  // on element counts, strides and repeats
  for (size_t i = 0; i < exe.layouts.size(); ++i) {
    const Layout& l = exe.layouts[i];
    if (l.elem_bytes != 1 && l.elem_bytes != 2 && l.elem_bytes != 4 && l.elem_bytes != 8)
      return Error("layout " + std::to_string(i) + " has an unsupported element size");
    int64_t next = 0;
    for (const auto& r : l.regions) {
      if (r.begin != next || r.count < 0 || r.count > kCap - next)
        return Error("layout " + std::to_string(i) + " has regions that do not cover its elements in order");
      if (!inTile(r.tile, r.offset, static_cast<uint64_t>(r.count) * l.elem_bytes))
        return Error("layout " + std::to_string(i) + " has a region outside the memory of tile " + std::to_string(r.tile));
      next += r.count;
    }
  }
  for (const auto& e : exe.exchanges) {
    for (const auto& c : e.copies)
      if (!inTile(c.src_tile, c.src_offset, c.bytes) || !inTile(c.dst_tile, c.dst_offset, c.bytes))
        return Error("exchange '" + e.name + "' copies outside tile memory");
    for (const auto& g : e.gathers) {
      if (g.layout >= exe.layouts.size()) return Error("exchange '" + e.name + "' gathers from a missing layout");
      const Layout& l = exe.layouts[g.layout];
      if (g.begin < 0 || g.count < 0 || g.reps < 0 || g.stride < 0 || g.begin > kCap || g.count > kCap || g.reps > kCap ||
          g.stride > kCap || g.dst_stride > static_cast<uint64_t>(kCap))
        return Error("exchange '" + e.name + "' has a gather with bad sizes");
      if (g.reps == 0 || g.count == 0) continue;
      using u128 = unsigned __int128;
      const u128 last = static_cast<u128>(g.begin) + static_cast<u128>(g.reps - 1) * static_cast<u128>(g.stride) +
                        static_cast<u128>(g.count);
      if (last > static_cast<u128>(l.numel())) return Error("exchange '" + e.name + "' gathers outside its layout");
      const u128 end = static_cast<u128>(g.dst_offset) + static_cast<u128>(g.reps - 1) * g.dst_stride +
                       static_cast<u128>(g.count) * l.elem_bytes;
      if (g.dst_tile >= exe.tile_bytes.size() || end > static_cast<u128>(exe.tile_bytes[g.dst_tile]))
        return Error("exchange '" + e.name + "' gathers outside the memory of tile " + std::to_string(g.dst_tile));
    }
  }
  for (const auto& cs : exe.compute_sets)
    for (const auto& v : cs.vertices) {
      if (v.tile >= exe.tile_bytes.size()) return Error("compute set '" + cs.name + "' has a vertex on a missing tile");
      for (const auto& f : v.fields)
        if (!inTile(v.tile, f.offset, f.bytes))
          return Error("compute set '" + cs.name + "' has a vertex field outside the memory of tile " + std::to_string(v.tile));
    }
  for (const auto& h : exe.host_programs)
    for (const auto* list : {&h.inputs, &h.outputs})
      for (uint32_t i : *list)
        if (i >= exe.streams.size()) return Error("host program '" + h.name + "' refers to a missing stream");
  for (const Program* p : {&exe.load, &exe.main})
    for (const Step& s : p->steps) {
      size_t limit = s.kind == StepKind::Exchange  ? exe.exchanges.size()
                     : s.kind == StepKind::Compute ? exe.compute_sets.size()
                     : s.kind == StepKind::HostCall ? exe.host_programs.size()
                                                    : exe.streams.size();
      if (s.index >= limit) return Error("program '" + p->name + "' refers to a missing step " + std::to_string(s.index));
    }
  return okStatus();
}

}  // namespace poprt::exec
