// The simulator's matrix product, shared by the ConvPartial and MatMul codelets.
#pragma once

#include <cstdint>
#include "sim/simd_isa.h"

namespace poprt::sim {

// out [M x N] (row stride ldo) = a [M x K] (rows contiguous) x b [K x N] (row stride ldb).
// Each output sums its K products in order, from zero, with fused multiply-adds: exactly rounded,
// so every target (AVX-512, AVX2 and the portable scalar build, whose fmaf is exact too) computes
// the same bits, and an output does not depend on its place in the block.
void gemm(const float* a, int64_t M, int64_t K, const float* b, int64_t ldb, int64_t N, float* out, int64_t ldo);
// The same with row k of b at b[k] (columns [0, N) of each), rows anywhere.
void gemmRows(const float* a, int64_t M, int64_t K, const float* const* b, int64_t N, float* out, int64_t ldo);

// Under a given instruction set (one of availableSimdIsas()); gemm runs the best.
void gemmWith(SimdIsa isa, const float* a, int64_t M, int64_t K, const float* b, int64_t ldb, int64_t N, float* out, int64_t ldo);
void gemmRowsWith(SimdIsa isa, const float* a, int64_t M, int64_t K, const float* const* b, int64_t N, float* out, int64_t ldo);

}  // namespace poprt::sim
