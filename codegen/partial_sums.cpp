#include "codegen/partial_sums.h"

#include <algorithm>

#include "codegen/lowering.h"
#include "lib/exec/vertex_params.h"

namespace poprt::codegen {

void reducePartials(Lowering& l, const std::vector<std::pair<uint32_t, uint64_t>>& partials, int64_t count, int64_t row,
                    DType dtype, const std::optional<exec::VertexActivation>& act,
                    const std::function<void(int64_t first, int64_t len, uint32_t tile, uint64_t offset)>& place) {
  const auto parts = static_cast<int64_t>(partials.size());
  const int64_t slice = reductionSlice(count, parts, row);
  const uint64_t es = dtypeSize(dtype);
  for (int64_t j = 0; j < parts && j * slice < count; ++j) {
    const int64_t first = j * slice, len = std::min(slice, count - first);
    const uint32_t t = partials[static_cast<size_t>(j)].first;
    const uint64_t part_bytes = static_cast<uint64_t>(len) * kPartialBytes;
    // Every partial's slice, side by side.
    const uint64_t sums = l.scratch(t, part_bytes * static_cast<uint64_t>(parts));
    for (int64_t i = 0; i < parts; ++i) {
      const auto& [src_tile, src_off] = partials[static_cast<size_t>(i)];
      l.exchange().copies.push_back({src_tile, src_off + static_cast<uint64_t>(first) * kPartialBytes, t,
                                     sums + static_cast<uint64_t>(i) * part_bytes, part_bytes});
    }
    const uint64_t out_bytes = static_cast<uint64_t>(len) * es;
    const uint64_t out_off = l.allocator().allocate(t, out_bytes);
    l.computeSet().vertices.push_back(exec::makeVertex(
        t, dtype, {{out_off, out_bytes}, {sums, part_bytes * static_cast<uint64_t>(parts), partialFieldDtype(dtype)}},
        exec::ReduceParams{exec::kReduceSum, 1, parts, len, act}));
    place(first, len, t, out_off);
  }
}

}  // namespace poprt::codegen
