// How a convolution or pooling is split over tiles: a pure function of its sizes, the tile count
// and the memory budget per tile, so tests can check every plan stays within tile memory.
//
// The output is split over batch x channel blocks x row blocks (rows of the first spatial dim).
// A channel block is either part of one group's output channels or several whole groups (so
// depthwise convolutions and pools, one channel per group, bundle many channels per block). Each
// block is one vertex: it holds the input rows its windows read (the halo included, padding not
// stored), for the input channels of its groups; its weights and bias; and its output.
//
// With `split_inputs` (one group), the input channels may be split too, as Poplar's planner does:
// each block then sums its share of the input channels into partial sums, and a second superstep
// adds each output block's `in_splits` partials, every tile that made one adding a slice. Late
// layers (few pixels, many channels) would otherwise copy the whole input window to every
// channel block's tile: the split trades that copy for the smaller partial sums.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/partial_sums.h"

namespace poprt::codegen {

struct ConvProblem {
  int64_t batch = 1;
  int64_t groups = 1;
  int64_t in_channels = 1;                                   // per group
  int64_t out_channels = 1;                                  // per group
  std::vector<int64_t> in, out, kernel, strides, dilations;  // spatial dims (rank 0..3)
  bool has_weights = true;                                   // false for pooling: no weights, one channel per group
  bool has_bias = false;
  bool split_inputs = false;  // the input channels may be split (partial sums reduced after)
  int64_t element_bytes = 4;  // of the input, weights, bias and output; partial sums are float32
};

struct ConvPlan {
  int64_t group_block = 1;       // whole groups per block (> 1 only when channel_block == out_channels)
  int64_t channel_block = 1;     // output channels of one group per block
  int64_t row_block = 1;         // output rows (of the first spatial dim) per block
  int64_t in_channel_block = 1;  // input channels per block (all of them unless split)
  int64_t in_splits = 1;         // input channel blocks: the partial sums each output adds up
  int64_t blocks = 0;            // batch x channel blocks x row blocks x in_splits
  int64_t blocks_per_tile = 0;
  uint64_t bytes_per_tile = 0;  // blocks_per_tile x convBlockBytes of the largest block
  double cycles = 0;            // estimated cycles of the busiest tile: its multiply-accumulates and the bytes it receives
  bool fits = false;            // bytes_per_tile <= the budget
};

// The input rows (of the first spatial dim) a block of `rows` output rows reads at most.
int64_t convInputRows(const ConvProblem& p, int64_t rows);
// Bytes of one block's vertex: its input window, weights, bias and output; with its
// input channels split (in_channel_block < in_channels), also its slice of the reduction: the
// partial sums it gathers and the output it writes.
uint64_t convBlockBytes(const ConvProblem& p, int64_t group_block, int64_t channel_block, int64_t row_block,
                        int64_t in_channel_block);
// The largest input-channel split the planner tries: more partials cost more reduction than the
// input copies they save on ResNet-sized layers.
inline constexpr int64_t kMaxInputSplits = 64;
// The plan with the fewest estimated cycles among those within `budget_bytes` per tile; if none
// fits, the smallest one with fits = false.
// Compute is priced at the float32 rates whatever the dtype (docs/COST_MODEL.md, "The planners"),
// bytes at the dtype's size; `sync_cycles` is the target's sync.
ConvPlan planConv(const ConvProblem& p, uint32_t tiles, uint64_t budget_bytes, uint32_t macs_per_cycle = 16,
                  uint32_t sync_cycles = 200);

}  // namespace poprt::codegen
