#include "sim/execution_plan.h"

#include "sim/shared_weights.h"
#include "sim/tile_arena.h"

namespace poprt::sim {

ExecutionPlan makeExecutionPlan(const exec::Executable& exe) {
  const std::vector<uint64_t> tile_offsets = TileArena::layout(exe.tile_bytes);
  ExecutionPlan plan;
  plan.exe = &exe;
  resolveVertexFields(exe, tile_offsets, plan);
  plan.params.reserve(plan.sets.size());
  for (const auto& vertices : plan.sets) {
    auto& params = plan.params.emplace_back();
    params.reserve(vertices.size());
    for (const auto& v : vertices) params.push_back(verifiedParams(v));  // checked by the verifier already
  }
  plan.exchanges = planExchanges(exe, tile_offsets);
  return plan;
}

}  // namespace poprt::sim
