// How a matmul is split over tiles: a pure function of its sizes, the tile count and the memory
// budget per tile, so tests can check every plan stays within tile memory.
#pragma once

#include <cstdint>

namespace poprt::codegen {

struct MatMulPlan {
  int64_t row_blocks = 1, col_blocks = 1;  // per batch
  int64_t rows = 0, cols = 0;              // size of the largest block
  // K split in k_splits blocks of at most k_block: each output block is then k_splits vertices on
  // as many tiles, writing float32 partial sums that a second superstep adds up (partial_sums.h).
  int64_t k_splits = 1, k_block = 0;
  // A block + B block + output (+ bias bound); split: + the partials and a slice of the reduction.
  uint64_t bytes_per_tile = 0;
  double cycles = 0;  // the busiest tile's estimated multiply-accumulates, exchange and reduction
  bool fits = false;
};

// The most K blocks the planner tries: Poplar's planner splits K too, as far as the reduction pays.
inline constexpr int64_t kMaxKSplits = 16;

// The bytes of one block's vertex (see MatMulPlan::bytes_per_tile).
uint64_t matMulBlockBytes(int64_t rows, int64_t k_block, int64_t cols, int64_t k_splits, uint64_t elem_bytes);

// elem_bytes: the size of an operand element (4 for float32, 2 for float16).
MatMulPlan planMatMul(int64_t batches, int64_t M, int64_t K, int64_t N, uint32_t tiles, uint64_t budget_bytes,
                      uint64_t elem_bytes = 4);

}  // namespace poprt::codegen
