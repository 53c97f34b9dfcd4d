// The codelet library's front: each vertex through its kind's table entry (sim/codelet_kinds.h),
// float16 vertices through the float32 functions on widened fields.
#include "sim/codelets.h"

#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "lib/ops/graphcore_ops.h"
#include "lib/support/half.h"
#include "sim/codelet_kinds.h"
#include "sim/codelet_util.h"

namespace poprt::sim {

namespace {
// The table is indexed by id - 1: the list must give ids 1, 2, 3, ... in order.
constexpr bool listedInIdOrder() {
  uint32_t next = 1;
  bool in_order = true;
#define POPRT_CODELET_ORDER(name, id) in_order = in_order && (id) == next++;
  POPRT_CODELETS(POPRT_CODELET_ORDER)
#undef POPRT_CODELET_ORDER
  return in_order;
}
static_assert(listedInIdOrder(), "POPRT_CODELETS must list the kinds by id, from 1, without gaps");
}  // namespace

const CodeletKind* codeletKind(exec::Codelet codelet) {
  static constexpr CodeletKind kinds[] = {
#define POPRT_CODELET_ENTRY(name, id) {check##name, run##name, cycles##name, flops##name},
      POPRT_CODELETS(POPRT_CODELET_ENTRY)
#undef POPRT_CODELET_ENTRY
  };
  const auto id = static_cast<uint32_t>(codelet);
  return id >= 1 && id <= std::size(kinds) ? &kinds[id - 1] : nullptr;
}

namespace {

// Half vertices (dtype float16, every field binary16 except Fill's and Cast's, which handle their
// dtypes themselves) run the float codelet on widened copies of their fields — fp16 storage, fp32
// arithmetic, as the IPU's AMP accumulates — and narrow the output back (round to nearest even).
bool isHalfArithmetic(const exec::Vertex& v) {
  return v.dtype == DType::Float16 && v.codelet != exec::Codelet::Fill && v.codelet != exec::Codelet::Cast;
}

// The kind's check for a float32 vertex; an unknown id is refused here, before any table lookup.
Status checkFloatVertex(const exec::Vertex& v) {
  const CodeletKind* kind = codeletKind(v.codelet);
  if (!kind) return Error("unknown codelet " + std::to_string(static_cast<uint32_t>(v.codelet)));
  return kind->check(v);
}

// The floats a field of a half vertex holds: float32 fields (partial sums) as they are.
uint64_t halfFieldFloats(const exec::Field& f) { return f.dtype == DType::Float ? f.bytes / 4 : f.bytes / 2; }

Status checkHalfVertex(const exec::Vertex& v) {
  exec::Vertex wide = v;
  wide.dtype = DType::Float;
  uint64_t offset = 0;
  for (auto& f : wide.fields) {
    const uint64_t size = f.dtype == DType::Float ? 4 : 2;
    if (f.offset % size != 0 || f.bytes % size != 0) return Error("float16 vertex has a misaligned or odd-sized field");
    f = {offset, halfFieldFloats(f) * 4};
    offset += f.bytes;
  }
  return checkFloatVertex(wide);
}

void runHalfVertex(const exec::Vertex& v, uint8_t* mem) {
  thread_local std::vector<float> arena;
  thread_local exec::Vertex wide;
  wide.tile = v.tile;
  wide.codelet = v.codelet;
  wide.dtype = DType::Float;
  wide.params = v.params;
  wide.fparams = v.fparams;
  wide.fields.resize(v.fields.size());
  uint64_t total = 0;
  for (const auto& f : v.fields) total += halfFieldFloats(f);
  arena.resize(total);
  uint64_t at = 0;
  for (size_t i = 0; i < v.fields.size(); ++i) {
    const exec::Field& f = v.fields[i];
    const uint64_t n = halfFieldFloats(f);
    if (f.dtype == DType::Float) {
      std::memcpy(arena.data() + at, mem + f.offset, n * 4);
    } else {
      const auto* src = reinterpret_cast<const uint16_t*>(mem + f.offset);
      for (uint64_t k = 0; k < n; ++k) arena[at + k] = halfBitsToFloat(src[k]);
    }
    wide.fields[i] = {at * 4, n * 4};
    at += n;
  }
  codeletKind(v.codelet)->run(wide, reinterpret_cast<uint8_t*>(arena.data()));
  const exec::Field& out_field = v.fields[0];
  if (out_field.dtype == DType::Float) {
    std::memcpy(mem + out_field.offset, arena.data(), out_field.bytes);
    return;
  }
  auto* out = reinterpret_cast<uint16_t*>(mem + out_field.offset);
  for (uint64_t k = 0; k < out_field.bytes / 2; ++k) out[k] = floatToHalfBits(arena[k]);
}

}  // namespace

// Field dtypes: only float32 fields of float16 arithmetic vertices (see exec::Field).
Status checkVertex(const exec::Vertex& v) {
  for (const auto& f : v.fields)
    if (f.dtype != DType::Undefined && !(f.dtype == DType::Float && isHalfArithmetic(v)))
      return Error("a " + std::string(dtypeName(v.dtype)) + " vertex has a " + std::string(dtypeName(f.dtype)) +
                   " field; only float16 vertices may hold float32 fields");
  return isHalfArithmetic(v) ? checkHalfVertex(v) : checkFloatVertex(v);
}

void runVertex(const exec::Vertex& v, uint8_t* tile_memory) {
  if (isHalfArithmetic(v)) return runHalfVertex(v, tile_memory);
  codeletKind(v.codelet)->run(v, tile_memory);
}

// Half vertices move half the bytes per vector and use the AMP's fp16 rate.
uint64_t vertexCycles(const exec::Vertex& v, const exec::Target& t) {
  const CodeletKind& kind = *codeletKind(v.codelet);
  if (!isHalfArithmetic(v)) return kind.cycles(v, t);
  exec::Target t16 = t;
  t16.vector_width_fp32 *= 2;
  t16.fp32_macs_per_cycle = t.fp16_macs_per_cycle;
  return kind.cycles(v, t16);
}

uint64_t vertexFlops(const exec::Vertex& v) { return codeletKind(v.codelet)->flops(v); }

namespace {
template <ops::graphcore::ActivationKind K>
void activateAs(ops::graphcore::Activation act, const float* in, float* out, int64_t n) {
  act.kind = K;  // a constant: applyActivation's switch folds away
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(ops::graphcore::applyActivation(act, in[i]));
}
}  // namespace

void activate(const ops::graphcore::Activation& act, const float* in, float* out, int64_t n) {
  using K = ops::graphcore::ActivationKind;
  switch (act.kind) {
    case K::Relu: return activateAs<K::Relu>(act, in, out, n);
    case K::Clip: return activateAs<K::Clip>(act, in, out, n);
    case K::LeakyRelu: return activateAs<K::LeakyRelu>(act, in, out, n);
    case K::Sigmoid: return activateAs<K::Sigmoid>(act, in, out, n);
    case K::HardSigmoid: return activateAs<K::HardSigmoid>(act, in, out, n);
    case K::HardSwish: return activateAs<K::HardSwish>(act, in, out, n);
    case K::Tanh: return activateAs<K::Tanh>(act, in, out, n);
    case K::Swish: return activateAs<K::Swish>(act, in, out, n);
  }
}

}  // namespace poprt::sim
