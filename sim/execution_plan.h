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

// Consecutive vertices of one compute set with the same kind and params (one conv block on a
// thousand tiles; resnet20_cifar's sets of 1,024-1,536 vertices have 1-8 such runs): decoded once
// for all of them, rather than 168 bytes a vertex that a run streams through the cache.
struct VertexRun {
  size_t end = 0;  // the run is the vertices [the previous run's end, end)
  VertexParams params;
  exec::SharedList<int64_t> viewed;  // the list params' arrays view, kept alive with them
  bool together = false;             // the engine gives its vertices to runVertices a few at a time
};

// A compute set as the engine runs it. The vertices' fields are copies (arena offsets, weight
// fields pointed at one shared copy: sim/shared_weights.h) kept in one array in run order, which
// the engine walks one vertex after another (a walk through the executable's own vertices missed
// the cache). As views and runs rather than exec::Vertex copies with decoded params, resnet20_cifar
// runs the same instructions with 10% fewer L1 misses (cachegrind) and light_densenet121's
// popef-run peaks at 1019 rather than 1099 MiB.
struct PlannedSet {
  std::vector<exec::Field> fields;
  std::vector<VertexView> vertices;  // views of `fields`
  std::vector<VertexRun> runs;
};

struct ExecutionPlan {
  std::vector<PlannedSet> sets;         // by compute set
  std::vector<ExchangePlan> exchanges;  // by exchange
  // By compute set: the moves of the exchange run right before it that its vertices make
  // (deferMovesToReaders), for a set and an exchange each run at that one place.
  std::vector<VertexMoves> vertex_moves;
  // The largest field a vertex reads from scratch (sim/scratch_inputs.h), 0 for none: the engine
  // keeps room for a few per worker.
  uint64_t scratch_field_bytes = 0;
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
