// The codelet library's front: each vertex through its kind's table entry (sim/codelet_kinds.h),
// float16 vertices through the float32 functions on widened fields.
#include "sim/codelets.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "lib/exec/vertex_params.h"
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

// A kind's entry: its functions behind signatures every kind shares.
struct CodeletKind {
  Expected<VertexParams> (*decode)(const exec::Vertex&);
  Status (*check)(const VertexParams&, const VertexView&);
  void (*run)(const VertexParams&, const VertexView&, uint8_t*);
  uint64_t (*cycles)(const VertexParams&, const VertexView&, const exec::CostModel&);
  uint64_t (*flops)(const VertexParams&, const VertexView&);
};

template <class P, auto Check, auto Run, auto Cycles, auto Flops>
constexpr CodeletKind kindOf() {
  return {[](const exec::Vertex& v) -> Expected<VertexParams> {
            POPRT_ASSIGN_OR_RETURN(P p, exec::decodeParams<P>(v));
            return VertexParams(p);
          },
          [](const VertexParams& p, const VertexView& v) { return Check(*std::get_if<P>(&p), v); },
          [](const VertexParams& p, const VertexView& v, uint8_t* mem) { Run(*std::get_if<P>(&p), v, mem); },
          [](const VertexParams& p, const VertexView& v, const exec::CostModel& cost) {
            return Cycles(*std::get_if<P>(&p), v, cost);
          },
          [](const VertexParams& p, const VertexView& v) { return Flops(*std::get_if<P>(&p), v); }};
}

// The kind of id `codelet`, or nullptr for an id outside the list (a file may hold any number).
const CodeletKind* codeletKind(exec::Codelet codelet) {
  static constexpr CodeletKind kinds[] = {
#define POPRT_CODELET_ENTRY(name, id) kindOf<exec::name##Params, check##name, run##name, cycles##name, flops##name>(),
      POPRT_CODELETS(POPRT_CODELET_ENTRY)
#undef POPRT_CODELET_ENTRY
  };
  const auto id = static_cast<uint32_t>(codelet);
  return id >= 1 && id <= std::size(kinds) ? &kinds[id - 1] : nullptr;
}

// Half vertices (dtype float16, every field binary16 except Fill's and Cast's, which handle their
// dtypes themselves) run the float codelet on widened copies of their fields — fp16 storage, fp32
// arithmetic, as the IPU's AMP accumulates — and narrow the output back (round to nearest even).
bool isHalfArithmetic(const VertexView& v) {
  return v.dtype == DType::Float16 && v.codelet != exec::Codelet::Fill && v.codelet != exec::Codelet::Cast;
}

// The floats a field of a half vertex holds: float32 fields (partial sums) as they are.
uint64_t halfFieldFloats(const exec::Field& f) { return f.dtype == DType::Float ? f.bytes / 4 : f.bytes / 2; }

// A half vertex as its float32 kind checks it: the fields widened and packed from offset 0.
Expected<exec::Vertex> widened(const exec::Vertex& v) {
  exec::Vertex wide{v.tile, v.codelet, DType::Float, v.fields, {}, {}};
  uint64_t offset = 0;
  for (auto& f : wide.fields) {
    const uint64_t size = f.dtype == DType::Float ? 4 : 2;
    if (f.offset % size != 0 || f.bytes % size != 0) return Error("float16 vertex has a misaligned or odd-sized field");
    f = {offset, halfFieldFloats(f) * 4};
    offset += f.bytes;
  }
  return wide;
}

void runHalfVertex(const CodeletKind& kind, const VertexView& v, const VertexParams& params, uint8_t* mem) {
  thread_local std::vector<float> arena;
  thread_local std::vector<exec::Field> wide_fields;
  wide_fields.resize(v.fields.size());
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
    wide_fields[i] = {at * 4, n * 4};
    at += n;
  }
  kind.run(params, VertexView(v.tile, v.codelet, DType::Float, wide_fields), reinterpret_cast<uint8_t*>(arena.data()));
  const exec::Field& out_field = v.fields[0];
  if (out_field.dtype == DType::Float) {
    std::memcpy(mem + out_field.offset, arena.data(), out_field.bytes);
    return;
  }
  auto* out = reinterpret_cast<uint16_t*>(mem + out_field.offset);
  for (uint64_t k = 0; k < out_field.bytes / 2; ++k) out[k] = floatToHalfBits(arena[k]);
}

}  // namespace

VertexParams verifiedParams(const exec::Vertex& v) {
  auto params = codeletKind(v.codelet)->decode(v);
  POPRT_CHECK(params.ok(), "a vertex that was not checked: " + params.error().message());
  return std::move(params).value();
}

// Field dtypes: only float32 fields of float16 arithmetic vertices (see exec::Field). An unknown
// id is refused before any table lookup.
Expected<VertexParams> prepareVertex(const exec::Vertex& v) {
  const CodeletKind* kind = codeletKind(v.codelet);
  if (!kind) return Error("unknown codelet " + std::to_string(static_cast<uint32_t>(v.codelet)));
  for (const auto& f : v.fields)
    if (f.dtype != DType::Undefined && !(f.dtype == DType::Float && isHalfArithmetic(v)))
      return Error("a " + std::string(dtypeName(v.dtype)) + " vertex has a " + std::string(dtypeName(f.dtype)) +
                   " field; only float16 vertices may hold float32 fields");
  POPRT_ASSIGN_OR_RETURN(VertexParams params, kind->decode(v));
  if (isHalfArithmetic(v)) {
    POPRT_ASSIGN_OR_RETURN(exec::Vertex wide, widened(v));
    POPRT_TRY(kind->check(params, wide));
  } else {
    POPRT_TRY(kind->check(params, v));
  }
  return params;
}

void runVertex(const VertexView& v, const VertexParams& params, uint8_t* tile_memory) {
  const CodeletKind& kind = *codeletKind(v.codelet);
  if (isHalfArithmetic(v)) return runHalfVertex(kind, v, params, tile_memory);
  kind.run(params, v, tile_memory);
}

int64_t inputRowFloats(const VertexParams& params) {
  if (const auto* conv = std::get_if<exec::ConvPartialParams>(&params)) return convInputPlaneFloats(*conv);
  if (const auto* reduce = std::get_if<exec::ReduceParams>(&params)) return reduceInputRowFloats(*reduce);
  return 0;
}

bool runsTogether(const VertexParams& params) {
  const auto* conv = std::get_if<exec::ConvPartialParams>(&params);
  return conv && convPartialRunsTogether(*conv);
}

std::optional<InputCopyPlaces> inputCopyPlaces(const VertexParams& params) {
  const auto* conv = std::get_if<exec::ConvPartialParams>(&params);
  if (!conv || !convPartialRunsTogether(*conv)) return std::nullopt;
  return convInputCopyPlaces(*conv);
}

void runVertices(const VertexView* const* vs, size_t n, const VertexParams& params, uint8_t* tile_memory,
                 const InputMoves* input_moves) {
  const auto* conv = std::get_if<exec::ConvPartialParams>(&params);
  const bool all_float = std::none_of(vs, vs + n, [](const VertexView* v) { return isHalfArithmetic(*v); });
  if (conv && all_float) return runConvPartialTogether(*conv, vs, n, tile_memory, input_moves);
  for (size_t i = 0; i < n; ++i) runVertex(*vs[i], params, tile_memory);
}

void runVertex(const exec::Vertex& v, uint8_t* tile_memory) { runVertex(v, verifiedParams(v), tile_memory); }

// Half arithmetic vertices are priced at the float16 rates (Fill and Cast move their own bytes).
uint64_t vertexCycles(const exec::Vertex& v, const exec::Target& t) {
  const exec::CostModel cost(t, isHalfArithmetic(v) ? DType::Float16 : DType::Float);
  return codeletKind(v.codelet)->cycles(verifiedParams(v), v, cost);
}

uint64_t vertexFlops(const exec::Vertex& v) { return codeletKind(v.codelet)->flops(verifiedParams(v), v); }

}  // namespace poprt::sim
