// Reduce-family ops of the reference evaluator beyond the backend test data: axes as attribute
// and input, keepdims, noop_with_empty_axes, empty reductions, NaN, opset-dependent softmax
// axis, CumSum, TopK ties and invalid inputs. Expected values are hand computed or come from
// numpy (1.24, /usr/bin/python3) as noted.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/unit/ops/op_test_util.h"

namespace poprt::ops {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

const std::vector<float> k123456 = {1, 2, 3, 4, 5, 6};

// ---- Reduce* -------------------------------------------------------------------------------

TEST(Reduce, SumAxesInputFromOpset13) {
  Tensor x = f32({2, 3}, k123456);
  Tensor axes = i64({1}, {-1});
  Tensor y = OneNode("ReduceSum", 2).attr("keepdims", int64_t{0}).run1({&x, &axes});
  EXPECT_EQ(y.shape(), Shape{2});
  expectClose(asDoubles<float>(y), {6, 15});  // numpy sum(-1)
  Tensor a0 = i64({1}, {0});
  Tensor k = OneNode("ReduceSum", 2).run1({&x, &a0});
  EXPECT_EQ(k.shape(), (Shape{1, 3}));
  expectClose(asDoubles<float>(k), {5, 7, 9});
  // No axes: everything, keepdims gives [1,1].
  Tensor all = OneNode("ReduceSum", 1).run1({&x});
  EXPECT_EQ(all.shape(), (Shape{1, 1}));
  expectClose(asDoubles<float>(all), {21});
  Tensor none = i64({0}, {});
  expectClose(asDoubles<float>(OneNode("ReduceSum", 2).run1({&x, &none})), {21});
  // noop_with_empty_axes returns the input unchanged.
  Tensor same = OneNode("ReduceSum", 2).attr("noop_with_empty_axes", int64_t{1}).run1({&x, &none});
  EXPECT_EQ(same, x);
}

TEST(Reduce, AxesAttributeBeforeOpset13AndForOthers) {
  Tensor x = f32({2, 3}, k123456);
  expectClose(asDoubles<float>(OneNode("ReduceSum", 1).attr("axes", std::vector<int64_t>{1}).run1({&x}, 11)), {6, 15});
  Tensor axes = i64({1}, {1});
  OneNode("ReduceSum", 2).expectError({&x, &axes}, 11);                                 // an input before 13
  OneNode("ReduceSum", 1).attr("axes", std::vector<int64_t>{1}).expectError({&x}, 13);  // an attribute from 13
  // numpy: prod(1) = [6, 120]; mean(0) = [2.5, 3.5, 4.5]; max(1) = [3, 6]; min(0) = [1, 2, 3]
  expectClose(asDoubles<float>(OneNode("ReduceProd", 1).attr("axes", std::vector<int64_t>{1}).run1({&x})), {6, 120});
  expectClose(asDoubles<float>(OneNode("ReduceMean", 1).attr("axes", std::vector<int64_t>{0}).run1({&x})), {2.5, 3.5, 4.5});
  expectClose(asDoubles<float>(OneNode("ReduceMax", 1).attr("axes", std::vector<int64_t>{-1}).run1({&x})), {3, 6});
  expectClose(asDoubles<float>(OneNode("ReduceMin", 1).attr("axes", std::vector<int64_t>{0}).run1({&x})), {1, 2, 3});
  expectClose(asDoubles<float>(OneNode("ReduceSumSquare", 1).run1({&x})), {91});
  // numpy: log(sum) = [1.791759469, 2.708050201]; log(sum(exp)) = [3.407605964, 6.407605964]
  expectClose(asDoubles<float>(OneNode("ReduceLogSum", 1).attr("axes", std::vector<int64_t>{1}).run1({&x})),
              {1.791759469, 2.708050201});
  expectClose(asDoubles<float>(OneNode("ReduceLogSumExp", 1).attr("axes", std::vector<int64_t>{1}).run1({&x})),
              {3.407605964, 6.407605964});
  Tensor s = f32({2, 2}, {-1, 2, 3, -4});
  expectClose(asDoubles<float>(OneNode("ReduceL1", 1).attr("axes", std::vector<int64_t>{1}).run1({&s})), {3, 7});
  expectClose(asDoubles<float>(OneNode("ReduceL2", 1).attr("axes", std::vector<int64_t>{1}).run1({&s})), {2.236067977, 5});
}

TEST(Reduce, RankZeroAndMiddleAxis) {
  Tensor s = f32({}, {4});
  Tensor y = OneNode("ReduceMax", 1).run1({&s});
  EXPECT_EQ(y.shape(), Shape{});
  expectClose(asDoubles<float>(y), {4});
  OneNode("ReduceMax", 1).attr("axes", std::vector<int64_t>{0}).expectError({&s});
  Tensor x = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor m = OneNode("ReduceSum", 1).attr("axes", std::vector<int64_t>{1}).attr("keepdims", int64_t{0}).run1({&x}, 11);
  EXPECT_EQ(m.shape(), (Shape{2, 2}));
  expectClose(asDoubles<float>(m), {4, 6, 12, 14});
}

TEST(Reduce, EmptyReductions) {
  Tensor e(DType::Float, {0, 3});
  auto over0 = [&](const char* op) {
    return asDoubles<float>(OneNode(op, 1).attr("axes", std::vector<int64_t>{0}).attr("keepdims", int64_t{0}).run1({&e}, 11));
  };
  expectClose(over0("ReduceSum"), {0, 0, 0});
  expectClose(over0("ReduceProd"), {1, 1, 1});
  expectClose(over0("ReduceMax"), {-INFINITY, -INFINITY, -INFINITY});
  expectClose(over0("ReduceMin"), {INFINITY, INFINITY, INFINITY});
  expectClose(over0("ReduceMean"), {NAN, NAN, NAN});
  expectClose(over0("ReduceL2"), {0, 0, 0});
  expectClose(over0("ReduceLogSum"), {-INFINITY, -INFINITY, -INFINITY});
  expectClose(over0("ReduceLogSumExp"), {-INFINITY, -INFINITY, -INFINITY});
  // Reducing the other axis of an empty tensor gives an empty result.
  Tensor y = OneNode("ReduceMax", 1).attr("axes", std::vector<int64_t>{1}).run1({&e});
  EXPECT_EQ(y.shape(), (Shape{0, 1}));
  Tensor ei(DType::Int32, {0});
  EXPECT_EQ(OneNode("ReduceMax", 1).attr("keepdims", int64_t{0}).run1({&ei}).data<int32_t>()[0],
            std::numeric_limits<int32_t>::min());
}

TEST(Reduce, NaNIntegersFp16AndLargeValues) {
  Tensor x = f32({4}, {1, kNaN, 3, -kInf});
  expectClose(asDoubles<float>(OneNode("ReduceMax", 1).run1({&x})), {NAN});
  expectClose(asDoubles<float>(OneNode("ReduceMin", 1).run1({&x})), {NAN});
  Tensor big = f32({2}, {1000, 1000});
  expectClose(asDoubles<float>(OneNode("ReduceLogSumExp", 1).run1({&big})), {1000.6931471805599});  // 1000 + log 2
  Tensor i = make<int64_t>(DType::Int64, {2}, {std::numeric_limits<int64_t>::max() - 1, 1});
  EXPECT_EQ(OneNode("ReduceSum", 1).run1({&i}).data<int64_t>()[0], std::numeric_limits<int64_t>::max());  // exact
  Tensor i8 = make<int8_t>(DType::Int8, {3}, {-7, 2, 5});
  expectClose(asDoubles<int8_t>(OneNode("ReduceMin", 1).run1({&i8})), {-7});
  expectClose(asDoubles<int8_t>(OneNode("ReduceL1", 1).run1({&i8})), {14});
  Tensor h = f16({3}, {1000, 1000, 1000});  // fp16 holds 3000 but accumulates in double anyway
  Tensor hs = OneNode("ReduceSum", 1).run1({&h});
  EXPECT_EQ(hs.dtype(), DType::Float16);
  expectClose(halfValues(hs), {3000});
}

TEST(Reduce, BadAxesAreErrors) {
  Tensor x = f32({2, 3}, k123456);
  OneNode("ReduceMean", 1).attr("axes", std::vector<int64_t>{2}).expectError({&x});
  OneNode("ReduceMean", 1).attr("axes", std::vector<int64_t>{-3}).expectError({&x});
  OneNode("ReduceMean", 1).attr("axes", std::vector<int64_t>{1, -1}).expectError({&x});
  Tensor fa = f32({1}, {0});
  OneNode("ReduceSum", 2).expectError({&x, &fa});
  Tensor a2 = i64({1, 1}, {0});
  OneNode("ReduceSum", 2).expectError({&x, &a2});
  Tensor b(DType::Bool, {2});
  OneNode("ReduceSum", 1).expectError({&b});
  OneNode("ReduceSum", 1).expectError({});
}

// ---- ArgMax / ArgMin -------------------------------------------------------------------------

TEST(ArgMaxMin, TiesKeepdimsAndNegativeAxis) {
  Tensor x = f32({2, 3}, {1, 3, 3, 2, 2, 0});
  Tensor a = OneNode("ArgMax", 1).attr("axis", int64_t{-1}).run1({&x});
  EXPECT_EQ(a.dtype(), DType::Int64);
  EXPECT_EQ(a.shape(), (Shape{2, 1}));
  expectClose(asDoubles<int64_t>(a), {1, 0});
  expectClose(asDoubles<int64_t>(OneNode("ArgMax", 1).attr("axis", int64_t{1}).attr("select_last_index", int64_t{1}).run1({&x})),
              {2, 1});
  Tensor m = OneNode("ArgMin", 1).attr("keepdims", int64_t{0}).run1({&x});
  EXPECT_EQ(m.shape(), Shape{3});
  expectClose(asDoubles<int64_t>(m), {0, 1, 1});
  Tensor n = f32({3}, {1, kNaN, 5});
  expectClose(asDoubles<int64_t>(OneNode("ArgMax", 1).run1({&n})), {1});  // numpy.argmax picks the NaN
  expectClose(asDoubles<int64_t>(OneNode("ArgMin", 1).run1({&n})), {1});
  Tensor u = make<uint32_t>(DType::UInt32, {3}, {7, 9, 9});
  expectClose(asDoubles<int64_t>(OneNode("ArgMax", 1).attr("select_last_index", int64_t{1}).run1({&u})), {2});
}

TEST(ArgMaxMin, Errors) {
  Tensor x = f32({2, 3}, k123456);
  OneNode("ArgMax", 1).attr("axis", int64_t{2}).expectError({&x});
  Tensor s = f32({}, {1});
  OneNode("ArgMax", 1).expectError({&s});
  Tensor e(DType::Float, {0, 3});
  OneNode("ArgMin", 1).expectError({&e});  // argmin over an empty axis
  EXPECT_EQ(OneNode("ArgMin", 1).attr("axis", int64_t{1}).run1({&e}).shape(), (Shape{0, 1}));
}

// ---- Softmax family ------------------------------------------------------------------------

TEST(Softmax, AxisSemanticsChangeAtOpset13) {
  Tensor x = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  // opset 11, axis 1: softmax of each row of x.reshape(2, 4) (numpy)
  expectClose(asDoubles<float>(OneNode("Softmax", 1).attr("axis", int64_t{1}).run1({&x}, 11)),
              {0.032058603, 0.087144319, 0.236882818, 0.64391426, 0.032058603, 0.087144319, 0.236882818, 0.64391426});
  // opset 13, axis 1: along axis 1 only (numpy)
  expectClose(asDoubles<float>(OneNode("Softmax", 1).attr("axis", int64_t{1}).run1({&x}, 13)),
              {0.119202922, 0.119202922, 0.880797078, 0.880797078, 0.119202922, 0.119202922, 0.880797078, 0.880797078});
  // opset 13 default axis -1 (numpy log-softmax)
  expectClose(asDoubles<float>(OneNode("LogSoftmax", 1).run1({&x})),
              {-1.313261688, -0.313261688, -1.313261688, -0.313261688, -1.313261688, -0.313261688, -1.313261688, -0.313261688});
  // opset 11 default axis 1 on [2,2,2] is the same flattening as above.
  expectClose(asDoubles<float>(OneNode("Softmax", 1).run1({&x}, 11)),
              {0.032058603, 0.087144319, 0.236882818, 0.64391426, 0.032058603, 0.087144319, 0.236882818, 0.64391426});
}

TEST(Softmax, LargeValuesFp16AndErrors) {
  Tensor x = f32({3}, {10000, 10000, -kInf});
  expectClose(asDoubles<float>(OneNode("Softmax", 1).run1({&x})), {0.5, 0.5, 0});
  expectClose(asDoubles<float>(OneNode("LogSoftmax", 1).run1({&x})), {-0.693147181, -0.693147181, -INFINITY});
  Tensor h = f16({2}, {0, 0});
  Tensor hy = OneNode("Softmax", 1).run1({&h});
  EXPECT_EQ(hy.dtype(), DType::Float16);
  expectClose(halfValues(hy), {0.5, 0.5});
  Tensor s = f32({}, {3});
  OneNode("Softmax", 1).expectError({&s});  // no axis -1 at rank 0 (opset 13)
  OneNode("Softmax", 1).attr("axis", int64_t{3}).expectError({&x});
  Tensor xi = i32({2}, {1, 2});
  OneNode("Softmax", 1).expectError({&xi});
  Tensor e(DType::Float, {2, 0});
  EXPECT_EQ(OneNode("Softmax", 1).run1({&e}).shape(), (Shape{2, 0}));
}

TEST(Hardmax, FirstMaximumWinsAndOpsetAxis) {
  Tensor x = f32({2, 3}, {3, 1, 3, 0, 5, 5});
  expectClose(asDoubles<float>(OneNode("Hardmax", 1).run1({&x})), {1, 0, 0, 0, 1, 0});
  expectClose(asDoubles<float>(OneNode("Hardmax", 1).attr("axis", int64_t{0}).run1({&x})), {1, 0, 0, 0, 1, 1});
  // opset 11 axis 0: the whole tensor is one row; the first maximum is element 4.
  expectClose(asDoubles<float>(OneNode("Hardmax", 1).attr("axis", int64_t{0}).run1({&x}, 11)), {0, 0, 0, 0, 1, 0});
}

// ---- CumSum ------------------------------------------------------------------------------

TEST(CumSum, ExclusiveReverseAndAxis) {
  Tensor x = f32({2, 3}, k123456);
  Tensor ax1 = i32({}, {1});
  Tensor axm = i64({1}, {-1});
  Tensor ax0 = i64({}, {0});
  // numpy: cumsum(x, 1) = [[1,3,6],[4,9,15]]; reversed exclusive = [[5,3,0],[11,6,0]];
  // cumsum(x, 0) = [[1,2,3],[5,7,9]]
  expectClose(asDoubles<float>(OneNode("CumSum", 2).run1({&x, &ax1})), {1, 3, 6, 4, 9, 15});
  expectClose(asDoubles<float>(OneNode("CumSum", 2).attr("exclusive", int64_t{1}).attr("reverse", int64_t{1}).run1({&x, &axm})),
              {5, 3, 0, 11, 6, 0});
  expectClose(asDoubles<float>(OneNode("CumSum", 2).run1({&x, &ax0})), {1, 2, 3, 5, 7, 9});
  expectClose(asDoubles<float>(OneNode("CumSum", 2).attr("exclusive", int64_t{1}).run1({&x, &ax1})), {0, 1, 3, 0, 4, 9});
  Tensor xi = i64({3}, {std::numeric_limits<int64_t>::max(), 1, 1});
  expectClose(asDoubles<int64_t>(OneNode("CumSum", 2).attr("reverse", int64_t{1}).run1({&xi, &ax0})),
              {static_cast<double>(std::numeric_limits<int64_t>::min() + 1), 2, 1});  // wraps, no UB
}

TEST(CumSum, Errors) {
  Tensor x = f32({2, 3}, k123456);
  Tensor ax2 = i64({}, {2});
  OneNode("CumSum", 2).expectError({&x, &ax2});
  Tensor two = i64({2}, {0, 1});
  OneNode("CumSum", 2).expectError({&x, &two});
  Tensor fa = f32({}, {0});
  OneNode("CumSum", 2).expectError({&x, &fa});
  OneNode("CumSum", 1).expectError({&x});
  Tensor s = f32({}, {1});
  Tensor ax0 = i64({}, {0});
  OneNode("CumSum", 2).expectError({&s, &ax0});
}

// ---- TopK --------------------------------------------------------------------------------

TEST(TopK, TiesKeepLowerIndexFirst) {
  Tensor x = f32({5}, {1, 3, 3, 2, 3});
  Tensor k2 = i64({1}, {2});
  auto r = OneNode("TopK", 2, 2).runAll({&x, &k2});
  ASSERT_EQ(r.size(), 2u);
  expectClose(asDoubles<float>(r[0]), {3, 3});
  EXPECT_EQ(r[1].dtype(), DType::Int64);
  expectClose(asDoubles<int64_t>(r[1]), {1, 2});
  Tensor k3 = i64({1}, {3});
  auto s = OneNode("TopK", 2, 2).attr("largest", int64_t{0}).runAll({&x, &k3});
  expectClose(asDoubles<float>(s[0]), {1, 2, 3});
  expectClose(asDoubles<int64_t>(s[1]), {0, 3, 1});
}

TEST(TopK, AxisOpsetsAndNaN) {
  Tensor x = f32({2, 3}, {4, 1, 9, 7, 8, 0});
  Tensor k1 = i64({1}, {1});
  auto r = OneNode("TopK", 2, 2).attr("axis", int64_t{0}).runAll({&x, &k1});
  EXPECT_EQ(r[0].shape(), (Shape{1, 3}));
  expectClose(asDoubles<float>(r[0]), {7, 8, 9});
  expectClose(asDoubles<int64_t>(r[1]), {1, 1, 0});
  // Opset 9: k is an attribute.
  auto o9 = OneNode("TopK", 1, 2).attr("k", int64_t{2}).runAll({&x}, 9);
  expectClose(asDoubles<float>(o9[0]), {9, 4, 8, 7});
  expectClose(asDoubles<int64_t>(o9[1]), {2, 0, 1, 0});
  Tensor n = f32({3}, {1, kNaN, 2});
  Tensor k3 = i64({1}, {3});
  expectClose(asDoubles<float>(OneNode("TopK", 2, 2).runAll({&n, &k3})[0]), {NAN, 2, 1});
  Tensor k0 = i64({1}, {0});
  EXPECT_EQ(OneNode("TopK", 2, 2).runAll({&x, &k0})[0].shape(), (Shape{2, 0}));
  Tensor h = f16({3}, {0.5f, 2.0f, 1.0f});
  Tensor k2 = i64({1}, {2});
  auto hr = OneNode("TopK", 2, 2).runAll({&h, &k2});
  expectClose(halfValues(hr[0]), {2, 1});
}

TEST(TopK, Errors) {
  Tensor x = f32({2, 3}, k123456);
  Tensor k4 = i64({1}, {4});
  OneNode("TopK", 2, 2).expectError({&x, &k4});
  Tensor kn = i64({1}, {-1});
  OneNode("TopK", 2, 2).expectError({&x, &kn});
  Tensor k2 = i64({2}, {1, 1});
  OneNode("TopK", 2, 2).expectError({&x, &k2});
  Tensor k1 = i64({1}, {1});
  OneNode("TopK", 2, 2).attr("axis", int64_t{2}).expectError({&x, &k1});
  OneNode("TopK", 1, 2).expectError({&x});
  OneNode("TopK", 1, 2).expectError({&x}, 9);  // no k attribute
  Tensor s = f32({}, {1});
  OneNode("TopK", 2, 2).expectError({&s, &k1});
}

}  // namespace
}  // namespace poprt::ops
