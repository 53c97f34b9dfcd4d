// How a convolution or pooling is split over tiles: a pure function of its sizes, the tile count
// and the memory budget per tile, so tests can check every plan stays within tile memory.
//
// The output is split over batch x channel blocks x row blocks (rows of the first spatial dim).
// A channel block is either part of one group's output channels or several whole groups (so
// depthwise convolutions and pools, one channel per group, bundle many channels per block). Each
// block is one vertex: it holds the input rows its windows read (the halo included, padding not
// stored), for the input channels of its groups; its weights and bias; and its output.
#pragma once

#include <cstdint>
#include <vector>

namespace poprt::codegen {

struct ConvProblem {
  int64_t batch = 1;
  int64_t groups = 1;
  int64_t in_channels = 1;   // per group
  int64_t out_channels = 1;  // per group
  std::vector<int64_t> in, out, kernel, strides, dilations;  // spatial dims (rank 0..3)
  bool has_weights = true;  // false for pooling: no weights, one channel per group
  bool has_bias = false;
};

struct ConvPlan {
  int64_t group_block = 1;    // whole groups per block (> 1 only when channel_block == out_channels)
  int64_t channel_block = 1;  // output channels of one group per block
  int64_t row_block = 1;      // output rows (of the first spatial dim) per block
  int64_t blocks = 0;         // batch x channel blocks x row blocks
  int64_t blocks_per_tile = 0;
  uint64_t bytes_per_tile = 0;  // blocks_per_tile x convBlockBytes of the largest block
  double cycles = 0;            // estimated cycles of the busiest tile: its multiply-accumulates and the bytes it receives
  bool fits = false;            // bytes_per_tile <= the budget
};

// The input rows (of the first spatial dim) a block of `rows` output rows reads at most.
int64_t convInputRows(const ConvProblem& p, int64_t rows);
// Bytes of one block's vertex: its input window, weights, bias and output (float32).
uint64_t convBlockBytes(const ConvProblem& p, int64_t group_block, int64_t channel_block, int64_t row_block);
// The plan with the fewest estimated cycles among those within `budget_bytes` per tile; if none
// fits, the smallest one with fits = false.
ConvPlan planConv(const ConvProblem& p, uint32_t tiles, uint64_t budget_bytes, uint32_t macs_per_cycle = 16);

}  // namespace poprt::codegen
