#include "sim/verify_popef.h"

#include <onnx/onnx_pb.h>

#include <set>
#include <vector>

#include "lib/exec/memory_profile.h"
#include "lib/onnx/onnx_io.h"
#include "lib/plugin/plugin.h"
#include "lib/support/half.h"
#include "lib/support/limits.h"
#include "lib/support/text.h"
#include "sim/codelets.h"
#include "sim/exchange_plan.h"

namespace poprt::sim {

using Role = exec::HostStream::Role;
using exec::StepKind;

namespace {

std::string q(const std::string& s) { return quoteForError(s); }

bool hasRunTimeDim(const exec::HostStream& s) {
  for (int64_t d : s.shape)
    if (d < 0) return true;
  return false;
}

const char* roleName(Role r) {
  switch (r) {
    case Role::Input: return "input";
    case Role::Output: return "output";
    case Role::Weight: return "weight";
    case Role::Host: return "host";
  }
  return "?";
}

std::string streamLabel(const exec::HostStream& s) { return std::string(roleName(s.role)) + " stream " + q(s.name); }

// Gathers may overlap nothing within one repeat sequence: each repeat writes its own destination
// row. Without this a single entry with stride 0 could stand for 2^50 copies of one element.
Status checkGathers(const exec::Executable& exe) {
  for (const auto& e : exe.exchanges)
    for (size_t i = 0; i < e.gathers.size(); ++i) {
      const exec::Gather& g = e.gathers[i];
      if (g.reps <= 1) continue;
      const uint64_t row = static_cast<uint64_t>(g.count) * exe.layouts[g.layout].elem_bytes;  // validated: < 2^53
      if (g.count == 0 || g.dst_stride < row)
        return Error("exchange " + q(e.name) + ", gather " + std::to_string(i) + ": " + std::to_string(g.reps) + " repeats of " +
                     std::to_string(row) + " bytes with a destination stride of " + std::to_string(g.dst_stride) +
                     " overlap or are empty");
    }
  return okStatus();
}

// Which host buffers hold a value at each step of the main program (inputs from the start; a
// stream out or a host call writes its buffers), so nothing reads a buffer that was never filled.
Status checkMainDataflow(const exec::Executable& exe) {
  const auto& streams = exe.streams;
  std::vector<bool> filled(streams.size(), false);
  for (size_t i = 0; i < streams.size(); ++i) filled[i] = streams[i].role == Role::Input;
  for (size_t k = 0; k < exe.main.steps.size(); ++k) {
    const exec::Step& step = exe.main.steps[k];
    const std::string where = "main program step " + std::to_string(k);
    switch (step.kind) {
      case StepKind::StreamIn: {
        const auto& s = streams[step.index];
        if (s.role == Role::Weight)
          return Error(where + " streams " + streamLabel(s) + " in; weights belong to the load program");
        if (s.kind != ValueKind::Tensor || s.dtype == DType::String || hasRunTimeDim(s))
          return Error(where + " streams " + streamLabel(s) + " in, but it is not a tensor of fixed size");
        if (!filled[step.index]) return Error(where + " streams " + streamLabel(s) + " in before anything wrote it");
        break;
      }
      case StepKind::StreamOut: {
        const auto& s = streams[step.index];
        if (s.role != Role::Output && s.role != Role::Host)
          return Error(where + " streams " + streamLabel(s) + " out; only output and host streams can be");
        if (s.kind != ValueKind::Tensor || s.dtype == DType::String || hasRunTimeDim(s))
          return Error(where + " streams " + streamLabel(s) + " out, but it is not a tensor of fixed size");
        filled[step.index] = true;
        break;
      }
      case StepKind::HostCall: {
        const auto& hp = exe.host_programs[step.index];
        for (uint32_t i : hp.inputs)
          if (!filled[i])
            return Error(where + " runs host program " + q(hp.name) + ", which reads " + streamLabel(streams[i]) +
                         " before anything wrote it");
        for (uint32_t o : hp.outputs) {
          if (streams[o].role != Role::Output && streams[o].role != Role::Host)
            return Error("host program " + q(hp.name) + " writes " + streamLabel(streams[o]) +
                         "; only output and host streams can be");
          filled[o] = true;
        }
        break;
      }
      case StepKind::Exchange:
      case StepKind::Compute: break;
    }
  }
  for (size_t i = 0; i < streams.size(); ++i)
    if (streams[i].role == Role::Output && !filled[i])
      return Error(streamLabel(streams[i]) + " is never written by the main program");
  return okStatus();
}

// The streams of each role must be told apart by name: popef-run binds inputs and names output
// files by it, and weights are found by it.
Status checkStreamNames(const exec::Executable& exe) {
  std::set<std::pair<Role, std::string>> seen;
  for (const auto& s : exe.streams) {
    if (s.role == Role::Host) continue;  // internal buffers; referred to by index only
    if (s.name.empty()) return Error("an " + std::string(roleName(s.role)) + " stream has no name");
    if (!seen.insert({s.role, s.name}).second) return Error("two " + streamLabel(s) + "s");
    if (s.role == Role::Weight && (s.kind != ValueKind::Tensor || !popef::tensorDataSupports(s.dtype) || hasRunTimeDim(s)))
      return Error(streamLabel(s) + " is not a tensor of fixed size");
  }
  return okStatus();
}

uint64_t saturatingAdd(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

uint64_t tileBytesInAll(const exec::Executable& exe) {
  uint64_t total = 0;  // each entry is at most bytes_per_tile and there are at most 2^19 tiles
  for (uint64_t b : exe.tile_bytes) total = saturatingAdd(total, b);
  return total;
}

Status checkDeviceSize(const exec::Executable& exe) {
  POPRT_ASSIGN_OR_RETURN(uint64_t cap, maxDeviceBytes());
  const uint64_t total = tileBytesInAll(exe);
  if (total > cap)
    return Error("its tiles need " + std::to_string(total) + " bytes of memory in all, above the limit of " +
                 std::to_string(cap) + " (POPRT_MAX_DEVICE_BYTES)");
  return okStatus();
}

// The simulator's exchange plan (sim/exchange_plan.h) counts against the same limit: gathers are
// checked by now, so counting their pieces is bounded work.
Status checkExchangePlanSize(const exec::Executable& exe) {
  POPRT_ASSIGN_OR_RETURN(uint64_t cap, maxDeviceBytes());
  const uint64_t tiles = tileBytesInAll(exe);
  const uint64_t moves = exchangeMoveBound(exe);
  const uint64_t plan = moves > UINT64_MAX / kPlanBytesPerMove ? UINT64_MAX : moves * kPlanBytesPerMove;
  if (saturatingAdd(tiles, plan) > cap)
    return Error("its exchanges make " + std::to_string(moves) + " moves (" + std::to_string(plan) + " bytes to plan) besides " +
                 std::to_string(tiles) + " bytes of tiles, above the limit of " + std::to_string(cap) +
                 " (POPRT_MAX_DEVICE_BYTES)");
  return okStatus();
}

// A host program is an ONNX model the reference evaluator runs: it must pass libonnx's checker
// and import, and agree with the streams it reads and writes.
Status checkHostProgram(const exec::Executable& exe, const exec::HostProgram& hp) {
  const std::string label = "host program " + q(hp.name);
  onnx::ModelProto proto;
  if (hp.onnx.size() > static_cast<size_t>(INT32_MAX) || !proto.ParseFromString(hp.onnx))
    return Error(label + " is not a valid ONNX model");
  auto model = onnxio::importModelProto(proto, "", label, {/*run_checker=*/true, /*infer_shapes=*/false});
  if (!model.ok()) return model.error();
  const auto& inputs = model->graph->inputs();
  const auto& outputs = model->graph->outputs();
  if (inputs.size() != hp.inputs.size() || outputs.size() != hp.outputs.size())
    return Error(label + " has " + std::to_string(inputs.size()) + " inputs and " + std::to_string(outputs.size()) +
                 " outputs, its stream lists " + std::to_string(hp.inputs.size()) + " and " + std::to_string(hp.outputs.size()));
  auto agree = [&](const ir::Value* v, const exec::HostStream& s) -> Status {
    const ir::TensorType& t = v->type;
    if (t.dtype != DType::Undefined && (t.kind != s.kind || t.dtype != s.dtype))
      return Error(label + ": " + std::string(valueKindName(t.kind)) + " '" + v->name() + "' of " +
                   std::string(dtypeName(t.dtype)) + " is bound to " + streamLabel(s) + " of " + std::string(dtypeName(s.dtype)));
    return okStatus();
  };
  for (size_t i = 0; i < inputs.size(); ++i) POPRT_TRY(agree(inputs[i], exe.streams[hp.inputs[i]]));
  for (size_t i = 0; i < outputs.size(); ++i) POPRT_TRY(agree(outputs[i], exe.streams[hp.outputs[i]]));
  return okStatus();
}

// Input anchors are input streams. Output anchors are output streams, or host buffers between
// device and host programs, which poprt-convert also lists as outputs (readable after a run).
bool sameDirection(const popef::Anchor& a, const exec::HostStream& s) {
  return (a.kind == popef::Anchor::Kind::Input && s.role == Role::Input) ||
         (a.kind == popef::Anchor::Kind::Output && (s.role == Role::Output || s.role == Role::Host));
}

Status checkAnchors(const popef::Metadata& md, const exec::Executable& exe) {
  for (const auto& a : md.anchors) {
    const exec::HostStream* match = nullptr;
    for (const auto& s : exe.streams)
      if (s.name == a.name && sameDirection(a, s)) match = &s;
    const char* dir = a.kind == popef::Anchor::Kind::Input ? "input" : "output";
    if (!match) return Error(std::string(dir) + " anchor " + q(a.name) + " has no " + dir + " stream in the executable");
    if (match->dtype != a.dtype || match->shape != a.shape || match->kind != a.value)
      return Error(std::string(dir) + " anchor " + q(a.name) + " is " + std::string(valueKindName(a.value)) + " " +
                   std::string(dtypeName(a.dtype)) + shapeToString(a.shape) + ", its stream " +
                   std::string(valueKindName(match->kind)) + " " + std::string(dtypeName(match->dtype)) +
                   shapeToString(match->shape));
  }
  for (const auto& s : exe.streams) {
    if (s.role != Role::Input && s.role != Role::Output) continue;
    bool anchored = false;
    for (const auto& a : md.anchors) anchored = anchored || (a.name == s.name && sameDirection(a, s));
    if (!anchored) return Error(streamLabel(s) + " has no anchor in the metadata");
  }
  return okStatus();
}

// A float32 weight poprt-convert stored narrower (docs/POPEF.md): float16 under --precision
// fp16, int8/int16 when its values are such integers. The weight stream and the device take
// float32; every value widens exactly.
template <class Narrow, class Widen>
Tensor widenToFloat(const Tensor& narrow, Widen widen) {
  Tensor t(DType::Float, narrow.shape());
  auto src = narrow.data<Narrow>();
  auto dst = t.data<float>();
  for (size_t i = 0; i < src.size(); ++i) dst[i] = widen(src[i]);
  return t;
}

// `t` as its float32 weight stream `s` takes it, if `t` is a narrower storage of it.
Tensor widenedForStream(Tensor t, const exec::HostStream& s) {
  if (s.dtype != DType::Float || t.shape() != s.shape) return t;
  switch (t.dtype()) {
    case DType::Float16: return widenToFloat<uint16_t>(t, halfBitsToFloat);
    case DType::Int8: return widenToFloat<int8_t>(t, [](int8_t v) { return static_cast<float>(v); });
    case DType::Int16: return widenToFloat<int16_t>(t, [](int16_t v) { return static_cast<float>(v); });
    default: return t;
  }
}

// Weights come from the tensor data blobs, one per weight stream, nothing left over (a float32
// stream also takes a float16, int8 or int16 blob, widened); feed data is data for an input anchor and must fit it.
// The tensor data blobs' payloads move into the weights (`file` keeps the blobs, emptied).
Expected<std::map<std::string, Tensor>> collectWeights(popef::PopefFile& file, const exec::Executable& exe) {
  std::map<std::string, const exec::HostStream*> weight_streams;
  for (const auto& s : exe.streams)
    if (s.role == Role::Weight) weight_streams[s.name] = &s;
  std::map<std::string, Tensor> weights;
  for (auto& b : file.blobs) {
    if (b.type == popef::BlobType::TensorData) {
      auto it = weight_streams.find(b.name);
      if (it == weight_streams.end()) return Error("tensor data blob " + q(b.name) + " is not a weight of the executable");
      POPRT_ASSIGN_OR_RETURN(Tensor t, popef::tensorFromBlob(std::move(b)));
      const exec::HostStream& s = *it->second;
      t = widenedForStream(std::move(t), s);
      if (t.dtype() != s.dtype || t.shape() != s.shape)
        return Error("tensor data blob " + q(b.name) + " is " + std::string(dtypeName(t.dtype())) + shapeToString(t.shape()) +
                     ", its weight stream " + std::string(dtypeName(s.dtype)) + shapeToString(s.shape));
      weights.emplace(b.name, std::move(t));
    } else if (b.type == popef::BlobType::FeedData) {
      const popef::Anchor* anchor = nullptr;
      for (const auto& a : file.metadata.anchors)
        if (a.name == b.name && a.kind == popef::Anchor::Kind::Input) anchor = &a;
      if (!anchor) return Error("feed data blob " + q(b.name) + " names no input anchor");
      POPRT_ASSIGN_OR_RETURN(Tensor t, popef::tensorFromBlob(b));
      if (anchor->value != ValueKind::Tensor || t.dtype() != anchor->dtype || t.shape() != anchor->shape)
        return Error("feed data blob " + q(b.name) + " is " + std::string(dtypeName(t.dtype())) + shapeToString(t.shape()) +
                     ", its anchor " + std::string(dtypeName(anchor->dtype)) + shapeToString(anchor->shape));
    }
  }
  for (const auto& [name, s] : weight_streams)
    if (!weights.count(name)) return Error("weight " + q(name) + " has no tensor data blob");
  return weights;
}

}  // namespace

// A pipelined program's stages run at once, on different batches: each stage's steps touch its
// own IPU's tiles alone (its IPU-Link copies read its IPU and write the next stage's), the stages'
// IPUs differ, and no stage calls the host. Anything else would let two threads share memory.
Status checkPipelineStages(const exec::Executable& exe) {
  if (exe.strategy != exec::Strategy::Pipelined) return okStatus();
  const exec::Target& t = exe.target;
  std::vector<bool> used(t.num_ipus, false);
  for (size_t s = 0; s < exe.segments.size(); ++s) {
    const exec::Segment& g = exe.segments[s];
    const std::string stage = "pipeline stage " + std::to_string(s);
    if (used[g.ipu]) return Error(stage + " runs on IPU " + std::to_string(g.ipu) + ", as an earlier stage does");
    used[g.ipu] = true;
    const uint32_t next_ipu = s + 1 < exe.segments.size() ? exe.segments[s + 1].ipu : g.ipu;
    for (uint32_t i = g.begin; i < g.end; ++i) {
      const exec::Step& step = exe.main.steps[i];
      const bool copy = i >= g.copies;
      const uint32_t src_ipu = g.ipu, dst_ipu = copy ? next_ipu : g.ipu;
      auto fail = [&] {
        return Error(stage + " (IPU " + std::to_string(g.ipu) + "), main program step " + std::to_string(i) +
                     (copy ? ": an IPU-Link copy must read its stage's IPU and write the next stage's"
                           : ": touches tiles of another IPU or calls the host"));
      };
      if (copy && step.kind != StepKind::Exchange) return fail();
      switch (step.kind) {
        case StepKind::StreamIn:
        case StepKind::StreamOut:
          for (const auto& c : exe.streams[step.index].copies)
            if (t.ipuOf(c.tile) != g.ipu) return fail();
          break;
        case StepKind::Compute:
          for (const auto& v : exe.compute_sets[step.index].vertices)
            if (t.ipuOf(v.tile) != g.ipu) return fail();
          break;
        case StepKind::Exchange: {
          const auto& ex = exe.exchanges[step.index];
          for (const auto& c : ex.copies)
            if (t.ipuOf(c.src_tile) != src_ipu || t.ipuOf(c.dst_tile) != dst_ipu) return fail();
          bool ok = true;
          for (const auto& gather : ex.gathers) {
            ok = ok && t.ipuOf(gather.dst_tile) == dst_ipu;
            exec::forEachGatherPiece(
                exe.layouts[gather.layout], gather,
                [&](const exec::LayoutRegion& r, int64_t, int64_t, uint64_t) { ok = ok && t.ipuOf(r.tile) == src_ipu; });
            if (!ok) return fail();
          }
          break;
        }
        case StepKind::HostCall: return fail();
      }
    }
  }
  return okStatus();
}

Status verifyExecutable(const exec::Executable& exe) {
  POPRT_TRY(exec::validate(exe));
  POPRT_TRY(checkDeviceSize(exe));
  POPRT_TRY(checkStreamNames(exe));
  for (const auto& cs : exe.compute_sets)
    for (size_t i = 0; i < cs.vertices.size(); ++i)
      if (auto st = checkVertex(cs.vertices[i]); !st.ok())
        return st.error().withContext("compute set " + q(cs.name) + ", vertex " + std::to_string(i));
  POPRT_TRY(checkGathers(exe));
  POPRT_TRY(checkExchangePlanSize(exe));
  POPRT_TRY(checkPipelineStages(exe));
  for (size_t k = 0; k < exe.load.steps.size(); ++k) {
    const exec::Step& step = exe.load.steps[k];
    if (step.kind != StepKind::StreamIn || exe.streams[step.index].role != Role::Weight)
      return Error("load program step " + std::to_string(k) + ": the load program may only stream weights in");
  }
  return checkMainDataflow(exe);
}

Expected<VerifiedPopef> verifyPopef(const popef::PopefFile& file, const std::string& source) {
  return verifyPopef(popef::PopefFile(file), source);
}

Expected<VerifiedPopef> verifyPopef(popef::PopefFile&& file, const std::string& source) {
  auto fail = [&](const Error& e) { return e.withContext(source); };
  const popef::Metadata& md = file.metadata;
  const popef::Blob* blob = file.find(popef::BlobType::Executable, md.executable_name);
  // find() with an empty name takes any executable; the metadata must name the one it means.
  if (!blob || blob->name != md.executable_name) return Error(source + ": no executable blob named " + q(md.executable_name));
  auto exe = exec::deserialize(blob->payload, source + ": executable");
  if (!exe.ok()) return exe.error();
  if (static_cast<uint64_t>(md.num_ipus) != exe->target.num_ipus || md.ipu_version != exe->target.ipu_version)
    return Error(source + ": metadata says " + std::to_string(md.num_ipus) + " x " + q(md.ipu_version) +
                 ", the executable's target is " + std::to_string(exe->target.num_ipus) + " x " + q(exe->target.ipu_version));
  if (auto st = verifyExecutable(*exe); !st.ok()) return fail(st.error().withContext("executable"));
  // Before the host programs, whose import would only say "unknown op".
  if (md.extra.is_object() && md.extra.contains("plugins"))
    if (auto st = plugin::checkPluginRecord(md.extra["plugins"]); !st.ok()) return fail(st.error());
  if (auto st = checkAnchors(md, *exe); !st.ok()) return fail(st.error());
  auto weights = collectWeights(file, *exe);
  if (!weights.ok()) return fail(weights.error());
  for (const auto& hp : exe->host_programs)
    if (auto st = checkHostProgram(*exe, hp); !st.ok()) return fail(st.error());
  std::vector<uint8_t> profile;
  if (const popef::Blob* b = file.find(popef::BlobType::Opaque, exec::kMemoryProfileBlobName)) profile = b->payload;
  return VerifiedPopef{md, std::move(exe).value(), std::move(weights).value(), std::move(profile)};
}

Expected<VerifiedPopef> readVerifiedPopef(const std::filesystem::path& path) {
  POPRT_ASSIGN_OR_RETURN(popef::PopefFile file, popef::readPopef(path));
  return verifyPopef(std::move(file), path.string());
}

}  // namespace poprt::sim
