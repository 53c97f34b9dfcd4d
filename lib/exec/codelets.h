// The vertex kinds: the one list of them, and each kind's fields and params, the contract between
// codegen (which emits vertices) and the simulator (which checks and runs them). Fields are
// tile-memory byte ranges; all data float32 (Fill: any fixed-size dtype; Cast: float32 and
// float16). Multi-dim buffers are row-major. A vertex of dtype float16 holds every field in
// binary16 (sizes below are then 2 bytes per element): the simulator computes in float32 and
// rounds each output to float16, the fp16-storage / fp32-accumulation of the IPU's AMP.
//
// Each kind's params are a struct whose `members` lists them in the order a PopEF stores them
// (vertex `params` for integers, `fparams` for floats): lib/exec/vertex_params.h encodes a struct
// into a vertex (codegen) and decodes a vertex into one (the simulator), from that one list.
// Adding a kind: a line in POPRT_CODELETS, its struct here, its sim/ file and its lowering.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>

#include "lib/ops/graphcore_ops.h"
#include "lib/ops/scalar_math.h"
#include "lib/support/dtype.h"

namespace poprt::exec {

// The smallest and largest offset sum_d index_d * strides[d] (strides >= 0) over the elements
// [begin, begin + count) of a row-major `dims`, count > 0: the operand elements a Binary vertex
// reads through broadcast strides. It cuts the range into runs of aligned blocks (a block: the
// trailing dims free, the others fixed), at most 2 x rank + 1 of them, so the cost is O(rank^2)
// whatever the count. Wider than int64 arithmetic, so hostile params cannot overflow it.
struct IndexSpan {
  __int128 lo = 0, hi = -1;
};
inline IndexSpan broadcastSpan(const int64_t* dims, const int64_t* strides, int64_t rank, int64_t begin, int64_t count) {
  using i128 = __int128;
  auto offsetOf = [&](i128 pos) {  // the strided offset of flat element `pos`
    i128 off = 0;
    for (int64_t d = rank; d-- > 0;) {
      if (dims[d] <= 0) return off;
      off += (pos % dims[d]) * strides[d];
      pos /= dims[d];
    }
    return off;
  };
  IndexSpan span{static_cast<i128>(INT64_MAX) * 4, -1};
  i128 pos = begin;
  const i128 end = static_cast<i128>(begin) + count;
  while (pos < end) {
    // The widest block (k trailing dims free, `size` elements) that starts here and fits.
    int64_t k = 0;
    i128 size = 1, free_reach = 0;
    while (k < rank) {
      const int64_t d = rank - 1 - k;
      const i128 next = size * std::max<int64_t>(dims[d], 1);
      if (pos % next != 0 || pos + next > end) break;
      free_reach += static_cast<i128>(std::max<int64_t>(dims[d], 1) - 1) * strides[d];
      size = next;
      ++k;
    }
    // Consecutive blocks of that size up to the next wider boundary step dim rank-1-k by one.
    i128 run_end = end;
    i128 step = 0;
    if (k < rank) {
      const int64_t d = rank - 1 - k;
      const i128 wider = size * std::max<int64_t>(dims[d], 1);
      run_end = std::min(end, (pos / wider + 1) * wider);
      step = strides[d];
    }
    const i128 blocks = std::max<i128>(1, (run_end - pos) / size);
    const i128 first = offsetOf(pos);
    span.lo = std::min(span.lo, first);
    span.hi = std::max(span.hi, first + (blocks - 1) * step + free_reach);
    pos += blocks * size;
  }
  return span;
}

// These numbers are stored in PopEFs (vertex params): they never change, new values take the next
// number (tests/unit/sim/format_pins_test.cpp).
enum ReduceKind : int64_t {
  kReduceSum = 0,
  kReduceMean = 1,
  kReduceMax = 2,
  kReduceMin = 3,
  kReduceProd = 4,
  kReduceL1 = 5,
  kReduceL2 = 6,
  kReduceLogSum = 7,
  kReduceLogSumExp = 8,
  kReduceSumSquare = 9,
};
inline constexpr int64_t kLastReduceKind = kReduceSumSquare;
enum BinaryOperandMode : int64_t { kAligned = 0, kBroadcast = 1 };
inline constexpr int64_t kMaxWindowRank = 3;                   // spatial dims of ConvPartial and Pool vertices
inline constexpr int64_t kMaxWindowExtent = int64_t{1} << 24;  // cap on each dim, kernel, stride, dilation
inline constexpr int64_t kMaxWindowStart = int64_t{1} << 40;   // cap on |starts| and padded_ends

// Every vertex kind, defined once: X(name, id). The ids are stored in PopEFs and never change; a
// new kind takes the next id. The enum and the names come from this list (lib/exec/executable.h),
// and so does the simulator's table of each kind's check, run, cycle estimate and FLOP count
// (sim/codelet_kinds.h), which fails to link until the new kind's sim/ file defines them. Each
// kind's params are the struct <name>Params below.
// clang-format off
#define POPRT_CODELETS(X) \
  X(Unary, 1)         \
  X(Binary, 2)        \
  X(MatMul, 3)        \
  X(Fill, 4)          \
  X(ConvPartial, 5)   \
  X(Pool, 6)          \
  X(Activation, 7)    \
  X(Reduce, 8)        \
  X(Softmax, 9)       \
  X(Norm, 10)         \
  X(BatchNorm, 11)    \
  X(Attention, 12)    \
  X(Cast, 13)         \
  X(CumSum, 14)      \
  X(ElementwiseChain, 15)
// clang-format on

enum class Codelet : uint32_t {
#define POPRT_CODELET_ENUM(name, id) name = id,
  POPRT_CODELETS(POPRT_CODELET_ENUM)
#undef POPRT_CODELET_ENUM
};

// ---- The members a struct lists, in `members(Io& io)` ------------------------------------------
//   io.param(x)          one integer param (an int64, a 0/1 flag or an enum)
//   io.fparam(x)         one float param
//   io.array(s, n)       n integer params viewed as a span (n: an earlier member)
//   io.optional(o)       a tail of members, present when params are left (an activation, bases)

// An activation applied to each output (ops::graphcore::ActivationKind), the ConvAct/GemmAct
// epilogue: its kind is the last param, and its four floats the last fparams.
struct VertexActivation {
  ops::graphcore::ActivationKind kind = ops::graphcore::ActivationKind::Relu;
  float alpha = 0, beta = 0, min = 0, max = 0;
  template <class Io>
  void members(Io& io) {
    io.param(kind), io.fparam(alpha), io.fparam(beta), io.fparam(min), io.fparam(max);
  }
  ops::graphcore::Activation activation() const { return {kind, alpha, beta, min, max}; }
};
inline VertexActivation vertexActivation(const ops::graphcore::Activation& a) {
  return {a.kind, static_cast<float>(a.alpha), static_cast<float>(a.beta), static_cast<float>(a.min), static_cast<float>(a.max)};
}

// Unary: fields [out, in]; out[i] = fn(in[i]) for i < count.
struct UnaryParams {
  static constexpr Codelet kCodelet = Codelet::Unary;
  ops::UnaryFn fn = ops::UnaryFn{};
  int64_t count = 0;
  template <class Io>
  void members(Io& io) {
    io.param(fn), io.param(count);
  }
};

// Binary: fields [out, a, b]; out[i] = fn(a, b) for the output elements begin + i, i < count, of
// an output of dims out_dims. Mode kAligned: the operand holds the `count` elements matching
// out[0..count). Mode kBroadcast: it holds operand elements from its base (0 without bases) on,
// read at the element offset its strides (0 on broadcast dims) give output index begin + i, less
// the base: at least broadcastSpan's elements.
//
// With row runs (which follow the bases): `rows` runs of `count` outputs, run r the output
// elements from begin + r * step on; out and aligned operands hold the runs one after another
// (rows x count elements); a broadcast operand's base grows by its skip from run to run (the
// elements between one run's reads and the next's that its buffer leaves out). A tile's piece of
// a MatMul's output is such rows (a piece of each row of a block), which a broadcast operand (an
// attention bias) would otherwise take a vertex each for.
struct OperandBases {
  int64_t a = 0, b = 0;
  template <class Io>
  void members(Io& io) {
    io.param(a), io.param(b);
  }
};
struct RowRuns {
  int64_t rows = 1, step = 0, a_skip = 0, b_skip = 0;
  template <class Io>
  void members(Io& io) {
    io.param(rows), io.param(step), io.param(a_skip), io.param(b_skip);
  }
};
struct BinaryParams {
  static constexpr Codelet kCodelet = Codelet::Binary;
  ops::BinaryFn fn = ops::BinaryFn::Add;
  int64_t count = 0;
  BinaryOperandMode a_mode = kAligned, b_mode = kAligned;
  int64_t begin = 0, rank = 0;
  std::span<const int64_t> out_dims, a_strides, b_strides;
  std::optional<OperandBases> bases;
  std::optional<RowRuns> row_runs;  // only with bases
  template <class Io>
  void members(Io& io) {
    io.param(fn), io.param(count), io.param(a_mode), io.param(b_mode), io.param(begin), io.param(rank);
    io.array(out_dims, rank), io.array(a_strides, rank), io.array(b_strides, rank), io.optional(bases), io.optional(row_runs);
  }
  int64_t rows() const { return row_runs ? row_runs->rows : 1; }
  int64_t step() const { return row_runs ? row_runs->step : 0; }
};

// MatMul: fields [out, a, b, bias?]; out = act(alpha * A x B + beta * bias), out rows x cols, A
// rows x K (K x rows if trans_a), B K x cols (cols x K if trans_b), bias by its mode.
enum BiasMode : int64_t { kBiasNone = 0, kBiasScalar = 1, kBiasRow = 2, kBiasColumn = 3, kBiasFull = 4 };
struct MatMulParams {
  static constexpr Codelet kCodelet = Codelet::MatMul;
  int64_t rows = 0, K = 0, cols = 0;
  bool trans_a = false, trans_b = false;
  BiasMode bias_mode = kBiasNone;
  float alpha = 1, beta = 1;
  std::optional<VertexActivation> act;
  template <class Io>
  void members(Io& io) {
    io.param(rows), io.param(K), io.param(cols), io.param(trans_a), io.param(trans_b), io.param(bias_mode);
    io.fparam(alpha), io.fparam(beta), io.optional(act);
  }
};

// Fill: fields [out]; `count` elements of the vertex's dtype (1, 2, 4 or 8 bytes) set to value.
struct FillParams {
  static constexpr Codelet kCodelet = Codelet::Fill;
  int64_t count = 0;
  float value = 0;
  template <class Io>
  void members(Io& io) {
    io.param(count), io.fparam(value);
  }
};

// ConvPartial: fields [out, in, weights, bias?]. A block of a Conv for one batch: `groups` groups
// side by side, each with in_channels input and out_channels output channels, over rank
// (0..kMaxWindowRank) spatial dims:
//   in  [groups * in_channels][in_dims...]    (a window of the input: the rows it needs)
//   weights [groups * out_channels][in_channels][kernel...], bias [groups * out_channels]
//   out [groups * out_channels][out_dims...]
//   out[g*oc + j][o] = act(bias[g*oc + j] + sum over c < in_channels and taps k of
//                          in[g*ic + c][starts + o*strides + k*dilations] * weights[g*oc + j][c][k])
// Taps outside [0, in_dims) read zero (padding is bounds, never stored); starts may be negative.
struct ConvPartialParams {
  static constexpr Codelet kCodelet = Codelet::ConvPartial;
  int64_t rank = 0, groups = 0, in_channels = 0, out_channels = 0;
  bool has_bias = false;
  std::span<const int64_t> in_dims, out_dims, kernel, strides, dilations, starts;
  std::optional<VertexActivation> act;
  template <class Io>
  void members(Io& io) {
    io.param(rank), io.param(groups), io.param(in_channels), io.param(out_channels), io.param(has_bias);
    io.array(in_dims, rank), io.array(out_dims, rank), io.array(kernel, rank), io.array(strides, rank);
    io.array(dilations, rank), io.array(starts, rank), io.optional(act);
  }
};

// Pool: fields [out, in]; in [channels][in_dims...], out [channels][out_dims...]. Each output
// pools the taps starts + o*strides + k*dilations inside [0, in_dims). Max: the largest (NaN
// wins; -inf for an empty window). Avg: the sum over the taps inside, divided by their number, or
// with count_include_pad by the number of taps before padded_ends (the end of the padded input).
enum PoolKind : int64_t { kPoolMax = 0, kPoolAvg = 1 };
struct PoolParams {
  static constexpr Codelet kCodelet = Codelet::Pool;
  int64_t rank = 0, channels = 0;
  PoolKind kind = kPoolMax;
  bool count_include_pad = false;
  std::span<const int64_t> in_dims, out_dims, kernel, strides, dilations, starts, padded_ends;
  template <class Io>
  void members(Io& io) {
    io.param(rank), io.param(channels), io.param(kind), io.param(count_include_pad);
    io.array(in_dims, rank), io.array(out_dims, rank), io.array(kernel, rank), io.array(strides, rank);
    io.array(dilations, rank), io.array(starts, rank), io.array(padded_ends, rank);
  }
};

// Activation: fields [out, in]; out[i] = act(in[i]) for i < count, as the ConvAct/GemmAct epilogue.
struct ActivationParams {
  static constexpr Codelet kCodelet = Codelet::Activation;
  int64_t count = 0;
  VertexActivation act;
  template <class Io>
  void members(Io& io) {
    io.param(count), act.members(io);
  }
};

// Reduce: fields [out, in]; in [outer][extent][inner], out [outer][inner]: each output reduces the
// extent elements of its column (accumulating in double, as the evaluator), then act (a Conv's
// partial sums, added up, get the ConvAct's epilogue).
struct ReduceParams {
  static constexpr Codelet kCodelet = Codelet::Reduce;
  ReduceKind kind = kReduceSum;
  int64_t outer = 0, extent = 0, inner = 0;
  std::optional<VertexActivation> act;
  template <class Io>
  void members(Io& io) {
    io.param(kind), io.param(outer), io.param(extent), io.param(inner), io.optional(act);
  }
};

// Softmax: fields [out, in], both [outer][extent][inner]: softmax (or log-softmax) along extent.
struct SoftmaxParams {
  static constexpr Codelet kCodelet = Codelet::Softmax;
  bool log = false;
  int64_t outer = 0, extent = 0, inner = 0;
  template <class Io>
  void members(Io& io) {
    io.param(log), io.param(outer), io.param(extent), io.param(inner);
  }
};

// Norm: fields [out, in, scale, bias?]; in and out are [rows][N], each row normalised by its own
// mean and biased variance, then scaled and shifted: by scale[N]/bias[N] (layer norm), or with
// per_row by scale[c]/bias[c], c = (row_begin + row) % channels (instance norm: `channels` values).
struct NormParams {
  static constexpr Codelet kCodelet = Codelet::Norm;
  int64_t rows = 0, N = 0;
  bool per_row = false;
  int64_t channels = 1, row_begin = 0;
  float epsilon = 0;
  template <class Io>
  void members(Io& io) {
    io.param(rows), io.param(N), io.param(per_row), io.param(channels), io.param(row_begin), io.fparam(epsilon);
  }
};

// BatchNorm: fields [out, in, scale, bias, mean, var]; inference batch norm of the elements
// begin..begin+count of an [N][channels][inner] tensor: out = (in - mean[c]) / sqrt(var[c] +
// epsilon) * scale[c] + bias[c], c = ((begin + i) / inner) % channels; the per-channel fields hold
// the c_count channels from c_first (all of them, or the slice the elements' channels fall in).
struct BatchNormParams {
  static constexpr Codelet kCodelet = Codelet::BatchNorm;
  int64_t count = 0, begin = 0, channels = 1, inner = 1, c_first = 0, c_count = 0;
  float epsilon = 0;
  template <class Io>
  void members(Io& io) {
    io.param(count), io.param(begin), io.param(channels), io.param(inner), io.param(c_first), io.param(c_count);
    io.fparam(epsilon);
  }
};

// Attention: fields [out, q, k, v, mask?]; q [rows][D], k [keys][D], v [keys][Dv], mask
// [rows][keys], out [rows][Dv]: out[i] = softmax_j(scale * q[i].k[j] + mask[i][j]) . v (one head
// of MultiHeadAttention).
struct AttentionParams {
  static constexpr Codelet kCodelet = Codelet::Attention;
  int64_t rows = 0, keys = 0, D = 0, Dv = 0;
  bool has_mask = false;
  float scale = 1;
  template <class Io>
  void members(Io& io) {
    io.param(rows), io.param(keys), io.param(D), io.param(Dv), io.param(has_mask), io.fparam(scale);
  }
};

// Cast: fields [out, in]; out in the vertex's dtype, in in in_dtype: float32 -> float16 (round to
// nearest even, beyond the range to infinity, NaN stays NaN) or float16 -> float32 (exact), as
// the evaluator's Cast; the only vertex whose fields have two dtypes.
struct CastParams {
  static constexpr Codelet kCodelet = Codelet::Cast;
  int64_t count = 0;
  DType in_dtype = DType::Float;
  template <class Io>
  void members(Io& io) {
    io.param(count), io.param(in_dtype);
  }
};

// CumSum: fields [out, in], both [outer][extent][inner]: the running sum along extent, from its
// end with `reverse`, each output leaving its own element out with `exclusive` (accumulating in
// double, as the evaluator).
struct CumSumParams {
  static constexpr Codelet kCodelet = Codelet::CumSum;
  bool exclusive = false, reverse = false;
  int64_t outer = 0, extent = 0, inner = 0;
  template <class Io>
  void members(Io& io) {
    io.param(exclusive), io.param(reverse), io.param(outer), io.param(extent), io.param(inner);
  }
};

// ElementwiseChain: fields [out, in, operands...]; out[i] = the steps applied in turn to in[i],
// each in float32 (a float16 vertex rounds only the result). Step k is program[3k..3k+2]:
// (kStepUnary, a UnaryFn, 0): v = fn(v); (kStepBinary, a BinaryFn, j): v = fn(v, s) for j > 0 and
// fn(s, v) for j < 0, s the one element of field 1 + |j|. The fused form of an elementwise op
// followed by others whose second operands are one value each (a dynamic quantizer's
// Div, Round, Max and Min by run-time scalars): one pass, not a superstep an op.
enum ChainStepKind : int64_t { kStepUnary = 0, kStepBinary = 1 };
using ops::graphcore::kMaxChainSteps;  // the op's cap on its steps
struct ElementwiseChainParams {
  static constexpr Codelet kCodelet = Codelet::ElementwiseChain;
  int64_t count = 0, steps = 0;
  std::span<const int64_t> program;  // 3 x steps
  template <class Io>
  void members(Io& io) {
    io.param(count), io.param(steps), io.array(program, 3 * std::clamp<int64_t>(steps, 0, kMaxChainSteps));
  }
};

}  // namespace poprt::exec
