// How a matmul is split over tiles: a pure function of its sizes, the tile count and the memory
// budget per tile, so tests can check every plan stays within tile memory.
#pragma once

#include <cstdint>

namespace poprt::codegen {

struct MatMulPlan {
  int64_t row_blocks = 1, col_blocks = 1;  // per batch
  int64_t rows = 0, cols = 0;              // size of the largest block
  uint64_t bytes_per_tile = 0;             // A block + B block + output (+ bias bound)
  bool fits = false;
};

// elem_bytes: the size of an operand element (4 for float32, 2 for float16).
MatMulPlan planMatMul(int64_t batches, int64_t M, int64_t K, int64_t N, uint32_t tiles, uint64_t budget_bytes,
                      uint64_t elem_bytes = 4);

}  // namespace poprt::codegen
