// The float32 matrix product of the simulator's ConvPartial and MatMul codelets, and of the
// reference evaluator's float32 sums (the fp16 range check: EvalContext::setFloat32Sums).
#pragma once

#include <cstdint>

#include "lib/support/simd_isa.h"

namespace poprt {

// out [M x N] (row stride ldo) = a [M x K] (rows contiguous) x b [K x N] (row stride ldb).
// Each output sums its K products in order, from zero, with fused multiply-adds: exactly rounded,
// so every target (AVX-512, AVX2 and the portable scalar build, whose fmaf is exact too) computes
// the same bits, and an output does not depend on its place in the block.
void gemm(const float* a, int64_t M, int64_t K, const float* b, int64_t ldb, int64_t N, float* out, int64_t ldo);
// The same with row k of b at b[k] (columns [first, first + N) of each), rows anywhere.
void gemmRows(const float* a, int64_t M, int64_t K, const float* const* b, int64_t first, int64_t N, float* out, int64_t ldo);

// One of several independent dot products that dotChains sums together: K weights at a (in a
// row), and the values they multiply read from b at the places the tap runs say.
struct DotChain {
  const float* a;
  const float* b;
  float* out;
};
// `count` taps reading b at consecutive places from `at` on (a's next `count` weights).
struct TapRun {
  int64_t at, count;
};
// *out = the sum over the runs' taps of a[t] * b[place of t], each chain in tap order from zero
// with fused multiply-adds, as gemm sums: the same bits as gemm over the same products. Chains run
// eight at a time, interleaved: a long sum over few outputs (an STFT's 512 taps over two frames)
// is a chain of dependent adds that one at a time waits on each, and the vertices of a run give
// many such sums.
void dotChains(const DotChain* chains, int64_t n, const TapRun* runs, int64_t n_runs);

// Under a given instruction set (one of availableSimdIsas()); gemm runs the best.
void gemmWith(SimdIsa isa, const float* a, int64_t M, int64_t K, const float* b, int64_t ldb, int64_t N, float* out, int64_t ldo);
void gemmRowsWith(SimdIsa isa, const float* a, int64_t M, int64_t K, const float* const* b, int64_t first, int64_t N, float* out,
                  int64_t ldo);
void dotChainsWith(SimdIsa isa, const DotChain* chains, int64_t n, const TapRun* runs, int64_t n_runs);

}  // namespace poprt
