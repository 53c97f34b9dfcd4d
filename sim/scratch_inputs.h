// Inputs a vertex reads from its worker's scratch rather than from its tile. The exchange before a
// compute set fills each vertex's input window in that vertex's tile; in the simulator those tile
// bytes were last touched a run ago, so every move into them misses the cache twice (once to
// fetch the line it writes, once when it is evicted). Where the result cannot differ, the moves
// write the window into a scratch buffer of the worker running the vertex instead, which stays in
// cache from one vertex to the next, and the vertex reads its field there.
//
// A field qualifies when:
//  - the moves its vertex makes (deferMovesToReaders) fill it whole, each wholly inside it;
//  - no other field of the set (its own vertex's included) reads any of its bytes;
//  - its bytes are dead after the set (sim/field_liveness.h): nothing reads them before writing them;
//  - it is at most kMaxScratchFieldBytes (the buffers stay in the caches), and its vertex has at
//    most kMaxScratchVertexFields fields (the engine copies them to point one elsewhere).
// A float32 vertex that reads such a field as rows (inputRowFloats, sim/codelets.h: a 1x1 conv
// block's channel planes, a Reduce's partial sums), each row inside one move's source, is not
// assembled at all: it reads the rows at the sources, through a row table (VertexMoves::rows,
// VertexView::input_rows). A float32 vertex whose codelet copies its input elsewhere before using
// it (inputCopyPlaces: a padded conv block at unit strides, run with others) gets the moves made
// straight into that copy instead, split at the input's lines and clipped to what the copy keeps
// (VertexMoves::copy_moves, InputMoves): the tile is not written, nor the copy made from it
// (resnet20_cifar 1.19x, oww_embedding 1.17x). Fields that are not read as rows and whose moves
// gather the same bytes the same way as an earlier field's of the same size in the set (a layer's
// input broadcast to every vertex computing part of its output) read that first field instead:
// the first one's moves go back to the exchange right before the set (made before any worker runs
// a vertex of it), and the others move nothing (mobilenetv3_small_feat 1.45x, yolox_nano 1.08x).
// Otherwise a field of at least
// kMinScratchFieldBytes is assembled in scratch; a smaller one keeps its moves into the tile (a
// few cache lines, which the engine prefetches: scratch did not pay for its set-up on
// resnet20_cifar's or mobilenetv3's blocks).
// The tiles' memory then differs from the program's only in bytes nothing reads, so every output
// and every later step is as before.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/exec/executable.h"
#include "sim/execution_plan.h"

namespace poprt::sim {

inline constexpr uint64_t kMinScratchFieldBytes = 2048;
inline constexpr uint64_t kMaxScratchFieldBytes = 256 * 1024;
inline constexpr size_t kMaxScratchVertexFields = 8;

// Takes the qualifying fields' moves out of plan.vertex_moves[s].moves, into its rows, its
// copy_moves or its scratch_moves, for a plan whose vertex_moves are made (makeExecutionPlan); sets
// plan.scratch_field_bytes.
void moveInputsToScratch(const exec::Executable& exe, ExecutionPlan& plan, const std::vector<uint64_t>& tile_offsets);

}  // namespace poprt::sim
