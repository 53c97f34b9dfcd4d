// The nn op family of the reference evaluator: edge cases beyond the ONNX backend data.
// Every expected value is hand-computed (the arithmetic is in the comments) or taken from the
// worked examples of the ONNX operator docs, never from the code under test.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "tests/unit/ops/op_test_util.h"

namespace poprt::ops {
namespace {

Tensor iota(Shape shape, float start = 0) {
  Tensor t(DType::Float, std::move(shape));
  float v = start;
  for (float& x : t.data<float>()) x = v++;
  return t;
}

// t is a float tensor of `shape` whose elements are within tol * (1 + |want|) of `want` (NaN matches NaN).
void expectFloatTensor(const Tensor& t, Shape shape, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(t.dtype(), DType::Float);
  ASSERT_EQ(t.shape(), shape);
  auto got = t.data<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "[" << i << "]";
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "[" << i << "]";
    }
  }
}

// ---- Conv ----

TEST(NnConv, Basic2DWithBias) {
  OneNode n("Conv", 3);
  Tensor x = iota({1, 1, 3, 3}), w = f32({1, 1, 2, 2}, {1, 1, 1, 1}), b = f32({1}, {1});
  auto r = n.run({&x, &w, &b});
  ASSERT_TRUE(r.ok()) << r.error().message();
  // windows of 0..8 as 3x3: 0+1+3+4=8, 1+2+4+5=12, 3+4+6+7=20, 4+5+7+8=24; plus bias 1
  expectFloatTensor((*r)[0], {1, 1, 2, 2}, {9, 13, 21, 25});
}

TEST(NnConv, GroupedDepthwise1D) {
  OneNode n("Conv", 2);
  n.i("group", 2);
  Tensor x = f32({1, 2, 3}, {1, 2, 3, 4, 5, 6}), w = f32({2, 1, 1}, {2, 3});
  auto r = n.run({&x, &w});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 2, 3}, {2, 4, 6, 12, 15, 18});
}

TEST(NnConv, DilationStridePads) {
  OneNode n("Conv", 2);
  n.ints("dilations", {2}).ints("strides", {2}).ints("pads", {1, 1});
  Tensor x = f32({1, 1, 5}, {1, 2, 3, 4, 5}), w = f32({1, 1, 2}, {1, 1});
  auto r = n.run({&x, &w});
  ASSERT_TRUE(r.ok()) << r.error().message();
  // padded [0 1 2 3 4 5 0]; taps p and p+2 at p = 0, 2, 4: 0+2, 2+4, 4+0
  expectFloatTensor((*r)[0], {1, 1, 3}, {2, 6, 4});
}

TEST(NnConv, AutoPadSameUpperAndLower) {
  Tensor x = f32({1, 1, 4}, {1, 2, 3, 4}), w = f32({1, 1, 2}, {1, 10});
  OneNode up("Conv", 2);
  up.s("auto_pad", "SAME_UPPER");
  auto r = up.run({&x, &w});
  ASSERT_TRUE(r.ok()) << r.error().message();
  // one pad at the end: [1,2] [2,3] [3,4] [4,0] with weights 1, 10
  expectFloatTensor((*r)[0], {1, 1, 4}, {21, 32, 43, 4});
  OneNode lo("Conv", 2);
  lo.s("auto_pad", "SAME_LOWER");
  r = lo.run({&x, &w});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 4}, {10, 21, 32, 43});
}

TEST(NnConv, Conv3DOnes) {
  OneNode n("Conv", 2);
  Tensor x = f32({1, 1, 2, 2, 2}, std::vector<float>(8, 1)), w = f32({2, 1, 2, 2, 2}, std::vector<float>(16, 0.5f));
  auto r = n.run({&x, &w});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 2, 1, 1, 1}, {4, 4});  // 8 taps x 0.5
}

TEST(NnConv, Float16AndEmptyBatch) {
  OneNode n("Conv", 2);
  Tensor x(DType::Float16, {1, 1, 3}), w(DType::Float16, {1, 1, 2});
  for (int i = 0; i < 3; ++i) x.data<Half>()[i] = Half(static_cast<float>(i + 1));
  w.data<Half>()[0] = Half(0.5f);
  w.data<Half>()[1] = Half(0.25f);
  auto r = n.run({&x, &w});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ((*r)[0].dtype(), DType::Float16);
  EXPECT_EQ(static_cast<float>((*r)[0].data<Half>()[0]), 1.0f);   // 0.5 + 0.5
  EXPECT_EQ(static_cast<float>((*r)[0].data<Half>()[1]), 1.75f);  // 1 + 0.75
  Tensor e(DType::Float, {0, 1, 3}), wf = f32({4, 1, 2}, std::vector<float>(8, 1));
  r = n.run({&e, &wf});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{0, 4, 2}));
}

TEST(NnConv, InvalidInputsAreErrors) {
  Tensor x = iota({1, 2, 4}), w1 = iota({1, 3, 2}), w_ok = iota({1, 2, 2}), big = iota({1, 2, 9}), x2 = iota({2, 4});
  Tensor bad_bias = f32({2}, {0, 0});
  OneNode n("Conv", 3);
  expectError(n.run({&x, &w1}), "do not match group");
  expectError(n.run({&x, &big}), "exceeds padded input");
  expectError(n.run({&x2, &w_ok}), "rank");
  expectError(n.run({&x, &w_ok, &bad_bias}), "B must have shape");
  expectError(n.run({&x}), "input 1 is required");
  OneNode g3("Conv", 2);
  g3.i("group", 3);
  expectError(g3.run({&x, &w_ok}), "group");
  OneNode s0("Conv", 2);
  s0.ints("strides", {0});
  expectError(s0.run({&x, &w_ok}), "strides");
  OneNode ap("Conv", 2);
  ap.s("auto_pad", "FOO");
  expectError(ap.run({&x, &w_ok}), "auto_pad");
  OneNode pads("Conv", 2);
  pads.ints("pads", {1});
  expectError(pads.run({&x, &w_ok}), "pads");
  Tensor xi(DType::Int32, {1, 2, 4}), wi(DType::Int32, {1, 2, 2});
  expectError(n.run({&xi, &wi}), "floating-point");
}

TEST(NnConv, ResNetSizedLayerIsFast) {
  // 3x3, 256 -> 256 channels on 14x14 (ResNet-50 stage 3): 115M multiply-adds.
  OneNode n("Conv", 3);
  n.ints("pads", {1, 1, 1, 1});
  Tensor x(DType::Float, {1, 256, 14, 14}), w(DType::Float, {256, 256, 3, 3}), b(DType::Float, {256});
  for (float& v : x.data<float>()) v = 1.0f;
  for (float& v : w.data<float>()) v = 0.5f;
  auto t0 = std::chrono::steady_clock::now();
  auto r = n.run({&x, &w, &b});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.error().message();
  // Interior output: 256 channels x 9 taps x 0.5; a corner sees 4 taps: 512.
  EXPECT_EQ((*r)[0].data<float>()[15], 1152.0f);
  EXPECT_EQ((*r)[0].data<float>()[0], 512.0f);
  EXPECT_LT(secs, 5.0);
}

// ---- ConvTranspose ----

TEST(NnConvTranspose, StridesPadsOutputPadding) {
  Tensor x = f32({1, 1, 3}, {1, 2, 3}), w = f32({1, 1, 2}, {1, 1});
  OneNode s2("ConvTranspose", 2);
  s2.ints("strides", {2});
  auto r = s2.run({&x, &w});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 6}, {1, 1, 2, 2, 3, 3});
  OneNode s1("ConvTranspose", 2);
  r = s1.run({&x, &w});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 4}, {1, 3, 5, 3});  // overlapping taps add
  OneNode pad("ConvTranspose", 2);
  pad.ints("pads", {1, 0});
  r = pad.run({&x, &w});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 3}, {3, 5, 3});
  OneNode op("ConvTranspose", 2);
  op.ints("strides", {2}).ints("output_padding", {1});
  r = op.run({&x, &w});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 7}, {1, 1, 2, 2, 3, 3, 0});
  OneNode os("ConvTranspose", 2);
  os.ints("strides", {2}).ints("output_shape", {7});
  r = os.run({&x, &w});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 7}, {1, 1, 2, 2, 3, 3, 0});
}

TEST(NnConvTranspose, GroupsAndBias) {
  OneNode n("ConvTranspose", 3);
  n.i("group", 2);
  Tensor x = f32({1, 2, 1}, {1, 2}), w = f32({2, 1, 2}, {1, 2, 3, 4}), b = f32({2}, {10, 20});
  auto r = n.run({&x, &w, &b});
  ASSERT_TRUE(r.ok()) << r.error().message();
  // channel 0: 1*[1,2] + 10; channel 1: 2*[3,4] + 20
  expectFloatTensor((*r)[0], {1, 2, 2}, {11, 12, 26, 28});
  Tensor wbad = f32({3, 1, 2}, {1, 2, 3, 4, 5, 6});
  expectError(n.run({&x, &wbad}), "does not match");
}

// ---- Pooling ----

TEST(NnPool, MaxPoolIndicesBothStorageOrders) {
  Tensor x = f32({1, 1, 2, 3}, {1, 5, 2, 4, 3, 6});
  OneNode n("MaxPool", 1, 2);
  n.ints("kernel_shape", {2, 2});
  auto r = n.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 1, 2}, {5, 6});
  EXPECT_EQ((*r)[1].data<int64_t>()[0], 1);
  EXPECT_EQ((*r)[1].data<int64_t>()[1], 5);
  OneNode c("MaxPool", 1, 2);
  c.ints("kernel_shape", {2, 2}).i("storage_order", 1);
  r = c.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  // column-major within the 2x3 plane: (0,1) -> 0 + 1*2 = 2, (1,2) -> 1 + 2*2 = 5
  EXPECT_EQ((*r)[1].data<int64_t>()[0], 2);
  EXPECT_EQ((*r)[1].data<int64_t>()[1], 5);
}

TEST(NnPool, MaxPoolCeilModeNaNAndInt8) {
  Tensor x = f32({1, 1, 5}, {1, 2, 3, 4, 5});
  OneNode fl("MaxPool", 1);
  fl.ints("kernel_shape", {2}).ints("strides", {2});
  auto r = fl.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 2}, {2, 4});
  OneNode ce("MaxPool", 1);
  ce.ints("kernel_shape", {2}).ints("strides", {2}).i("ceil_mode", 1);
  r = ce.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 3}, {2, 4, 5});
  Tensor xn = f32({1, 1, 4}, {1, NAN, 3, 2});
  r = fl.run({&xn});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 2}, {NAN, 3});
  Tensor xi(DType::Int8, {1, 1, 4});
  auto d = xi.data<int8_t>();
  d[0] = -128, d[1] = -5, d[2] = 127, d[3] = 0;
  r = fl.run({&xi}, 12);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ((*r)[0].dtype(), DType::Int8);
  EXPECT_EQ((*r)[0].data<int8_t>()[0], -5);
  EXPECT_EQ((*r)[0].data<int8_t>()[1], 127);
}

TEST(NnPool, AveragePoolCountIncludePad) {
  Tensor x = f32({1, 1, 3}, {1, 2, 3});
  OneNode ex("AveragePool", 1);
  ex.ints("kernel_shape", {2}).ints("pads", {1, 1});
  auto r = ex.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  // windows [pad,1] [1,2] [2,3] [3,pad]
  expectFloatTensor((*r)[0], {1, 1, 4}, {1, 1.5f, 2.5f, 3});
  OneNode inc("AveragePool", 1);
  inc.ints("kernel_shape", {2}).ints("pads", {1, 1}).i("count_include_pad", 1);
  r = inc.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 4}, {0.5f, 1.5f, 2.5f, 1.5f});
  OneNode nok("AveragePool", 1);
  expectError(nok.run({&x}), "kernel_shape");
}

TEST(NnPool, LpPoolAndGlobalPools) {
  Tensor x = f32({1, 1, 3}, {3, -4, 12});
  OneNode lp("LpPool", 1);
  lp.ints("kernel_shape", {2}).i("p", 2);
  auto r = lp.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 2}, {5, std::sqrt(160.0f)});  // sqrt(9+16), sqrt(16+144)
  Tensor g = f32({1, 2, 2, 2}, {1, 2, 3, 4, -1, -2, -3, -8});
  OneNode avg("GlobalAveragePool", 1);
  r = avg.run({&g});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 2, 1, 1}, {2.5f, -3.5f});
  OneNode mx("GlobalMaxPool", 1);
  r = mx.run({&g});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 2, 1, 1}, {4, -1});
  OneNode glp("GlobalLpPool", 1);
  glp.i("p", 1);
  r = glp.run({&g});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 2, 1, 1}, {10, 14});
}

TEST(NnPool, MaxUnpoolScattersAndChecksIndices) {
  Tensor x = f32({1, 1, 2}, {7, 9}), idx = i64({1, 1, 2}, {1, 2});
  OneNode n("MaxUnpool", 2);
  n.ints("kernel_shape", {2}).ints("strides", {2});
  auto r = n.run({&x, &idx});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 4}, {0, 7, 9, 0});
  Tensor bad = i64({1, 1, 2}, {1, 4});
  expectError(n.run({&x, &bad}), "out of range");
  Tensor neg = i64({1, 1, 2}, {-1, 0});
  expectError(n.run({&x, &neg}), "out of range");
}

// ---- Normalizations ----

TEST(NnNorm, BatchNormInferenceAndTraining) {
  OneNode n("BatchNormalization", 5);
  n.f("epsilon", 0.0f);
  Tensor x = f32({1, 2, 1}, {1, 2}), s = f32({2}, {1, 2}), b = f32({2}, {0, 1}), m = f32({2}, {0, 1}), v = f32({2}, {1, 4});
  auto r = n.run({&x, &s, &b, &m, &v});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 2, 1}, {1, 2});  // (1-0)/1*1+0, (2-1)/2*2+1
  OneNode t("BatchNormalization", 5, 3);
  t.f("epsilon", 0.0f).i("training_mode", 1);
  Tensor xt = f32({2, 1}, {1, 3}), one = f32({1}, {1}), zero = f32({1}, {0});
  r = t.run({&xt, &one, &zero, &zero, &one}, 15);
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {2, 1}, {-1, 1});  // batch mean 2, variance 1
  expectFloatTensor((*r)[1], {1}, {0.2f});      // 0 * 0.9 + 2 * 0.1
  expectFloatTensor((*r)[2], {1}, {1.0f});      // 1 * 0.9 + 1 * 0.1
  Tensor wrong = f32({3}, {1, 1, 1});
  expectError(n.run({&x, &wrong, &b, &m, &v}), "does not match");
}

TEST(NnNorm, InstanceNormAndLayerNorm) {
  OneNode in("InstanceNormalization", 3);
  in.f("epsilon", 0.0f);
  Tensor x = f32({1, 1, 2}, {1, 3}), s = f32({1}, {2}), b = f32({1}, {1});
  auto r = in.run({&x, &s, &b});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 2}, {-1, 3});  // (x - 2) / 1 * 2 + 1
  OneNode ln("LayerNormalization", 2, 3);
  ln.i("axis", -1);
  Tensor xl = f32({2, 2}, {1, 3, 2, 2}), sl = f32({2}, {1, 2});
  r = ln.run({&xl, &sl});
  ASSERT_TRUE(r.ok()) << r.error().message();
  const float inv1 = 1 / std::sqrt(1 + 1e-5f), inv0 = 1 / std::sqrt(1e-5f);
  expectFloatTensor((*r)[0], {2, 2}, {-inv1, 2 * inv1, 0, 0});
  expectFloatTensor((*r)[1], {2, 1}, {2, 2});
  expectFloatTensor((*r)[2], {2, 1}, {inv1, inv0}, 1e-4f);
  OneNode bad("LayerNormalization", 2);
  bad.i("axis", 2);
  expectError(bad.run({&xl, &sl}), "out of range");
  Tensor s3 = f32({3}, {1, 1, 1});
  expectError(ln.run({&xl, &s3}), "does not broadcast");
}

TEST(NnNorm, LrnMvnLpNorm) {
  OneNode lrn("LRN", 1);
  lrn.i("size", 2).f("alpha", 1).f("beta", 1).f("bias", 1);
  Tensor x = f32({1, 2, 1, 1}, {1, 2});
  auto r = lrn.run({&x});
  ASSERT_TRUE(r.ok()) << r.error().message();
  // c0 sums channels 0..1: 1/(1 + 5/2); c1 sums channel 1: 2/(1 + 4/2)
  expectFloatTensor((*r)[0], {1, 2, 1, 1}, {1 / 3.5f, 2 / 3.0f});
  OneNode mvn("MeanVarianceNormalization", 1);
  Tensor xm = f32({1, 1, 1, 2}, {1, 3});
  r = mvn.run({&xm});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 1, 2}, {-1, 1});  // mean 2, std 1
  OneNode mvn_bad("MeanVarianceNormalization", 1);
  mvn_bad.ints("axes", {4});
  expectError(mvn_bad.run({&xm}), "out of range");
  OneNode l1("LpNormalization", 1);
  l1.i("axis", 0).i("p", 1);
  Tensor v = f32({2}, {1, -3});
  r = l1.run({&v});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {2}, {0.25f, -0.75f});
  OneNode l2("LpNormalization", 1);
  Tensor v2 = f32({2, 2}, {3, 4, 0, 0});
  r = l2.run({&v2});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {2, 2}, {0.6f, 0.8f, 0, 0});  // a zero row stays zero
  OneNode l3("LpNormalization", 1);
  l3.i("p", 3);
  expectError(l3.run({&v2}), "p must be 1 or 2");
}

// ---- Resize, Upsample, GridSample ----

TEST(NnResize, NearestLinearFromOnnxDocExamples) {
  Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4}), empty(DType::Float, {0});
  Tensor sc = f32({4}, {1, 1, 2, 3});
  OneNode nn("Resize", 3);
  auto r = nn.run({&x, &empty, &sc});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  Tensor sc2 = f32({4}, {1, 1, 2, 2});
  OneNode lin("Resize", 3);
  lin.s("mode", "linear");
  r = lin.run({&x, nullptr, &sc2});
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 4, 4},
                    {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
  OneNode ac("Resize", 3);
  ac.s("mode", "linear").s("coordinate_transformation_mode", "align_corners");
  r = ac.run({&x, nullptr, &sc2});
  ASSERT_TRUE(r.ok()) << r.error().message();
  // x_original = x * (2 - 1) / (4 - 1): thirds
  expectFloatTensor(
      (*r)[0], {1, 1, 4, 4},
      {1, 4 / 3.f, 5 / 3.f, 2, 5 / 3.f, 2, 7 / 3.f, 8 / 3.f, 7 / 3.f, 8 / 3.f, 3, 10 / 3.f, 3, 10 / 3.f, 11 / 3.f, 4});
}

TEST(NnResize, TfHalfPixelForNnAndCropExtrapolation) {
  Tensor x = iota({1, 1, 4, 4}, 1);
  Tensor sizes = i64({4}, {1, 1, 3, 2}), empty(DType::Float, {0});
  OneNode nn("Resize", 4);
  nn.s("coordinate_transformation_mode", "tf_half_pixel_for_nn");
  auto r = nn.run({&x, &empty, &empty, &sizes}, 11);
  ASSERT_TRUE(r.ok()) << r.error().message();
  // rows (o+0.5)/0.75 = 0.67, 2, 3.33 -> 1, 2, 3; cols (o+0.5)*2 = 1, 3
  expectFloatTensor((*r)[0], {1, 1, 3, 2}, {6, 8, 10, 12, 14, 16});
  expectError(nn.run({&x, &empty, &empty, &sizes}, 13), "coordinate_transformation_mode");
  OneNode crop("Resize", 4);
  crop.s("mode", "linear").s("coordinate_transformation_mode", "tf_crop_and_resize").f("extrapolation_value", 10);
  Tensor roi = f32({8}, {0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f}), s33 = i64({4}, {1, 1, 3, 3});
  r = crop.run({&x, &roi, &empty, &s33});
  ASSERT_TRUE(r.ok()) << r.error().message();
  // rows 1.2 + 1.2 o = 1.2, 2.4, 3.6 (outside); cols 1.8 + 1.65 o = 1.8, 3.45 (outside), 5.1 (outside)
  // value(r, c) = 1 + 4 r + c
  expectFloatTensor((*r)[0], {1, 1, 3, 3}, {7.6f, 10, 10, 12.4f, 10, 10, 10, 10, 10});
}

TEST(NnResize, CubicAndIntegerAndErrors) {
  // 1-D cubic, asymmetric, scale 2 over [0, 0, 1, 0]: output 1 sits at x = 0.5 and sees taps
  // -1..2 (clamped to [0, 0, 0, 1]) with weights W(1.5), W(0.5), W(0.5), W(1.5); a = -0.75:
  // W(1.5) = a(3.375 - 11.25 + 12 - 4) = -0.09375, so the value is -0.09375.
  Tensor x = f32({4}, {0, 0, 1, 0}), sc = f32({1}, {2});
  OneNode cu("Resize", 3);
  cu.s("mode", "cubic").s("coordinate_transformation_mode", "asymmetric");
  auto r = cu.run({&x, nullptr, &sc});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ((*r)[0].shape(), Shape{8});
  EXPECT_NEAR((*r)[0].data<float>()[1], -0.09375f, 1e-6f);
  EXPECT_NEAR((*r)[0].data<float>()[4], 1.0f, 1e-6f);
  // uint8 nearest keeps the type
  Tensor u(DType::UInt8, {2});
  u.data<uint8_t>()[0] = 10;
  u.data<uint8_t>()[1] = 250;
  OneNode nn("Resize", 3);
  r = nn.run({&u, nullptr, &sc});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ((*r)[0].dtype(), DType::UInt8);
  EXPECT_EQ((*r)[0].data<uint8_t>()[0], 10);
  EXPECT_EQ((*r)[0].data<uint8_t>()[3], 250);
  Tensor sizes = i64({1}, {3}), neg = f32({1}, {-1}), two = f32({2}, {1, 1});
  expectError(nn.run({&x, nullptr, &sc, &sizes}), "only one of scales and sizes");
  expectError(nn.run({&x, nullptr, &neg}), "positive");
  expectError(nn.run({&x, nullptr, &two}), "expected 1");
  expectError(nn.run({&x}), "one of scales and sizes is required");
  Tensor huge = f32({1}, {1e30f});
  expectError(nn.run({&x, nullptr, &huge}), "out of range");
}

TEST(NnResize, LegacyResize10AndUpsample) {
  Tensor x = f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), sc = f32({4}, {1, 1, 0.6f, 0.6f});
  OneNode r10("Resize", 2);
  auto r = r10.run({&x, &sc}, 10);
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 1, 2}, {1, 3});  // the ONNX opset-10 doc example
  Tensor y = f32({1, 1, 2, 2}, {1, 2, 3, 4}), up = f32({4}, {1, 1, 2, 3});
  OneNode u9("Upsample", 2);
  r = u9.run({&y, &up}, 9);
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  OneNode u7("Upsample", 1);
  u7.attr("scales", std::vector<float>{1, 1, 2, 2}).s("mode", "linear");
  r = u7.run({&y}, 7);
  ASSERT_TRUE(r.ok()) << r.error().message();
  // asymmetric: x = o / 2, clamped at the last pixel
  expectFloatTensor((*r)[0], {1, 1, 4, 4}, {1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 3, 3.5f, 4, 4, 3, 3.5f, 4, 4});
}

TEST(NnGridSample, CornersCenterPaddingAndNaN) {
  Tensor x = f32({1, 1, 2, 2}, {0, 1, 2, 3});
  // (x, y) pairs: corners with align_corners, the centre, far outside, NaN
  Tensor grid = f32({1, 1, 6, 2}, {-1, -1, 1, -1, -1, 1, 0, 0, 5, 5, NAN, 0});
  OneNode ac("GridSample", 2);
  ac.i("align_corners", 1);
  auto r = ac.run({&x, &grid}, 16);
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 1, 6}, {0, 1, 2, 1.5f, 0, 0});
  OneNode border("GridSample", 2);
  border.s("padding_mode", "border");
  r = border.run({&x, &grid}, 16);
  ASSERT_TRUE(r.ok()) << r.error().message();
  // align_corners=0: -1 maps to -0.5, clamped to pixel 0; 5 maps to 5.5, clamped to 1
  expectFloatTensor((*r)[0], {1, 1, 1, 6}, {0, 1, 2, 1.5f, 3, 0});
  OneNode nearest("GridSample", 2);
  nearest.s("mode", "nearest").i("align_corners", 1);
  r = nearest.run({&x, &grid}, 16);
  ASSERT_TRUE(r.ok()) << r.error().message();
  // the centre (0.5, 0.5) rounds half to even: (0, 0)
  expectFloatTensor((*r)[0], {1, 1, 1, 6}, {0, 1, 2, 0, 0, 0});
  Tensor bad_grid = f32({1, 1, 1, 3}, {0, 0, 0});
  expectError(ac.run({&x, &bad_grid}, 16), "does not match");
  OneNode bm("GridSample", 2);
  bm.s("mode", "area");
  expectError(bm.run({&x, &grid}, 16), "mode");
}

// ---- RoiAlign, MaxRoiPool, NonMaxSuppression ----

TEST(NnRoi, RoiAlignModesAndBatchCheck) {
  Tensor x = f32({1, 1, 2, 2}, {0, 1, 2, 3}), rois = f32({1, 4}, {0, 0, 1, 1}), bi = i64({1}, {0});
  OneNode avg("RoiAlign", 3);
  avg.s("coordinate_transformation_mode", "output_half_pixel").i("sampling_ratio", 1);
  auto r = avg.run({&x, &rois, &bi}, 16);
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 1, 1}, {1.5f});  // one sample at (0.5, 0.5): the mean of the four pixels
  OneNode hp("RoiAlign", 3);
  hp.i("sampling_ratio", 1);
  r = hp.run({&x, &rois, &bi}, 16);
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 1, 1}, {0});  // half_pixel shifts the sample to (0, 0)
  OneNode mx("RoiAlign", 3);
  mx.s("coordinate_transformation_mode", "output_half_pixel").i("sampling_ratio", 1).s("mode", "max");
  r = mx.run({&x, &rois, &bi}, 16);
  ASSERT_TRUE(r.ok()) << r.error().message();
  expectFloatTensor((*r)[0], {1, 1, 1, 1}, {0.75f});  // largest weighted corner: 0.25 * 3
  Tensor bad = i64({1}, {1});
  expectError(avg.run({&x, &rois, &bad}, 16), "batch index");
  Tensor inf_roi = f32({1, 4}, {0, 0, INFINITY, 1});
  expectError(avg.run({&x, &inf_roi, &bi}, 16), "finite");
}

TEST(NnRoi, MaxRoiPoolBins) {
  Tensor x = iota({1, 1, 3, 3}), rois = f32({1, 5}, {0, 0, 0, 2, 2});
  OneNode n("MaxRoiPool", 2);
  n.ints("pooled_shape", {2, 2});
  auto r = n.run({&x, &rois});
  ASSERT_TRUE(r.ok()) << r.error().message();
  // roi 3x3, bins of 1.5: rows/cols [0,2) and [1,3)
  expectFloatTensor((*r)[0], {1, 1, 2, 2}, {4, 5, 7, 8});
  Tensor bad = f32({1, 5}, {1, 0, 0, 2, 2});
  expectError(n.run({&x, &bad}), "batch index");
}

TEST(NnRoi, NonMaxSuppression) {
  // Two overlapping boxes (IoU 81/100) and a distant one, corner format [y1, x1, y2, x2].
  Tensor boxes = f32({1, 3, 4}, {0, 0, 10, 10, 1, 1, 10, 10, 20, 20, 30, 30});
  Tensor scores = f32({1, 1, 3}, {0.5f, 0.9f, 0.3f});
  Tensor max_out = i64({1}, {10}), iou = f32({1}, {0.5f}), sth = f32({1}, {0.4f});
  OneNode n("NonMaxSuppression", 5);
  auto r = n.run({&boxes, &scores, &max_out, &iou});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ((*r)[0].shape(), (Shape{2, 3}));
  EXPECT_EQ((*r)[0].data<int64_t>()[2], 1);  // highest score first
  EXPECT_EQ((*r)[0].data<int64_t>()[5], 2);  // box 0 suppressed by box 1
  r = n.run({&boxes, &scores, &max_out, &iou, &sth});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{1, 3}));  // box 2 is under the score threshold
  r = n.run({&boxes, &scores});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].shape(), (Shape{0, 3}));  // max_output_boxes_per_class defaults to 0
  Tensor center = f32({1, 3, 4}, {5, 5, 10, 10, 5.5f, 5.5f, 9, 9, 25, 25, 10, 10});
  OneNode c("NonMaxSuppression", 4);
  c.i("center_point_box", 1);
  r = c.run({&center, &scores, &max_out, &iou});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ((*r)[0].shape(), (Shape{2, 3}));
  EXPECT_EQ((*r)[0].data<int64_t>()[2], 1);
  EXPECT_EQ((*r)[0].data<int64_t>()[5], 2);
  Tensor bad_scores = f32({1, 1, 2}, {0.5f, 0.9f});
  expectError(n.run({&boxes, &bad_scores, &max_out}), "do not match");
}

}  // namespace
}  // namespace poprt::ops
