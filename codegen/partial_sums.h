// Split matmuls and convs (K or the input channels over several tiles) leave partial sums, one
// float32 buffer per tile that made one; a second superstep adds them up, every such tile adding
// an equal slice of all of them, as Poplar's reductions do.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "lib/exec/codelets.h"
#include "lib/support/dtype.h"

namespace poprt::codegen {

class Lowering;

// How many of `outputs` sums each of `splits` reducing tiles adds up. The planners' costs and
// memory and reducePartials' slices all use it. Outputs in rows of `row` (a matmul block's
// columns) are sliced into whole rows when that makes a slice at most a quarter bigger: the
// elementwise ops that read the sums with a bias over the columns then find whole rows on each
// tile, one vertex there, not three for a partial first row, the middle and a partial last.
inline int64_t reductionSlice(int64_t outputs, int64_t splits, int64_t row = 1) {
  const int64_t even = (outputs + splits - 1) / splits;
  if (row <= 1 || outputs % row != 0) return even;
  const int64_t whole = (outputs / row + splits - 1) / splits * row;
  return whole * 4 <= even * 5 ? whole : even;
}

// Bytes of one partial sum: float32 whatever the node's dtype (float16 vertices write them through
// float32 fields, exec::Field).
inline constexpr uint64_t kPartialBytes = 4;

// The field dtype of partial sums in a vertex of `dtype` (Undefined when that is float32 already).
inline DType partialFieldDtype(DType dtype) { return dtype == DType::Float ? DType::Undefined : DType::Float; }

// In the current superstep (the caller begins it after the one that made the partials): adds up
// `count` sums (rows of `row`) from each (tile, offset) of `partials`, each tile a slice of them
// (reductionSlice), applies the activation (or none) and writes the slice in `dtype`;
// place(first, len, tile, offset) says where sums [first, first + len) went.
void reducePartials(Lowering& l, const std::vector<std::pair<uint32_t, uint64_t>>& partials, int64_t count, int64_t row,
                    DType dtype, const std::optional<exec::VertexActivation>& act,
                    const std::function<void(int64_t first, int64_t len, uint32_t tile, uint64_t offset)>& place);

}  // namespace poprt::codegen
