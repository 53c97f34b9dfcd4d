#include "codegen/conv_planner.h"

#include <algorithm>
#include <cmath>

namespace poprt::codegen {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t product(const std::vector<int64_t>& v, size_t first) {
  int64_t p = 1;
  for (size_t i = first; i < v.size(); ++i) p *= v[i];
  return p;
}

// The distinct block sizes ceil(n / k) for k = 1..n, largest first (about 2·sqrt(n) of them).
std::vector<int64_t> blockSizes(int64_t n) {
  std::vector<int64_t> sizes;
  for (int64_t k = 1; k <= n;) {
    const int64_t v = ceilDiv(n, k);
    sizes.push_back(v);
    if (v == 1) break;
    k = ceilDiv(n, v - 1);  // the first k whose block size is below v
  }
  return sizes;
}

constexpr double kVertexCycles = 20;  // per vertex, as the codelets estimate it
constexpr double kExchangeBytesPerCycle = 4;
constexpr double kVectorWidth = 2;  // float32 elements per cycle for the epilogue and pooling
// Plans within 150 cycles (about one sync) of the fastest count as equally fast; among those the
// planner takes the cheapest to simulate, a vertex costing the simulator about as much as
// receiving 2 KB. Only small convs have such near ties: resnet20_cifar's simulation ran 1.5x
// faster for the same estimate, light_resnet50's estimate moved by 1%.
constexpr double kNearTieCycles = 150;
constexpr double kSimVertexBytes = 2048;

}  // namespace

int64_t convInputRows(const ConvProblem& p, int64_t rows) {
  if (p.in.empty()) return 1;
  const int64_t extent = (rows - 1) * p.strides[0] + (p.kernel[0] - 1) * p.dilations[0] + 1;
  return std::max<int64_t>(0, std::min(p.in[0], extent));
}

uint64_t convBlockBytes(const ConvProblem& p, int64_t group_block, int64_t channel_block, int64_t row_block,
                        int64_t in_channel_block) {
  const int64_t in = group_block * in_channel_block * convInputRows(p, row_block) * product(p.in, 1);
  const int64_t out_ch = group_block * channel_block;
  const int64_t weights = p.has_weights ? out_ch * in_channel_block * product(p.kernel, 0) : 0;
  const int64_t bias = p.has_bias ? out_ch : 0;
  const int64_t out = out_ch * row_block * product(p.out, 1);
  const auto e = static_cast<uint64_t>(p.element_bytes);
  if (in_channel_block == p.in_channels) return e * static_cast<uint64_t>(in + weights + bias + out);
  // Split: the output is float32 partial sums, and the block's tile also adds up a slice of the
  // block: every split's partials of it, and the slice it writes.
  const int64_t splits = ceilDiv(p.in_channels, in_channel_block), slice = reductionSlice(out, splits);
  return e * static_cast<uint64_t>(in + weights + bias + slice) + kPartialBytes * static_cast<uint64_t>(out + splits * slice);
}

ConvPlan planConv(const ConvProblem& p, uint32_t tiles, uint64_t budget_bytes, uint32_t macs_per_cycle, uint32_t sync_cycles) {
  ConvPlan best;
  const int64_t rows = p.out.empty() ? 1 : p.out[0];
  if (p.batch <= 0 || p.groups <= 0 || p.out_channels <= 0 || rows <= 0 || product(p.out, 1) <= 0) {
    best.fits = true;  // an empty output: nothing to place
    return best;
  }
  const int64_t tile_count = std::max<int64_t>(1, tiles);
  const double kernel = static_cast<double>(product(p.kernel, 0));
  const double inner_out = static_cast<double>(product(p.out, 1));
  const auto element_bytes = static_cast<double>(p.element_bytes);
  // Channel splits: part of one group's output channels, or whole groups.
  std::vector<std::pair<int64_t, int64_t>> channel_splits;  // (group_block, channel_block)
  for (int64_t cb : blockSizes(p.out_channels))
    if (cb < p.out_channels) channel_splits.emplace_back(1, cb);
  for (int64_t gb : blockSizes(p.groups)) channel_splits.emplace_back(gb, p.out_channels);
  // Input-channel blocks: all channels, or a share of them (one group only, at most kMaxInputSplits shares).
  std::vector<int64_t> in_blocks{p.in_channels};
  if (p.split_inputs && p.groups == 1 && p.has_weights)
    for (int64_t ib : blockSizes(p.in_channels))
      if (ib < p.in_channels && ceilDiv(p.in_channels, ib) <= kMaxInputSplits) in_blocks.push_back(ib);
  struct Candidate {
    ConvPlan plan;
    double sim_cost, weight_copies;
  };
  std::vector<Candidate> candidates;  // the plans that fit
  bool have = false;
  double best_copies = 0;
  for (int64_t rb : blockSizes(rows)) {
    const int64_t row_blocks = ceilDiv(rows, rb);
    for (auto [gb, cb] : channel_splits) {
      const int64_t channel_blocks = cb < p.out_channels ? p.groups * ceilDiv(p.out_channels, cb) : ceilDiv(p.groups, gb);
      for (int64_t ib : in_blocks) {
        const int64_t splits = ceilDiv(p.in_channels, ib);
        const int64_t blocks = p.batch * channel_blocks * row_blocks * splits;
        const int64_t per_tile = ceilDiv(blocks, tile_count);
        const uint64_t block_bytes = convBlockBytes(p, gb, cb, rb, ib);
        const uint64_t bytes = static_cast<uint64_t>(per_tile) * block_bytes;
        const double outputs = static_cast<double>(gb * cb * rb) * inner_out;
        const double compute =
            p.has_weights
                ? outputs * static_cast<double>(ib) * kernel / std::max<uint32_t>(1, macs_per_cycle) + outputs / kVectorWidth
                : outputs * (kernel + 1) / kVectorWidth;
        // Everything but the output and the reduction counts as received: resident weights move
        // only once, but counting them keeps the copies of a weight (and its tile memory) few.
        const double window = static_cast<double>(gb * ib * convInputRows(p, rb)) * static_cast<double>(product(p.in, 1));
        const double received =
            element_bytes * (window + static_cast<double>(p.has_weights ? gb * cb * ib * product(p.kernel, 0) : 0) +
                             static_cast<double>(p.has_bias ? gb * cb : 0));
        double cycles = static_cast<double>(per_tile) * (kVertexCycles + compute + received / kExchangeBytesPerCycle);
        if (splits > 1) {  // each tile adds up a slice of its block's output: the other partials come to it
          // in a step of its own: an exchange and a compute set, each ending in a sync.
          const double slice = static_cast<double>(reductionSlice(gb * cb * rb * product(p.out, 1), splits));
          cycles += 2.0 * sync_cycles + static_cast<double>(per_tile) *
                                            (kVertexCycles + slice * static_cast<double>(splits) / kVectorWidth +
                                             kPartialBytes * slice * static_cast<double>(splits - 1) / kExchangeBytesPerCycle);
        }
        const bool fits = bytes <= budget_bytes;
        // What the simulator spends on the plan: every block's vertex, the window it receives,
        // the im2col matrix it builds from it and the partial sums it sends.
        const double im2col =
            kernel > 1 ? 4.0 * static_cast<double>(gb * ib) * kernel * static_cast<double>(rb) * inner_out : 0.0;
        const double partials = splits > 1 ? 4.0 * outputs : 0.0;
        const double sim_cost = static_cast<double>(blocks) * (kSimVertexBytes + 4.0 * window + im2col + partials);
        // The weight copies the blocks keep resident: tile memory held for the whole run.
        const double weight_copies = static_cast<double>(blocks) * static_cast<double>(gb * cb * ib) * kernel;
        if (fits)
          candidates.push_back({{gb, cb, rb, ib, splits, blocks, per_tile, bytes, cycles, fits}, sim_cost, weight_copies});
        bool better;
        if (!have) {
          better = true;
        } else if (fits != best.fits) {
          better = fits;
        } else if (fits) {
          better = cycles < best.cycles || (cycles == best.cycles && bytes < best.bytes_per_tile);
        } else {
          better = bytes < best.bytes_per_tile;
        }
        if (better) {
          have = true;
          best = {gb, cb, rb, ib, splits, blocks, per_tile, bytes, cycles, fits};
          best_copies = weight_copies;
        }
      }
    }
  }
  // Among the plans nearly as fast as the best on the IPU, the cheapest to simulate: small convs
  // spread over every tile save a few cycles but cost the simulator a vertex per sliver.
  // They may not keep more weight copies than the fastest plan: that memory adds up over the layers.
  if (best.fits) {
    const double limit = best.cycles + kNearTieCycles;
    double cheapest = -1;
    for (const Candidate& c : candidates)
      if (c.plan.cycles <= limit && c.weight_copies <= best_copies && (cheapest < 0 || c.sim_cost < cheapest)) {
        cheapest = c.sim_cost;
        best = c.plan;
      }
  }
  return best;
}

}  // namespace poprt::codegen
