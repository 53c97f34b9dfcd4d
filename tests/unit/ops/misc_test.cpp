// Misc ops of the reference evaluator (losses, Det, Einsum, string ops, random ops, training
// optimizers): edge cases beyond the ONNX backend data. Expected values are hand-computed or
// from numpy (noted where so), never from the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "tests/unit/ops/op_test_util.h"

namespace poprt::ops {
namespace {

// ----- NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss -----

TEST(NllLoss, ReductionsWithWeights) {
  OneNode n("NegativeLogLikelihoodLoss", 3);
  Tensor x = f32({2, 3}, {-1, -2, -3, -0.5f, -1.5f, -2.5f});
  Tensor t = i64({2}, {2, 0});
  Tensor w = f32({3}, {0.2f, 0.3f, 0.5f});
  n.attr("reduction", std::string("none"));
  auto none = n.run({&x, &t, &w});
  ASSERT_TRUE(none.ok()) << none.error().message();
  expectFloats((*none)[0], {1.5, 0.1});  // -x[0,2]·0.5, -x[1,0]·0.2 (by hand)
  n.attr("reduction", std::string("sum"));
  expectFloats((*n.run({&x, &t, &w}))[0], {1.6});
  n.attr("reduction", std::string("mean"));
  expectFloats((*n.run({&x, &t, &w}))[0], {1.6 / 0.7});  // sum / (0.5 + 0.2)
  auto plain = n.run({&x, &t});
  ASSERT_TRUE(plain.ok());
  expectFloats((*plain)[0], {(3 + 0.5) / 2.0});
}

TEST(NllLoss, NegativeIgnoreIndexAndSpatialDims) {
  OneNode n("NegativeLogLikelihoodLoss", 2);
  n.attr("ignore_index", int64_t{-1});
  n.attr("reduction", std::string("none"));
  Tensor x = f32({1, 2, 3}, {-0.1f, -0.2f, -0.3f, -1, -2, -3});
  Tensor t = i64({1, 3}, {1, 0, -1});
  auto r = n.run({&x, &t});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{1, 3}));
  expectFloats((*r)[0], {1.0, 0.2, 0.0});
  n.attr("reduction", std::string("mean"));
  expectFloats((*n.run({&x, &t}))[0], {0.6});  // 1.2 over the 2 counted elements
  // Everything ignored: mean is 0/0.
  Tensor all = i64({1, 3}, {-1, -1, -1});
  auto nan = n.run({&x, &all});
  ASSERT_TRUE(nan.ok());
  EXPECT_TRUE(std::isnan((*nan)[0].data<float>()[0]));
}

TEST(NllLoss, InvalidInputsAreErrors) {
  OneNode n("NegativeLogLikelihoodLoss", 3);
  Tensor x = f32({2, 3}, {-1, -2, -3, -1, -2, -3});
  Tensor out_of_range = i64({2}, {3, 0}), negative = i64({2}, {-1, 0}), wrong_shape = i64({3}, {0, 0, 0});
  Tensor ok_t = i64({2}, {0, 1});
  Tensor w2 = f32({2}, {1, 1});
  Tensor rank1 = f32({3}, {1, 2, 3});
  Tensor ft = f32({2}, {0, 1});
  EXPECT_FALSE(n.run({&x, &out_of_range}).ok());
  EXPECT_FALSE(n.run({&x, &negative}).ok());
  EXPECT_FALSE(n.run({&x, &wrong_shape}).ok());
  EXPECT_FALSE(n.run({&x, &ok_t, &w2}).ok());
  EXPECT_FALSE(n.run({&rank1, &ok_t}).ok());
  EXPECT_FALSE(n.run({&x, &ft}).ok());
  n.attr("reduction", std::string("average"));
  EXPECT_FALSE(n.run({&x, &ok_t}).ok());
}

TEST(SoftmaxCrossEntropyLoss, LogProbOutputAndFloat16) {
  OneNode n("SoftmaxCrossEntropyLoss", 2, 2);
  Tensor x = f32({2, 3}, {1, 2, 3, 0, 0, 0});
  Tensor t = i64({2}, {2, 1});
  auto r = n.run({&x, &t});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 2u);
  // numpy log-softmax of [1,2,3] and [0,0,0]
  expectFloats((*r)[1], {-2.40760596, -1.40760596, -0.40760596, -1.09861229, -1.09861229, -1.09861229});
  expectFloats((*r)[0], {(0.40760596 + 1.09861229) / 2});
  // Large logits stay finite (log-sum-exp is shifted by the max).
  Tensor big = f32({1, 2}, {1000, 0});
  Tensor t0 = i64({1}, {1});
  auto b = n.run({&big, &t0});
  ASSERT_TRUE(b.ok());
  EXPECT_NEAR((*b)[0].data<float>()[0], 1000.0f, 1e-3);
  Tensor h(DType::Float16, {1, 2});
  h.data<Half>()[0] = Half(0.0f);
  h.data<Half>()[1] = Half(0.0f);
  auto rh = n.run({&h, &t0});
  ASSERT_TRUE(rh.ok());
  ASSERT_EQ((*rh)[0].dtype(), DType::Float16);
  EXPECT_NEAR(static_cast<float>((*rh)[0].data<Half>()[0]), 0.693147f, 1e-3);  // log 2
}

// ----- Det -----

TEST(Det, BatchesPivotingAndSingular) {
  OneNode n("Det", 1);
  Tensor x = f32({3, 2, 2}, {0, 1, 1, 0, 1, 2, 2, 4, 3, 0, 0, 2});
  auto r = n.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), Shape{3});
  expectFloats((*r)[0], {-1, 0, 6});
  Tensor m = f32({3, 3}, {4, 3, 2, 1, 5, 7, 2, 8, 1});
  auto d = n.run({&m});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)[0].shape(), Shape{});
  expectFloats((*d)[0], {-169}, 1e-3);  // numpy: np.linalg.det
  Tensor empty(DType::Float, {2, 0, 0});
  auto e = n.run({&empty});
  ASSERT_TRUE(e.ok());
  expectFloats((*e)[0], {1, 1});
}

TEST(Det, InvalidInputsAreErrors) {
  OneNode n("Det", 1);
  Tensor rect(DType::Float, {2, 3});
  Tensor vec(DType::Float, {4});
  Tensor ints(DType::Int32, {2, 2});
  EXPECT_FALSE(n.run({&rect}).ok());
  EXPECT_FALSE(n.run({&vec}).ok());
  EXPECT_FALSE(n.run({&ints}).ok());
  EXPECT_FALSE(n.run({}).ok());
}

// ----- Einsum -----

Expected<std::vector<Tensor>> einsum(const std::string& eq, const std::vector<const Tensor*>& in) {
  OneNode n("Einsum", in.size());
  n.attr("equation", eq);
  return n.run(in);
}

TEST(Einsum, MatmulExplicitAndImplicit) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 2}, {5, 6, 7, 8});
  for (const char* eq : {"ij,jk->ik", "ij,jk", " i j , j k -> i k "}) {
    auto r = einsum(eq, {&a, &b});
    ASSERT_TRUE(r.ok()) << eq << ": " << r.error().message();
    EXPECT_EQ((*r)[0].shape(), (Shape{2, 2})) << eq;
    expectFloats((*r)[0], {19, 22, 43, 50});
  }
  auto t = einsum("ij,jk->ki", {&a, &b});
  ASSERT_TRUE(t.ok());
  expectFloats((*t)[0], {19, 43, 22, 50});
}

TEST(Einsum, TraceDiagonalOuterAndSum) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4});
  expectFloats((*einsum("ii", {&a}))[0], {5});
  expectFloats((*einsum("ii->i", {&a}))[0], {1, 4});
  expectFloats((*einsum("ij->", {&a}))[0], {10});
  Tensor u = f32({2}, {1, 2}), v = f32({3}, {1, 10, 100});
  auto o = einsum("i,j->ij", {&u, &v});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ((*o)[0].shape(), (Shape{2, 3}));
  expectFloats((*o)[0], {1, 10, 100, 2, 20, 200});
  // Implicit output orders labels by ASCII: 'B' before 'a' (as numpy).
  Tensor m(DType::Float, {2, 3});
  auto up = einsum("Ba", {&m});
  ASSERT_TRUE(up.ok());
  EXPECT_EQ((*up)[0].shape(), (Shape{2, 3}));
  auto low = einsum("ba", {&m});
  ASSERT_TRUE(low.ok());
  EXPECT_EQ((*low)[0].shape(), (Shape{3, 2}));
}

TEST(Einsum, EllipsisBroadcasting) {
  // Row-wise dot products: [2,3] with [3] -> [2].
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6}), b = f32({3}, {1, 0, -1});
  auto r = einsum("...i,...i->...", {&a, &b});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), Shape{2});
  expectFloats((*r)[0], {-2, -2});
  // Batched matmul with a broadcast batch dim: [2,1,2] x [1,2,1] -> [2,1,1].
  Tensor x = f32({2, 1, 2}, {1, 2, 3, 4}), y = f32({1, 2, 1}, {10, 1});
  auto m = einsum("...ij,...jk->...ik", {&x, &y});
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ((*m)[0].shape(), (Shape{2, 1, 1}));
  expectFloats((*m)[0], {12, 34});
  // A labelled dim of 1 broadcasts (numpy: einsum('ij,j', ones((3,1)), ones(4)) == [4,4,4]).
  Tensor ones31 = f32({3, 1}, {1, 1, 1}), ones4 = f32({4}, {1, 1, 1, 1});
  auto bc = einsum("ij,j", {&ones31, &ones4});
  ASSERT_TRUE(bc.ok()) << bc.error().message();
  expectFloats((*bc)[0], {4, 4, 4});
}

TEST(Einsum, IntegersEmptyAndThreeOperands) {
  Tensor a(DType::Int32, {3}), b(DType::Int32, {3});
  for (int i = 0; i < 3; ++i) {
    a.data<int32_t>()[i] = i + 1;
    b.data<int32_t>()[i] = -(i + 1);
  }
  auto r = einsum("i,i", {&a, &b});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ((*r)[0].dtype(), DType::Int32);
  EXPECT_EQ((*r)[0].data<int32_t>()[0], -14);
  Tensor e(DType::Float, {2, 0});
  auto s = einsum("ij->i", {&e});
  ASSERT_TRUE(s.ok());
  expectFloats((*s)[0], {0, 0});
  Tensor u = f32({2}, {1, 2}), v = f32({2}, {3, 4}), w = f32({2}, {5, 6});
  auto t = einsum("i,j,k->", {&u, &v, &w});  // (1+2)(3+4)(5+6)
  ASSERT_TRUE(t.ok());
  expectFloats((*t)[0], {231});
}

TEST(Einsum, InvalidEquationsAreErrors) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({3}, {1, 2, 3});
  EXPECT_FALSE(einsum("ij,jk->ik", {&a}).ok());  // two terms, one input
  EXPECT_FALSE(einsum("ijk", {&a}).ok());        // rank mismatch
  EXPECT_FALSE(einsum("ij->k", {&a}).ok());      // output label not in inputs
  EXPECT_FALSE(einsum("ij->ii", {&a}).ok());     // repeated output label
  EXPECT_FALSE(einsum("i1", {&a}).ok());         // invalid character
  EXPECT_FALSE(einsum("i.j", {&a}).ok());
  EXPECT_FALSE(einsum("ij,j", {&a, &b}).ok());  // 2 vs 3
  EXPECT_FALSE(einsum("......", {&a}).ok());
  EXPECT_FALSE(einsum("...i->i", {&a}).ok());  // ellipsis dims without '...' in the output
  EXPECT_FALSE(einsum("", {&a}).ok());
  Tensor rect = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_FALSE(einsum("ii", {&rect}).ok());  // diagonal of differing dims
  Tensor bools(DType::Bool, {2});
  EXPECT_FALSE(einsum("i", {&bools}).ok());
}

// ----- StringNormalizer -----

TEST(StringNormalizer, CaseInsensitiveStopwordsAndUnicode) {
  OneNode n("StringNormalizer", 1);
  n.attr("stopwords", std::vector<std::string>{"THE"});
  n.attr("case_change_action", std::string("UPPER"));
  Tensor x = strings({4}, {"the", "Café", "The", "straße"});
  auto r = n.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), Shape{2});
  EXPECT_EQ((*r)[0].strings(), (std::vector<std::string>{"CAFÉ", "STRAßE"}));
  n.attr("case_change_action", std::string("LOWER"));
  n.attr("is_case_sensitive", int64_t{1});
  auto s = n.run({&x});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)[0].strings(), (std::vector<std::string>{"the", "café", "the", "straße"}));
  // Invalid UTF-8 passes through unchanged.
  Tensor bad = strings({1}, {std::string("A\xff\xc3", 3)});
  auto b = n.run({&bad});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)[0].strings()[0], std::string("a\xff\xc3", 3));
}

TEST(StringNormalizer, EmptyResultAndBadShapes) {
  OneNode n("StringNormalizer", 1);
  n.attr("stopwords", std::vector<std::string>{"a"});
  Tensor x = strings({1, 2}, {"a", "a"});
  auto r = n.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{1, 1}));
  EXPECT_EQ((*r)[0].strings(), std::vector<std::string>{""});
  Tensor two_rows = strings({2, 1}, {"a", "b"});
  EXPECT_FALSE(n.run({&two_rows}).ok());
  Tensor nums(DType::Float, {2});
  EXPECT_FALSE(n.run({&nums}).ok());
  n.attr("case_change_action", std::string("TITLE"));
  Tensor y = strings({1}, {"b"});
  EXPECT_FALSE(n.run({&y}).ok());
}

// ----- TfIdfVectorizer -----

TEST(TfIdfVectorizer, StringPoolAndModes) {
  OneNode n("TfIdfVectorizer", 1);
  n.attr("mode", std::string("TF"));
  n.attr("min_gram_length", int64_t{1});
  n.attr("max_gram_length", int64_t{2});
  n.attr("max_skip_count", int64_t{1});
  n.attr("ngram_counts", std::vector<int64_t>{0, 2});
  n.attr("ngram_indexes", std::vector<int64_t>{0, 1, 2});
  n.attr("pool_strings", std::vector<std::string>{"a", "b", "a", "b"});  // unigrams a, b; bigram (a,b)
  Tensor x = strings({2, 3}, {"a", "b", "b", "a", "c", "b"});
  auto r = n.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{2, 3}));
  // Row 0 [a b b]: a=1, b=2, (a,b) at distance 1 and 2 -> 2. Row 1 [a c b]: a=1, b=1, (a,b) at distance 2 -> 1.
  expectFloats((*r)[0], {1, 2, 2, 1, 1, 1});
  n.attr("weights", std::vector<float>{0.5f, 2.0f, 3.0f});
  n.attr("mode", std::string("TFIDF"));
  expectFloats((*n.run({&x}))[0], {0.5, 4, 6, 0.5, 2, 3});
  n.attr("mode", std::string("IDF"));
  expectFloats((*n.run({&x}))[0], {0.5, 2, 3, 0.5, 2, 3});
}

TEST(TfIdfVectorizer, InvalidAttributesAreErrors) {
  OneNode n("TfIdfVectorizer", 1);
  n.attr("mode", std::string("TF"));
  n.attr("min_gram_length", int64_t{1});
  n.attr("max_gram_length", int64_t{1});
  n.attr("max_skip_count", int64_t{0});
  n.attr("ngram_counts", std::vector<int64_t>{0});
  n.attr("ngram_indexes", std::vector<int64_t>{0, 1});
  n.attr("pool_int64s", std::vector<int64_t>{7, 8});
  Tensor x = i64({3}, {7, 7, 8});
  auto ok = n.run({&x});
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  expectFloats((*ok)[0], {2, 1});
  Tensor s = strings({1}, {"7"});
  EXPECT_FALSE(n.run({&s}).ok());  // string input, int pool
  n.attr("ngram_counts", std::vector<int64_t>{0, 5});
  EXPECT_FALSE(n.run({&x}).ok());
  n.attr("ngram_counts", std::vector<int64_t>{0});
  n.attr("ngram_indexes", std::vector<int64_t>{0});
  EXPECT_FALSE(n.run({&x}).ok());  // fewer indexes than n-grams
  n.attr("ngram_indexes", std::vector<int64_t>{0, -1});
  EXPECT_FALSE(n.run({&x}).ok());
  n.attr("ngram_indexes", std::vector<int64_t>{0, 1});
  n.attr("min_gram_length", int64_t{0});
  EXPECT_FALSE(n.run({&x}).ok());
  n.attr("min_gram_length", int64_t{1});
  n.attr("mode", std::string("BM25"));
  EXPECT_FALSE(n.run({&x}).ok());
}

// ----- Random ops -----

TEST(Random, SeededShapesDtypesAndRanges) {
  OneNode n("RandomUniform", 0);
  n.attr("shape", std::vector<int64_t>{3, 4});
  n.attr("low", -2.0f);
  n.attr("high", 3.0f);
  n.attr("seed", 5.0f);
  n.attr("dtype", int64_t{11});
  auto a = n.run({});
  auto b = n.run({});
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ((*a)[0].shape(), (Shape{3, 4}));
  ASSERT_EQ((*a)[0].dtype(), DType::Double);
  EXPECT_EQ((*a)[0], (*b)[0]);  // same seed, same values
  for (double v : (*a)[0].data<double>()) EXPECT_TRUE(v >= -2 && v < 3);
  n.attr("seed", 6.0f);
  EXPECT_NE((*n.run({}))[0], (*a)[0]);
  n.attr("dtype", int64_t{6});
  EXPECT_FALSE(n.run({}).ok());  // int32 output
  n.attr("dtype", int64_t{1});
  n.attr("shape", std::vector<int64_t>{-1});
  EXPECT_FALSE(n.run({}).ok());
  n.attr("shape", std::vector<int64_t>{1 << 30, 1 << 30});
  EXPECT_FALSE(n.run({}).ok());
}

TEST(Random, NormalMomentsAndLikeOps) {
  OneNode n("RandomNormal", 0);
  n.attr("shape", std::vector<int64_t>{20000});
  n.attr("mean", 3.0f);
  n.attr("scale", 2.0f);
  auto r = n.run({});
  ASSERT_TRUE(r.ok());
  double sum = 0, sq = 0;
  for (float v : (*r)[0].data<float>()) {
    sum += v;
    sq += v * v;
  }
  const double mean = sum / 20000, var = sq / 20000 - mean * mean;
  EXPECT_NEAR(mean, 3.0, 0.1);
  EXPECT_NEAR(var, 4.0, 0.25);
  OneNode like("RandomNormalLike", 1);
  Tensor h(DType::Float16, {2, 0, 3});
  auto l = like.run({&h});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ((*l)[0].dtype(), DType::Float16);
  EXPECT_EQ((*l)[0].shape(), (Shape{2, 0, 3}));
  Tensor ints(DType::Int32, {2});
  EXPECT_FALSE(like.run({&ints}).ok());  // int output unless dtype says float
  like.attr("dtype", int64_t{1});
  auto li = like.run({&ints});
  ASSERT_TRUE(li.ok());
  EXPECT_EQ((*li)[0].dtype(), DType::Float);
  OneNode uni("RandomUniformLike", 1);
  auto u = uni.run({&h});
  ASSERT_TRUE(u.ok());
  EXPECT_EQ((*u)[0].shape(), (Shape{2, 0, 3}));
}

TEST(Random, MultinomialAndBernoulli) {
  OneNode m("Multinomial", 1);
  m.attr("sample_size", int64_t{5});
  m.attr("dtype", int64_t{7});
  Tensor x = f32({2, 3}, {-INFINITY, 0, -INFINITY, 0, -INFINITY, -INFINITY});
  auto r = m.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ((*r)[0].dtype(), DType::Int64);
  EXPECT_EQ((*r)[0].shape(), (Shape{2, 5}));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ((*r)[0].data<int64_t>()[i], 1);
    EXPECT_EQ((*r)[0].data<int64_t>()[5 + i], 0);
  }
  Tensor dead = f32({1, 2}, {-INFINITY, -INFINITY});
  EXPECT_FALSE(m.run({&dead}).ok());
  m.attr("dtype", int64_t{1});
  EXPECT_FALSE(m.run({&x}).ok());

  OneNode b("Bernoulli", 1);
  Tensor p = f32({4}, {0, 1, 0, 1});
  auto y = b.run({&p});
  ASSERT_TRUE(y.ok());
  expectFloats((*y)[0], {0, 1, 0, 1});
  b.attr("dtype", int64_t{9});
  auto yb = b.run({&p});
  ASSERT_TRUE(yb.ok());
  ASSERT_EQ((*yb)[0].dtype(), DType::Bool);
  EXPECT_EQ((*yb)[0].data<bool>()[1], true);
  Tensor ints(DType::Int32, {2});
  EXPECT_FALSE(b.run({&ints}).ok());
  b.attr("dtype", int64_t{8});
  EXPECT_FALSE(b.run({&p}).ok());
}

// ----- ai.onnx.preview.training -----

const char* kTraining = "ai.onnx.preview.training";

TEST(Training, AdagradWithDecay) {
  OneNode n("Adagrad", 5, 2, kTraining);
  n.attr("decay_factor", 0.5f);
  Tensor r = f32({}, {0.3f}), t = i64({}, {1}), x = f32({1}, {3}), g = f32({1}, {4}), h = f32({1}, {9});
  auto out = n.run({&r, &t, &x, &g, &h});
  ASSERT_TRUE(out.ok()) << out.error().message();
  ASSERT_EQ(out->size(), 2u);
  expectFloats((*out)[0], {2.84000003});  // numpy: 3 - (0.3/1.5)·4/(sqrt(25)+1e-6)
  expectFloats((*out)[1], {25});
}

TEST(Training, AdamWithBiasCorrection) {
  OneNode n("Adam", 6, 3, kTraining);
  Tensor r = f32({}, {0.1f}), t = i64({}, {2});
  Tensor x = f32({2}, {1, -2}), g = f32({2}, {0.5f, 0.25f}), v = f32({2}, {0.1f, 0.2f}), h = f32({2}, {0.3f, 0.4f});
  auto out = n.run({&r, &t, &x, &g, &v, &h});
  ASSERT_TRUE(out.ok()) << out.error().message();
  ASSERT_EQ(out->size(), 3u);
  // numpy, with the spec defaults alpha 0.9, beta 0.999, epsilon 1e-6
  expectFloats((*out)[0], {0.99398472, -2.00763061});
  expectFloats((*out)[1], {0.14, 0.205});
  expectFloats((*out)[2], {0.29995, 0.3996625});
}

TEST(Training, MomentumStandardAndNesterov) {
  OneNode n("Momentum", 5, 2, kTraining);
  n.attr("alpha", 0.9f);
  n.attr("beta", 0.5f);
  n.attr("norm_coefficient", 0.1f);
  n.attr("mode", std::string("standard"));
  Tensor r = f32({}, {0.05f}), t = i64({}, {3}), x = f32({2}, {1, 2}), g = f32({2}, {0.5f, -1}), v = f32({2}, {0.2f, 0.4f});
  auto out = n.run({&r, &t, &x, &g, &v});
  ASSERT_TRUE(out.ok()) << out.error().message();
  expectFloats((*out)[0], {0.976, 2.002});  // numpy
  expectFloats((*out)[1], {0.48, -0.04});
  n.attr("mode", std::string("nesterov"));
  expectFloats((*n.run({&r, &t, &x, &g, &v}))[0], {0.9484, 2.0418});
  n.attr("mode", std::string("heavy"));
  EXPECT_FALSE(n.run({&r, &t, &x, &g, &v}).ok());
}

TEST(Training, InvalidInputsAreErrors) {
  OneNode n("Adagrad", 5, 2, kTraining);
  Tensor r = f32({}, {0.3f}), t = i64({}, {1}), x = f32({1}, {3}), g2 = f32({2}, {4, 4}), h = f32({1}, {9});
  EXPECT_FALSE(n.run({&r, &t, &x, &g2, &h}).ok());  // G shaped unlike X
  EXPECT_FALSE(n.run({&r, &t, &x, &h}).ok());       // not 3 lists
  Tensor rv = f32({2}, {0.1f, 0.2f});
  EXPECT_FALSE(n.run({&rv, &t, &x, &x, &h}).ok());  // R not a scalar
  OneNode m("Momentum", 5, 2, kTraining);           // alpha, beta, mode, norm_coefficient are required
  EXPECT_FALSE(m.run({&r, &t, &x, &x, &h}).ok());
}

}  // namespace
}  // namespace poprt::ops
