// The typed vertex params (lib/exec/codelets.h) against the positions a PopEF stores them at:
// the expected vectors are the layouts as docs/POPEF.md and the golden PopEFs have them, written
// out by hand, so a reordered member list fails here before it changes any file.
#include <gtest/gtest.h>

#include <vector>

#include "lib/exec/vertex_params.h"
#include "tests/unit/sim/codelet_test_util.h"

namespace poprt::exec {
namespace {

using sim::codelet_test::editParams;
using sim::codelet_test::setParam;

using Ints = std::vector<int64_t>;
using Floats = std::vector<float>;

TEST(VertexParams, EncodeAtTheStoredPositions) {
  const Ints dims = {2, 3}, sa = {3, 1}, sb = {0, 1};
  Vertex bin = makeVertex(7, DType::Float, {},
                          BinaryParams{ops::BinaryFn::Mul, 6, kAligned, kBroadcast, 0, 2, dims, sa, sb, OperandBases{0, 4}});
  EXPECT_EQ(bin.codelet, Codelet::Binary);
  EXPECT_EQ(bin.tile, 7u);
  EXPECT_EQ(bin.params, (Ints{2, 6, 0, 1, 0, 2, 2, 3, 3, 1, 0, 1, 0, 4}));
  EXPECT_TRUE(bin.fparams.empty());

  const VertexActivation relu6{ops::graphcore::ActivationKind::Clip, 0, 0, 0, 6};
  Vertex mm = makeVertex(0, DType::Float, {}, MatMulParams{2, 3, 4, false, true, kBiasRow, 1.5f, 0.5f, relu6});
  EXPECT_EQ(mm.params, (Ints{2, 3, 4, 0, 1, kBiasRow, 1}));
  EXPECT_EQ(mm.fparams, (Floats{1.5f, 0.5f, 0, 0, 0, 6}));
  Vertex plain = makeVertex(0, DType::Float, {}, MatMulParams{2, 3, 4, false, false, kBiasNone, 1, 1, std::nullopt});
  EXPECT_EQ(plain.params, (Ints{2, 3, 4, 0, 0, kBiasNone}));
  EXPECT_EQ(plain.fparams, (Floats{1, 1}));

  const Ints in = {5}, out = {3}, k = {3}, s = {1}, d = {1}, st = {0}, pe = {5};
  Vertex pool = makeVertex(0, DType::Float, {}, PoolParams{1, 4, kPoolAvg, true, in, out, k, s, d, st, pe});
  EXPECT_EQ(pool.params, (Ints{1, 4, kPoolAvg, 1, 5, 3, 3, 1, 1, 0, 5}));
  Vertex conv = makeVertex(0, DType::Float, {}, ConvPartialParams{1, 2, 3, 4, true, in, out, k, s, d, st, std::nullopt});
  EXPECT_EQ(conv.params, (Ints{1, 2, 3, 4, 1, 5, 3, 3, 1, 1, 0}));
  EXPECT_TRUE(conv.fparams.empty());

  Vertex act = makeVertex(0, DType::Float, {}, ActivationParams{10, relu6});
  EXPECT_EQ(act.params, (Ints{10, static_cast<int64_t>(ops::graphcore::ActivationKind::Clip)}));
  EXPECT_EQ(act.fparams, (Floats{0, 0, 0, 6}));
  EXPECT_EQ(makeVertex(0, DType::Float16, {}, CastParams{8, DType::Float}).params, (Ints{8, 1}));
  EXPECT_EQ(makeVertex(0, DType::Float, {}, NormParams{2, 8, true, 3, 1, 1e-5f}).params, (Ints{2, 8, 1, 3, 1}));
  EXPECT_EQ(makeVertex(0, DType::Float, {}, BatchNormParams{6, 2, 3, 4, 0, 3, 1e-3f}).fparams, (Floats{1e-3f}));
}

TEST(VertexParams, DecodeGivesBackWhatWasEncoded) {
  const Ints dims = {4, 5}, sa = {5, 1}, sb = {1, 0};
  Vertex v = makeVertex(0, DType::Float, {},
                        BinaryParams{ops::BinaryFn::Sub, 20, kBroadcast, kBroadcast, 0, 2, dims, sa, sb, OperandBases{1, 2}});
  auto p = decodeParams<BinaryParams>(v);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->fn, ops::BinaryFn::Sub);
  EXPECT_EQ(Ints(p->out_dims.begin(), p->out_dims.end()), dims);
  EXPECT_EQ(Ints(p->b_strides.begin(), p->b_strides.end()), sb);
  ASSERT_TRUE(p->bases.has_value());
  EXPECT_EQ(p->bases->b, 2);
  // The arrays view the vertex's own params, not a copy.
  EXPECT_EQ(p->out_dims.data(), v.params.data() + 6);

  editParams(v, [](std::vector<int64_t>& p) { p.resize(p.size() - 2); });  // the older layout without bases
  p = decodeParams<BinaryParams>(v);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_FALSE(p->bases.has_value());
}

TEST(VertexParams, DecodeRefusesWhatBreaksTheLayout) {
  const Vertex mm = makeVertex(0, DType::Float, {}, MatMulParams{2, 3, 4, false, false, kBiasNone, 1, 1, std::nullopt});
  auto refused = [](Vertex v, const char* words) {
    auto p = decodeParams<MatMulParams>(v);
    if (p.ok()) return testing::AssertionFailure() << "decoded";
    if (p.error().message().find(words) == std::string::npos) return testing::AssertionFailure() << p.error().message();
    return testing::AssertionSuccess();
  };
  Vertex v = mm;
  editParams(v, [](std::vector<int64_t>& p) { p.pop_back(); });
  EXPECT_TRUE(refused(v, "too few params"));
  v = mm;
  std::vector<float> beyond = v.fparams.vec();
  beyond.push_back(0);  // an fparam beyond the layout
  v.fparams = beyond;
  EXPECT_TRUE(refused(v, "not its layout"));
  v = mm;
  editParams(v, [](std::vector<int64_t>& p) { p.push_back(0); });  // an activation kind without its floats
  EXPECT_TRUE(refused(v, "too few params"));
  v = mm;
  setParam(v, 3, 2);  // trans_a is a flag
  EXPECT_TRUE(refused(v, "flag"));

  // An enum's value must fit its type before the kind's check sees it (UnaryFn is 32 bits).
  Vertex un = makeVertex(0, DType::Float, {}, UnaryParams{ops::UnaryFn::Relu, 4});
  setParam(un, 0, (int64_t{1} << 32) + static_cast<int64_t>(ops::UnaryFn::Relu));
  EXPECT_FALSE(decodeParams<UnaryParams>(un).ok());

  // A negative or too long array length.
  const Ints in = {5}, k = {3}, s = {1}, st = {0};
  Vertex conv = makeVertex(0, DType::Float, {}, ConvPartialParams{1, 1, 1, 1, false, in, in, k, s, s, st, std::nullopt});
  setParam(conv, 0, -1);
  EXPECT_FALSE(decodeParams<ConvPartialParams>(conv).ok());
  setParam(conv, 0, int64_t{1} << 62);
  EXPECT_FALSE(decodeParams<ConvPartialParams>(conv).ok());
}

}  // namespace
}  // namespace poprt::exec
