// RNN, GRU and LSTM of the reference evaluator: the ONNX backend data, plus cases the data lacks
// (bidirectional, layout 1, sequence_lens, clip, input_forget, other activations, fp16, errors).
// Expected values of the extra cases come from an independent float64 numpy implementation of the
// spec's equations (/usr/bin/python3, numpy 1.24), pasted with the inputs' generating formula.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "tests/unit/ops/op_test_util.h"

namespace poprt::ops {
namespace {

// The inputs' values: element k (row-major) of a tensor with salt s is (((k + s) * 37) % 17 - 8) / 10.
Tensor gen(Shape shape, int salt) {
  Tensor t(DType::Float, std::move(shape));
  auto d = t.data<float>();
  for (size_t k = 0; k < d.size(); ++k) d[k] = static_cast<float>((((static_cast<int>(k) + salt) * 37) % 17) - 8) / 10.0f;
  return t;
}
Tensor zeros(Shape shape) { return Tensor(DType::Float, std::move(shape)); }
Tensor lens(const std::vector<int32_t>& v) { return i32({static_cast<int64_t>(v.size())}, v); }

void expectValues(const Tensor& got, const Shape& shape, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), shape) << what;
  ASSERT_EQ(static_cast<size_t>(got.numElements()), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    double g = got.dtype() == DType::Float16 ? static_cast<float>(got.data<Half>()[i]) : got.data<float>()[i];
    EXPECT_NEAR(g, want[i], tol) << what << " [" << i << "]";
  }
}

void setStrings(ir::Node* n, const std::string& name, std::vector<std::string> v) { n->attributes[name].value = std::move(v); }

// [T][B][I] <-> [B][T][I] (also [D][B][H] <-> [B][D][H]): swaps the first two axes.
Tensor swap01(const Tensor& t) {
  Shape s = t.shape();
  std::swap(s[0], s[1]);
  Tensor out(t.dtype(), s);
  int64_t inner = 1;
  for (size_t d = 2; d < s.size(); ++d) inner *= s[d];
  for (int64_t a = 0; a < t.shape()[0]; ++a)
    for (int64_t b = 0; b < t.shape()[1]; ++b)
      for (int64_t k = 0; k < inner; ++k)
        out.data<float>()[static_cast<size_t>((b * s[1] + a) * inner + k)] =
            t.data<float>()[static_cast<size_t>((a * t.shape()[1] + b) * inner + k)];
  return out;
}

constexpr int64_t T = 3, B = 2, I = 2, H = 2;

// ---- backend data ------------------------------------------------------------------------------

class RnnBackendData : public testing::TestWithParam<std::string> {};

TEST_P(RnnBackendData, MatchesExpectedOutputs) {
  const std::filesystem::path dir = kBackendNodeData / GetParam();
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no backend data";
  std::vector<Tensor> got, want;
  ASSERT_NO_FATAL_FAILURE(runBackendCase(dir, /*model_opset=*/true, got, want));
  for (size_t o = 0; o < got.size(); ++o) {
    std::vector<double> w(want[o].data<float>().begin(), want[o].data<float>().end());
    expectValues(got[o], want[o].shape(), w, 1e-5, GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, RnnBackendData,
                         testing::Values("test_rnn_seq_length", "test_simple_rnn_batchwise", "test_simple_rnn_defaults",
                                         "test_simple_rnn_with_initial_bias", "test_gru_batchwise", "test_gru_defaults",
                                         "test_gru_seq_length", "test_gru_with_initial_bias", "test_lstm_batchwise",
                                         "test_lstm_defaults", "test_lstm_with_initial_bias", "test_lstm_with_peepholes"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

// ---- LSTM --------------------------------------------------------------------------------------

TEST(Lstm, BidirectionalWithSequenceLengthsInitialStatesPeepholesAndClip) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "LSTM", 8, 3);
  n->attributes["direction"].value = std::string("bidirectional");
  n->attributes["hidden_size"].value = H;
  n->attributes["clip"].value = 0.6f;
  Tensor x = gen({T, B, I}, 0), w = gen({2, 4 * H, I}, 1), r = gen({2, 4 * H, H}, 2), b = gen({2, 8 * H}, 3);
  Tensor p = gen({2, 3 * H}, 4), h0 = gen({2, B, H}, 5), c0 = gen({2, B, H}, 6), sl = lens({3, 1});
  auto out = evaluateNode(*n, {&x, &w, &r, &b, &sl, &h0, &c0, &p});
  ASSERT_TRUE(out.ok()) << out.error().message();
  ASSERT_EQ(out->size(), 3u);
  // numpy (float64), see the file comment.
  expectValues((*out)[0], {T, 2, B, H},
               {-0.31156195,
                -0.0150360493,
                -0.230723184,
                0.0212326621,
                0.13692451,
                -0.206888685,
                -0.0378437337,
                -0.292569393,
                -0.365734205,
                0.0510528267,
                0,
                0,
                0.0992937276,
                0.0180688683,
                0,
                0,
                -0.360699703,
                0.00459175218,
                0,
                0,
                0.150511342,
                0.161319065,
                0,
                0},
               1e-5, "Y");
  expectValues((*out)[1], {2, B, H},
               {-0.360699703, 0.00459175218, -0.230723184, 0.0212326621, 0.13692451, -0.206888685, -0.0378437337, -0.292569393},
               1e-5, "Y_h");
  expectValues((*out)[2], {2, B, H},
               {-0.630877138, 0.0129591956, -0.373840924, 0.059992966, 0.407581502, -0.332128023, -0.0586800745, -0.534259136},
               1e-5, "Y_c");
}

TEST(Lstm, InputForgetCouplesTheGatesAndOutputsMayBeOmitted) {
  ir::Graph g;
  auto* x_v = g.addInput("x", {});
  auto* w_v = g.addInput("w", {});
  auto* r_v = g.addInput("r", {});
  auto* yc = g.addValue("yc");
  ir::Node* n = g.addNode("LSTM", {x_v, w_v, r_v}, {nullptr, nullptr, yc});
  n->attributes["input_forget"].value = int64_t{1};
  Tensor x = gen({T, B, I}, 0), w = gen({1, 4 * H, I}, 7), r = gen({1, 4 * H, H}, 8);
  auto out = evaluateNode(*n, {&x, &w, &r});
  ASSERT_TRUE(out.ok()) << out.error().message();
  expectValues((*out)[2], {1, B, H}, {0.0514333138, 0.135048866, 0.0127836458, 0.337008311}, 1e-6, "Y_c");
  expectValues((*out)[0], {T, 1, B, H},
               {0.0269065308, -0.128292, 0.0115077742, -0.00258774425, 0.0053072404, 0.124461445, 0.0287326837, -0.115083926,
                0.0226188184, 0.069375818, 0.00619112155, 0.147460709},
               1e-6, "Y");
}

// ---- GRU ---------------------------------------------------------------------------------------

TEST(Gru, ReverseLayoutOneLinearBeforeResetWithParametrisedActivations) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "GRU", 6, 2);
  n->attributes["direction"].value = std::string("reverse");
  n->attributes["layout"].value = int64_t{1};
  n->attributes["linear_before_reset"].value = int64_t{1};
  setStrings(n, "activations", {"HardSigmoid", "LeakyRelu"});
  n->attributes["activation_alpha"].value = std::vector<float>{0.3f, 0.2f};
  n->attributes["activation_beta"].value = std::vector<float>{0.4f};
  Tensor x = swap01(gen({T, B, I}, 0)), w = gen({1, 3 * H, I}, 9), r = gen({1, 3 * H, H}, 10), b = gen({1, 6 * H}, 11);
  Tensor h0 = swap01(gen({1, B, H}, 12)), sl = lens({3, 2});
  auto out = evaluateNode(*n, {&x, &w, &r, &b, &sl, &h0}, 14);
  ASSERT_TRUE(out.ok()) << out.error().message();
  // numpy gives Y as [T][D][B][H]; layout 1 is [B][T][D][H].
  const std::vector<double> y_tdbh = {0.628128006, 0.751884289, 0.636044488, 1.0461305, 0.111652898, 1.04590089,
                                      0.740628,    0.88286,     0.17956416,  0.6908766, 0,           0};
  std::vector<double> y_btdh(12);
  for (int t = 0; t < T; ++t)
    for (int b2 = 0; b2 < B; ++b2)
      for (int h = 0; h < H; ++h)
        y_btdh[static_cast<size_t>((b2 * T + t) * H + h)] = y_tdbh[static_cast<size_t>((t * B + b2) * H + h)];
  expectValues((*out)[0], {B, T, 1, H}, y_btdh, 1e-6, "Y");
  expectValues((*out)[1], {B, 1, H}, {0.628128006, 0.751884289, 0.636044488, 1.0461305}, 1e-6, "Y_h");
}

TEST(Gru, ClipWithDefaultActivations) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "GRU", 6, 2);
  n->attributes["clip"].value = 0.5f;
  Tensor x = gen({T, B, I}, 0), w = gen({1, 3 * H, I}, 9), r = gen({1, 3 * H, H}, 10), b = gen({1, 6 * H}, 11);
  Tensor h0 = gen({1, B, H}, 12);
  auto out = evaluateNode(*n, {&x, &w, &r, &b, nullptr, &h0});
  ASSERT_TRUE(out.ok()) << out.error().message();
  expectValues((*out)[0], {T, 1, B, H},
               {0.0611247354, 0.174386936, 0.202325751, 0.400911337, 0.0368213039, 0.353487297, 0.326905719, 0.439009471,
                0.209422261, 0.421104967, 0.123050835, 0.453393066},
               1e-6, "Y");
}

// ---- RNN ---------------------------------------------------------------------------------------

TEST(Rnn, BidirectionalWithADifferentActivationPerDirection) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "RNN", 5, 2);
  n->attributes["direction"].value = std::string("bidirectional");
  setStrings(n, "activations", {"Relu", "ScaledTanh"});
  n->attributes["activation_alpha"].value = std::vector<float>{0.7f};
  n->attributes["activation_beta"].value = std::vector<float>{1.5f};
  Tensor x = gen({T, B, I}, 0), w = gen({2, H, I}, 13), r = gen({2, H, H}, 14), b = gen({2, 2 * H}, 15), sl = lens({2, 3});
  auto out = evaluateNode(*n, {&x, &w, &r, &b, &sl});
  ASSERT_TRUE(out.ok()) << out.error().message();
  expectValues((*out)[0], {T, 2, B, H},
               {0,
                0,
                0,
                0.1,
                0.661276043,
                0.650142503,
                -0.149119287,
                0.659816942,
                0,
                0.64,
                0,
                0,
                -0.425272321,
                0.580315205,
                0.649519582,
                0.647336689,
                0,
                0,
                0,
                0.73,
                0,
                0,
                -0.501408509,
                0.576990519},
               1e-6, "Y");
  expectValues((*out)[1], {2, B, H}, {0, 0.64, 0, 0.73, 0.661276043, 0.650142503, -0.149119287, 0.659816942}, 1e-6, "Y_h");
}

// A recurrent op's activation function is the op of the same name (lib/ops/scalar_math.h), NaN,
// infinities and tiny values included: one step of one unit, W = 1, R = 0 and no bias, applies it
// to each batch row's x.
TEST(Rnn, ActivationsAreTheOpsOfTheirName) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> xs = {nan, inf, -inf, 0.f, -0.f, 1e-10f, -1e-10f, 0.5f, -0.5f, 2.f, -2.f, 40.f, -40.f, 1.5f};
  const int64_t n = static_cast<int64_t>(xs.size());
  Tensor x = f32({1, n, 1}, xs), w = f32({1, 1, 1}, {1.f}), r = f32({1, 1, 1}, {0.f});
  struct Case {
    const char* fn;
    std::vector<float> alpha, beta;
    std::map<std::string, ir::AttributeValue> attrs;  // of the elementwise op
  };
  const std::vector<Case> cases = {{"Relu", {}, {}, {}},
                                   {"Sigmoid", {}, {}, {}},
                                   {"Tanh", {}, {}, {}},
                                   {"LeakyRelu", {0.3f}, {}, {{"alpha", 0.3f}}},
                                   {"ThresholdedRelu", {0.7f}, {}, {{"alpha", 0.7f}}},
                                   {"HardSigmoid", {0.3f}, {0.4f}, {{"alpha", 0.3f}, {"beta", 0.4f}}},
                                   {"Elu", {0.9f}, {}, {{"alpha", 0.9f}}},
                                   {"Softsign", {}, {}, {}},
                                   {"Softplus", {}, {}, {}}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.fn);
    ir::Graph g;
    ir::Node* rnn = makeNode(g, "RNN", 3, 2);
    rnn->attributes["hidden_size"].value = int64_t{1};
    setStrings(rnn, "activations", {c.fn});
    if (!c.alpha.empty()) rnn->attributes["activation_alpha"].value = c.alpha;
    if (!c.beta.empty()) rnn->attributes["activation_beta"].value = c.beta;
    auto got = evaluateNode(*rnn, {&x, &w, &r});
    ASSERT_TRUE(got.ok()) << got.error().message();
    ir::Node* op = makeNode(g, c.fn, 1, 1);
    for (const auto& [k, v] : c.attrs) op->attributes[k].value = v;
    Tensor flat = f32({n}, xs);
    auto want = evaluateNode(*op, {&flat});
    ASSERT_TRUE(want.ok()) << want.error().message();
    for (int64_t i = 0; i < n; ++i) {
      const float g_i = (*got)[1].data<float>()[static_cast<size_t>(i)], w_i = (*want)[0].data<float>()[static_cast<size_t>(i)];
      if (std::isnan(w_i))
        EXPECT_TRUE(std::isnan(g_i)) << "x = " << xs[static_cast<size_t>(i)] << ": " << g_i;
      else
        EXPECT_EQ(g_i, w_i) << "x = " << xs[static_cast<size_t>(i)];
    }
  }
}

TEST(Rnn, Float16InputGivesFloat16Output) {
  // Hand-computed: H = 1, I = 1, W = 2, R = 0.5, x = [1, -1]: h1 = tanh(2), h2 = tanh(-2 + 0.5 tanh(2)).
  ir::Graph g;
  ir::Node* n = makeNode(g, "RNN", 3, 2);
  Tensor x(DType::Float16, {2, 1, 1}), w(DType::Float16, {1, 1, 1}), r(DType::Float16, {1, 1, 1});
  x.data<Half>()[0] = Half(1.0f);
  x.data<Half>()[1] = Half(-1.0f);
  w.data<Half>()[0] = Half(2.0f);
  r.data<Half>()[0] = Half(0.5f);
  auto out = evaluateNode(*n, {&x, &w, &r});
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ((*out)[0].dtype(), DType::Float16);
  const double h1 = std::tanh(2.0), h2 = std::tanh(-2.0 + 0.5 * h1);
  expectValues((*out)[0], {2, 1, 1, 1}, {h1, h2}, 2e-3, "Y");
  expectValues((*out)[1], {1, 1, 1}, {h2}, 2e-3, "Y_h");
}

TEST(Rnn, EmptySequenceAndBatch) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "RNN", 6, 2);
  Tensor w = gen({1, H, I}, 1), r = gen({1, H, H}, 2);
  Tensor x0 = zeros({0, B, I}), h0 = gen({1, B, H}, 3);
  auto out = evaluateNode(*n, {&x0, &w, &r, nullptr, nullptr, &h0});
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ((*out)[0].shape(), (Shape{0, 1, B, H}));
  EXPECT_EQ((*out)[1], h0);  // no step: the initial state
  Tensor xb = zeros({T, 0, I});
  auto outb = evaluateNode(*n, {&xb, &w, &r});
  ASSERT_TRUE(outb.ok()) << outb.error().message();
  EXPECT_EQ((*outb)[0].shape(), (Shape{T, 1, 0, H}));
}

TEST(Rnn, InvalidInputsAreErrors) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "RNN", 6, 2);
  Tensor x = gen({T, B, I}, 0), w = gen({1, H, I}, 1), r = gen({1, H, H}, 2);
  Tensor w_bad = gen({1, H, I + 1}, 1), r_bad = gen({1, H + 1, H}, 2), b_bad = gen({1, H}, 3), x2 = gen({T, B}, 0);
  Tensor xi(DType::Int32, {T, B, I});
  EXPECT_FALSE(evaluateNode(*n, {&x, &w_bad, &r}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r_bad}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r, &b_bad}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&x2, &w, &r}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&xi, &w, &r}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, nullptr}).ok());
  Tensor sl = lens({4, 1}), sl_short = lens({1}), sl_neg = lens({-1, 1});
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r, nullptr, &sl}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r, nullptr, &sl_short}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r, nullptr, &sl_neg}).ok());
  Tensor h0_bad = gen({1, B + 1, H}, 3);
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r, nullptr, nullptr, &h0_bad}).ok());
  n->attributes["hidden_size"].value = int64_t{3};
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r}).ok());
  n->attributes.erase("hidden_size");
  n->attributes["direction"].value = std::string("sideways");
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r}).ok());
  n->attributes["direction"].value = std::string("bidirectional");  // W has one direction only
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r}).ok());
  n->attributes.erase("direction");
  setStrings(n, "activations", {"Swish"});
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r}).ok());
  setStrings(n, "activations", {"Tanh", "Tanh", "Tanh"});
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r}).ok());
  n->attributes.erase("activations");
  n->attributes["layout"].value = int64_t{2};
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r}).ok());
  n->attributes.erase("layout");
  n->attributes["clip"].value = -1.0f;
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r}).ok());
}

TEST(Lstm, WrongPeepholeAndCellShapesAreErrors) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "LSTM", 8, 3);
  Tensor x = gen({T, B, I}, 0), w = gen({1, 4 * H, I}, 1), r = gen({1, 4 * H, H}, 2);
  Tensor p_bad = gen({1, 2 * H}, 4), c0_bad = gen({1, B, H + 1}, 6), w3 = gen({1, 3 * H, I}, 1);
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r, nullptr, nullptr, nullptr, nullptr, &p_bad}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &r, nullptr, nullptr, nullptr, &c0_bad}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&x, &w3, &r}).ok());  // GRU-shaped weights
}

}  // namespace
}  // namespace poprt::ops
