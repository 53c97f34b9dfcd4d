// The codelet library: each vertex kind's check (its fields and params agree), its implementation
// on the tile's memory, and its cycle estimate on a target. Layouts: lib/exec/codelets.h.
#pragma once

#include <cstdint>

#include "lib/exec/executable.h"

namespace poprt::sim {

// Field sizes match the params, params are in range. Run before anything executes.
Status checkVertex(const exec::Vertex& v);
// Runs the vertex on its tile's memory (checked beforehand).
void runVertex(const exec::Vertex& v, uint8_t* tile_memory);
// Estimated tile cycles for the vertex on the target.
uint64_t vertexCycles(const exec::Vertex& v, const exec::Target& target);
// Floating-point operations the vertex does, for the profile reports (docs/REPORT.md): a
// multiply-accumulate counts 2 (MatMul, ConvPartial with every tap the cost model counts,
// Attention), elementwise work 1 per element and pass (BatchNorm 4, Softmax 4, Norm 5), a Pool 1
// per tap, a Reduce 1 per input element, a Fill none.
uint64_t vertexFlops(const exec::Vertex& v);

}  // namespace poprt::sim
