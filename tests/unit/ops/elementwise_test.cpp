// Elementwise ops of the reference evaluator beyond the backend test data: attributes, dtypes,
// broadcasting, rank 0, empty tensors, NaN/Inf and invalid inputs. Expected values are hand
// computed or come from numpy (1.24, /usr/bin/python3) as noted.
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

// ---- unary math ----------------------------------------------------------------------------

TEST(ElementwiseMath, TrigonometricMatchNumpy) {
  Tensor x = f32({4}, {-0.5f, 0.0f, 0.5f, 0.9f});
  // numpy: np.arccos/arcsin/... of [-0.5, 0, 0.5, 0.9] in float64.
  const std::vector<std::pair<std::string, std::vector<double>>> cases = {
      {"Acos", {2.094395102, 1.570796327, 1.047197551, 0.451026812}}, {"Asin", {-0.523598776, 0.0, 0.523598776, 1.119769515}},
      {"Atan", {-0.463647609, 0.0, 0.463647609, 0.732815102}},        {"Cos", {0.877582562, 1.0, 0.877582562, 0.621609968}},
      {"Sin", {-0.479425539, 0.0, 0.479425539, 0.78332691}},          {"Tan", {-0.54630249, 0.0, 0.54630249, 1.260158218}},
      {"Cosh", {1.127625965, 1.0, 1.127625965, 1.433086385}},         {"Sinh", {-0.521095305, 0.0, 0.521095305, 1.026516726}},
      {"Asinh", {-0.481211825, 0.0, 0.481211825, 0.808866936}},       {"Atanh", {-0.549306144, 0.0, 0.549306144, 1.47221949}},
  };
  for (const auto& [op, want] : cases) {
    SCOPED_TRACE(op);
    expectClose(asDoubles<float>(OneNode(op, 1).run1({&x})), want);
  }
  Tensor y = f32({3}, {1.0f, 2.0f, 10.0f});
  expectClose(asDoubles<float>(OneNode("Acosh", 1).run1({&y})), {0.0, 1.316957897, 2.993222846});  // numpy arccosh
}

TEST(ElementwiseMath, OutOfDomainGivesNaNNotError) {
  Tensor x = f32({2}, {2.0f, -2.0f});
  expectClose(asDoubles<float>(OneNode("Acos", 1).run1({&x})), {NAN, NAN});
  Tensor one = f32({}, {1.0f});
  expectClose(asDoubles<float>(OneNode("Atanh", 1).run1({&one})), {INFINITY});
}

TEST(ElementwiseMath, ErfOnFloatAndInt) {
  Tensor x = f32({4}, {-1.0f, 0.0f, 0.5f, 2.0f});
  // math.erf
  expectClose(asDoubles<float>(OneNode("Erf", 1).run1({&x})), {-0.8427007929497149, 0.0, 0.5204998778130465, 0.9953222650189527});
  Tensor xi = i32({3}, {-3, 0, 3});
  Tensor y = OneNode("Erf", 1).run1({&xi});
  EXPECT_EQ(y.dtype(), DType::Int32);
  expectClose(asDoubles<int32_t>(y), {0, 0, 0});  // erf(+-3) = +-0.99998 truncates to 0
}

TEST(ElementwiseMath, SignKeepsDtypeAndNaN) {
  Tensor x = f32({5}, {-2.5f, -0.0f, 0.0f, 7.0f, kNaN});
  expectClose(asDoubles<float>(OneNode("Sign", 1).run1({&x})), {-1, 0, 0, 1, NAN});
  Tensor xi = i64({3}, {std::numeric_limits<int64_t>::min(), 0, 5});
  Tensor yi = OneNode("Sign", 1).run1({&xi});
  EXPECT_EQ(yi.dtype(), DType::Int64);
  EXPECT_EQ(yi.data<int64_t>()[0], -1);
  EXPECT_EQ(yi.data<int64_t>()[2], 1);
  Tensor xu = make<uint8_t>(DType::UInt8, {2}, {0, 200});
  expectClose(asDoubles<uint8_t>(OneNode("Sign", 1).run1({&xu})), {0, 1});
}

TEST(ElementwiseMath, RoundHalfToEven) {
  Tensor x = f32({9}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4f, 2.6f, kNaN});
  expectClose(asDoubles<float>(OneNode("Round", 1).run1({&x})), {0, 2, 2, -0.0, -2, -2, 2, 3, NAN});
  Tensor h = f16({2}, {0.5f, 3.5f});
  expectClose(halfValues(OneNode("Round", 1).run1({&h})), {0, 4});
  Tensor xi = i32({1}, {3});
  OneNode("Round", 1).expectError({&xi});
}

TEST(ElementwiseMath, IsNaNAndIsInf) {
  Tensor x = f32({5}, {1.0f, kNaN, kInf, -kInf, 0.0f});
  Tensor nan = OneNode("IsNaN", 1).run1({&x});
  EXPECT_EQ(nan.dtype(), DType::Bool);
  expectClose(asDoubles<uint8_t>(nan), {0, 1, 0, 0, 0});
  expectClose(asDoubles<uint8_t>(OneNode("IsInf", 1).run1({&x})), {0, 0, 1, 1, 0});
  expectClose(asDoubles<uint8_t>(OneNode("IsInf", 1).attr("detect_negative", int64_t{0}).run1({&x})), {0, 0, 1, 0, 0});
  expectClose(asDoubles<uint8_t>(OneNode("IsInf", 1).attr("detect_positive", int64_t{0}).run1({&x})), {0, 0, 0, 1, 0});
  Tensor h = f16({3}, {kNaN, 65504.0f, 1e6f});  // 1e6 overflows half to inf
  expectClose(asDoubles<uint8_t>(OneNode("IsNaN", 1).run1({&h})), {1, 0, 0});
  expectClose(asDoubles<uint8_t>(OneNode("IsInf", 1).run1({&h})), {0, 0, 1});
  Tensor xi = i32({1}, {1});
  OneNode("IsNaN", 1).expectError({&xi});
}

TEST(ElementwiseMath, NotOnRankZeroAndEmpty) {
  Tensor s = boolean({}, {1});
  Tensor y = OneNode("Not", 1).run1({&s});
  EXPECT_EQ(y.shape(), Shape{});
  EXPECT_EQ(y.data<uint8_t>()[0], 0);
  Tensor e(DType::Bool, {0, 3});
  EXPECT_EQ(OneNode("Not", 1).run1({&e}).shape(), (Shape{0, 3}));
  Tensor f = f32({1}, {1});
  OneNode("Not", 1).expectError({&f});
}

TEST(ElementwiseMath, ActivationsWithAttributes) {
  Tensor x = f32({5}, {-2.0f, -0.5f, 0.0f, 0.5f, 2.0f});
  // numpy formulas of the ONNX spec, float64.
  expectClose(asDoubles<float>(OneNode("Elu", 1).attr("alpha", 2.0f).run1({&x})), {-1.729329434, -0.786938681, 0, 0.5, 2});
  expectClose(asDoubles<float>(OneNode("Selu", 1).run1({&x})), {-1.520166473, -0.69175819, 0, 0.525350511, 2.101402044});
  expectClose(asDoubles<float>(OneNode("LeakyRelu", 1).attr("alpha", 0.1f).run1({&x})), {-0.2, -0.05, 0, 0.5, 2});
  expectClose(asDoubles<float>(OneNode("LeakyRelu", 1).run1({&x})), {-0.02, -0.005, 0, 0.5, 2});
  expectClose(asDoubles<float>(OneNode("ThresholdedRelu", 1).attr("alpha", 0.5f).run1({&x})), {0, 0, 0, 0, 2});
  expectClose(asDoubles<float>(OneNode("HardSigmoid", 1).attr("alpha", 0.5f).attr("beta", 0.6f).run1({&x})),
              {0, 0.35, 0.6, 0.85, 1});
  expectClose(asDoubles<float>(OneNode("Celu", 1).attr("alpha", 2.0f).run1({&x})), {-1.264241118, -0.442398434, 0, 0.5, 2});
  expectClose(asDoubles<float>(OneNode("Shrink", 1).attr("bias", 0.1f).attr("lambd", 1.0f).run1({&x})), {-1.9, 0, 0, 0, 1.9});
  expectClose(asDoubles<float>(OneNode("Softsign", 1).run1({&x})), {-0.666666667, -0.333333333, 0, 0.333333333, 0.666666667});
  Tensor w = f32({7}, {-4, -3, -1, 0, 1, 3, 4});
  expectClose(asDoubles<float>(OneNode("HardSwish", 1).run1({&w})), {0, 0, -0.333333333, 0, 0.666666667, 3, 4});
  Tensor sp = f32({4}, {-1, 0, 1, 100});
  expectClose(asDoubles<float>(OneNode("Softplus", 1).run1({&sp})), {0.313261688, 0.693147181, 1.313261688, 100});
  Tensor big = f32({1}, {1000.0f});  // exp(1000) overflows; the stable form does not
  expectClose(asDoubles<float>(OneNode("Softplus", 1).run1({&big})), {1000});
}

TEST(ElementwiseMath, ActivationsPropagateNaNAndTakeFp16) {
  Tensor x = f32({1}, {kNaN});
  for (const char* op :
       {"Elu", "Selu", "LeakyRelu", "ThresholdedRelu", "HardSigmoid", "HardSwish", "Celu", "Shrink", "Softplus", "Softsign"}) {
    SCOPED_TRACE(op);
    expectClose(asDoubles<float>(OneNode(op, 1).run1({&x})), {NAN});
  }
  Tensor h = f16({2}, {-1.0f, 1.0f});
  Tensor y = OneNode("LeakyRelu", 1).attr("alpha", 0.5f).run1({&h});
  EXPECT_EQ(y.dtype(), DType::Float16);
  expectClose(halfValues(y), {-0.5, 1});
}

TEST(ElementwiseMath, RejectsIntegersWhereSpecSaysFloat) {
  Tensor xi = i32({2}, {1, 2});
  for (const char* op : {"Cos", "Elu", "Softplus", "HardSwish"}) OneNode(op, 1).expectError({&xi});
  OneNode("Cos", 1).expectError({});
}

// ---- binary ------------------------------------------------------------------------------

TEST(ElementwiseBinary, PReluBroadcastsSlopeToX) {
  Tensor x = f32({2, 3}, {-1, 2, -3, 4, -5, 6});
  Tensor slope = f32({3}, {0.1f, 0.2f, 0.3f});
  expectClose(asDoubles<float>(OneNode("PRelu", 2).run1({&x, &slope})), {-0.1, 2, -0.9, 4, -1.0, 6});
  Tensor bad = f32({2, 3, 1}, {1, 1, 1, 1, 1, 1});
  OneNode("PRelu", 2).expectError({&x, &bad});  // slope would grow X
  Tensor xi = i32({2}, {-4, 4});
  Tensor si = i32({1}, {3});
  expectClose(asDoubles<int32_t>(OneNode("PRelu", 2).run1({&xi, &si})), {-12, 4});
}

TEST(ElementwiseBinary, PowMixedDtypes) {
  // numpy: np.power(int32 [2,3,-2], float32 [0.5,2,3]).astype(int32) = [1, 9, -8]
  Tensor b = i32({3}, {2, 3, -2});
  Tensor e = f32({3}, {0.5f, 2.0f, 3.0f});
  Tensor y = OneNode("Pow", 2).run1({&b, &e});
  EXPECT_EQ(y.dtype(), DType::Int32);
  expectClose(asDoubles<int32_t>(y), {1, 9, -8});
  // 3**39 = 4052555153018976267 (exact; not representable in double)
  Tensor b64 = i64({}, {3});
  Tensor e64 = i64({}, {39});
  EXPECT_EQ(OneNode("Pow", 2).run1({&b64, &e64}).data<int64_t>()[0], 4052555153018976267LL);
  Tensor neg = i64({3}, {-1, 2, 1});
  Tensor eneg = i64({1}, {-3});
  expectClose(asDoubles<int64_t>(OneNode("Pow", 2).run1({&neg, &eneg})), {-1, 0, 1});
  Tensor xf = f32({2, 1}, {2, -2});
  Tensor ei = i64({3}, {0, 1, 2});
  Tensor yf = OneNode("Pow", 2).run1({&xf, &ei});
  EXPECT_EQ(yf.shape(), (Shape{2, 3}));
  expectClose(asDoubles<float>(yf), {1, 2, 4, 1, -2, 4});
  Tensor half = f32({1}, {0.5f});
  expectClose(asDoubles<int64_t>(OneNode("Pow", 2).run1({&neg, &half})), {0, 1, 1});  // (-1)^0.5 = NaN -> int 0
  OneNode("Pow", 2).expectError({&b, &e}, 7);                                         // dtypes must match before opset 12
}

TEST(ElementwiseBinary, ModIntegerAndFmod) {
  Tensor a = i32({4}, {7, -7, 7, -7});
  Tensor b = i32({4}, {3, 3, -3, -3});
  // numpy: np.mod -> [1, 2, -2, -1]; np.fmod -> [1, -1, 1, -1]
  expectClose(asDoubles<int32_t>(OneNode("Mod", 2).run1({&a, &b})), {1, 2, -2, -1});
  expectClose(asDoubles<int32_t>(OneNode("Mod", 2).attr("fmod", int64_t{1}).run1({&a, &b})), {1, -1, 1, -1});
  Tensor z = i32({2}, {std::numeric_limits<int32_t>::min(), 5});
  Tensor d = i32({2}, {-1, 0});
  expectClose(asDoubles<int32_t>(OneNode("Mod", 2).run1({&z, &d})), {0, 0});  // no trap
  Tensor f = f32({2}, {5.5f, -5.5f});
  Tensor two = f32({}, {2});
  expectClose(asDoubles<float>(OneNode("Mod", 2).attr("fmod", int64_t{1}).run1({&f, &two})), {1.5, -1.5});  // np.fmod
  OneNode("Mod", 2).expectError({&f, &two});                                                                // floats need fmod=1
  Tensor u = make<uint8_t>(DType::UInt8, {2}, {250, 7});
  Tensor u3 = make<uint8_t>(DType::UInt8, {1}, {3});
  expectClose(asDoubles<uint8_t>(OneNode("Mod", 2).run1({&u, &u3})), {1, 1});
}

TEST(ElementwiseBinary, BitShift) {
  Tensor a = make<uint8_t>(DType::UInt8, {4}, {1, 255, 128, 16});
  Tensor s = make<uint8_t>(DType::UInt8, {4}, {1, 1, 8, 200});
  expectClose(asDoubles<uint8_t>(OneNode("BitShift", 2).attr("direction", std::string("LEFT")).run1({&a, &s})), {2, 254, 0, 0});
  expectClose(asDoubles<uint8_t>(OneNode("BitShift", 2).attr("direction", std::string("RIGHT")).run1({&a, &s})), {0, 127, 0, 0});
  Tensor a16 = make<uint16_t>(DType::UInt16, {1}, {0xffff});
  Tensor s16 = make<uint16_t>(DType::UInt16, {1}, {15});
  EXPECT_EQ(OneNode("BitShift", 2).attr("direction", std::string("LEFT")).run1({&a16, &s16}).data<uint16_t>()[0], 0x8000);
  OneNode("BitShift", 2).attr("direction", std::string("UP")).expectError({&a, &s});
  OneNode("BitShift", 2).expectError({&a, &s});
  Tensor i = i32({1}, {1});
  OneNode("BitShift", 2).attr("direction", std::string("LEFT")).expectError({&i, &i});
}

TEST(ElementwiseBinary, LogicalOpsBroadcast) {
  Tensor a = boolean({2, 2}, {0, 0, 1, 1});
  Tensor b = boolean({2}, {0, 1});
  expectClose(asDoubles<uint8_t>(OneNode("And", 2).run1({&a, &b})), {0, 0, 0, 1});
  expectClose(asDoubles<uint8_t>(OneNode("Or", 2).run1({&a, &b})), {0, 1, 1, 1});
  expectClose(asDoubles<uint8_t>(OneNode("Xor", 2).run1({&a, &b})), {0, 1, 1, 0});
  Tensor f = f32({2}, {0, 1});
  OneNode("And", 2).expectError({&f, &f});
  Tensor c = boolean({3}, {0, 1, 1});
  OneNode("Or", 2).expectError({&a, &c});  // [2,2] vs [3]
}

TEST(ElementwiseBinary, ComparisonsGiveBool) {
  Tensor a = f32({4}, {1, 2, kNaN, 3});
  Tensor b = f32({}, {2});
  Tensor eq = OneNode("Equal", 2).run1({&a, &b});
  EXPECT_EQ(eq.dtype(), DType::Bool);
  expectClose(asDoubles<uint8_t>(eq), {0, 1, 0, 0});
  expectClose(asDoubles<uint8_t>(OneNode("Less", 2).run1({&a, &b})), {1, 0, 0, 0});
  expectClose(asDoubles<uint8_t>(OneNode("Greater", 2).run1({&a, &b})), {0, 0, 0, 1});
  expectClose(asDoubles<uint8_t>(OneNode("LessOrEqual", 2).run1({&a, &b})), {1, 1, 0, 0});
  expectClose(asDoubles<uint8_t>(OneNode("GreaterOrEqual", 2).run1({&a, &b})), {0, 1, 0, 1});
  Tensor h1 = f16({2}, {1.0f, 2.0f});
  Tensor h2 = f16({2}, {1.5f, 1.5f});
  expectClose(asDoubles<uint8_t>(OneNode("Greater", 2).run1({&h1, &h2})), {0, 1});
  Tensor u = make<uint64_t>(DType::UInt64, {2}, {std::numeric_limits<uint64_t>::max(), 1});
  Tensor u1 = make<uint64_t>(DType::UInt64, {2}, {std::numeric_limits<uint64_t>::max() - 1, 1});
  expectClose(asDoubles<uint8_t>(OneNode("Equal", 2).run1({&u, &u1})), {0, 1});  // would be equal through double
  Tensor ia = i32({1}, {1});
  OneNode("Less", 2).expectError({&a, &ia});  // dtypes differ
}

TEST(ElementwiseBinary, EqualOnStringsAndBool) {
  Tensor a = strings({3}, {"a", "bc", ""});
  Tensor b = strings({3}, {"a", "b", ""});
  expectClose(asDoubles<uint8_t>(OneNode("Equal", 2).run1({&a, &b})), {1, 0, 1});
  Tensor s = strings({}, {"bc"});
  expectClose(asDoubles<uint8_t>(OneNode("Equal", 2).run1({&a, &s})), {0, 1, 0});
  OneNode("Less", 2).expectError({&a, &b});
  Tensor t = boolean({2}, {1, 0});
  Tensor f = boolean({1}, {0});
  expectClose(asDoubles<uint8_t>(OneNode("Equal", 2).run1({&t, &f})), {0, 1});
}

TEST(ElementwiseBinary, HugeBroadcastIsAnErrorNotAnAllocation) {
  Tensor a(DType::Float, {1 << 20, 1});
  Tensor b(DType::Float, {1, 1 << 20});
  OneNode("Pow", 2).expectError({&a, &b});
  OneNode("Less", 2).expectError({&a, &b});
  OneNode("Add", 2).expectError({&a, &b});
  OneNode("Sum", 2).expectError({&a, &b});
}

TEST(ElementwiseBinary, InconsistentStorageIsAnError) {
  Tensor a = strings({3}, {"a", "b", "c"});
  Tensor short_strings(DType::String, {3});
  short_strings.strings().resize(1);  // claims 3 elements, holds 1
  OneNode("Equal", 2).expectError({&a, &short_strings});
  Tensor c = boolean({3}, {1, 0, 1});
  OneNode("Where", 3).expectError({&c, &a, &short_strings});
}

// ---- variadic ----------------------------------------------------------------------------

TEST(ElementwiseVariadic, SumMeanMaxMinBroadcast) {
  Tensor a = f32({2, 1}, {1, 10});
  Tensor b = f32({3}, {1, 2, 3});
  Tensor c = f32({}, {100});
  Tensor s = OneNode("Sum", 3).run1({&a, &b, &c});
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  expectClose(asDoubles<float>(s), {102, 103, 104, 111, 112, 113});
  expectClose(asDoubles<float>(OneNode("Mean", 3).run1({&a, &b, &c})),
              {34, 34.333333333, 34.666666667, 37, 37.333333333, 37.666666667});
  expectClose(asDoubles<float>(OneNode("Max", 2).run1({&a, &b})), {1, 2, 3, 10, 10, 10});
  expectClose(asDoubles<float>(OneNode("Min", 2).run1({&a, &b})), {1, 1, 1, 1, 2, 3});
}

TEST(ElementwiseVariadic, MaxMinPropagateNaN) {
  Tensor a = f32({3}, {kNaN, 1, 2});
  Tensor b = f32({3}, {0, kNaN, 1});
  expectClose(asDoubles<float>(OneNode("Max", 2).run1({&a, &b})), {NAN, NAN, 2});
  expectClose(asDoubles<float>(OneNode("Min", 2).run1({&a, &b})), {NAN, NAN, 1});
  expectClose(asDoubles<float>(OneNode("Max", 2).run1({&b, &a})), {NAN, NAN, 2});
}

TEST(ElementwiseVariadic, SingleInputIntegersEmptyAndErrors) {
  Tensor a = i32({2}, {3, -4});
  expectClose(asDoubles<int32_t>(OneNode("Max", 1).run1({&a})), {3, -4});
  Tensor big = i32({2}, {std::numeric_limits<int32_t>::max(), 1});
  Tensor one = i32({1}, {1});
  EXPECT_EQ(OneNode("Sum", 2).run1({&big, &one}).data<int32_t>()[0], std::numeric_limits<int32_t>::min());  // wraps
  Tensor e(DType::Float, {0, 3});
  Tensor r = f32({1, 3}, {1, 2, 3});
  EXPECT_EQ(OneNode("Sum", 2).run1({&e, &r}).shape(), (Shape{0, 3}));
  OneNode("Sum", 0).expectError({});
  OneNode("Mean", 1).expectError({&a});  // Mean takes floats only
  Tensor f = f32({2}, {1, 2});
  OneNode("Max", 2).expectError({&a, &f});
  OneNode("Max", 2).expectError({&a, nullptr});
  Tensor h1 = f16({1}, {1.5f});
  Tensor h2 = f16({1}, {2.5f});
  expectClose(halfValues(OneNode("Mean", 2).run1({&h1, &h2})), {2});
}

// ---- Where, Clip ---------------------------------------------------------------------------

TEST(ElementwiseWhere, BroadcastsAllThreeAndTakesStrings) {
  Tensor c = boolean({2, 1}, {1, 0});
  Tensor x = f32({3}, {1, 2, 3});
  Tensor y = f32({}, {-1});
  Tensor w = OneNode("Where", 3).run1({&c, &x, &y});
  EXPECT_EQ(w.shape(), (Shape{2, 3}));
  expectClose(asDoubles<float>(w), {1, 2, 3, -1, -1, -1});
  Tensor sx = strings({2}, {"a", "b"});
  Tensor sy = strings({2}, {"c", "d"});
  Tensor c2 = boolean({2}, {0, 1});
  Tensor ws = OneNode("Where", 3).run1({&c2, &sx, &sy});
  EXPECT_EQ(ws.strings(), (std::vector<std::string>{"c", "b"}));
  Tensor ci = i32({2}, {0, 1});
  OneNode("Where", 3).expectError({&ci, &x, &y});
  Tensor xi = i32({1}, {1});
  OneNode("Where", 3).expectError({&c, &x, &xi});
  Tensor c3 = boolean({4}, {1, 1, 1, 1});
  OneNode("Where", 3).expectError({&c3, &x, &y});
}

TEST(ElementwiseClip, AttributesBeforeOpset11) {
  Tensor x = f32({5}, {-3, -1, 0, 1, kNaN});
  Tensor y = OneNode("Clip", 1).attr("min", -2.0f).attr("max", 0.5f).run1({&x}, 6 + 1);
  expectClose(asDoubles<float>(y), {-2, -1, 0, 0.5, NAN});
  expectClose(asDoubles<float>(OneNode("Clip", 1).attr("max", 0.0f).run1({&x}, 10)), {-3, -1, 0, 0, NAN});
  Tensor lo = f32({}, {0});
  OneNode("Clip", 2).expectError({&x, &lo}, 10);
}

TEST(ElementwiseClip, OptionalInputsFromOpset11) {
  Tensor x = f32({4}, {-3, -1, 2, kInf});
  Tensor hi = f32({}, {1});
  expectClose(asDoubles<float>(OneNode("Clip", 3).run1({&x, nullptr, &hi})), {-3, -1, 1, 1});
  Tensor lo = f32({1}, {-2});
  expectClose(asDoubles<float>(OneNode("Clip", 3).run1({&x, &lo, nullptr})), {-2, -1, 2, INFINITY});
  expectClose(asDoubles<float>(OneNode("Clip", 1).run1({&x})), {-3, -1, 2, INFINITY});
  // min > max: everything becomes max (numpy.clip(x, 5, 1) = [1, 1, 1, 1])
  Tensor five = f32({}, {5});
  expectClose(asDoubles<float>(OneNode("Clip", 3).run1({&x, &five, &hi})), {1, 1, 1, 1});
  Tensor xi = make<int8_t>(DType::Int8, {3}, {-128, 0, 127});
  Tensor lo8 = make<int8_t>(DType::Int8, {}, {-5});
  expectClose(asDoubles<int8_t>(OneNode("Clip", 2).run1({&xi, &lo8})), {-5, 0, 127});
  Tensor two = f32({2}, {0, 1});
  OneNode("Clip", 2).expectError({&x, &two});  // min must be a scalar
  OneNode("Clip", 2).expectError({&x, &lo8});  // dtype differs
  Tensor e(DType::Float, {0});
  EXPECT_EQ(OneNode("Clip", 3).run1({&e, &lo, &hi}).shape(), Shape{0});
}

}  // namespace
}  // namespace poprt::ops
