// The sum of a Reduce vertex's rows: a split conv's partial sums, most Reduce vertices there are
// (yolox_nano: 28,000 a run, 40% of its codelet time before this).
#pragma once

#include <cstdint>

#include "lib/support/simd_isa.h"

namespace poprt::sim {

// out[i] = float(rows[0][i] + rows[1][i] + ... + rows[count - 1][i]) for i < n, row e at
// rows + e * n, summed in double from zero in row order, as the evaluator's ReduceSum: the same bits
// on every CPU. AVX-512 keeps up to four vectors of 8 sums in registers across the rows, AVX2 up to
// eight of 4; elsewhere a loop does the same sums.
void sumRows(const float* rows, int64_t count, int64_t n, float* out);
// The same with row e at rows[e] (a Reduce reading its partial sums where the exchange's sources
// hold them): the same bits.
void sumRows(const float* const* rows, int64_t count, int64_t n, float* out);
// The same under a given instruction set (one of availableSimdIsas()).
void sumRowsWith(SimdIsa isa, const float* rows, int64_t count, int64_t n, float* out);
void sumRowsWith(SimdIsa isa, const float* const* rows, int64_t count, int64_t n, float* out);
// acc[i] += rows[e * n + i] for each row e in turn, vectorised per CPU: sumRows' portable way, and
// Mean's and LogSum's sums, which go on from acc.
void addRows(double* acc, const float* rows, int64_t count, int64_t n);

}  // namespace poprt::sim
