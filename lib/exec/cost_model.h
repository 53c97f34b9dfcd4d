// The one cost model of a target: the cycles the planners choose a plan by (codegen) and the
// estimate popef-run reports (sim: each vertex's cycles, each step's exchange and sync) are these
// functions over exec::Target's rates, so a plan is chosen under the costs it is reported at.
// Calibration: docs/COST_MODEL.md.
#pragma once

#include <algorithm>
#include <cstdint>

#include "lib/exec/executable.h"

namespace poprt::exec {

class CostModel {
 public:
  // Costs of work on `dtype` data: float16 runs the AMP at its fp16 rate and fills vectors twice
  // as wide (the other dtypes cost as float32).
  explicit CostModel(const Target& target, DType dtype = DType::Float)
      : target_(&target),
        half_(dtype == DType::Float16),
        macs_per_cycle_(std::max<uint32_t>(1, half_ ? target.fp16_macs_per_cycle : target.fp32_macs_per_cycle)),
        vector_width_(std::max<uint32_t>(1, target.vector_width_fp32 * (half_ ? 2 : 1))) {}

  static constexpr uint64_t kVertexOverheadCycles = 20;  // a vertex's call, field loads and loop setup
  static constexpr uint64_t kRowOverheadCycles = 4;      // a 2-D vertex's outer loop: a row's pointers and count

  // Multiply-accumulates on one tile's AMP.
  uint64_t macCycles(uint64_t macs) const { return ceilDiv(macs, macs_per_cycle_); }
  // Elementwise work on `elements`, `per_vector` cycles for each vector of them.
  uint64_t vectorCycles(uint64_t elements, uint64_t per_vector = 1) const {
    return per_vector * ceilDiv(elements, vector_width_);
  }
  // Bytes one tile receives (or sends) in an exchange.
  uint64_t exchangeCycles(uint64_t bytes) const {
    return ceilDiv(bytes, std::max<uint32_t>(1, target_->exchange_bytes_per_cycle));
  }
  // An exchange some of whose bytes cross IPU links: the slower of its tiles' exchange cycles and
  // the busiest link's bytes, then the cross-IPU sync and link latency.
  uint64_t linkedExchangeCycles(uint64_t tile_cycles, uint64_t busiest_link_bytes) const {
    return std::max(tile_cycles, ceilDiv(busiest_link_bytes, std::max<uint32_t>(1, target_->link_bytes_per_cycle))) +
           target_->link_latency_cycles;
  }
  // Bytes a vertex writes without computing them (a Fill): 8 bytes a cycle.
  static uint64_t storeCycles(uint64_t bytes) { return ceilDiv(bytes, 8); }
  // One BSP sync: every device step pays it, a split reduction's extra superstep too.
  uint64_t syncCycles() const { return target_->sync_cycles; }

  // The same rates unrounded, for planners that weigh fractional shares of a tile's work.
  double macsPerCycle() const { return macs_per_cycle_; }
  double vectorWidth() const { return vector_width_; }
  double exchangeBytesPerCycle() const { return std::max<uint32_t>(1, target_->exchange_bytes_per_cycle); }
  const Target& target() const { return *target_; }

 private:
  static uint64_t ceilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }
  const Target* target_;  // outlives the model
  bool half_;
  uint32_t macs_per_cycle_, vector_width_;
};

}  // namespace poprt::exec
