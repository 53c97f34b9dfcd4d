// The vertex layouts of each codelet: the contract between codegen (which emits vertices) and the
// simulator (which checks and runs them). Fields are tile-memory byte ranges; all data float32
// (Fill: any fixed-size dtype; Cast: float32 and float16). Multi-dim buffers are row-major.
// A vertex of dtype float16 holds every field in binary16 (sizes in the layouts below are then 2
// bytes per element): the simulator computes in float32 and rounds each output to float16, the
// fp16-storage / fp32-accumulation of the IPU's AMP and reductions.
#pragma once

#include <algorithm>
#include <cstdint>

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

// Unary:  fields [out, in]                 params [fn (ops::UnaryFn), count]
// Binary: fields [out, a, b]               params [fn (ops::BinaryFn), count, a_mode, b_mode, begin, rank,
//                                                  out_dims[rank], a_strides[rank], b_strides[rank],
//                                                  (a_base, b_base)?]
//         mode kAligned: the buffer holds the `count` operand elements matching out[0..count);
//         mode kBroadcast: the buffer holds operand elements from `base` (0 without the bases) on,
//         read at the element offset given by its strides (0 on broadcast dims) from the output
//         index begin + i, less `base`: at least broadcastSpan's elements.
// MatMul: fields [out, a, b, bias?]        params [rows, K, cols, trans_a, trans_b, bias_mode]
//                                           fparams [alpha, beta]
//         out = alpha * A x B + beta * bias, out is rows x cols; A is rows x K (K x rows if trans_a);
//         B is K x cols (cols x K if trans_b); bias by mode (kBias*). An optional 7th param is an
//         activation applied last (ops::graphcore::ActivationKind) with fparams [.., alpha, beta, min, max].
// Fill:   fields [out]                      params [count]  fparams [value]   (any dtype of 1, 2, 4
//         or 8 bytes; the value is converted to the vertex's dtype)
// Cast:   fields [out, in]                 params [count, in_dtype]
//         out in the vertex's dtype, in in in_dtype (a DType value): float32 -> float16 (round to
//         nearest even, beyond the range to infinity, NaN stays NaN) or float16 -> float32 (exact),
//         as the evaluator's Cast; the only vertex whose fields have two dtypes.
// ConvPartial: fields [out, in, weights, bias?]
//         params [rank, groups, in_channels, out_channels, has_bias, in_dims[rank], out_dims[rank],
//                 kernel[rank], strides[rank], dilations[rank], starts[rank]] (+ activation?)
//         fparams [] (or [alpha, beta, min, max] with the activation)
//         A block of a Conv for one batch: `groups` groups side by side, each with `in_channels`
//         input and `out_channels` output channels. rank is 0..3 (kMaxWindowRank) spatial dims.
//         in  is [groups * in_channels][in_dims...]   (a window of the input: the rows it needs)
//         weights is [groups * out_channels][in_channels][kernel...]
//         out is [groups * out_channels][out_dims...], bias is [groups * out_channels].
//         out[g*oc + j][o] = bias[g*oc + j] + sum over c < in_channels and taps k of
//             in[g*ic + c][starts + o*strides + k*dilations] * weights[g*oc + j][c][k]
//         where taps outside [0, in_dims) read zero (padding is handled by bounds, never stored).
//         starts may be negative (begin padding, or a row block starting above the rows held).
//         An optional last param is an activation (ops::graphcore::ActivationKind) applied to
//         each output, with fparams [alpha, beta, min, max] as for MatMul.
// Pool:   fields [out, in]
//         params [rank, channels, kind (kPoolMax/kPoolAvg), count_include_pad, in_dims[rank],
//                 out_dims[rank], kernel[rank], strides[rank], dilations[rank], starts[rank],
//                 padded_ends[rank]]
//         in is [channels][in_dims...], out is [channels][out_dims...]; each output pools the taps
//         starts + o*strides + k*dilations that fall inside [0, in_dims). Max: the largest (NaN
//         wins; -inf for an empty window). Avg: the sum divided by the number of taps inside, or
//         with count_include_pad by the number of taps before padded_ends (the end of the padded
//         input in the same coordinates) in each dim.
// Activation: fields [out, in]           params [count, kind (ops::graphcore::ActivationKind)]
//         fparams [alpha, beta, min, max]   out = act(in), as the ConvAct/GemmAct epilogue.
// Reduce: fields [out, in]                 params [kind (ReduceKind), outer, extent, inner]
//         in is [outer][extent][inner], out is [outer][inner]: each output reduces the `extent`
//         elements of its column (accumulating in double, as the evaluator). An optional 5th param
//         is an activation (ops::graphcore::ActivationKind, with fparams [alpha, beta, min, max])
//         applied to each output: a Conv's partial sums, added up, get the ConvAct's epilogue.
// Softmax: fields [out, in]                params [log (0/1), outer, extent, inner]
//         out has in's shape [outer][extent][inner]; softmax (or log-softmax) along extent.
// Norm:   fields [out, in, scale, bias?]   params [rows, N, per_row (0/1), channels, row_begin]
//         fparams [epsilon]   in and out are [rows][N]; each row is normalised by its own mean
//         and biased variance, then scaled and shifted: per_row 0 by scale[N]/bias[N] (layer
//         norm), per_row 1 by scale[c]/bias[c] with c = (row_begin + row) % channels
//         (instance norm; scale and bias hold `channels` values).
// BatchNorm: fields [out, in, scale, bias, mean, var]
//         params [count, begin, channels, inner, c_first, c_count]   fparams [epsilon]
//         inference batch norm of elements begin..begin+count of an [N][channels][inner] tensor:
//         out = (in - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c] with
//         c = ((begin + i) / inner) % channels; the per-channel fields hold the c_count channels
//         from c_first (all of them, or the slice the elements' channels fall in).
// Attention: fields [out, q, k, v, mask?]  params [rows, keys, D, Dv, has_mask]  fparams [scale]
//         q is [rows][D], k [keys][D], v [keys][Dv], mask [rows][keys], out [rows][Dv]:
//         out[i] = softmax_j(scale * q[i].k[j] + mask[i][j]) . v  (one head of MultiHeadAttention).
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
enum BiasMode : int64_t { kBiasNone = 0, kBiasScalar = 1, kBiasRow = 2, kBiasColumn = 3, kBiasFull = 4 };
enum PoolKind : int64_t { kPoolMax = 0, kPoolAvg = 1 };
inline constexpr int64_t kMaxWindowRank = 3;                   // spatial dims of ConvPartial and Pool vertices
inline constexpr int64_t kMaxWindowExtent = int64_t{1} << 24;  // cap on each dim, kernel, stride, dilation
inline constexpr int64_t kMaxWindowStart = int64_t{1} << 40;   // cap on |starts| and padded_ends

}  // namespace poprt::exec
