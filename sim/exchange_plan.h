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
#include "sim/vertex_view.h"

namespace poprt::sim {

struct ExchangeMove {
  uint64_t src = 0;  // arena offset
  uint32_t dst = 0;  // offset in its run's tile (a tile holds less than 4 GiB: exec::validate)
  uint32_t bytes = 0;
  bool operator==(const ExchangeMove&) const = default;
};
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

// memmove, inline for the moves an exchange is mostly made of (a gather row of 4 bytes, slices of
// partial sums, conv window rows of 64-512 bytes: yolox_nano makes 0.9 million moves under 8 bytes
// and 1.6 million of 64-511 a run, each a library call before). Up to 64 bytes every load comes
// before any store, so overlapping ranges come out as memmove's; longer moves copy forward in 16
// bytes at a time only when the ranges do not overlap.
inline void moveBytes(uint8_t* dst, const uint8_t* src, uint32_t n) {
  struct Chunk {
    uint64_t a, b;
  };
  if (n < 16) {
    if (n >= 8) {
      uint64_t head, tail;
      std::memcpy(&head, src, 8);
      std::memcpy(&tail, src + n - 8, 8);
      std::memcpy(dst, &head, 8);
      std::memcpy(dst + n - 8, &tail, 8);
    } else if (n >= 4) {
      uint32_t head, tail;
      std::memcpy(&head, src, 4);
      std::memcpy(&tail, src + n - 4, 4);
      std::memcpy(dst, &head, 4);
      std::memcpy(dst + n - 4, &tail, 4);
    } else {
      std::memmove(dst, src, n);
    }
    return;
  }
  if (n > 64) {
    if (n > 512 || (dst < src + n && src < dst + n)) return static_cast<void>(std::memmove(dst, src, n));
    Chunk c;
    for (uint32_t at = 0; at + 16 < n; at += 16) {
      std::memcpy(&c, src + at, 16);
      std::memcpy(dst + at, &c, 16);
    }
    std::memcpy(&c, src + n - 16, 16);  // the last 16, overlapping the chunk before
    std::memcpy(dst + n - 16, &c, 16);
    return;
  }
  Chunk c0, c1, c2, c3;
  std::memcpy(&c0, src, 16);
  std::memcpy(&c1, src + n - 16, 16);
  if (n > 32) {
    std::memcpy(&c2, src + 16, 16);
    std::memcpy(&c3, src + n - 32, 16);
    std::memcpy(dst + 16, &c2, 16);
    std::memcpy(dst + n - 32, &c3, 16);
  }
  std::memcpy(dst, &c0, 16);
  std::memcpy(dst + n - 16, &c1, 16);
}

}  // namespace poprt::sim
