// The execution plan: a verified executable translated once, when it is loaded, into what the
// engine runs: each compute set's vertices with their fields as arena offsets (weight fields
// pointed at one shared copy, sim/shared_weights.h) and their params decoded, and each exchange's
// moves (sim/exchange_plan.h). Every engine of one executable (the runtime's replicas) shares it.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/exec/executable.h"
#include "sim/codelets.h"
#include "sim/exchange_plan.h"

namespace poprt::sim {

struct ExecutionPlan {
  // By compute set, in order: the vertices with their fields as offsets from the arena's base.
  // Copies of all of them, in run order, rather than of only those that share: the engine walks
  // them one after another, and a run through the executable's own (allocated as the PopEF was
  // read) missed the cache on small vertices: resnet20_cifar ran 7-9% slower, for a popef-run peak
  // of 950 rather than 1019 MB on light_densenet121 (826 MB with no copies).
  std::vector<std::vector<exec::Vertex>> sets;
  // Each vertex's params decoded once (the verifier checked them), as sets[i][j] runs with them:
  // their arrays view that vertex's params, so the whole is moved, never copied.
  std::vector<std::vector<VertexParams>> params;
  std::vector<ExchangePlan> exchanges;  // by exchange
  // By compute set: the moves of the exchange run right before it that its vertices make
  // (deferMovesToReaders), for a set and an exchange each run at that one place.
  std::vector<VertexMoves> vertex_moves;
  const exec::Executable* exe = nullptr;         // planned for
  uint64_t shared_fields = 0, shared_bytes = 0;  // fields pointed at another copy, and their bytes

  ExecutionPlan() = default;
  ExecutionPlan(ExecutionPlan&&) = default;
  ExecutionPlan& operator=(ExecutionPlan&&) = default;
  ExecutionPlan(const ExecutionPlan&) = delete;
  ExecutionPlan& operator=(const ExecutionPlan&) = delete;
};

// Against TileArena::layout(exe.tile_bytes), for a verified `exe`.
ExecutionPlan makeExecutionPlan(const exec::Executable& exe);

}  // namespace poprt::sim
