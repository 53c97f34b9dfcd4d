// The vertices' fields as the engine reads them on a TileArena: a field that reads weights nothing
// overwrites after the load program points at the first copy of the same weight bytes, on
// whichever tile that is.
//
// A program keeps the copies a tile needs of each weight slice (a ResNet-50 conv's slice on every
// tile of its row blocks: light_resnet50's vertices read 366 MB of weight fields a run, copies of
// 46 MB of weights). The simulator need not: identical bytes that stay identical can be read from
// one place, which then stays in cache for the next vertex that reads it. What every tile holds
// is unchanged (the load program still fills every copy, and readWeight reads them back), as is
// the cost model, which prices the program as compiled.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/exec/executable.h"
#include "sim/execution_plan.h"

namespace poprt::sim {

// Fills each of plan.sets with its compute set's vertices and their fields as offsets from the
// base of an arena laid out at `tile_offsets` (a weight field at the first copy of its bytes), and
// counts the shared fields; for a verified `exe`.
void resolveVertexFields(const exec::Executable& exe, const std::vector<uint64_t>& tile_offsets, ExecutionPlan& plan);

}  // namespace poprt::sim
