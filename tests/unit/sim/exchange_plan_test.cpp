// The exchange plan (sim/exchange_plan.h): moves written out by hand for a small exchange, and the
// inline short move against memmove on overlapping ranges.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "sim/exchange_plan.h"

namespace poprt::sim {
namespace {

TEST(ExchangePlan, MovesAreResolvedGroupedByTileAndMerged) {
  exec::Executable exe;
  exe.tile_bytes = {1024, 1024, 1024};
  const std::vector<uint64_t> offsets = {0, 2048, 4096};  // tile t's arena offset
  // A float32 layout of 24 elements: 0-7 on tile 0 at 64, 8-15 right after them, 16-23 on tile 2.
  exe.layouts.push_back({4, {{0, 8, 0, 64}, {8, 8, 0, 96}, {16, 8, 2, 0}}});
  exec::Exchange ex;
  ex.copies = {
      {0, 100, 1, 0, 16},  // tile 0 [100, 116) -> tile 1 [0, 16)
      {0, 116, 1, 16, 8},  // continues it on both sides: merged
      {0, 200, 1, 24, 8},  // continues the destination only
      {2, 0, 0, 512, 4},   // another tile: a new run
      {1, 0, 0, 516, 0},   // nothing to move
      {2, 4, 0, 516, 4},   // continues the move before
  };
  // Elements 4-19 to tile 1 at 300: one piece from each region, the first two contiguous.
  ex.gathers.push_back({0, 4, 16, 1, 0, 1, 300, 0});
  exe.exchanges.push_back(ex);
  const auto plans = planExchanges(exe, offsets);
  ASSERT_EQ(plans.size(), 1u);
  const std::vector<ExchangeMove> moves = {{100, 0, 24}, {200, 24, 8}, {4096, 512, 8}, {64 + 16, 300, 48}, {4096, 348, 16}};
  const std::vector<ExchangeRun> runs = {{1, 2}, {0, 3}, {1, 5}};
  EXPECT_EQ(plans[0].moves, moves);
  EXPECT_EQ(plans[0].runs, runs);
}

// Copies that continue each other but read what the one before wrote stay two moves: one
// memmove of both would read the old byte.
TEST(ExchangePlan, MovesThatReadEarlierWritesAreNotMerged) {
  exec::Executable exe;
  exe.tile_bytes = {64};
  exec::Exchange ex;
  ex.copies = {{0, 0, 0, 1, 1}, {0, 1, 0, 2, 1}, {0, 10, 0, 20, 4}, {0, 14, 0, 24, 4}};  // the last two may merge
  exe.exchanges.push_back(ex);
  const auto plans = planExchanges(exe, {0});
  const std::vector<ExchangeMove> moves = {{0, 1, 1}, {1, 2, 1}, {10, 20, 8}};
  EXPECT_EQ(plans[0].moves, moves);
}

TEST(ExchangePlan, MovesMatchMemmoveOnOverlappingAndSeparateRanges) {
  for (uint32_t n = 0; n <= 600; n += n < 80 ? 1 : 7)
    for (int shift : {-700, -17, -16, -3, 0, 1, 16, 40, 700}) {
      std::vector<uint8_t> want(2400), got(2400);  // room for 600 bytes moved 700 up from 800
      for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i * 7 + 3);
      got = want;
      std::memmove(want.data() + 800 + shift, want.data() + 800, n);
      moveBytes(got.data() + 800 + shift, got.data() + 800, n);
      ASSERT_EQ(got, want) << n << " bytes moved by " << shift;
    }
}

// deferMovesToReaders, on two tiles of 1 KiB: tile 0 at arena offset 0, tile 1 at 1024. Vertices
// have fields [written, read...] as arena offsets.
const std::vector<uint64_t> kTwoTiles = {0, 1024};

exec::Vertex vertexOn(uint32_t tile, std::vector<exec::Field> fields) {
  exec::Vertex v;
  v.tile = tile;
  v.fields = std::move(fields);
  return v;
}

std::vector<VertexView> viewsOf(const std::vector<exec::Vertex>& vertices) { return {vertices.begin(), vertices.end()}; }

ExchangePlan movesTo(uint32_t tile, std::vector<ExchangeMove> moves) {
  ExchangePlan plan;
  plan.runs.push_back({tile, moves.size()});
  plan.moves = std::move(moves);
  return plan;
}

TEST(DeferMoves, TheFirstVertexReadingAnyByteOfAMoveMakesIt) {
  const ExchangeMove a{100, 0, 32}, b{132, 64, 16}, unread{200, 512, 8};
  ExchangePlan plan = movesTo(1, {a, b, unread});
  const std::vector<exec::Vertex> vertices = {
      vertexOn(0, {{300, 16}, {400, 16}}),                           // another tile's
      vertexOn(1, {{1024 + 800, 16}, {1024 + 16, 32}}),              // reads the second half of a
      vertexOn(1, {{1024 + 832, 16}, {1024, 32}, {1024 + 64, 16}}),  // a whole, then b
  };
  const VertexMoves moves = deferMovesToReaders(plan, viewsOf(vertices), kTwoTiles);
  EXPECT_EQ(moves.ends, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(moves.moves, (std::vector<ExchangeMove>{a, b}));
  EXPECT_EQ(plan.moves, std::vector<ExchangeMove>{unread});
  EXPECT_EQ(plan.runs, (std::vector<ExchangeRun>{{1, 1}}));
}

// Where making a move at its reader could change what is read, the exchange keeps it.
TEST(DeferMoves, MovesStayWhereTheOrderMatters) {
  struct Case {
    const char* what;
    ExchangePlan plan;
    std::vector<exec::Vertex> vertices;
  };
  const std::vector<Case> cases = {
      {"a vertex of the set writes its source", movesTo(1, {{1024 + 900, 0, 16}}), {vertexOn(1, {{1024 + 900, 16}, {1024, 16}})}},
      {"a vertex of the set writes its destination",
       movesTo(1, {{100, 0, 16}}),
       {vertexOn(1, {{1024, 16}, {1024 + 200, 16}}), vertexOn(1, {{1024 + 300, 16}, {1024, 16}})}},
      {"another move reads its destination",
       movesTo(1, {{100, 0, 16}, {1024, 32, 16}}),
       {vertexOn(1, {{1024 + 300, 16}, {1024, 48}})}},
      {"another move writes its destination too",
       movesTo(1, {{100, 0, 16}, {200, 8, 16}}),
       {vertexOn(1, {{1024 + 300, 16}, {1024, 24}})}},
      {"a vertex on another tile reads it", movesTo(1, {{100, 0, 16}}), {vertexOn(0, {{300, 16}, {1024, 16}})}},
  };
  for (const Case& c : cases) {
    ExchangePlan plan = c.plan;
    const VertexMoves moves = deferMovesToReaders(plan, viewsOf(c.vertices), kTwoTiles);
    EXPECT_TRUE(moves.moves.empty()) << c.what;
    EXPECT_EQ(plan.moves, c.plan.moves) << c.what;
  }
}

}  // namespace
}  // namespace poprt::sim
