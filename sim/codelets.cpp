#include "sim/codelets.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/exec/codelets.h"
#include "lib/support/dtype_dispatch.h"
#include "lib/support/half.h"
#include "lib/ops/graphcore_ops.h"
#include "lib/ops/scalar_math.h"
#include "sim/codelet_util.h"
#include "sim/gemm.h"
#include "sim/row_codelets.h"
#include "sim/window_codelets.h"

namespace poprt::sim {
namespace {

Status checkUnary(const exec::Vertex& v) {
  POPRT_TRY(expectFloatFields(v, 2, "Unary"));
  if (v.params.size() != 2 || v.params[0] < 0 || v.params[0] > static_cast<int64_t>(ops::kLastUnaryFn) || v.params[1] < 0)
    return Error("Unary vertex has bad params");
  uint64_t bytes = static_cast<uint64_t>(v.params[1]) * 4;
  if (v.fields[0].bytes != bytes || v.fields[1].bytes != bytes) return Error("Unary vertex field sizes do not match its count");
  return okStatus();
}

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

Status checkMatMul(const exec::Vertex& v) {
  const auto& p = v.params;
  const bool act = p.size() == 7;
  if (!(p.size() == 6 && v.fparams.size() == 2) && !(act && v.fparams.size() == 6))
    return Error("MatMul vertex has bad params");
  if (act && !isActivationKind(p[6]))
    return Error("MatMul vertex has an unknown activation");
  POPRT_TRY(expectFloatFields(v, p[5] == exec::kBiasNone ? 3 : 4, "MatMul"));
  int64_t rows = p[0], K = p[1], cols = p[2];
  const int64_t limit = int64_t{1} << 24;
  if (rows < 0 || K < 0 || cols < 0 || rows > limit || K > limit || cols > limit || p[5] < 0 || p[5] > exec::kBiasFull)
    return Error("MatMul vertex has bad sizes");
  auto bytes = [](int64_t a, int64_t b) { return static_cast<uint64_t>(a) * static_cast<uint64_t>(b) * 4; };
  if (v.fields[0].bytes != bytes(rows, cols) || v.fields[1].bytes != bytes(rows, K) || v.fields[2].bytes != bytes(K, cols))
    return Error("MatMul vertex field sizes do not match its shape");
  if (p[5] != exec::kBiasNone) {
    int64_t n = p[5] == exec::kBiasScalar ? 1 : p[5] == exec::kBiasRow ? cols : p[5] == exec::kBiasColumn ? rows : rows * cols;
    if (v.fields[3].bytes != bytes(n, 1)) return Error("MatMul vertex bias size does not match its mode");
  }
  return okStatus();
}

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

Status checkActivation(const exec::Vertex& v) {
  POPRT_TRY(expectFloatFields(v, 2, "Activation"));
  const auto& p = v.params;
  if (p.size() != 2 || v.fparams.size() != 4 || p[0] < 0 || !isActivationKind(p[1]))
    return Error("Activation vertex has bad params");
  if (!fieldHolds(v.fields[0], p[0]) || !fieldHolds(v.fields[1], p[0])) return Error("Activation vertex field sizes do not match its count");
  return okStatus();
}

void runActivation(const exec::Vertex& v, uint8_t* mem) {
  const ops::graphcore::Activation act = vertexActivation(v.params[1], v.fparams, 0);
  const int64_t n = v.params[0];
  float* out = f32(mem, v.fields[0]);
  const float* in = f32(mem, v.fields[1]);
  activate(act, in, out, n);
}

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

// A rows x cols matrix stored transposed (cols x rows), laid out as it is into `buf`.
const float* untransposed(const float* m, int64_t rows, int64_t cols, std::vector<float>& buf) {
  buf.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) buf[static_cast<size_t>(r * cols + c)] = m[c * rows + r];
  return buf.data();
}

void runMatMul(const exec::Vertex& v, uint8_t* mem) {
  const int64_t rows = v.params[0], K = v.params[1], cols = v.params[2];
  const bool ta = v.params[3] != 0, tb = v.params[4] != 0;
  const int64_t bias_mode = v.params[5];
  const float alpha = v.fparams[0], beta = v.fparams[1];
  float* out = f32(mem, v.fields[0]);
  const float* a = f32(mem, v.fields[1]);
  const float* b = f32(mem, v.fields[2]);
  const float* bias = bias_mode != exec::kBiasNone ? f32(mem, v.fields[3]) : nullptr;
  const bool has_act = v.params.size() == 7;
  ops::graphcore::Activation act;
  if (has_act)
    act = vertexActivation(v.params[6], v.fparams, 2);
  thread_local std::vector<float> a_rows, b_rows;
  if (ta) a = untransposed(a, rows, K, a_rows);
  if (tb) b = untransposed(b, K, cols, b_rows);
  gemm(a, rows, K, b, cols, cols, out, cols);
  if (alpha == 1.0f && !bias && !has_act) return;
  for (int64_t r = 0; r < rows; ++r) {
    float* o = out + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      float x = alpha * o[c];
      if (bias) {
        float bv = bias_mode == exec::kBiasScalar ? bias[0]
                   : bias_mode == exec::kBiasRow  ? bias[c]
                   : bias_mode == exec::kBiasColumn ? bias[r]
                                                    : bias[r * cols + c];
        x += beta * bv;
      }
      o[c] = x;
    }
    if (has_act) activate(act, o, o, cols);
  }
}

// Half vertices (dtype float16, every field binary16 except Fill's and Cast's, which handle their
// dtypes themselves) run the float codelet on widened copies of their fields — fp16 storage, fp32
// arithmetic, as the IPU's AMP accumulates — and narrow the output back (round to nearest even).
bool isHalfArithmetic(const exec::Vertex& v) {
  return v.dtype == DType::Float16 && v.codelet != exec::Codelet::Fill && v.codelet != exec::Codelet::Cast;
}

Status checkFloatVertex(const exec::Vertex& v);
void runFloatVertex(const exec::Vertex& v, uint8_t* tile_memory);
uint64_t floatVertexCycles(const exec::Vertex& v, const exec::Target& t);

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
  runFloatVertex(wide, reinterpret_cast<uint8_t*>(arena.data()));
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
  runFloatVertex(v, tile_memory);
}

// Half vertices move half the bytes per vector and use the AMP's fp16 rate.
uint64_t vertexCycles(const exec::Vertex& v, const exec::Target& t) {
  if (!isHalfArithmetic(v)) return floatVertexCycles(v, t);
  exec::Target t16 = t;
  t16.vector_width_fp32 *= 2;
  t16.fp32_macs_per_cycle = t.fp16_macs_per_cycle;
  return floatVertexCycles(v, t16);
}

uint64_t vertexFlops(const exec::Vertex& v) {
  const auto& p = v.params;
  auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  switch (v.codelet) {
    case exec::Codelet::Unary:
    case exec::Codelet::Binary: return u(p[1]);
    case exec::Codelet::Activation: return u(p[0]);
    case exec::Codelet::Fill:
    case exec::Codelet::Cast: return 0;
    case exec::Codelet::MatMul: return 2 * u(p[0]) * u(p[1]) * u(p[2]) + (p[5] != exec::kBiasNone ? u(p[0]) * u(p[2]) : 0);
    case exec::Codelet::ConvPartial: return convPartialFlops(v);
    case exec::Codelet::Pool: return poolFlops(v);
    case exec::Codelet::Reduce: return u(p[1]) * u(p[2]) * u(p[3]);
    case exec::Codelet::Softmax: return 4 * u(p[1]) * u(p[2]) * u(p[3]);
    case exec::Codelet::Norm: return 5 * u(p[0]) * u(p[1]);
    case exec::Codelet::BatchNorm: return 4 * u(p[0]);
    case exec::Codelet::Attention: return 2 * u(p[0]) * u(p[1]) * u(p[2] + p[3]) + 4 * u(p[0]) * u(p[1]);
  }
  return 0;
}

namespace {

Status checkFloatVertex(const exec::Vertex& v) {
  switch (v.codelet) {
    case exec::Codelet::Unary: return checkUnary(v);
    case exec::Codelet::Binary: return checkBinary(v);
    case exec::Codelet::MatMul: return checkMatMul(v);
    case exec::Codelet::Fill: return checkFill(v);
    case exec::Codelet::ConvPartial: return checkConvPartial(v);
    case exec::Codelet::Pool: return checkPool(v);
    case exec::Codelet::Activation: return checkActivation(v);
    case exec::Codelet::Reduce: return checkReduce(v);
    case exec::Codelet::Softmax: return checkSoftmax(v);
    case exec::Codelet::Norm: return checkNorm(v);
    case exec::Codelet::BatchNorm: return checkBatchNorm(v);
    case exec::Codelet::Attention: return checkAttention(v);
    case exec::Codelet::Cast: return checkCast(v);
  }
  return Error("unknown codelet " + std::to_string(static_cast<uint32_t>(v.codelet)));
}

void runFloatVertex(const exec::Vertex& v, uint8_t* tile_memory) {
  switch (v.codelet) {
    case exec::Codelet::Unary: runUnary(v, tile_memory); break;
    case exec::Codelet::Binary: runBinary(v, tile_memory); break;
    case exec::Codelet::MatMul: runMatMul(v, tile_memory); break;
    case exec::Codelet::Fill: runFill(v, tile_memory); break;
    case exec::Codelet::ConvPartial: runConvPartial(v, tile_memory); break;
    case exec::Codelet::Pool: runPool(v, tile_memory); break;
    case exec::Codelet::Activation: runActivation(v, tile_memory); break;
    case exec::Codelet::Reduce: runReduce(v, tile_memory); break;
    case exec::Codelet::Softmax: runSoftmax(v, tile_memory); break;
    case exec::Codelet::Norm: runNorm(v, tile_memory); break;
    case exec::Codelet::BatchNorm: runBatchNorm(v, tile_memory); break;
    case exec::Codelet::Attention: runAttention(v, tile_memory); break;
    case exec::Codelet::Cast: runCast(v, tile_memory); break;
  }
}

uint64_t floatVertexCycles(const exec::Vertex& v, const exec::Target& t) {
  switch (v.codelet) {
    case exec::Codelet::Unary: {
      auto fn = static_cast<ops::UnaryFn>(v.params[0]);
      // Transcendentals take several cycles per element; simple ops run at the vector width.
      uint64_t per = (fn == ops::UnaryFn::Exp || fn == ops::UnaryFn::Log || fn == ops::UnaryFn::Sigmoid ||
                      fn == ops::UnaryFn::Tanh || fn == ops::UnaryFn::Gelu || fn == ops::UnaryFn::GeluTanh) ? 4 : 1;
      return kVertexOverheadCycles + per * ceilDiv(static_cast<uint64_t>(v.params[1]), t.vector_width_fp32);
    }
    case exec::Codelet::Binary: {
      bool aligned = v.params[2] == exec::kAligned && v.params[3] == exec::kAligned;
      uint64_t n = static_cast<uint64_t>(v.params[1]);
      return kVertexOverheadCycles + (aligned ? ceilDiv(n, t.vector_width_fp32) : 3 * n);
    }
    case exec::Codelet::Fill:
      return kVertexOverheadCycles + ceilDiv(static_cast<uint64_t>(v.params[0]) * dtypeSize(v.dtype), 8);
    case exec::Codelet::MatMul: {
      uint64_t macs = static_cast<uint64_t>(v.params[0]) * static_cast<uint64_t>(v.params[1]) *
                      static_cast<uint64_t>(v.params[2]);
      uint64_t epilogue = static_cast<uint64_t>(v.params[0]) * static_cast<uint64_t>(v.params[2]);
      return kVertexOverheadCycles + ceilDiv(macs, t.fp32_macs_per_cycle) + ceilDiv(epilogue, t.vector_width_fp32);
    }
    case exec::Codelet::ConvPartial: return convPartialCycles(v, t);
    case exec::Codelet::Pool: return poolCycles(v, t);
    case exec::Codelet::Activation: {
      auto kind = static_cast<ops::graphcore::ActivationKind>(v.params[1]);
      uint64_t per = (kind == ops::graphcore::ActivationKind::Sigmoid || kind == ops::graphcore::ActivationKind::Tanh || kind == ops::graphcore::ActivationKind::Swish) ? 4 : 1;
      return kVertexOverheadCycles + per * ceilDiv(static_cast<uint64_t>(v.params[0]), t.vector_width_fp32);
    }
    case exec::Codelet::Reduce: return reduceCycles(v, t);
    case exec::Codelet::Softmax: return softmaxCycles(v, t);
    case exec::Codelet::Norm: return normCycles(v, t);
    case exec::Codelet::BatchNorm: return batchNormCycles(v, t);
    case exec::Codelet::Attention: return attentionCycles(v, t);
    case exec::Codelet::Cast:  // one conversion per lane of a float32 vector
      return kVertexOverheadCycles + ceilDiv(static_cast<uint64_t>(v.params[0]), t.vector_width_fp32);
  }
  return 0;
}

}  // namespace

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
