// Signal ops of the reference evaluator (DFT, STFT, windows, MelWeightMatrix): edge cases beyond
// the ONNX backend data. Expected values are hand-computed or from numpy (noted where so).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "tests/unit/ops/op_test_util.h"

namespace poprt::ops {
namespace {

Tensor scalarI64(int64_t v) { return i64({}, {v}); }

// ----- DFT -----

TEST(Dft, RealInputFullAndOnesided) {
  OneNode n("DFT", 1);
  Tensor x = f32({1, 4, 1}, {1, 2, 3, 4});
  auto r = n.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{1, 4, 2}));
  // fft([1,2,3,4]) = [10, -2+2i, -2, -2-2i] (by hand).
  expectFloats((*r)[0], {10, 0, -2, 2, -2, 0, -2, -2});
  n.attr("onesided", int64_t{1});
  auto h = n.run({&x});
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)[0].shape(), (Shape{1, 3, 2}));
  expectFloats((*h)[0], {10, 0, -2, 2, -2, 0});
}

TEST(Dft, InverseOfComplexInput) {
  OneNode n("DFT", 1);
  n.attr("inverse", int64_t{1});
  Tensor x = f32({1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2});
  auto r = n.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloats((*r)[0], {1, 0, 2, 0, 3, 0, 4, 0});
}

TEST(Dft, DftLengthPadsAndTruncates) {
  OneNode n("DFT", 2);
  Tensor x = f32({1, 4, 1}, {1, 2, 3, 4});
  Tensor two = scalarI64(2), six = scalarI64(6);
  auto r = n.run({&x, &two});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloats((*r)[0], {3, 0, -1, 0});  // fft([1,2])
  auto p = n.run({&x, &six});
  ASSERT_TRUE(p.ok());
  // numpy: np.fft.fft([1,2,3,4,0,0])
  expectFloats((*p)[0], {10, 0, -3.5, -4.33012702, 2.5, 0.866025404, -2, 0, 2.5, -0.866025404, -3.5, 4.33012702});
  Tensor zero = scalarI64(0);
  EXPECT_FALSE(n.run({&x, &zero}).ok());
}

TEST(Dft, PrimeLengthsDirectAndChirpZ) {
  // numpy: np.fft.fft([1,2,3,4,5,6,7])
  OneNode n("DFT", 1);
  Tensor x = f32({1, 7, 1}, {1, 2, 3, 4, 5, 6, 7});
  auto r = n.run({&x});
  ASSERT_TRUE(r.ok());
  expectFloats((*r)[0], {28, 0, -3.5, 7.26782489, -3.5, 2.79115686, -3.5, 0.79885216, -3.5, -0.79885216, -3.5, -2.79115686, -3.5,
                         -7.26782489});
  // A prime length above the direct-sum limit: cos(2π·3j/n) has X[3] = X[n-3] = n/2, else 0.
  const int64_t len = 1031;
  Tensor c(DType::Double, {1, len, 1});
  for (int64_t j = 0; j < len; ++j) c.data<double>()[j] = std::cos(2 * std::numbers::pi * 3 * j / len);
  auto f = n.run({&c});
  ASSERT_TRUE(f.ok());
  ASSERT_EQ((*f)[0].dtype(), DType::Double);
  auto y = (*f)[0].data<double>();
  for (int64_t k = 0; k < len; ++k) {
    const double want = (k == 3 || k == len - 3) ? len / 2.0 : 0.0;
    ASSERT_NEAR(y[2 * k], want, 1e-8) << k;
    ASSERT_NEAR(y[2 * k + 1], 0.0, 1e-8) << k;
  }
}

TEST(Dft, NegativeAxisAndInnerDims) {
  // [1, 2, 2, 1]: transform along axis -3 (= 1) of two interleaved columns.
  OneNode n("DFT", 1);
  n.attr("axis", int64_t{-3});
  Tensor x = f32({1, 2, 2, 1}, {1, 5, 3, 7});  // column 0: [1,3]; column 1: [5,7]
  auto r = n.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{1, 2, 2, 2}));
  // fft([1,3]) = [4,-2]; fft([5,7]) = [12,-2]
  expectFloats((*r)[0], {4, 0, 12, 0, -2, 0, -2, 0});
}

TEST(Dft, Float16AndEmpty) {
  OneNode n("DFT", 1);
  Tensor h(DType::Float16, {1, 2, 1});
  h.data<Half>()[0] = Half(1.0f);
  h.data<Half>()[1] = Half(2.0f);
  auto r = n.run({&h});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ((*r)[0].dtype(), DType::Float16);
  EXPECT_EQ(static_cast<float>((*r)[0].data<Half>()[0]), 3.0f);
  EXPECT_EQ(static_cast<float>((*r)[0].data<Half>()[2]), -1.0f);
  Tensor e(DType::Float, {0, 4, 1});
  auto re = n.run({&e});
  ASSERT_TRUE(re.ok());
  EXPECT_EQ((*re)[0].shape(), (Shape{0, 4, 2}));
  // A zero-length transform axis stays empty, also onesided.
  Tensor z(DType::Float, {1, 0, 1});
  n.attr("onesided", int64_t{1});
  auto rz = n.run({&z});
  ASSERT_TRUE(rz.ok()) << rz.error().message();
  EXPECT_EQ((*rz)[0].shape(), (Shape{1, 0, 2}));
}

TEST(Dft, InvalidInputsAreErrors) {
  OneNode n("DFT", 1);
  Tensor x = f32({1, 4, 1}, {1, 2, 3, 4});
  Tensor three(DType::Float, {1, 4, 3});
  Tensor ints(DType::Int32, {1, 4, 1});
  Tensor r1(DType::Float, {4});
  EXPECT_FALSE(n.run({&three}).ok());
  EXPECT_FALSE(n.run({&ints}).ok());
  EXPECT_FALSE(n.run({&r1}).ok());
  EXPECT_FALSE(n.run({}).ok());
  n.attr("inverse", int64_t{1});
  n.attr("onesided", int64_t{1});
  EXPECT_FALSE(n.run({&x}).ok());
  n.attr("onesided", int64_t{0});
  for (int64_t axis : {-1, 2, 5, -4}) {
    n.attr("axis", axis);
    auto r = n.run({&x});
    EXPECT_FALSE(r.ok()) << axis;
  }
}

// ----- STFT -----

TEST(Stft, FramesWithAndWithoutWindow) {
  OneNode n("STFT", 4);
  Tensor sig = f32({1, 8, 1}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor step = scalarI64(4), len = scalarI64(4);
  auto r = n.run({&sig, &step, nullptr, &len});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{1, 2, 3, 2}));
  // fft([0,1,2,3]) = [6, -2+2i, -2, ...]; fft([4,5,6,7]) = [22, -2+2i, -2, ...] (by hand)
  expectFloats((*r)[0], {6, 0, -2, 2, -2, 0, 22, 0, -2, 2, -2, 0});
  Tensor win = f32({4}, {0, 1, 1, 0});
  auto w = n.run({&sig, &step, &win});
  ASSERT_TRUE(w.ok()) << w.error().message();
  // frame 0 windowed: [0,1,2,0] -> [3, -2-i, 1]; frame 1: [0,5,6,0] -> [11, -6-5i, 1] (by hand)
  expectFloats((*w)[0], {3, 0, -2, -1, 1, 0, 11, 0, -6, -5, 1, 0});
  n.attr("onesided", int64_t{0});
  auto full = n.run({&sig, &step, &win, &len});
  ASSERT_TRUE(full.ok());
  EXPECT_EQ((*full)[0].shape(), (Shape{1, 2, 4, 2}));
}

TEST(Stft, InvalidInputsAreErrors) {
  OneNode n("STFT", 4);
  Tensor sig = f32({1, 8, 1}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor step = scalarI64(4), zero = scalarI64(0), big = scalarI64(9), three = scalarI64(3);
  Tensor win = f32({4}, {1, 1, 1, 1});
  EXPECT_FALSE(n.run({&sig, &zero, nullptr, &three}).ok());  // step 0
  EXPECT_FALSE(n.run({&sig, &step, nullptr, &big}).ok());    // frame longer than the signal
  EXPECT_FALSE(n.run({&sig, &step, &win, &three}).ok());     // window and frame_length differ
  EXPECT_FALSE(n.run({&sig, &step}).ok());                   // neither
  Tensor bad(DType::Float, {1, 8, 3});
  EXPECT_FALSE(n.run({&bad, &step, &win}).ok());
}

// ----- Windows -----

TEST(Windows, PeriodicAndSymmetricValues) {
  Tensor four = scalarI64(4), three = scalarI64(3);
  OneNode hann("HannWindow", 1);
  auto h = hann.run({&four});
  ASSERT_TRUE(h.ok()) << h.error().message();
  expectFloats((*h)[0], {0, 0.5, 1, 0.5});  // 0.5 - 0.5 cos(2πn/4)
  hann.attr("periodic", int64_t{0});
  auto hs = hann.run({&three});
  ASSERT_TRUE(hs.ok());
  expectFloats((*hs)[0], {0, 1, 0});  // N = 2
  OneNode hamming("HammingWindow", 1);
  auto m = hamming.run({&four});
  ASSERT_TRUE(m.ok());
  expectFloats((*m)[0], {4.0 / 46, 25.0 / 46, 1, 25.0 / 46});  // 25/46 - 21/46 cos(2πn/4)
  OneNode blackman("BlackmanWindow", 1);
  blackman.attr("output_datatype", int64_t{11});
  auto b = blackman.run({&four});
  ASSERT_TRUE(b.ok());
  ASSERT_EQ((*b)[0].dtype(), DType::Double);
  auto bd = (*b)[0].data<double>();
  EXPECT_NEAR(bd[0], 0.0, 1e-12);
  EXPECT_NEAR(bd[1], 0.34, 1e-12);  // 0.42 - 0.5·0 + 0.08·(-1)
  EXPECT_NEAR(bd[2], 1.0, 1e-12);
}

TEST(Windows, EdgeSizesAndErrors) {
  OneNode hann("HannWindow", 1);
  Tensor zero = scalarI64(0), one = scalarI64(1), neg = scalarI64(-3);
  auto e = hann.run({&zero});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)[0].shape(), Shape{0});
  hann.attr("periodic", int64_t{0});
  auto s1 = hann.run({&one});
  ASSERT_TRUE(s1.ok());
  expectFloats((*s1)[0], {1});
  EXPECT_FALSE(hann.run({&neg}).ok());
  Tensor vec = i64({2}, {3, 4});
  EXPECT_FALSE(hann.run({&vec}).ok());
  Tensor f = f32({}, {3});
  EXPECT_FALSE(hann.run({&f}).ok());
  hann.attr("output_datatype", int64_t{8});  // string
  EXPECT_FALSE(hann.run({&one}).ok());
  hann.attr("output_datatype", int64_t{99});
  EXPECT_FALSE(hann.run({&one}).ok());
}

// ----- MelWeightMatrix -----

TEST(MelWeightMatrix, ShapeAndErrors) {
  OneNode n("MelWeightMatrix", 5);
  Tensor bins = scalarI64(4), dft = scalarI64(8), rate = scalarI64(100);
  Tensor lo = f32({}, {0}), hi = f32({}, {50}), too_high = f32({}, {1000});
  auto r = n.run({&bins, &dft, &rate, &lo, &hi});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{5, 4}));
  // An upper edge past the Nyquist rate puts filter points past the spectrum: they are skipped.
  auto past = n.run({&bins, &dft, &rate, &lo, &too_high});
  ASSERT_TRUE(past.ok());
  for (float v : (*past)[0].data<float>()) EXPECT_TRUE(v >= 0 && v <= 1);
  Tensor zero = scalarI64(0), neg = scalarI64(-1);
  EXPECT_FALSE(n.run({&bins, &dft, &zero, &lo, &hi}).ok());
  EXPECT_FALSE(n.run({&neg, &dft, &rate, &lo, &hi}).ok());
  EXPECT_FALSE(n.run({&bins, &zero, &rate, &lo, &hi}).ok());
  EXPECT_FALSE(n.run({&bins, &dft, &rate, &hi, &lo}).ok());  // lower > upper
  EXPECT_FALSE(n.run({&bins, &dft, &rate, &lo}).ok());
}

}  // namespace
}  // namespace poprt::ops

namespace poprt::ops {
namespace {

// Every op of the family on odd inputs (ranks 0..3, empty dims, wrong dtypes, strings, omitted
// inputs) and odd attributes: an error or a result, never a crash (run under ASan/UBSan too).
TEST(SignalAndMisc, OddInputsNeverCrash) {
  std::vector<Tensor> pool;
  pool.push_back(Tensor(DType::Float, {}));
  pool.push_back(Tensor(DType::Float, {0}));
  pool.push_back(Tensor(DType::Float, {2, 0, 1}));
  pool.push_back(Tensor(DType::Float, {1, 3, 2}));
  pool.push_back(Tensor(DType::Float, {2, 2}));
  pool.push_back(Tensor(DType::Double, {1, 5, 1}));
  pool.push_back(Tensor(DType::Float16, {2, 3}));
  pool.push_back(Tensor(DType::BFloat16, {3}));
  pool.push_back(Tensor(DType::Int64, {}));
  pool.push_back(Tensor(DType::Int64, {2}));
  pool.push_back(Tensor(DType::Int32, {1, 3}));
  pool.push_back(Tensor(DType::Bool, {2}));
  pool.push_back(Tensor(DType::String, {2}));
  Tensor big(DType::Int64, {});
  big.data<int64_t>()[0] = int64_t{1} << 40;
  pool.push_back(big);
  Tensor neg(DType::Int64, {});
  neg.data<int64_t>()[0] = -5;
  pool.push_back(neg);
  Tensor three(DType::Int64, {2});
  three.data<int64_t>()[0] = 3;
  three.data<int64_t>()[1] = -2;
  pool.push_back(three);
  const std::vector<std::pair<std::string, std::string>> ops = {{"DFT", ""},
                                                                {"STFT", ""},
                                                                {"HannWindow", ""},
                                                                {"HammingWindow", ""},
                                                                {"BlackmanWindow", ""},
                                                                {"MelWeightMatrix", ""},
                                                                {"NegativeLogLikelihoodLoss", ""},
                                                                {"SoftmaxCrossEntropyLoss", ""},
                                                                {"Det", ""},
                                                                {"Einsum", ""},
                                                                {"StringNormalizer", ""},
                                                                {"TfIdfVectorizer", ""},
                                                                {"RandomNormal", ""},
                                                                {"RandomUniform", ""},
                                                                {"RandomNormalLike", ""},
                                                                {"RandomUniformLike", ""},
                                                                {"Multinomial", ""},
                                                                {"Bernoulli", ""},
                                                                {"Adagrad", "ai.onnx.preview.training"},
                                                                {"Adam", "ai.onnx.preview.training"},
                                                                {"Momentum", "ai.onnx.preview.training"}};
  const std::vector<std::pair<std::string, ir::AttributeValue>> attrs = {
      {"axis", int64_t{-7}},
      {"axis", int64_t{1}},
      {"onesided", int64_t{1}},
      {"dtype", int64_t{999}},
      {"output_datatype", int64_t{-1}},
      {"ignore_index", int64_t{0}},
      {"reduction", std::string("sum")},
      {"equation", std::string("...ii,...->...i")},
      {"equation", std::string("a...,b->")},
      {"shape", std::vector<int64_t>{2, -1}},
      {"sample_size", int64_t{-3}},
      {"mode", std::string("TF")},
      {"min_gram_length", int64_t{1}},
      {"max_gram_length", int64_t{1} << 40},
      {"max_skip_count", int64_t{1} << 40},
      {"ngram_counts", std::vector<int64_t>{5, 0}},
      {"ngram_indexes", std::vector<int64_t>{int64_t{1} << 40}},
      {"pool_int64s", std::vector<int64_t>{1}},
      {"stopwords", std::vector<std::string>{""}},
      {"seed", 1.0f}};
  int runs = 0;
  for (const auto& [op, domain] : ops)
    for (size_t nin = 0; nin <= 5; ++nin)
      for (size_t start = 0; start < pool.size(); ++start)
        for (size_t a = 0; a <= attrs.size(); a += 3) {
          ir::Graph g;
          std::vector<ir::Value*> ins;
          for (size_t i = 0; i < nin; ++i) ins.push_back(g.addInput("i" + std::to_string(i), {}));
          ir::Node* node = g.addNode(op, ins, {g.addValue("o0"), g.addValue("o1")}, "n", domain);
          for (size_t k = a; k < attrs.size() && k < a + 3; ++k) node->attributes[attrs[k].first].value = attrs[k].second;
          std::vector<const Tensor*> in;
          for (size_t i = 0; i < nin; ++i)
            in.push_back((start + i * 5) % 7 == 6 ? nullptr : &pool[(start + i * 3) % pool.size()]);
          auto r = evaluateNode(*node, in);
          ++runs;
          (void)r;
        }
  EXPECT_GT(runs, 0);
}

}  // namespace
}  // namespace poprt::ops
