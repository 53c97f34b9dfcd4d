// An exchange as the engine runs it: its copies and every piece of its gathers resolved once, when
// the executable is loaded, to moves between arena offsets, in program order, the pieces that
// continue the one before merged. Running a gather no longer searches its layout's regions piece
// by piece, nor a copy look its tiles up: light_resnet50 makes 5.3 million moves a run (1.2
// million copies, 4.1 million gather pieces of 16-512 bytes).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "lib/exec/executable.h"
#include "sim/exchange_move.h"
#include "sim/vertex_view.h"

namespace poprt::sim {

// The moves [the previous run's end, end) write tile dst_tile: what a worker's share is taken by.
struct ExchangeRun {
  uint32_t dst_tile = 0;
  size_t end = 0;
  bool operator==(const ExchangeRun&) const = default;
};
struct ExchangePlan {
  std::vector<ExchangeRun> runs;
  std::vector<ExchangeMove> moves;
};

// The bytes planning takes per move at most: the move itself, and while deferMovesToReaders
// sorts one exchange's moves, their destination range and the kept or deferred copy (a growing
// vector's slack included). The verifier counts this against POPRT_MAX_DEVICE_BYTES.
inline constexpr uint64_t kPlanBytesPerMove = 4 * sizeof(ExchangeMove);

// One plan per exchange of a verified `exe`, for an arena laid out at `tile_offsets`.
std::vector<ExchangePlan> planExchanges(const exec::Executable& exe, const std::vector<uint64_t>& tile_offsets);

// Moves made by the worker that runs the vertex reading them, right before it: vertex j's are
// moves[ends[j - 1], ends[j]) (from 0 for j = 0) into its own tile. Empty ends: none.
struct VertexMoves {
  std::vector<ExchangeMove> moves;
  std::vector<uint32_t> ends;
  // Vertex j's moves into a scratch copy of its field scratch_field[j] (0: none), their dst an
  // offset in that field: scratch_moves[scratch_ends[j - 1], scratch_ends[j]) (sim/scratch_inputs.h).
  // Empty when no vertex of the set has one.
  std::vector<ExchangeMove> scratch_moves;
  std::vector<uint32_t> scratch_ends;
  std::vector<uint8_t> scratch_field;
  // Vertex j's input rows where the exchange's sources hold them, arena offsets
  // rows[row_ends[j - 1], row_ends[j]) (VertexView::input_rows; none: its field is assembled, in
  // scratch or in its tile). Empty when no vertex of the set has them.
  std::vector<uint64_t> rows;
  std::vector<uint32_t> row_ends;
  // Vertex j's moves into the copy its codelet assembles its input in (InputMoves, sim/codelets.h),
  // dst an offset in that copy: copy_moves[copy_ends[j - 1], copy_ends[j]). Empty when no vertex of
  // the set has them.
  std::vector<ExchangeMove> copy_moves;
  std::vector<uint32_t> copy_ends;
};

// Takes out of `exchange` the moves the compute set run right after it reads, for the vertices
// `vertices` (fields as arena offsets) to make just before they run, where the result cannot
// differ: the first vertex reading any byte of a move's destination makes it, so it finds its
// input in cache, not written a whole exchange ago (light_resnet50 moves 836 MB a run). A move
// stays in the exchange when moving it could change what anything reads:
//  - its source is written by the exchange or by a vertex of the set (it would read later bytes);
//  - its destination is read by the exchange, written by another move or by a vertex of the set;
//  - a vertex on another tile reads its destination (the reader's worker would not be the one
//    making the move).
// (makeExecutionPlan calls it only for an exchange and a set that run once, one right after the
// other, on the same side of every segment bound.)
VertexMoves deferMovesToReaders(ExchangePlan& exchange, std::span<const VertexView> vertices,
                                const std::vector<uint64_t>& tile_offsets);
// How many moves the plans of `exe` hold at most (its copies and gather pieces, before merging):
// a few gather entries can stand for millions of pieces, so the verifier counts their memory
// against POPRT_MAX_DEVICE_BYTES with the tiles' before anything is planned.
uint64_t exchangeMoveBound(const exec::Executable& exe);

}  // namespace poprt::sim
