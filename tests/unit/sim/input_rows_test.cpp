// Vertices reading their input rows through a row table (VertexView::input_rows: a 1x1 conv
// block's channel planes, a Reduce's partial sums, where the exchange's sources hold them) get the
// bits they get reading the rows from their field: here each row is copied elsewhere in tile
// memory, in reverse order, and the field itself is overwritten with NaNs, which would show. The
// field's result is checked against the reference evaluator's op first.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "sim/codelets.h"
#include "tests/unit/sim/codelet_test_util.h"

namespace poprt::sim {
namespace {

using namespace codelet_test;

void expectTheSameBitsThroughARowTable(const exec::Vertex& v, const TileMemory& mem, int64_t row_floats,
                                       const std::vector<float>& reference_output) {
  ASSERT_TRUE(checkVertex(v).ok()) << checkVertex(v).error().message();
  ASSERT_EQ(inputRowFloats(verifiedParams(v)), row_floats);
  TileMemory in_field = mem;
  runVertex(v, in_field.bytes.data());
  const std::vector<float> want = in_field.read(v.fields[0]);
  expectClose(want, reference_output);

  TileMemory elsewhere = mem;
  const std::vector<float> input = mem.read(v.fields[1]);
  const size_t rows = input.size() / static_cast<size_t>(row_floats);
  std::vector<uint64_t> table(rows);
  for (size_t q = rows; q-- > 0;)
    table[q] = elsewhere
                   .add(std::vector<float>(input.begin() + static_cast<std::ptrdiff_t>(q * row_floats),
                                           input.begin() + static_cast<std::ptrdiff_t>((q + 1) * row_floats)))
                   .offset;
  const std::vector<float> nans(input.size(), std::numeric_limits<float>::quiet_NaN());
  std::memcpy(elsewhere.bytes.data() + v.fields[1].offset, nans.data(), nans.size() * 4);
  VertexView view(v);
  view.input_rows = table.data();
  runVertex(view, verifiedParams(v), elsewhere.bytes.data());
  const std::vector<float> got = elsewhere.read(v.fields[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "output " << i;
}

TEST(InputRows, ReduceSumOfPartialRows) {
  for (auto [outer, extent, inner] : std::vector<std::array<int64_t, 3>>{{3, 5, 7}, {1, 1, 33}, {2, 16, 40}}) {
    const std::vector<float> x = randomVector(static_cast<size_t>(outer * extent * inner), 5);
    const Tensor t = tensorOf(x, {outer, extent, inner});
    Tensor axes(DType::Int64, {1});
    axes.data<int64_t>()[0] = 1;
    TileMemory mem;
    const exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(outer * inner)));
    const exec::Field in = mem.add(x);
    expectTheSameBitsThroughARowTable(
        {0, exec::Codelet::Reduce, DType::Float, {out, in}, {exec::kReduceSum, outer, extent, inner}, {}}, mem, inner,
        reference("ReduceSum", {&t, &axes}, {{"keepdims", int64_t{0}}}));
  }
}

TEST(InputRows, OneByOneConvBlockReadsChannelPlanes) {
  // 2 groups of 3 input and 4 output channels over 5x6, with a bias.
  const int64_t groups = 2, Cg = 3, Mb = 4, P = 30;
  const std::vector<float> x = randomVector(static_cast<size_t>(groups * Cg * P), 6);
  const std::vector<float> w = randomVector(static_cast<size_t>(groups * Mb * Cg), 7);
  const std::vector<float> b = randomVector(static_cast<size_t>(groups * Mb), 8);
  const Tensor tx = tensorOf(x, {1, groups * Cg, 5, 6}), tw = tensorOf(w, {groups * Mb, Cg, 1, 1}),
               tb = tensorOf(b, {groups * Mb});
  TileMemory mem;
  const exec::Field out = mem.add(std::vector<float>(static_cast<size_t>(groups * Mb * P)));
  const exec::Field in = mem.add(x), wts = mem.add(w), bias = mem.add(b);
  expectTheSameBitsThroughARowTable({0,
                                     exec::Codelet::ConvPartial,
                                     DType::Float,
                                     {out, in, wts, bias},
                                     {2, groups, Cg, Mb, 1, 5, 6, 5, 6, 1, 1, 1, 1, 1, 1, 0, 0},
                                     {}},
                                    mem, P, reference("Conv", {&tx, &tw, &tb}, {{"group", groups}}));
}

TEST(InputRows, OnlyVerticesThatReadRowsWholeTakeATable) {
  auto rowFloats = [](exec::Vertex v) { return inputRowFloats(verifiedParams(v)); };
  const exec::Field f{0, 4};
  // A 3x3 kernel reads its input through windows, a Reduce Max keeps its own loop, a Unary has one row.
  EXPECT_EQ(
      rowFloats(
          {0, exec::Codelet::ConvPartial, DType::Float, {f, f, f}, {2, 1, 1, 1, 0, 4, 4, 2, 2, 3, 3, 1, 1, 1, 1, 0, 0}, {}}),
      0);
  EXPECT_EQ(
      rowFloats(
          {0, exec::Codelet::ConvPartial, DType::Float, {f, f, f}, {2, 1, 1, 1, 0, 4, 4, 2, 2, 1, 1, 2, 2, 1, 1, 0, 0}, {}}),
      0);  // strided
  EXPECT_EQ(rowFloats({0, exec::Codelet::Reduce, DType::Float, {f, f}, {exec::kReduceMax, 1, 3, 1}, {}}), 0);
  EXPECT_EQ(rowFloats({0, exec::Codelet::Unary, DType::Float, {f, f}, {0, 1}, {}}), 0);
}

}  // namespace
}  // namespace poprt::sim
