// Quantization ops of the reference evaluator: the ONNX backend data compared exactly (the
// backend tool's relative tolerance would hide an off-by-one in large uint8 values), plus
// rounding, saturation, per-axis, zero-point and convolution cases. Expected values are
// hand-computed or come from an independent numpy script (/usr/bin/python3, numpy 1.24: direct
// loops over the spec's formulas, float32 scale arithmetic), pasted with the inputs' formula.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "tests/unit/ops/op_test_util.h"

namespace poprt::ops {
namespace {

// Element k of a generated tensor: ((k + salt) * 97) % mod + offset, as in the numpy script.
template <class T>
Tensor gen(DType dtype, Shape shape, int salt, int mod = 256, int offset = 0) {
  Tensor t(dtype, std::move(shape));
  auto d = t.data<T>();
  for (size_t k = 0; k < d.size(); ++k) d[k] = static_cast<T>((((static_cast<int>(k) + salt) * 97) % mod) + offset);
  return t;
}

template <class T>
std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> out;
  for (T v : t.data<T>()) out.push_back(v);
  return out;
}

// ---- backend data, exact -----------------------------------------------------------------------

class QuantBackendData : public testing::TestWithParam<std::string> {};

TEST_P(QuantBackendData, MatchesExpectedOutputsExactly) {
  const std::filesystem::path dir = kBackendNodeData / GetParam();
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no backend data";
  std::vector<Tensor> got, want;
  ASSERT_NO_FATAL_FAILURE(runBackendCase(dir, /*model_opset=*/true, got, want));
  for (size_t o = 0; o < got.size(); ++o) EXPECT_EQ(got[o], want[o]) << GetParam() << " output " << o;
}

INSTANTIATE_TEST_SUITE_P(Ops, QuantBackendData,
                         testing::Values("test_quantizelinear", "test_quantizelinear_axis", "test_dequantizelinear",
                                         "test_dequantizelinear_axis", "test_dynamicquantizelinear",
                                         "test_dynamicquantizelinear_max_adjusted", "test_dynamicquantizelinear_min_adjusted",
                                         "test_matmulinteger", "test_qlinearmatmul_2D", "test_qlinearmatmul_3D",
                                         "test_basic_convinteger", "test_convinteger_with_padding",
                                         "test_convinteger_without_padding", "test_qlinearconv"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

// ---- QuantizeLinear / DequantizeLinear ---------------------------------------------------------

TEST(QuantizeLinear, RoundsHalfToEvenAndSaturates) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "QuantizeLinear", 3, 1);
  Tensor x = f32({10}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 1000.f, -1000.f, NAN, INFINITY});
  Tensor one = f32({}, {1.f});
  Tensor zp_s8 = i8({}, {0});
  auto r = evaluateNode(*n, {&x, &one, &zp_s8});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].dtype(), DType::Int8);
  EXPECT_EQ(ints<int8_t>((*r)[0]), (std::vector<int64_t>{0, 2, 2, 0, -2, -2, 127, -128, 0, 127}));
  Tensor zp_u8 = u8({}, {10});
  auto u = evaluateNode(*n, {&x, &one, &zp_u8});
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(ints<uint8_t>((*u)[0]), (std::vector<int64_t>{10, 12, 12, 10, 8, 8, 255, 0, 10, 255}));
  // Without a zero point the output is uint8 with zero point 0.
  auto d = evaluateNode(*n, {&x, &one, nullptr});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(ints<uint8_t>((*d)[0]), (std::vector<int64_t>{0, 2, 2, 0, 0, 0, 255, 0, 0, 255}));
}

TEST(QuantizeLinear, PerAxisNegativeAxisFloat16Int32AndEmpty) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "QuantizeLinear", 3, 1);
  n->attributes["axis"].value = int64_t{-1};
  Tensor x = f32({2, 3}, {-1.0f, 0.26f, 3.1f, 7.5f, -0.26f, 100.0f});
  Tensor sc = f32({3}, {0.5f, 0.2f, 1.5f});
  Tensor zp = i8({3}, {-3, 0, 120});
  auto r = evaluateNode(*n, {&x, &sc, &zp}, 13);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(ints<int8_t>((*r)[0]), (std::vector<int64_t>{-5, 1, 122, 12, -1, 127}));  // numpy
  // Per-axis is an opset-13 feature.
  EXPECT_FALSE(evaluateNode(*n, {&x, &sc, &zp}, 10).ok());
  // fp16 and int32 inputs: 1.5 / 0.5 = 3; 7 / 2 = 3.5 -> 4.
  Tensor h(DType::Float16, {1});
  h.data<Half>()[0] = Half(1.5f);
  Tensor half_scale = f32({}, {0.5f});
  auto rh = evaluateNode(*n, {&h, &half_scale, nullptr});
  ASSERT_TRUE(rh.ok()) << rh.error().message();
  EXPECT_EQ(ints<uint8_t>((*rh)[0]), (std::vector<int64_t>{3}));
  Tensor xi = i32({2}, {7, -7});
  Tensor two = f32({}, {2.f});
  Tensor zp0 = i8({}, {0});
  auto ri = evaluateNode(*n, {&xi, &two, &zp0});
  ASSERT_TRUE(ri.ok());
  EXPECT_EQ(ints<int8_t>((*ri)[0]), (std::vector<int64_t>{4, -4}));
  Tensor empty(DType::Float, {0, 3});
  auto re = evaluateNode(*n, {&empty, &sc, &zp}, 13);
  ASSERT_TRUE(re.ok());
  EXPECT_EQ((*re)[0].shape(), (Shape{0, 3}));
}

TEST(QuantizeLinear, InvalidParametersAreErrors) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "QuantizeLinear", 3, 1);
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor sc2 = f32({2}, {1, 1}), sc3 = f32({3}, {1, 1, 1}), sc23 = f32({2, 3}, {1, 1, 1, 1, 1, 1});
  Tensor zp2 = u8({2}, {0, 0}), zp_i32 = i32({}, {0}), one = f32({}, {1});
  EXPECT_FALSE(evaluateNode(*n, {&x, &sc2, nullptr}, 13).ok());   // axis 1 has 3 slices
  EXPECT_FALSE(evaluateNode(*n, {&x, &sc3, &zp2}, 13).ok());      // zero point shape differs
  EXPECT_FALSE(evaluateNode(*n, {&x, &sc23, nullptr}, 13).ok());  // scale not 1-D
  EXPECT_FALSE(evaluateNode(*n, {&x, &one, &zp_i32}, 13).ok());   // int32 output is not a quantized type here
  EXPECT_FALSE(evaluateNode(*n, {&x, &zp2, nullptr}, 13).ok());   // integer scale
  EXPECT_FALSE(evaluateNode(*n, {&x, nullptr, nullptr}, 13).ok());
  n->attributes["axis"].value = int64_t{2};
  EXPECT_FALSE(evaluateNode(*n, {&x, &sc3, nullptr}, 13).ok());
  Tensor xs = i8({1}, {1});
  EXPECT_FALSE(evaluateNode(*n, {&xs, &one, nullptr}, 13).ok());  // int8 input
}

TEST(DequantizeLinear, PerAxisInt32AndErrors) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "DequantizeLinear", 3, 1);
  n->attributes["axis"].value = int64_t{0};
  Tensor x = u8({2, 2}, {0, 255, 17, 200});
  Tensor sc = f32({2}, {0.1f, 3.0f});
  Tensor zp = u8({2}, {128, 17});
  auto r = evaluateNode(*n, {&x, &sc, &zp}, 13);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const std::vector<float> want = {-12.8000002f, 12.6999998f, 0.f, 549.f};  // numpy float32
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ((*r)[0].data<float>()[i], want[i]);
  Tensor xi = i32({3}, {-2147483647, 0, 5});
  Tensor half = f32({}, {0.5f});
  auto ri = evaluateNode(*n, {&xi, &half, nullptr});
  ASSERT_TRUE(ri.ok()) << ri.error().message();
  EXPECT_FLOAT_EQ((*ri)[0].data<float>()[0], -1073741823.5f);
  EXPECT_FLOAT_EQ((*ri)[0].data<float>()[2], 2.5f);
  Tensor zp_s8 = i8({}, {0});
  EXPECT_FALSE(evaluateNode(*n, {&x, &half, &zp_s8}).ok());  // zero point dtype differs
  Tensor xf = f32({1}, {1});
  EXPECT_FALSE(evaluateNode(*n, {&xf, &half, nullptr}).ok());  // float input
  EXPECT_FALSE(evaluateNode(*n, {&x, &sc, &zp}, 10).ok());     // per-axis before opset 13
}

// ---- DynamicQuantizeLinear ---------------------------------------------------------------------

void expectDynamic(const std::vector<float>& x, const std::vector<int64_t>& y, float scale, int64_t zp) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "DynamicQuantizeLinear", 1, 3);
  Tensor xt = f32({static_cast<int64_t>(x.size())}, x);
  auto r = evaluateNode(*n, {&xt});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(ints<uint8_t>((*r)[0]), y);
  EXPECT_FLOAT_EQ((*r)[1].data<float>()[0], scale);
  EXPECT_EQ((*r)[1].shape(), Shape{});
  EXPECT_EQ(ints<uint8_t>((*r)[2]), (std::vector<int64_t>{zp}));
}

TEST(DynamicQuantizeLinear, RangesIncludingZero) {
  // numpy float32, see the file comment.
  expectDynamic({-2.55f, -1.0f, 0.3f}, {0, 139, 255}, 0.0111764707f, 228);
  expectDynamic({0.0f, 2.55f, 1.234f}, {0, 255, 123}, 0.00999999978f, 0);
  expectDynamic({-1.7f, 3.3f, 0.0f, 1.1f}, {0, 255, 87, 143}, 0.0196078438f, 87);
  // All zeros and empty: scale 0, zero point 0, y 0 (no division by zero).
  expectDynamic({0.f, 0.f}, {0, 0}, 0.f, 0);
  expectDynamic({}, {}, 0.f, 0);
  // NaN is ignored by min/max and quantizes to the zero point.
  expectDynamic({NAN, 2.55f}, {0, 255}, 0.00999999978f, 0);
}

// ---- MatMulInteger / QLinearMatMul -------------------------------------------------------------

TEST(MatMulInteger, PerRowAndPerColumnZeroPoints) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "MatMulInteger", 4, 1);
  Tensor a = gen<uint8_t>(DType::UInt8, {2, 3}, 1), b = gen<uint8_t>(DType::UInt8, {3, 2}, 2);
  Tensor azp = u8({2}, {3, 250}), bzp = u8({2}, {7, 128});
  auto r = evaluateNode(*n, {&a, &b, &azp, &bzp});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].dtype(), DType::Int32);
  EXPECT_EQ(ints<int32_t>((*r)[0]), (std::vector<int64_t>{43469, 11797, -36031, 1833}));  // numpy
}

TEST(MatMulInteger, Int8BatchBroadcastAndVectors) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "MatMulInteger", 4, 1);
  Tensor a = gen<int8_t>(DType::Int8, {2, 1, 2, 3}, 3, 256, -128), b = gen<int8_t>(DType::Int8, {3, 2}, 4, 256, -128);
  Tensor azp = i8({}, {-5});
  auto r = evaluateNode(*n, {&a, &b, &azp, nullptr});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{2, 1, 2, 2}));
  EXPECT_EQ(ints<int32_t>((*r)[0]), (std::vector<int64_t>{-13594, -10975, 11036, -992, 4946, 3103, -1144, 7198}));  // numpy
  // 1-D x 1-D: a dot product of rank 0 (hand: 1*4 + 2*5 + 3*6 = 32).
  Tensor v = u8({3}, {1, 2, 3}), w = u8({3}, {4, 5, 6});
  auto d = evaluateNode(*n, {&v, &w});
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ((*d)[0].shape(), Shape{});
  EXPECT_EQ((*d)[0].data<int32_t>()[0], 32);
  // Errors: inner dims, zero point dtype / size, float input.
  Tensor b4 = u8({4, 2}, {0, 0, 0, 0, 0, 0, 0, 0}), zp3 = u8({3}, {0, 0, 0}), f = f32({3}, {1, 2, 3});
  Tensor a2 = gen<uint8_t>(DType::UInt8, {2, 3}, 1), b2 = gen<uint8_t>(DType::UInt8, {3, 2}, 2);
  EXPECT_FALSE(evaluateNode(*n, {&a2, &b4}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&a2, &b2, &azp}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&a2, &b2, &zp3}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&f, &w}).ok());
}

TEST(QLinearMatMul, PerRowAndPerColumnScalesInt8Output) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "QLinearMatMul", 8, 1);
  Tensor a = gen<uint8_t>(DType::UInt8, {2, 3}, 1), b = gen<uint8_t>(DType::UInt8, {3, 2}, 2);
  Tensor azp = u8({2}, {3, 250}), bzp = u8({2}, {7, 128});
  Tensor as = f32({2}, {0.05f, 0.1f}), bs = f32({2}, {0.02f, 0.5f}), ys = f32({}, {3.0f});
  Tensor yzp = i8({}, {40});
  auto r = evaluateNode(*n, {&a, &as, &azp, &b, &bs, &bzp, &ys, &yzp});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].dtype(), DType::Int8);
  EXPECT_EQ(ints<int8_t>((*r)[0]), (std::vector<int64_t>{54, 127, 16, 71}));  // numpy
  Tensor ys2 = f32({2}, {1, 1});
  EXPECT_FALSE(evaluateNode(*n, {&a, &as, &azp, &b, &bs, &bzp, &ys2, &yzp}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&a, &as, &azp, &b, &bs, &bzp, &ys, nullptr}).ok());
}

// ---- ConvInteger / QLinearConv -----------------------------------------------------------------

// numpy: x [1,4,5,6] (salt 5), w [4,2,3,2] (salt 6), x_zp 10, w_zp [1,2,3,4], group 2,
// strides [2,1], pads [1,0,1,2], dilations [1,2].
const std::vector<int64_t> kConv2d = {
    46732,  78568,  97348,  59808,  48428,  6360,   179156, 166994, 144080, 183630, 31062,  60882,  110340, 98128,  130204,
    142568, 40492,  49104,  161884, 145168, 115396, 124792, 69016,  50416,  191536, 205746, 239156, 239542, 110602, 100488,
    164100, 83624,  118604, 163824, 76720,  78848,  136956, 68616,  114964, 86304,  41460,  69624,  167156, 184954, 107776,
    158854, 100542, 56894,  111124, 98832,  129292, 142344, 49476,  63040,  164972, 58320,  107572, 111768, 77232,  98912,
    165440, 184778, 204628, 156126, 98282,  110188, 105140, 125704, 123484, 139440, 100888, 107968};

void setConvAttrs(ir::Node* n) {
  n->attributes["group"].value = int64_t{2};
  n->attributes["strides"].value = std::vector<int64_t>{2, 1};
  n->attributes["pads"].value = std::vector<int64_t>{1, 0, 1, 2};
  n->attributes["dilations"].value = std::vector<int64_t>{1, 2};
  n->attributes["kernel_shape"].value = std::vector<int64_t>{3, 2};
}

TEST(ConvInteger, GroupedStridedDilatedPaddedPerChannelZeroPoint) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "ConvInteger", 4, 1);
  setConvAttrs(n);
  Tensor x = gen<uint8_t>(DType::UInt8, {1, 4, 5, 6}, 5), w = gen<uint8_t>(DType::UInt8, {4, 2, 3, 2}, 6);
  Tensor xzp = u8({}, {10}), wzp = u8({4}, {1, 2, 3, 4});
  auto r = evaluateNode(*n, {&x, &w, &xzp, &wzp});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{1, 4, 3, 6}));
  EXPECT_EQ(ints<int32_t>((*r)[0]), kConv2d);
}

TEST(ConvInteger, AutoPadSameUpperAndLower) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "ConvInteger", 2, 1);
  n->attributes["strides"].value = std::vector<int64_t>{2};
  Tensor x = gen<int8_t>(DType::Int8, {1, 1, 7}, 7, 256, -128), w = gen<int8_t>(DType::Int8, {1, 1, 4}, 8, 256, -128);
  n->attributes["auto_pad"].value = std::string("SAME_UPPER");
  auto up = evaluateNode(*n, {&x, &w});
  ASSERT_TRUE(up.ok()) << up.error().message();
  EXPECT_EQ(ints<int32_t>((*up)[0]), (std::vector<int64_t>{-7822, 27630, -15302, -3947}));  // numpy
  n->attributes["auto_pad"].value = std::string("SAME_LOWER");
  auto lo = evaluateNode(*n, {&x, &w});
  ASSERT_TRUE(lo.ok());
  EXPECT_EQ(ints<int32_t>((*lo)[0]), (std::vector<int64_t>{13086, -9912, -6252, 17990}));  // numpy
  n->attributes["auto_pad"].value = std::string("VALID");
  auto valid = evaluateNode(*n, {&x, &w});
  ASSERT_TRUE(valid.ok());
  EXPECT_EQ((*valid)[0].shape(), (Shape{1, 1, 2}));
  n->attributes["auto_pad"].value = std::string("SAME");
  EXPECT_FALSE(evaluateNode(*n, {&x, &w}).ok());
}

TEST(ConvInteger, ThreeSpatialDimsAndEmptyBatch) {
  // All-ones 2x2x2 input and kernel, no padding: one output of 8 (hand-computed).
  ir::Graph g;
  ir::Node* n = makeNode(g, "ConvInteger", 2, 1);
  Tensor x = u8({1, 1, 2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1}), w = u8({1, 1, 2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1});
  auto r = evaluateNode(*n, {&x, &w});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{1, 1, 1, 1, 1}));
  EXPECT_EQ((*r)[0].data<int32_t>()[0], 8);
  Tensor x0(DType::UInt8, {0, 1, 2, 2, 2});
  auto e = evaluateNode(*n, {&x0, &w});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)[0].shape(), (Shape{0, 1, 1, 1, 1}));
}

TEST(ConvInteger, InvalidShapesAndAttributesAreErrors) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "ConvInteger", 4, 1);
  Tensor x = gen<uint8_t>(DType::UInt8, {1, 4, 5, 6}, 5), w = gen<uint8_t>(DType::UInt8, {4, 2, 3, 2}, 6);
  EXPECT_FALSE(evaluateNode(*n, {&x, &w}).ok());  // group 1 needs 4 input channels in w
  setConvAttrs(n);
  ASSERT_TRUE(evaluateNode(*n, {&x, &w}).ok());
  Tensor wzp3 = u8({3}, {1, 2, 3}), xzp2 = u8({2}, {1, 2}), xzp_s8 = i8({}, {0});
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, nullptr, &wzp3}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &xzp2}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&x, &w, &xzp_s8}).ok());
  auto with = [&](const std::string& name, ir::AttributeValue v) {
    setConvAttrs(n);
    n->attributes[name].value = std::move(v);
    return evaluateNode(*n, {&x, &w}).ok();
  };
  EXPECT_FALSE(with("group", int64_t{3}));
  EXPECT_FALSE(with("group", int64_t{0}));
  EXPECT_FALSE(with("strides", std::vector<int64_t>{0, 1}));
  EXPECT_FALSE(with("strides", std::vector<int64_t>{1}));
  EXPECT_FALSE(with("dilations", std::vector<int64_t>{-1, 1}));
  EXPECT_FALSE(with("pads", std::vector<int64_t>{1, 1}));
  EXPECT_FALSE(with("pads", std::vector<int64_t>{-1, 0, 0, 0}));
  EXPECT_FALSE(with("kernel_shape", std::vector<int64_t>{3, 3}));
  EXPECT_FALSE(with("dilations", std::vector<int64_t>{5, 1}));  // kernel extent 11 > padded 7
  EXPECT_FALSE(with("strides", std::vector<int64_t>{INT64_MAX, 1}));
  setConvAttrs(n);
  Tensor x3 = gen<uint8_t>(DType::UInt8, {4, 5, 6}, 5), xf(DType::Float, {1, 4, 5, 6});
  EXPECT_FALSE(evaluateNode(*n, {&x3, &w}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&xf, &w}).ok());
}

TEST(QLinearConv, PerChannelScalesAndBias) {
  ir::Graph g;
  ir::Node* n = makeNode(g, "QLinearConv", 9, 1);
  setConvAttrs(n);
  Tensor x = gen<uint8_t>(DType::UInt8, {1, 4, 5, 6}, 5), w = gen<uint8_t>(DType::UInt8, {4, 2, 3, 2}, 6);
  Tensor xzp = u8({}, {10}), wzp = u8({4}, {1, 2, 3, 4});
  Tensor xs = f32({}, {0.05f}), ws = f32({4}, {0.01f, 0.02f, 0.005f, 0.04f}), ys = f32({}, {2.0f}), yzp = u8({}, {100});
  Tensor bias = i32({4}, {100, -2000, 0, 50000});
  auto r = evaluateNode(*n, {&x, &xs, &xzp, &w, &ws, &wzp, &ys, &yzp, &bias});
  ASSERT_TRUE(r.ok()) << r.error().message();
  const std::vector<int64_t> want = {// numpy
                                     112, 120, 124, 115, 112, 102, 145, 142, 136, 146, 108, 115, 128, 125, 133, 136, 110, 112,
                                     180, 172, 157, 161, 134, 124, 195, 202, 219, 219, 154, 149, 181, 141, 158, 181, 137, 138,
                                     117, 109, 114, 111, 105, 109, 121, 123, 113, 120, 113, 107, 114, 112, 116, 118, 106, 108,
                                     255, 208, 255, 255, 227, 249, 255, 255, 255, 255, 248, 255, 255, 255, 255, 255, 251, 255};
  EXPECT_EQ(ints<uint8_t>((*r)[0]), want);
  Tensor bias_bad = i32({3}, {0, 0, 0}), bias_f = f32({4}, {0, 0, 0, 0}), ws_bad = f32({2}, {1, 1});
  EXPECT_FALSE(evaluateNode(*n, {&x, &xs, &xzp, &w, &ws, &wzp, &ys, &yzp, &bias_bad}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&x, &xs, &xzp, &w, &ws, &wzp, &ys, &yzp, &bias_f}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&x, &xs, &xzp, &w, &ws_bad, &wzp, &ys, &yzp}).ok());
  EXPECT_FALSE(evaluateNode(*n, {&x, &xs, &xzp, &w, &ws, &wzp, nullptr, &yzp}).ok());
}

}  // namespace
}  // namespace poprt::ops
