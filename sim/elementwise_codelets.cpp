// The elementwise codelets (layouts in lib/exec/codelets.h): Unary, Binary, Activation, Fill and
// Cast, each kind's check, run, cycles and flops together (sim/codelet_kinds.h). The functions
// come from lib/ops/scalar_math.h and graphcore_ops.h, as the evaluator's.
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/exec/codelets.h"
#include "lib/ops/graphcore_ops.h"
#include "lib/ops/scalar_math.h"
#include "lib/support/dtype_dispatch.h"
#include "lib/support/half.h"
#include "sim/codelet_kinds.h"
#include "sim/codelet_util.h"

namespace poprt::sim {
namespace {

uint64_t count(int64_t param) { return static_cast<uint64_t>(param); }

// out[k] = op(a[k * as], b[k * bs]) for k < n, the strides 0 (a broadcast value) or 1 in the
// common cases, which the compiler vectorises.
template <class Op>
void binaryRun(const Op& op, float* out, const float* a, int64_t as, const float* b, int64_t bs, int64_t n) {
  if (as == 1 && bs == 1) {
    for (int64_t k = 0; k < n; ++k) out[k] = op(a[k], b[k]);
  } else if (as == 1 && bs == 0) {
    const float y = b[0];
    for (int64_t k = 0; k < n; ++k) out[k] = op(a[k], y);
  } else if (as == 0 && bs == 1) {
    const float x = a[0];
    for (int64_t k = 0; k < n; ++k) out[k] = op(x, b[k]);
  } else {
    for (int64_t k = 0; k < n; ++k) out[k] = op(a[k * as], b[k * bs]);
  }
}

// The output in runs along its innermost dim: an odometer over the outer dims gives each run's
// operand offsets (broadcast operands through their strides, relative to their bases).
template <class Op>
void binaryRuns(const Op& op, const std::vector<int64_t>& p, float* out, const float* a, const float* b) {
  const int64_t count = p[1], begin = p[4], rank = p[5];
  const bool a_bc = p[2] == exec::kBroadcast, b_bc = p[3] == exec::kBroadcast;
  if (!a_bc && !b_bc) return binaryRun(op, out, a, 1, b, 1, count);
  const int64_t* dims = &p[6];
  const int64_t* sa = &p[6 + rank];
  const int64_t* sb = &p[6 + 2 * rank];
  const bool based = p.size() == static_cast<size_t>(8 + 3 * rank);
  int64_t index[16] = {};
  int64_t ia = based ? -p[6 + 3 * rank] : 0, ib = based ? -p[7 + 3 * rank] : 0, rem = begin;
  for (int64_t d = rank; d-- > 0;) {
    index[d] = dims[d] ? rem % dims[d] : 0;
    rem = dims[d] ? rem / dims[d] : 0;
    ia += index[d] * sa[d];
    ib += index[d] * sb[d];
  }
  const int64_t last = rank - 1;
  const int64_t inner = rank ? dims[last] : 1, sa_in = rank ? sa[last] : 0, sb_in = rank ? sb[last] : 0;
  for (int64_t i = 0; i < count;) {
    const int64_t n = std::min(count - i, rank ? inner - index[last] : count);
    binaryRun(op, out + i, a_bc ? a + ia : a + i, a_bc ? sa_in : 1, b_bc ? b + ib : b + i, b_bc ? sb_in : 1, n);
    i += n;
    if (rank == 0) break;
    // Step the odometer n places: to the end of the innermost dim, then carry.
    ia += n * sa_in;
    ib += n * sb_in;
    index[last] += n;
    for (int64_t d = last; d >= 0 && index[d] >= dims[d] && dims[d] > 0; --d) {
      ia -= sa[d] * dims[d];
      ib -= sb[d] * dims[d];
      index[d] = 0;
      if (d == 0) break;
      ia += sa[d - 1];
      ib += sb[d - 1];
      ++index[d - 1];
    }
  }
}

}  // namespace

// ---- Unary: params [fn, count] ---------------------------------------------------------------

Status checkUnary(const exec::Vertex& v) {
  POPRT_TRY(expectFloatFields(v, 2, "Unary"));
  if (v.params.size() != 2 || v.params[0] < 0 || v.params[0] > static_cast<int64_t>(ops::kLastUnaryFn) || v.params[1] < 0)
    return Error("Unary vertex has bad params");
  uint64_t bytes = static_cast<uint64_t>(v.params[1]) * 4;
  if (v.fields[0].bytes != bytes || v.fields[1].bytes != bytes) return Error("Unary vertex field sizes do not match its count");
  return okStatus();
}

void runUnary(const exec::Vertex& v, uint8_t* mem) {
  auto fn = static_cast<ops::UnaryFn>(v.params[0]);
  const int64_t n = v.params[1];
  float* out = f32(mem, v.fields[0]);
  const float* in = f32(mem, v.fields[1]);
  if (fn == ops::UnaryFn::Relu) {  // the common case, in a loop the compiler vectorises
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.f ? in[i] : (in[i] == in[i] ? 0.f : in[i]);
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = ops::applyUnaryF(fn, in[i]);
}

uint64_t cyclesUnary(const exec::Vertex& v, const exec::Target& t) {
  const uint64_t per = ops::unaryCyclesPerVector(static_cast<ops::UnaryFn>(v.params[0]));
  return kVertexOverheadCycles + per * ceilDiv(count(v.params[1]), t.vector_width_fp32);
}

uint64_t flopsUnary(const exec::Vertex& v) { return count(v.params[1]); }

// ---- Binary: params [fn, count, a_mode, b_mode, begin, rank, dims, strides...] -------------------

Status checkBinary(const exec::Vertex& v) {
  POPRT_TRY(expectFloatFields(v, 3, "Binary"));
  const auto& p = v.params;
  if (p.size() < 6) return Error("Binary vertex has too few params");
  int64_t rank = p[5];
  if (rank < 0 || rank > 16 || (p.size() != static_cast<size_t>(6 + 3 * rank) && p.size() != static_cast<size_t>(8 + 3 * rank)))
    return Error("Binary vertex has bad rank");
  if (p[0] < 0 || p[0] > static_cast<int64_t>(ops::kLastBinaryFn) || p[1] < 0 || p[4] < 0)
    return Error("Binary vertex has bad params");
  int64_t count = p[1], begin = p[4];
  int64_t total = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (p[6 + d] < 0 || (p[6 + d] != 0 && total > (int64_t{1} << 40) / p[6 + d])) return Error("Binary vertex has bad dims");
    total *= p[6 + d];
  }
  if (begin > total || count > total - begin) return Error("Binary vertex range is outside its output");
  if (v.fields[0].bytes != static_cast<uint64_t>(count) * 4) return Error("Binary vertex output size does not match its count");
  for (int operand = 0; operand < 2; ++operand) {
    int64_t mode = p[2 + operand];
    const auto& field = v.fields[1 + operand];
    if (mode == exec::kAligned) {
      if (field.bytes != static_cast<uint64_t>(count) * 4) return Error("Binary vertex operand size does not match its count");
    } else if (mode == exec::kBroadcast) {
      // Every offset the vertex's output indices reach, less the buffer's base, must lie inside it.
      const int64_t* strides = &p[6 + rank * (1 + operand)];
      for (int64_t d = 0; d < rank; ++d)
        if (strides[d] < 0 || strides[d] > (int64_t{1} << 40)) return Error("Binary vertex has a bad stride");
      const int64_t base = p.size() == static_cast<size_t>(8 + 3 * rank) ? p[6 + 3 * rank + operand] : 0;
      if (base < 0) return Error("Binary vertex has a bad operand base");
      if (count == 0) continue;
      const exec::IndexSpan span = exec::broadcastSpan(&p[6], strides, rank, begin, count);
      if (span.lo < base || (span.hi - base + 1) * 4 > static_cast<__int128>(field.bytes))
        return Error("Binary vertex operand strides reach outside its buffer");
    } else {
      return Error("Binary vertex has an unknown operand mode");
    }
  }
  return okStatus();
}

void runBinary(const exec::Vertex& v, uint8_t* mem) {
  const auto& p = v.params;
  float* out = f32(mem, v.fields[0]);
  const float* a = f32(mem, v.fields[1]);
  const float* b = f32(mem, v.fields[2]);
  auto fixed = [&](auto fn_tag) {
    constexpr ops::BinaryFn kFn = decltype(fn_tag)::value;
    binaryRuns([](float x, float y) { return ops::applyBinary<float>(kFn, x, y); }, p, out, a, b);
  };
  switch (static_cast<ops::BinaryFn>(p[0])) {
    case ops::BinaryFn::Add: return fixed(std::integral_constant<ops::BinaryFn, ops::BinaryFn::Add>{});
    case ops::BinaryFn::Sub: return fixed(std::integral_constant<ops::BinaryFn, ops::BinaryFn::Sub>{});
    case ops::BinaryFn::Mul: return fixed(std::integral_constant<ops::BinaryFn, ops::BinaryFn::Mul>{});
    case ops::BinaryFn::Div: return fixed(std::integral_constant<ops::BinaryFn, ops::BinaryFn::Div>{});
    default: {
      const auto fn = static_cast<ops::BinaryFn>(p[0]);
      binaryRuns([fn](float x, float y) { return ops::applyBinary<float>(fn, x, y); }, p, out, a, b);
    }
  }
}

uint64_t cyclesBinary(const exec::Vertex& v, const exec::Target& t) {
  const bool aligned = v.params[2] == exec::kAligned && v.params[3] == exec::kAligned;
  const uint64_t n = count(v.params[1]);
  return kVertexOverheadCycles + (aligned ? ceilDiv(n, t.vector_width_fp32) : 3 * n);
}

uint64_t flopsBinary(const exec::Vertex& v) { return count(v.params[1]); }

// ---- Activation: params [count, kind], fparams [alpha, beta, min, max] ---------------------------

Status checkActivation(const exec::Vertex& v) {
  POPRT_TRY(expectFloatFields(v, 2, "Activation"));
  const auto& p = v.params;
  if (p.size() != 2 || v.fparams.size() != 4 || p[0] < 0 || !isActivationKind(p[1]))
    return Error("Activation vertex has bad params");
  if (!fieldHolds(v.fields[0], p[0]) || !fieldHolds(v.fields[1], p[0]))
    return Error("Activation vertex field sizes do not match its count");
  return okStatus();
}

void runActivation(const exec::Vertex& v, uint8_t* mem) {
  const ops::graphcore::Activation act = vertexActivation(v.params[1], v.fparams, 0);
  const int64_t n = v.params[0];
  float* out = f32(mem, v.fields[0]);
  const float* in = f32(mem, v.fields[1]);
  activate(act, in, out, n);
}

uint64_t cyclesActivation(const exec::Vertex& v, const exec::Target& t) {
  using K = ops::graphcore::ActivationKind;
  const auto kind = static_cast<K>(v.params[1]);
  const uint64_t per = (kind == K::Sigmoid || kind == K::Tanh || kind == K::Swish) ? 4 : 1;
  return kVertexOverheadCycles + per * ceilDiv(count(v.params[0]), t.vector_width_fp32);
}

uint64_t flopsActivation(const exec::Vertex& v) { return count(v.params[0]); }

// ---- Fill: params [count], fparams [value]; any dtype of 1, 2, 4 or 8 bytes ----------------------

Status checkFill(const exec::Vertex& v) {
  if (v.fields.size() != 1 || v.params.size() != 1 || v.fparams.size() != 1 || v.params[0] < 0)
    return Error("Fill vertex has bad fields or params");
  size_t esize = dtypeSize(v.dtype);
  if (esize == 0 || v.dtype == DType::Bool) {
    if (v.dtype != DType::Bool) return Error("Fill vertex has an unsupported dtype");
    esize = 1;
  }
  if (v.fields[0].offset % esize != 0) return Error("Fill vertex has a misaligned field");
  if (v.fields[0].bytes != static_cast<uint64_t>(v.params[0]) * esize) return Error("Fill vertex size does not match its count");
  return okStatus();
}

void runFill(const exec::Vertex& v, uint8_t* mem) {
  const double value = v.fparams[0];
  const int64_t n = v.params[0];
  (void)dispatchNumeric(v.dtype, [&](auto tag) {
    using T = decltype(tag);
    T x = fromCompute<T>(static_cast<typename ComputeType<T>::type>(value));
    T* out = reinterpret_cast<T*>(mem + v.fields[0].offset);
    std::fill(out, out + n, x);
  });
}

uint64_t cyclesFill(const exec::Vertex& v, const exec::Target&) {
  return kVertexOverheadCycles + ceilDiv(count(v.params[0]) * dtypeSize(v.dtype), 8);
}

uint64_t flopsFill(const exec::Vertex&) { return 0; }

// ---- Cast: params [count, in_dtype] --------------------------------------------------------------

// Cast: float32 <-> float16 with lib/support/half.h's conversions, as the evaluator's Cast.
Status checkCast(const exec::Vertex& v) {
  if (v.fields.size() != 2 || v.params.size() != 2 || !v.fparams.empty() || capMul(v.params[0], 4) < 0)
    return Error("Cast vertex has bad fields or params");
  const DType to = v.dtype;
  const auto from = static_cast<DType>(v.params[1]);
  if (!((to == DType::Float && from == DType::Float16) || (to == DType::Float16 && from == DType::Float)))
    return Error("Cast vertex casts between float32 and float16 only");
  const uint64_t n = static_cast<uint64_t>(v.params[0]);
  if (v.fields[0].offset % dtypeSize(to) != 0 || v.fields[1].offset % dtypeSize(from) != 0)
    return Error("Cast vertex has a misaligned field");
  if (v.fields[0].bytes != n * dtypeSize(to) || v.fields[1].bytes != n * dtypeSize(from))
    return Error("Cast vertex field sizes do not match its count");
  return okStatus();
}

void runCast(const exec::Vertex& v, uint8_t* mem) {
  const int64_t n = v.params[0];
  if (v.dtype == DType::Float16) {
    const float* in = f32(mem, v.fields[1]);
    auto* out = reinterpret_cast<uint16_t*>(mem + v.fields[0].offset);
    for (int64_t i = 0; i < n; ++i) out[i] = floatToHalfBits(in[i]);
  } else {
    const auto* in = reinterpret_cast<const uint16_t*>(mem + v.fields[1].offset);
    float* out = f32(mem, v.fields[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = halfBitsToFloat(in[i]);
  }
}

uint64_t cyclesCast(const exec::Vertex& v, const exec::Target& t) {  // one conversion per lane of a float32 vector
  return kVertexOverheadCycles + ceilDiv(count(v.params[0]), t.vector_width_fp32);
}

uint64_t flopsCast(const exec::Vertex&) { return 0; }

}  // namespace poprt::sim
