// The elementwise codelets (layouts in lib/exec/codelets.h): Unary, Binary, ElementwiseChain,
// Activation, Fill and Cast, each kind's check, run, cycles and flops together
// (sim/codelet_kinds.h). The functions come from lib/ops/scalar_math.h and graphcore_ops.h, as
// the evaluator's.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "lib/exec/codelets.h"
#include "lib/ops/graphcore_ops.h"
#include "lib/ops/scalar_math.h"
#include "lib/support/dtype_dispatch.h"
#include "lib/support/half.h"
#include "sim/activations.h"
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

// Calls each(op) with op(x, y) = fn(x, y) for a constant fn where the common ones are concerned,
// so the loops each runs are compiled, and vectorised, for that function.
template <class Each>
void withBinaryOp(ops::BinaryFn fn, const Each& each) {
  auto fixed = [&](auto fn_tag) {
    constexpr ops::BinaryFn kFn = decltype(fn_tag)::value;
    each([](float x, float y) { return ops::applyBinary<float>(kFn, x, y); });
  };
  switch (fn) {
    case ops::BinaryFn::Add: return fixed(std::integral_constant<ops::BinaryFn, ops::BinaryFn::Add>{});
    case ops::BinaryFn::Sub: return fixed(std::integral_constant<ops::BinaryFn, ops::BinaryFn::Sub>{});
    case ops::BinaryFn::Mul: return fixed(std::integral_constant<ops::BinaryFn, ops::BinaryFn::Mul>{});
    case ops::BinaryFn::Div: return fixed(std::integral_constant<ops::BinaryFn, ops::BinaryFn::Div>{});
    case ops::BinaryFn::Max: return fixed(std::integral_constant<ops::BinaryFn, ops::BinaryFn::Max>{});
    case ops::BinaryFn::Min: return fixed(std::integral_constant<ops::BinaryFn, ops::BinaryFn::Min>{});
    default: each([fn](float x, float y) { return ops::applyBinary<float>(fn, x, y); });
  }
}

// rem % d, with rem / d left in `quotient`: in 32 bits where both fit, several times faster than
// a 64-bit division on x86.
inline int64_t divide(int64_t rem, int64_t d, int64_t& quotient) {
  if ((static_cast<uint64_t>(rem) | static_cast<uint64_t>(d)) >> 32 == 0) {
    const auto r = static_cast<uint32_t>(rem), q = r / static_cast<uint32_t>(d);
    quotient = q;
    return r - q * static_cast<uint32_t>(d);
  }
  quotient = rem / d;
  return rem - quotient * d;
}

// Output elements [begin, begin + count) in runs along the innermost dim: an odometer over the
// outer dims gives each run's operand offsets (broadcast operands through their strides, relative
// to their bases).
template <class Op>
void binaryRuns(const Op& op, const exec::BinaryParams& p, int64_t begin, int64_t count, exec::OperandBases bases, float* out,
                const float* a, const float* b) {
  const int64_t rank = p.rank;
  const bool a_bc = p.a_mode == exec::kBroadcast, b_bc = p.b_mode == exec::kBroadcast;
  if (!a_bc && !b_bc) return binaryRun(op, out, a, 1, b, 1, count);
  const int64_t* dims = p.out_dims.data();
  const int64_t* sa = p.a_strides.data();
  const int64_t* sb = p.b_strides.data();
  // Only [0, rank) is used, each set below: a zeroed array cost a rep stos a vertex (oww_embedding
  // runs 28,000 Binary vertices of 3-48 elements).
  int64_t index[16];
  int64_t ia = -bases.a, ib = -bases.b, rem = begin;
  for (int64_t d = rank; d-- > 0;) {
    if (dims[d])
      index[d] = divide(rem, dims[d], rem);
    else
      index[d] = rem = 0;
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

// ---- Unary ---------------------------------------------------------------------------------------

Status checkUnary(const exec::UnaryParams& p, const VertexView& v) {
  POPRT_TRY(expectFloatFields(v, 2, "Unary"));
  if (p.fn < ops::UnaryFn{} || p.fn > ops::kLastUnaryFn || p.count < 0) return Error("Unary vertex has bad params");
  if (!fieldHolds(v.fields[0], p.count) || !fieldHolds(v.fields[1], p.count))
    return Error("Unary vertex field sizes do not match its count");
  return okStatus();
}

void runUnary(const exec::UnaryParams& p, const VertexView& v, uint8_t* mem) {
  const int64_t n = p.count;
  float* out = f32(mem, v.fields[0]);
  const float* in = f32(mem, v.fields[1]);
  if (p.fn == ops::UnaryFn::Relu) {  // the common case, in a loop the compiler vectorises
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.f ? in[i] : (in[i] == in[i] ? 0.f : in[i]);
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = ops::applyUnaryF(p.fn, in[i]);
}

uint64_t cyclesUnary(const exec::UnaryParams& p, const VertexView&, const exec::CostModel& cost) {
  return cost.kVertexOverheadCycles + cost.vectorCycles(count(p.count), ops::unaryCyclesPerVector(p.fn));
}

uint64_t flopsUnary(const exec::UnaryParams& p, const VertexView&) { return count(p.count); }

// ---- Binary --------------------------------------------------------------------------------------

Status checkBinary(const exec::BinaryParams& p, const VertexView& v) {
  POPRT_TRY(expectFloatFields(v, 3, "Binary"));
  const int64_t rank = p.rank, count = p.count, begin = p.begin, rows = p.rows(), step = p.step();
  if (rank < 0 || rank > 16) return Error("Binary vertex has bad rank");
  if (p.fn < ops::BinaryFn{} || p.fn > ops::kLastBinaryFn || count < 0 || begin < 0) return Error("Binary vertex has bad params");
  if (p.row_runs && !p.bases) return Error("Binary vertex has row runs without operand bases");
  constexpr int64_t kMaxElements = int64_t{1} << 40;
  const int64_t skips[2] = {p.row_runs ? p.row_runs->a_skip : 0, p.row_runs ? p.row_runs->b_skip : 0};
  if (rows < 1 || step < 0 || step > kMaxElements || (rows > 1 && count == 0) || (count > 0 && rows > kMaxElements / count) ||
      skips[0] < 0 || skips[0] > kMaxElements || skips[1] < 0 || skips[1] > kMaxElements)
    return Error("Binary vertex has bad row runs");
  int64_t total = 1;
  for (const int64_t d : p.out_dims) {
    if (d < 0 || (d != 0 && total > kMaxElements / d)) return Error("Binary vertex has bad dims");
    total *= d;
  }
  // In 128 bits: rows and step are each at most 2^40 here.
  const __int128 last_begin = begin + static_cast<__int128>(rows - 1) * step;
  if (begin > total || last_begin + count > total) return Error("Binary vertex range is outside its output");
  // Every run's elements are in the fields (checked before the runs are visited: their number is
  // then bounded by the fields' bytes).
  const int64_t elements = rows * count;
  if (!fieldHolds(v.fields[0], elements)) return Error("Binary vertex output size does not match its count");
  for (int operand = 0; operand < 2; ++operand) {
    const exec::BinaryOperandMode mode = operand == 0 ? p.a_mode : p.b_mode;
    const auto& field = v.fields[1 + operand];
    if (mode == exec::kAligned) {
      if (!fieldHolds(field, elements)) return Error("Binary vertex operand size does not match its count");
    } else if (mode == exec::kBroadcast) {
      // Every offset the vertex's output indices reach, less the buffer's base, must lie inside it.
      const std::span<const int64_t> strides = operand == 0 ? p.a_strides : p.b_strides;
      for (const int64_t s : strides)
        if (s < 0 || s > (int64_t{1} << 40)) return Error("Binary vertex has a bad stride");
      const int64_t base = p.bases ? (operand == 0 ? p.bases->a : p.bases->b) : 0;
      if (base < 0) return Error("Binary vertex has a bad operand base");
      if (count == 0) continue;
      for (int64_t r = 0; r < rows; ++r) {
        const exec::IndexSpan span = exec::broadcastSpan(p.out_dims.data(), strides.data(), rank, begin + r * step, count);
        const __int128 row_base = base + static_cast<__int128>(r) * skips[operand];
        if (span.lo < row_base || (span.hi - row_base + 1) * 4 > static_cast<__int128>(field.bytes))
          return Error("Binary vertex operand strides reach outside its buffer");
      }
    } else {
      return Error("Binary vertex has an unknown operand mode");
    }
  }
  return okStatus();
}

void runBinary(const exec::BinaryParams& p, const VertexView& v, uint8_t* mem) {
  float* out = f32(mem, v.fields[0]);
  const float* a = f32(mem, v.fields[1]);
  const float* b = f32(mem, v.fields[2]);
  // Aligned operands advance with the output from run to run; broadcast ones are read through
  // their strides from each run's first output element.
  const int64_t count = p.count, rows = p.rows(), step = p.step();
  const int64_t a_next = p.a_mode == exec::kAligned ? count : 0, b_next = p.b_mode == exec::kAligned ? count : 0;
  const exec::OperandBases bases = p.bases.value_or(exec::OperandBases{});
  const exec::OperandBases skips = p.row_runs ? exec::OperandBases{p.row_runs->a_skip, p.row_runs->b_skip} : exec::OperandBases{};
  withBinaryOp(p.fn, [&](const auto& op) {
    for (int64_t r = 0; r < rows; ++r)
      binaryRuns(op, p, p.begin + r * step, count, {bases.a + r * skips.a, bases.b + r * skips.b}, out + r * count,
                 a + r * a_next, b + r * b_next);
  });
}

// A broadcast operand is read element by element: 3 cycles each; a run of rows sets up each row's
// pointers and count (a 2-D vertex's outer loop).
uint64_t cyclesBinary(const exec::BinaryParams& p, const VertexView&, const exec::CostModel& cost) {
  const bool aligned = p.a_mode == exec::kAligned && p.b_mode == exec::kAligned;
  const uint64_t n = count(p.count) * count(p.rows());
  return cost.kVertexOverheadCycles + (p.row_runs ? cost.kRowOverheadCycles * count(p.rows()) : 0) +
         (aligned ? cost.vectorCycles(n) : 3 * n);
}

uint64_t flopsBinary(const exec::BinaryParams& p, const VertexView&) { return count(p.count) * count(p.rows()); }

// ---- ElementwiseChain ----------------------------------------------------------------------------

Status checkElementwiseChain(const exec::ElementwiseChainParams& p, const VertexView& v) {
  const size_t fields = v.fields.size();
  if (fields < 2 || fields > 2 + exec::kMaxChainSteps) return Error("ElementwiseChain vertex has a bad field count");
  POPRT_TRY(expectFloatFields(v, fields, "ElementwiseChain"));
  if (p.count < 0 || p.steps < 1 || p.steps > exec::kMaxChainSteps) return Error("ElementwiseChain vertex has bad params");
  if (!fieldHolds(v.fields[0], p.count) || !fieldHolds(v.fields[1], p.count))
    return Error("ElementwiseChain vertex field sizes do not match its count");
  const auto operands = static_cast<int64_t>(fields) - 2;
  for (int64_t k = 0; k < p.steps; ++k) {
    const int64_t kind = p.program[3 * k], fn = p.program[3 * k + 1], j = p.program[3 * k + 2];
    const bool unary = kind == exec::kStepUnary && fn >= 0 && fn <= static_cast<int64_t>(ops::kLastUnaryFn) && j == 0;
    const bool binary = kind == exec::kStepBinary && fn >= 0 && fn <= static_cast<int64_t>(ops::kLastBinaryFn) && j != 0 &&
                        j >= -operands && j <= operands;
    if (!unary && !binary) return Error("ElementwiseChain vertex step " + std::to_string(k) + " is not a valid step");
    if (binary && !fieldHolds(v.fields[static_cast<size_t>(1 + (j < 0 ? -j : j))], 1))
      return Error("ElementwiseChain vertex step " + std::to_string(k) + " reads an operand that is not one value");
  }
  return okStatus();
}

// Step by step over the whole output, each step's results stored before the next reads them: the
// float32 values the unfused ops would have written.
void runElementwiseChain(const exec::ElementwiseChainParams& p, const VertexView& v, uint8_t* mem) {
  const int64_t n = p.count;
  float* out = f32(mem, v.fields[0]);
  std::memmove(out, f32(mem, v.fields[1]), static_cast<size_t>(n) * 4);
  for (int64_t k = 0; k < p.steps; ++k) {
    const int64_t fn = p.program[3 * k + 1], j = p.program[3 * k + 2];
    if (p.program[3 * k] == exec::kStepUnary) {
      const auto f = static_cast<ops::UnaryFn>(fn);
      if (f == ops::UnaryFn::Round) {  // the quantizers' step, in a loop the compiler vectorises
        for (int64_t i = 0; i < n; ++i) out[i] = std::nearbyint(out[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) out[i] = ops::applyUnaryF(f, out[i]);
      }
      continue;
    }
    const float* s = f32(mem, v.fields[static_cast<size_t>(1 + (j < 0 ? -j : j))]);
    withBinaryOp(static_cast<ops::BinaryFn>(fn), [&](const auto& op) {
      if (j > 0)
        binaryRun(op, out, out, 1, s, 0, n);
      else
        binaryRun(op, out, s, 0, out, 1, n);
    });
  }
}

uint64_t cyclesElementwiseChain(const exec::ElementwiseChainParams& p, const VertexView&, const exec::CostModel& cost) {
  uint64_t cycles = cost.kVertexOverheadCycles;
  for (int64_t k = 0; k < p.steps; ++k) {
    const bool unary = p.program[3 * k] == exec::kStepUnary;
    cycles +=
        cost.vectorCycles(count(p.count), unary ? ops::unaryCyclesPerVector(static_cast<ops::UnaryFn>(p.program[3 * k + 1])) : 1);
  }
  return cycles;
}

uint64_t flopsElementwiseChain(const exec::ElementwiseChainParams& p, const VertexView&) {
  return count(p.count) * count(p.steps);
}

// ---- Activation ----------------------------------------------------------------------------------

Status checkActivation(const exec::ActivationParams& p, const VertexView& v) {
  POPRT_TRY(expectFloatFields(v, 2, "Activation"));
  if (p.count < 0 || !isActivationKind(p.act.kind)) return Error("Activation vertex has bad params");
  if (!fieldHolds(v.fields[0], p.count) || !fieldHolds(v.fields[1], p.count))
    return Error("Activation vertex field sizes do not match its count");
  return okStatus();
}

void runActivation(const exec::ActivationParams& p, const VertexView& v, uint8_t* mem) {
  activate(p.act.activation(), f32(mem, v.fields[1]), f32(mem, v.fields[0]), p.count);
}

uint64_t cyclesActivation(const exec::ActivationParams& p, const VertexView&, const exec::CostModel& cost) {
  using K = ops::graphcore::ActivationKind;
  const K kind = p.act.kind;
  const uint64_t per = (kind == K::Sigmoid || kind == K::Tanh || kind == K::Swish) ? 4 : 1;
  return cost.kVertexOverheadCycles + cost.vectorCycles(count(p.count), per);
}

uint64_t flopsActivation(const exec::ActivationParams& p, const VertexView&) { return count(p.count); }

// ---- Fill: any dtype of 1, 2, 4 or 8 bytes -------------------------------------------------------

Status checkFill(const exec::FillParams& p, const VertexView& v) {
  if (v.fields.size() != 1 || p.count < 0) return Error("Fill vertex has bad fields or params");
  // The dtypes runFill writes (a complex one it would leave unwritten).
  if (!dispatchNumeric(v.dtype, [](auto) {}).ok()) return Error("Fill vertex has an unsupported dtype");
  const size_t esize = v.dtype == DType::Bool ? 1 : dtypeSize(v.dtype);
  if (v.fields[0].offset % esize != 0) return Error("Fill vertex has a misaligned field");
  if (v.fields[0].bytes % esize != 0 || v.fields[0].bytes / esize != static_cast<uint64_t>(p.count))
    return Error("Fill vertex size does not match its count");
  return okStatus();
}

void runFill(const exec::FillParams& p, const VertexView& v, uint8_t* mem) {
  const double value = p.value;
  (void)dispatchNumeric(v.dtype, [&](auto tag) {
    using T = decltype(tag);
    T x = fromCompute<T>(static_cast<typename ComputeType<T>::type>(value));
    T* out = reinterpret_cast<T*>(mem + v.fields[0].offset);
    std::fill(out, out + p.count, x);
  });
}

uint64_t cyclesFill(const exec::FillParams& p, const VertexView& v, const exec::CostModel& cost) {
  return cost.kVertexOverheadCycles + cost.storeCycles(count(p.count) * dtypeSize(v.dtype));
}

uint64_t flopsFill(const exec::FillParams&, const VertexView&) { return 0; }

// ---- Cast ----------------------------------------------------------------------------------------

// Cast: float32 <-> float16 with lib/support/half.h's conversions, as the evaluator's Cast.
Status checkCast(const exec::CastParams& p, const VertexView& v) {
  if (v.fields.size() != 2 || capMul(p.count, 4) < 0) return Error("Cast vertex has bad fields or params");
  const DType to = v.dtype, from = p.in_dtype;
  if (!((to == DType::Float && from == DType::Float16) || (to == DType::Float16 && from == DType::Float)))
    return Error("Cast vertex casts between float32 and float16 only");
  const uint64_t n = static_cast<uint64_t>(p.count);
  if (v.fields[0].offset % dtypeSize(to) != 0 || v.fields[1].offset % dtypeSize(from) != 0)
    return Error("Cast vertex has a misaligned field");
  if (v.fields[0].bytes != n * dtypeSize(to) || v.fields[1].bytes != n * dtypeSize(from))
    return Error("Cast vertex field sizes do not match its count");
  return okStatus();
}

void runCast(const exec::CastParams& p, const VertexView& v, uint8_t* mem) {
  const int64_t n = p.count;
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

uint64_t cyclesCast(const exec::CastParams& p, const VertexView&, const exec::CostModel& cost) {
  return cost.kVertexOverheadCycles + cost.vectorCycles(count(p.count));  // one conversion per lane of a float32 vector
}

uint64_t flopsCast(const exec::CastParams&, const VertexView&) { return 0; }

}  // namespace poprt::sim
