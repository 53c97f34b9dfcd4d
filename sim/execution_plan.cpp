#include "sim/execution_plan.h"

#include "sim/scratch_inputs.h"
#include "sim/shared_weights.h"
#include "sim/tile_arena.h"

namespace poprt::sim {
namespace {

// Whether b's params decode as a's do (a repeat in a packed PopEF shares its list: no compare).
bool sameParams(const exec::Vertex& a, const exec::Vertex& b) {
  return a.codelet == b.codelet && (a.params.sharesWith(b.params) || a.params == b.params) &&
         (a.fparams.sharesWith(b.fparams) || a.fparams == b.fparams);
}

}  // namespace

ExecutionPlan makeExecutionPlan(const exec::Executable& exe) {
  const std::vector<uint64_t> tile_offsets = TileArena::layout(exe.tile_bytes);
  ExecutionPlan plan;
  plan.exe = &exe;
  resolveVertexFields(exe, tile_offsets, plan);
  for (size_t s = 0; s < plan.sets.size(); ++s) {
    const auto& vertices = exe.compute_sets[s].vertices;
    auto& runs = plan.sets[s].runs;
    for (size_t i = 0; i < vertices.size(); ++i) {
      if (i > 0 && sameParams(vertices[i - 1], vertices[i]))
        runs.back().end = i + 1;
      else  // checked by the verifier already
        runs.push_back({i + 1, verifiedParams(vertices[i]), vertices[i].params});
    }
    for (VertexRun& run : runs) run.together = runsTogether(run.params);
  }
  plan.exchanges = planExchanges(exe, tile_offsets);
  plan.vertex_moves.resize(plan.sets.size());
  // Steps that run a set or an exchange, in any program: only one that runs once, right after its
  // exchange, can make that exchange's moves.
  std::vector<uint32_t> set_runs(exe.compute_sets.size(), 0), exchange_runs(exe.exchanges.size(), 0);
  for (const exec::Program* program : {&exe.load, &exe.main})
    for (const exec::Step& step : program->steps) {
      if (step.kind == exec::StepKind::Compute) ++set_runs[step.index];
      if (step.kind == exec::StepKind::Exchange) ++exchange_runs[step.index];
    }
  // Nor across a segment's bounds: a pipelined engine runs the parts on each side of one in
  // different phases, with another batch's steps between them.
  const auto& steps = exe.main.steps;
  std::vector<bool> bound(steps.size() + 1, false);
  for (const exec::Segment& g : exe.segments)
    for (uint32_t at : {g.begin, g.copies, g.end})
      if (at <= steps.size()) bound[at] = true;
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    const exec::Step &exchange = steps[i], &set = steps[i + 1];
    if (exchange.kind != exec::StepKind::Exchange || set.kind != exec::StepKind::Compute || bound[i + 1]) continue;
    if (exchange_runs[exchange.index] != 1 || set_runs[set.index] != 1) continue;
    plan.vertex_moves[set.index] =
        deferMovesToReaders(plan.exchanges[exchange.index], plan.sets[set.index].vertices, tile_offsets);
  }
  moveInputsToScratch(exe, plan, tile_offsets);
  return plan;
}

}  // namespace poprt::sim
