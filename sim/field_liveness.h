// Which bytes of the tiles' memory nothing reads again before writing them: the proof that lets a
// vertex read its exchanged input somewhere other than its own field (ExecutionPlan's scratch
// inputs). A field whose bytes are dead after its compute set need not hold what the exchange
// moved there: no step reads those bytes before one writes them anew.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lib/exec/executable.h"
#include "sim/byte_ranges.h"
#include "sim/exchange_plan.h"
#include "sim/execution_plan.h"

namespace poprt::sim {

// Bytes [range) of the arena right after main-program step `step` (a compute step).
struct LivenessQuery {
  uint32_t step = 0;
  ByteRange range;
};

// For each query: whether the range is dead after its step. Dead means that after the step, in
// the main program and round to its start (a run follows a run, with or without a reload's load
// program between), every byte of the range is written before anything reads it, and no weight
// stream copy holds one (readWeight reads those at any time). Footprints, for a verified `exe`
// planned as `plan` (its sets' fields as arena offsets, its exchanges' moves, and the moves each
// set's vertices make: read at the start of that set): an exchange's moves read their sources and
// write their destinations; a compute set's vertices read every field but the first and write
// the first whole (every codelet writes its output field whole, and a vertex whose output overlaps
// an input reads those bytes first); a stream copy to the device writes its bytes, one from it reads
// them. Bytes are tracked in 4-byte granules: a write kills only granules it covers whole, a read
// keeps alive every granule it touches, so an odd edge errs towards alive. A run may also stop at a
// step that can fail (a host program, a host buffer streamed in): the next run then starts without
// the rest of its writes, so what a run needs at its start is alive after each such step.
// A pipelined executable (program order is not time order) gets false for every query, as does
// one whose walk would take more than a budget of work (in proportion to the arena).

std::vector<bool> deadAfter(const exec::Executable& exe, const ExecutionPlan& plan, const std::vector<uint64_t>& tile_offsets,
                            std::span<const LivenessQuery> queries);

}  // namespace poprt::sim
