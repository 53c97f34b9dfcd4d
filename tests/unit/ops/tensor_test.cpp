// The tensor op family (data movement, indexing, Cast) on edge cases beyond the backend data:
// empty and rank-0 tensors, negative axes and indices, fp16, strings, and invalid inputs that
// must give an error rather than a crash. Expected values are hand-computed or come from numpy
// 1.24 (noted where they do).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/unit/ops/op_test_util.h"

namespace poprt::ops {
namespace {

using Attrs = std::vector<std::pair<std::string, ir::AttributeValue>>;

// Runs one node of `op` (no graph inputs) with the given inputs (nullptr = omitted) and attributes.
Expected<std::vector<Tensor>> run(const std::string& op, const std::vector<const Tensor*>& inputs, const Attrs& attrs = {},
                                  int64_t opset = 17, size_t outputs = 1) {
  OneNode n(op, 0, outputs);
  for (const auto& [name, value] : attrs) n.attr(name, value);
  return n.run(inputs, opset);
}

// The single output, failing the test if the op failed.
Tensor out0(const Expected<std::vector<Tensor>>& r) {
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  if (!r.ok() || r->empty()) return Tensor();
  return (*r)[0];
}

#define EXPECT_ERROR(expr)                                    \
  do {                                                        \
    auto r_ = (expr);                                         \
    EXPECT_FALSE(r_.ok()) << "expected an error from " #expr; \
  } while (0)

const int64_t kBig = std::numeric_limits<int64_t>::max();
const int64_t kSmall = std::numeric_limits<int64_t>::min();

// ---- Cast ----------------------------------------------------------------------------------

TEST(Cast, FloatToStringLikeNumpy) {
  // numpy 1.24: np.array([...], np.float32).astype(str)
  Tensor x = f32({14}, {0.0f, -0.0f, 1.0f, -2.5f, 1e-4f, 9.999e-5f, 1e-5f, 123456.0f, 1e16f, 9.9e15f, 3.4028235e38f, 0.1f,
                        16777216.0f, 1.2345678e20f});
  Tensor y = out0(run("Cast", {&x}, {{"to", int64_t{8}}}));
  EXPECT_EQ(y.strings(),
            (std::vector<std::string>{"0.0", "-0.0", "1.0", "-2.5", "1e-04", "9.999e-05", "1e-05", "123456.0", "1e+16",
                                      "9900000000000000.0", "3.4028235e+38", "0.1", "16777216.0", "1.2345678e+20"}));
  Tensor special = f32({3}, {NAN, INFINITY, -INFINITY});
  EXPECT_EQ(out0(run("Cast", {&special}, {{"to", int64_t{8}}})).strings(), (std::vector<std::string>{"nan", "inf", "-inf"}));
}

TEST(Cast, DoubleHalfBoolIntToString) {
  // numpy 1.24: float64 / float16 / bool / int64 arrays .astype(str)
  Tensor d = f64({5}, {0.1, 1e16, 1e-4, 1.0 / 3, 5e-324});
  EXPECT_EQ(out0(run("Cast", {&d}, {{"to", int64_t{8}}})).strings(),
            (std::vector<std::string>{"0.1", "1e+16", "0.0001", "0.3333333333333333", "5e-324"}));
  Tensor h = f16({5}, {0.1f, 65504.0f, 1e-4f, 6e-8f, 2049.0f});
  EXPECT_EQ(out0(run("Cast", {&h}, {{"to", int64_t{8}}})).strings(),
            (std::vector<std::string>{"0.1", "65500.0", "0.0001", "6e-08", "2048.0"}));
  Tensor b = boolean({2}, {true, false});
  EXPECT_EQ(out0(run("Cast", {&b}, {{"to", int64_t{8}}})).strings(), (std::vector<std::string>{"True", "False"}));
  Tensor i = i64({2}, {-5, 200});
  EXPECT_EQ(out0(run("Cast", {&i}, {{"to", int64_t{8}}})).strings(), (std::vector<std::string>{"-5", "200"}));
}

TEST(Cast, StringToNumbers) {
  Tensor s = strings({7}, {"INF", "-INF", "+INF", "NaN", "+1.5e3", "1E8", "-0.25"});
  auto y = values<float>(out0(run("Cast", {&s}, {{"to", int64_t{1}}})));
  EXPECT_EQ(y[0], INFINITY);
  EXPECT_EQ(y[1], -INFINITY);
  EXPECT_EQ(y[2], INFINITY);
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_EQ(y[4], 1500.0f);
  EXPECT_EQ(y[5], 1e8f);
  EXPECT_EQ(y[6], -0.25f);
  Tensor ints = strings({3}, {"-42", "9223372036854775807", "1e3"});
  EXPECT_EQ(values<int64_t>(out0(run("Cast", {&ints}, {{"to", int64_t{7}}}))), (std::vector<int64_t>{-42, kBig, 1000}));
  Tensor bad = strings({1}, {"abc"});
  EXPECT_ERROR(run("Cast", {&bad}, {{"to", int64_t{1}}}));
  Tensor half_bad = strings({1}, {"1.5x"});
  EXPECT_ERROR(run("Cast", {&half_bad}, {{"to", int64_t{10}}}));
}

TEST(Cast, SixteenBitFloatsRoundOnce) {
  // 1 + 2^-11 + 2^-40 lies just above the midpoint of two halves: the correct result is 0x3c01
  // (numpy float64 -> float16 agrees); going through float first would give the tie 0x3c00.
  Tensor d = f64({1}, {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)});
  EXPECT_EQ(out0(run("Cast", {&d}, {{"to", int64_t{10}}})).data<Half>()[0].bits, 0x3c01);
  // The same for bfloat16 (hand-computed): 1 + 2^-8 + 2^-40 -> 0x3f81.
  Tensor db = f64({1}, {1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)});
  EXPECT_EQ(out0(run("Cast", {&db}, {{"to", int64_t{16}}})).data<BFloat16>()[0].bits, 0x3f81);
  // float -> bfloat16 ties to even: 1 + 2^-8 -> 0x3f80, 1 + 3 * 2^-8 -> 0x3f82 (hand-computed).
  Tensor f = f32({2}, {1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8)});
  Tensor bf = out0(run("Cast", {&f}, {{"to", int64_t{16}}}));
  EXPECT_EQ(bf.data<BFloat16>()[0].bits, 0x3f80);
  EXPECT_EQ(bf.data<BFloat16>()[1].bits, 0x3f82);
  // numpy: np.array([2049, 2051, -70000], np.int64).astype(np.float16) -> [2048, 2052, -inf]
  Tensor i = i64({3}, {2049, 2051, -70000});
  EXPECT_EQ(halfValues(out0(run("Cast", {&i}, {{"to", int64_t{10}}}))), (std::vector<double>{2048.0f, 2052.0f, -INFINITY}));
}

TEST(Cast, FloatToIntegersAndBool) {
  // numpy: np.array([-1.0, 2.9, -1.7], np.float32).astype(np.uint8) -> [255, 2, 255]
  Tensor f = f32({3}, {-1.0f, 2.9f, -1.7f});
  EXPECT_EQ(values<uint8_t>(out0(run("Cast", {&f}, {{"to", int64_t{2}}}))), (std::vector<uint8_t>{255, 2, 255}));
  EXPECT_EQ(values<int32_t>(out0(run("Cast", {&f}, {{"to", int64_t{6}}}))), (std::vector<int32_t>{-1, 2, -1}));
  // NaN and out-of-range values are defined here (no UB): NaN -> 0, beyond int64 saturates.
  Tensor odd = f32({3}, {NAN, 1e30f, -1e30f});
  EXPECT_EQ(values<int64_t>(out0(run("Cast", {&odd}, {{"to", int64_t{7}}}))), (std::vector<int64_t>{0, kBig, kSmall}));
  Tensor z = f32({3}, {0.0f, -0.5f, NAN});
  auto b = out0(run("Cast", {&z}, {{"to", int64_t{9}}}));
  EXPECT_EQ(b.data<bool>()[0], false);
  EXPECT_EQ(b.data<bool>()[1], true);
  EXPECT_EQ(b.data<bool>()[2], true);
  Tensor empty(DType::Float, {0, 3});
  EXPECT_EQ(out0(run("Cast", {&empty}, {{"to", int64_t{11}}})).shape(), (Shape{0, 3}));
  EXPECT_ERROR(run("Cast", {&f}, {{"to", int64_t{99}}}));
  EXPECT_ERROR(run("Cast", {&f}, {}));
}

TEST(Cast, CastLikeTakesTheDtypeOfItsSecondInput) {
  Tensor x = i32({2}, {3, -4});
  Tensor like = f64({0}, {});
  Tensor y = out0(run("CastLike", {&x, &like}));
  EXPECT_EQ(y.dtype(), DType::Double);
  EXPECT_EQ(values<double>(y), (std::vector<double>{3.0, -4.0}));
}

// ---- Constant, Identity --------------------------------------------------------------------

TEST(Constant, EveryValueAttribute) {
  EXPECT_EQ(values<float>(out0(run("Constant", {}, {{"value_float", 2.5f}}))), std::vector<float>{2.5f});
  EXPECT_EQ(out0(run("Constant", {}, {{"value_float", 2.5f}})).shape(), Shape{});
  EXPECT_EQ(values<float>(out0(run("Constant", {}, {{"value_floats", std::vector<float>{1, 2}}}))), (std::vector<float>{1, 2}));
  EXPECT_EQ(values<int64_t>(out0(run("Constant", {}, {{"value_int", int64_t{7}}}))), std::vector<int64_t>{7});
  EXPECT_EQ(out0(run("Constant", {}, {{"value_ints", std::vector<int64_t>{}}})).shape(), Shape{0});
  EXPECT_EQ(out0(run("Constant", {}, {{"value_string", std::string("hi")}})).strings(), std::vector<std::string>{"hi"});
  EXPECT_EQ(out0(run("Constant", {}, {{"value_strings", std::vector<std::string>{"a", "b"}}})).strings(),
            (std::vector<std::string>{"a", "b"}));
  Tensor t = i32({2, 1}, {5, 6});
  EXPECT_EQ(out0(run("Constant", {}, {{"value", t}})), t);
  EXPECT_ERROR(run("Constant", {}, {}));
  EXPECT_ERROR(run("Constant", {}, {{"value", t}, {"value_int", int64_t{1}}}));
  EXPECT_ERROR(run("Constant", {}, {{"sparse_value", t}}));
}

TEST(Identity, PassesSequencesAndOptionalsThrough) {
  ir::Graph g;
  ir::Node* n = g.addNode("Identity", {}, {g.addValue("y")});
  EvalContext ctx;
  RtValue seq = RtValue::seq({f32({1}, {1.0f}), f32({2}, {2.0f, 3.0f})}, DType::Float);
  auto r = runNode(*n, {&seq}, ctx);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].kind, RtValue::Kind::Sequence);
  EXPECT_EQ((*r)[0].sequence, seq.sequence);
  RtValue none = RtValue::none(DType::Float);
  auto r2 = runNode(*n, {&none}, ctx);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ((*r2)[0].kind, RtValue::Kind::None);
  Tensor s = strings({}, {"x"});
  EXPECT_EQ(out0(run("Identity", {&s})), s);
  EXPECT_ERROR(run("Identity", {nullptr}));
}

// ---- Reshape family ------------------------------------------------------------------------

TEST(Reshape, ZeroCopiesMinusOneInfersAllowzeroKeepsZero) {
  Tensor x(DType::Float, {2, 3, 4});
  Tensor s1 = i64({3}, {0, -1, 2});
  EXPECT_EQ(out0(run("Reshape", {&x, &s1})).shape(), (Shape{2, 6, 2}));
  Tensor empty(DType::Float, {0, 3});
  Tensor s2 = i64({2}, {3, 0});
  EXPECT_EQ(out0(run("Reshape", {&empty, &s2}, {{"allowzero", int64_t{1}}}, 14)).shape(), (Shape{3, 0}));
  EXPECT_ERROR(run("Reshape", {&empty, &s2}));  // 0 copies 3 -> [3,3] has 9 elements, not 0
  Tensor two_neg = i64({2}, {-1, -1});
  EXPECT_ERROR(run("Reshape", {&x, &two_neg}));
  Tensor bad = i64({2}, {5, -1});
  EXPECT_ERROR(run("Reshape", {&x, &bad}));
  Tensor beyond = i64({4}, {1, 1, 1, 0});
  EXPECT_ERROR(run("Reshape", {&x, &beyond}));
  Tensor neg = i64({2}, {-2, 12});
  EXPECT_ERROR(run("Reshape", {&x, &neg}));
  Tensor huge = i64({3}, {kBig, kBig, 0});
  EXPECT_ERROR(run("Reshape", {&x, &huge}, {{"allowzero", int64_t{1}}}));
  Tensor scalar = f32({1}, {3.0f});
  Tensor to_scalar(DType::Int64, {0});
  EXPECT_EQ(out0(run("Reshape", {&scalar, &to_scalar})).shape(), Shape{});
}

TEST(Flatten, AxisZeroNegativeAndRankZero) {
  Tensor x(DType::Float, {2, 3, 4});
  EXPECT_EQ(out0(run("Flatten", {&x}, {{"axis", int64_t{0}}})).shape(), (Shape{1, 24}));
  EXPECT_EQ(out0(run("Flatten", {&x}, {{"axis", int64_t{-1}}})).shape(), (Shape{6, 4}));
  EXPECT_EQ(out0(run("Flatten", {&x}, {{"axis", int64_t{3}}})).shape(), (Shape{24, 1}));
  EXPECT_ERROR(run("Flatten", {&x}, {{"axis", int64_t{4}}}));
  Tensor s = f32({}, {1.0f});
  EXPECT_EQ(out0(run("Flatten", {&s}, {{"axis", int64_t{0}}})).shape(), (Shape{1, 1}));
}

TEST(Squeeze, AttributeBefore13InputFrom13) {
  Tensor x(DType::Float, {1, 3, 1});
  Tensor axes = i64({1}, {-1});
  EXPECT_EQ(out0(run("Squeeze", {&x, &axes})).shape(), (Shape{1, 3}));
  EXPECT_EQ(out0(run("Squeeze", {&x}, {{"axes", std::vector<int64_t>{0}}}, 11)).shape(), (Shape{3, 1}));
  EXPECT_EQ(out0(run("Squeeze", {&x})).shape(), (Shape{3}));
  Tensor not_one = i64({1}, {1});
  EXPECT_ERROR(run("Squeeze", {&x, &not_one}));
  Tensor out_of_range = i64({1}, {3});
  EXPECT_ERROR(run("Squeeze", {&x, &out_of_range}));
}

TEST(Unsqueeze, NegativeAxesRankZeroAndDuplicates) {
  Tensor s = f32({}, {4.0f});
  Tensor a0 = i64({1}, {0});
  EXPECT_EQ(out0(run("Unsqueeze", {&s, &a0})).shape(), (Shape{1}));
  Tensor x(DType::Float, {3, 4});
  Tensor axes = i64({2}, {-1, 0});
  EXPECT_EQ(out0(run("Unsqueeze", {&x, &axes})).shape(), (Shape{1, 3, 4, 1}));
  EXPECT_EQ(out0(run("Unsqueeze", {&x}, {{"axes", std::vector<int64_t>{1}}}, 11)).shape(), (Shape{3, 1, 4}));
  Tensor dup = i64({2}, {1, -3});  // output rank 4: -3 is axis 1 again
  EXPECT_ERROR(run("Unsqueeze", {&x, &dup}));
  Tensor far = i64({1}, {3});
  EXPECT_ERROR(run("Unsqueeze", {&x, &far}));
  EXPECT_ERROR(run("Unsqueeze", {&x}));  // opset 13 needs the axes input
}

TEST(Transpose, DefaultReversesAndBadPermFails) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y = out0(run("Transpose", {&x}));
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  Tensor h = f16({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(halfValues(out0(run("Transpose", {&h}))), (std::vector<double>{1, 3, 2, 4}));
  EXPECT_ERROR(run("Transpose", {&x}, {{"perm", std::vector<int64_t>{0, 0}}}));
  EXPECT_ERROR(run("Transpose", {&x}, {{"perm", std::vector<int64_t>{0, 2}}}));
  EXPECT_ERROR(run("Transpose", {&x}, {{"perm", std::vector<int64_t>{0}}}));
}

// ---- Concat, Split, Slice ------------------------------------------------------------------

TEST(Concat, EmptyInputsStringsAndMismatches) {
  Tensor a = strings({1, 2}, {"a", "b"});
  Tensor e(DType::String, {0, 2});
  Tensor b = strings({1, 2}, {"c", "d"});
  Tensor y = out0(run("Concat", {&a, &e, &b}, {{"axis", int64_t{-2}}}));
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(y.strings(), (std::vector<std::string>{"a", "b", "c", "d"}));
  Tensor c = f32({2, 1}, {1, 2}), d = f32({2, 2}, {3, 4, 5, 6});
  EXPECT_EQ(values<float>(out0(run("Concat", {&c, &d}, {{"axis", int64_t{1}}}))), (std::vector<float>{1, 3, 4, 2, 5, 6}));
  EXPECT_ERROR(run("Concat", {&c, &d}, {{"axis", int64_t{0}}}));
  EXPECT_ERROR(run("Concat", {&c, &a}, {{"axis", int64_t{0}}}));
  EXPECT_ERROR(run("Concat", {&c, &d}, {{"axis", int64_t{2}}}));
  EXPECT_ERROR(run("Concat", {&c, &d}));
  Tensor s = f32({}, {1});
  EXPECT_ERROR(run("Concat", {&s, &s}, {{"axis", int64_t{0}}}));
}

TEST(Split, EqualVariableAttributeAndErrors) {
  Tensor x = f32({5}, {1, 2, 3, 4, 5});
  auto r = run("Split", {&x}, {}, 17, 2);
  EXPECT_FALSE(r.ok());  // 5 does not split into 2 equal parts
  Tensor parts = i64({2}, {2, 3});
  auto r2 = run("Split", {&x, &parts}, {}, 17, 2);
  ASSERT_TRUE(r2.ok()) << r2.error().message();
  EXPECT_EQ(values<float>((*r2)[1]), (std::vector<float>{3, 4, 5}));
  auto r3 = run("Split", {&x}, {{"split", std::vector<int64_t>{4, 0, 1}}}, 11, 3);
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ((*r3)[1].shape(), Shape{0});
  EXPECT_EQ(values<float>((*r3)[2]), std::vector<float>{5});
  Tensor wrong_sum = i64({2}, {2, 2});
  EXPECT_ERROR(run("Split", {&x, &wrong_sum}, {}, 17, 2));
  Tensor negative = i64({2}, {6, -1});
  EXPECT_ERROR(run("Split", {&x, &negative}, {}, 17, 2));
  EXPECT_ERROR(run("Split", {&x, &parts}, {{"axis", int64_t{1}}}, 17, 2));
  Tensor m = f32({2, 2}, {1, 2, 3, 4});
  auto r4 = run("Split", {&m}, {{"axis", int64_t{-1}}}, 17, 2);
  ASSERT_TRUE(r4.ok());
  EXPECT_EQ(values<float>((*r4)[0]), (std::vector<float>{1, 3}));
}

TEST(Slice, NegativeStepsClampingAndOldAttributes) {
  Tensor x = i64({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor st = i64({1}, {8}), en = i64({1}, {1}), ax = i64({1}, {0}), step = i64({1}, {-3});
  // numpy: np.arange(10)[8:1:-3] -> [8, 5, 2]
  EXPECT_EQ(values<int64_t>(out0(run("Slice", {&x, &st, &en, &ax, &step}))), (std::vector<int64_t>{8, 5, 2}));
  Tensor st2 = i64({1}, {-1}), en2 = i64({1}, {kSmall}), step2 = i64({1}, {-1});
  // numpy: np.arange(10)[-1:-100:-1] -> 9..0
  EXPECT_EQ(values<int64_t>(out0(run("Slice", {&x, &st2, &en2, nullptr, &step2}))),
            (std::vector<int64_t>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  Tensor st3 = i64({1}, {kSmall}), en3 = i64({1}, {kBig}), step3 = i64({1}, {kBig});
  EXPECT_EQ(values<int64_t>(out0(run("Slice", {&x, &st3, &en3, nullptr, &step3}))), std::vector<int64_t>{0});
  Tensor step4 = i64({1}, {kSmall});
  EXPECT_EQ(values<int64_t>(out0(run("Slice", {&x, &st2, &en2, nullptr, &step4}))), std::vector<int64_t>{9});
  Tensor st5 = i64({1}, {20}), en5 = i64({1}, {30});
  EXPECT_EQ(out0(run("Slice", {&x, &st5, &en5})).shape(), Shape{0});
  Tensor zero = i64({1}, {0});
  EXPECT_ERROR(run("Slice", {&x, &st, &en, &ax, &zero}));
  Tensor ax_bad = i64({1}, {1});
  EXPECT_ERROR(run("Slice", {&x, &st, &en, &ax_bad}));
  Tensor two = i64({2}, {0, 0});
  EXPECT_ERROR(run("Slice", {&x, &two, &en}));
  Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto old =
      run("Slice", {&m},
          {{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{1000}}, {"axes", std::vector<int64_t>{-1}}}, 9);
  EXPECT_EQ(values<float>(out0(old)), (std::vector<float>{2, 3, 5, 6}));
  Tensor e(DType::Float, {0, 3});
  Tensor s0 = i64({1}, {-1}), e0 = i64({1}, {kSmall}), m1 = i64({1}, {-1});
  EXPECT_EQ(out0(run("Slice", {&e, &s0, &e0, &ax, &m1})).shape(), (Shape{0, 3}));
}

// ---- Gather family ---------------------------------------------------------------------------

TEST(Gather, NegativeIndicesWrapOutOfRangeFails) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor i = i32({2}, {-1, 0});
  EXPECT_EQ(values<float>(out0(run("Gather", {&x, &i}))), (std::vector<float>{5, 6, 1, 2}));
  Tensor s = i64({}, {1});
  Tensor y = out0(run("Gather", {&x, &s}, {{"axis", int64_t{-1}}}));
  EXPECT_EQ(y.shape(), Shape{3});
  EXPECT_EQ(values<float>(y), (std::vector<float>{2, 4, 6}));
  Tensor bad = i64({1}, {3}), bad_neg = i64({1}, {-4});
  EXPECT_ERROR(run("Gather", {&x, &bad}));
  EXPECT_ERROR(run("Gather", {&x, &bad_neg}));
  Tensor fidx = f32({1}, {0});
  EXPECT_ERROR(run("Gather", {&x, &fidx}));
  EXPECT_ERROR(run("Gather", {&x, &i}, {{"axis", int64_t{2}}}));
  Tensor none(DType::Int64, {0, 2});
  EXPECT_EQ(out0(run("Gather", {&x, &none})).shape(), (Shape{0, 2, 2}));
  Tensor h = f16({3}, {1.5f, 2.5f, 3.5f});
  EXPECT_EQ(halfValues(out0(run("Gather", {&h, &i}))), (std::vector<double>{3.5f, 1.5f}));
}

TEST(GatherElements, WrapsAndChecks) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  Tensor i = i64({2, 2}, {0, -1, 1, 0});
  EXPECT_EQ(values<float>(out0(run("GatherElements", {&x, &i}, {{"axis", int64_t{1}}}))), (std::vector<float>{1, 2, 4, 3}));
  Tensor bad = i64({1, 1}, {2});
  EXPECT_ERROR(run("GatherElements", {&x, &bad}));
  Tensor too_wide = i64({1, 3}, {0, 0, 0});
  EXPECT_ERROR(run("GatherElements", {&x, &too_wide}));
  Tensor rank1 = i64({2}, {0, 0});
  EXPECT_ERROR(run("GatherElements", {&x, &rank1}));
}

TEST(GatherND, BatchDimsAndBounds) {
  Tensor x = f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor i = i64({2, 1}, {1, 0});  // batch_dims 1: batch 0 takes row 1, batch 1 takes row 0
  Tensor y = out0(run("GatherND", {&x, &i}, {{"batch_dims", int64_t{1}}}));
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{2, 3, 4, 5}));
  Tensor neg = i64({1, 3}, {-1, 0, -1});
  EXPECT_EQ(values<float>(out0(run("GatherND", {&x, &neg}))), std::vector<float>{5});
  Tensor bad = i64({1, 2}, {2, 0});
  EXPECT_ERROR(run("GatherND", {&x, &bad}));
  Tensor too_long = i64({1, 4}, {0, 0, 0, 0});
  EXPECT_ERROR(run("GatherND", {&x, &too_long}));
  EXPECT_ERROR(run("GatherND", {&x, &i}, {{"batch_dims", int64_t{2}}}));
}

// ---- Scatter family --------------------------------------------------------------------------

TEST(ScatterElements, ReductionsNegativeIndicesAndErrors) {
  Tensor x = f32({1, 3}, {1, 2, 3});
  Tensor i = i64({1, 2}, {-1, -1});
  Tensor u = f32({1, 2}, {10, 20});
  EXPECT_EQ(values<float>(out0(run("ScatterElements", {&x, &i, &u}, {{"axis", int64_t{1}}, {"reduction", std::string("add")}}))),
            (std::vector<float>{1, 2, 33}));
  EXPECT_EQ(values<float>(out0(run("ScatterElements", {&x, &i, &u}, {{"axis", int64_t{1}}, {"reduction", std::string("mul")}}))),
            (std::vector<float>{1, 2, 600}));
  EXPECT_EQ(values<float>(out0(run("Scatter", {&x, &i, &u}, {{"axis", int64_t{1}}}, 9))), (std::vector<float>{1, 2, 20}));
  Tensor bad = i64({1, 2}, {0, 3});
  EXPECT_ERROR(run("ScatterElements", {&x, &bad, &u}, {{"axis", int64_t{1}}}));
  Tensor u3 = f32({1, 3}, {1, 1, 1});
  EXPECT_ERROR(run("ScatterElements", {&x, &i, &u3}, {{"axis", int64_t{1}}}));
  EXPECT_ERROR(run("ScatterElements", {&x, &i, &u}, {{"axis", int64_t{1}}, {"reduction", std::string("sub")}}));
  Tensor h = f16({2}, {1.0f, 2.0f});
  Tensor hi = i64({1}, {1}), hu = f16({1}, {0.5f});
  EXPECT_EQ(halfValues(out0(run("ScatterElements", {&h, &hi, &hu}, {{"reduction", std::string("add")}}))),
            (std::vector<double>{1.0f, 2.5f}));
}

TEST(ScatterND, DuplicatesAccumulateAndShapesAreChecked) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  Tensor i = i64({3, 1}, {1, 1, -1});
  Tensor u = f32({3}, {5, 6, 7});
  EXPECT_EQ(values<float>(out0(run("ScatterND", {&x, &i, &u}, {{"reduction", std::string("add")}}))),
            (std::vector<float>{1, 13, 3, 11}));
  Tensor m = f32({2, 2}, {1, 2, 3, 4});
  Tensor row = i64({1, 1}, {1});
  Tensor ur = f32({1, 2}, {9, 8});
  EXPECT_EQ(values<float>(out0(run("ScatterND", {&m, &row, &ur}))), (std::vector<float>{1, 2, 9, 8}));
  Tensor bad_upd = f32({1, 3}, {1, 1, 1});
  EXPECT_ERROR(run("ScatterND", {&m, &row, &bad_upd}));
  Tensor oob = i64({1, 1}, {2});
  EXPECT_ERROR(run("ScatterND", {&m, &oob, &ur}));
}

// ---- Expand, Tile, Pad -------------------------------------------------------------------------

TEST(Expand, BroadcastsBothWaysAndRefusesHugeShapes) {
  Tensor x = f32({3, 1}, {1, 2, 3});
  Tensor s = i64({3}, {2, 1, 2});
  Tensor y = out0(run("Expand", {&x, &s}));
  EXPECT_EQ(y.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  Tensor bad = i64({2}, {2, 2});  // 3 vs 2
  EXPECT_ERROR(run("Expand", {&x, &bad}));
  Tensor huge = i64({3}, {int64_t{1} << 40, 1, int64_t{1} << 40});
  EXPECT_ERROR(run("Expand", {&x, &huge}));
  Tensor neg = i64({1}, {-1});
  EXPECT_ERROR(run("Expand", {&x, &neg}));
  Tensor zero = i64({2}, {0, 1});
  EXPECT_ERROR(run("Expand", {&x, &zero}));  // 3 and 0 do not broadcast (numpy agrees)
  Tensor one = f32({1}, {5});
  EXPECT_EQ(out0(run("Expand", {&one, &zero})).shape(), (Shape{0, 1}));
}

TEST(Tile, RepeatsZeroAndTooLarge) {
  Tensor x = f32({2}, {1, 2});
  Tensor r = i64({1}, {3});
  EXPECT_EQ(values<float>(out0(run("Tile", {&x, &r}))), (std::vector<float>{1, 2, 1, 2, 1, 2}));
  Tensor r0 = i64({1}, {0});
  EXPECT_EQ(out0(run("Tile", {&x, &r0})).shape(), Shape{0});
  Tensor huge = i64({1}, {kBig});
  EXPECT_ERROR(run("Tile", {&x, &huge}));
  Tensor neg = i64({1}, {-1});
  EXPECT_ERROR(run("Tile", {&x, &neg}));
  Tensor wrong_len = i64({2}, {1, 1});
  EXPECT_ERROR(run("Tile", {&x, &wrong_len}));
}

TEST(Pad, ModesNegativePadsAndOldAttributes) {
  Tensor x = i64({3}, {1, 2, 3});
  Tensor p = i64({2}, {5, 4});
  // numpy: np.pad([1, 2, 3], (5, 4), 'reflect') -> [2 1 2 3 2 1 2 3 2 1 2 3]
  EXPECT_EQ(values<int64_t>(out0(run("Pad", {&x, &p}, {{"mode", std::string("reflect")}}))),
            (std::vector<int64_t>{2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3}));
  // numpy: np.pad([[1, 2], [3, 4]], ((1, 0), (2, 1)), 'edge')
  Tensor m = i64({2, 2}, {1, 2, 3, 4});
  Tensor pe = i64({4}, {1, 2, 0, 1});
  EXPECT_EQ(values<int64_t>(out0(run("Pad", {&m, &pe}, {{"mode", std::string("edge")}}))),
            (std::vector<int64_t>{1, 1, 1, 2, 2, 1, 1, 1, 2, 2, 3, 3, 3, 4, 4}));
  Tensor crop = i64({2}, {-1, 1});
  Tensor c = i64({}, {9});
  EXPECT_EQ(values<int64_t>(out0(run("Pad", {&x, &crop, &c}))), (std::vector<int64_t>{2, 3, 9}));
  Tensor f = f32({2}, {1, 2});
  auto old = run("Pad", {&f}, {{"pads", std::vector<int64_t>{1, 0}}, {"value", 7.0f}}, 2);
  EXPECT_EQ(values<float>(out0(old)), (std::vector<float>{7, 1, 2}));
  Tensor too_much = i64({2}, {-4, 0});
  EXPECT_ERROR(run("Pad", {&x, &too_much}));
  Tensor huge = i64({2}, {kBig, kBig});
  EXPECT_ERROR(run("Pad", {&x, &huge}));
  Tensor wrong_len = i64({1}, {1});
  EXPECT_ERROR(run("Pad", {&x, &wrong_len}));
  Tensor e(DType::Float, {0});
  Tensor one = i64({2}, {1, 1});
  EXPECT_ERROR(run("Pad", {&e, &one}, {{"mode", std::string("reflect")}}));
  EXPECT_EQ(values<float>(out0(run("Pad", {&e, &one}))), (std::vector<float>{0, 0}));
  EXPECT_ERROR(run("Pad", {&x, &p}, {{"mode", std::string("wrap")}}));
  Tensor fc = f32({}, {1});
  EXPECT_ERROR(run("Pad", {&x, &p, &fc}));  // constant of another dtype
}

// ---- Shape, Size, ConstantOfShape, Range ---------------------------------------------------------

TEST(Shape, StartEndClampAndSize) {
  Tensor x(DType::Float, {2, 3, 4});
  EXPECT_EQ(values<int64_t>(out0(run("Shape", {&x}, {{"start", int64_t{-2}}}))), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values<int64_t>(out0(run("Shape", {&x}, {{"start", int64_t{-10}}, {"end", int64_t{1}}}))), std::vector<int64_t>{2});
  EXPECT_EQ(out0(run("Shape", {&x}, {{"start", int64_t{2}}, {"end", int64_t{1}}})).shape(), Shape{0});
  Tensor s = f32({}, {1});
  EXPECT_EQ(out0(run("Shape", {&s})).shape(), Shape{0});
  Tensor sz = out0(run("Size", {&x}));
  EXPECT_EQ(sz.shape(), Shape{});
  EXPECT_EQ(values<int64_t>(sz), std::vector<int64_t>{24});
}

TEST(ConstantOfShape, ValueDtypeScalarAndLimits) {
  Tensor shape = i64({2}, {2, 1});
  Tensor v = i32({1}, {7});
  Tensor y = out0(run("ConstantOfShape", {&shape}, {{"value", v}}));
  EXPECT_EQ(y.dtype(), DType::Int32);
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{7, 7}));
  Tensor empty(DType::Int64, {0});
  Tensor s = out0(run("ConstantOfShape", {&empty}));
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(values<float>(s), std::vector<float>{0});
  Tensor huge = i64({2}, {int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_ERROR(run("ConstantOfShape", {&huge}));
  Tensor neg = i64({1}, {-1});
  EXPECT_ERROR(run("ConstantOfShape", {&neg}));
  Tensor two = i32({2}, {1, 2});
  EXPECT_ERROR(run("ConstantOfShape", {&shape}, {{"value", two}}));
}

TEST(Range, FloatIntAndErrors) {
  Tensor s = f32({}, {1}), l = f32({}, {2}), d = f32({}, {0.25f});
  EXPECT_EQ(values<float>(out0(run("Range", {&s, &l, &d}))), (std::vector<float>{1, 1.25f, 1.5f, 1.75f}));
  Tensor si = i32({}, {10}), li = i32({}, {4}), di = i32({}, {-3});
  EXPECT_EQ(values<int32_t>(out0(run("Range", {&si, &li, &di}))), (std::vector<int32_t>{10, 7}));
  Tensor empty_d = i32({}, {3});
  EXPECT_EQ(out0(run("Range", {&si, &li, &empty_d})).shape(), Shape{0});
  Tensor zero = f32({}, {0});
  EXPECT_ERROR(run("Range", {&s, &l, &zero}));
  Tensor big_l = f32({}, {1e30f}), tiny_d = f32({}, {1e-30f});
  EXPECT_ERROR(run("Range", {&s, &big_l, &tiny_d}));
  Tensor nan = f32({}, {NAN});
  EXPECT_ERROR(run("Range", {&s, &nan, &d}));
  EXPECT_ERROR(run("Range", {&s, &li, &d}));
  Tensor a = i64({}, {kSmall}), b = i64({}, {kBig}), one = i64({}, {1});
  EXPECT_ERROR(run("Range", {&a, &b, &one}));
}

// ---- OneHot, NonZero, Compress, Unique --------------------------------------------------------

TEST(OneHot, NegativeIndicesAxisAndOutOfRange) {
  Tensor i = i64({3}, {1, -1, 5});
  Tensor depth = f32({}, {3});
  Tensor v = f32({2}, {0, 1});
  // opset 11: -1 wraps to 2; 5 is out of range -> all off.
  EXPECT_EQ(values<float>(out0(run("OneHot", {&i, &depth, &v}, {}, 11))), (std::vector<float>{0, 1, 0, 0, 0, 1, 0, 0, 0}));
  // opset 9: negative indices are out of range.
  EXPECT_EQ(values<float>(out0(run("OneHot", {&i, &depth, &v}, {}, 9))), (std::vector<float>{0, 1, 0, 0, 0, 0, 0, 0, 0}));
  Tensor y = out0(run("OneHot", {&i, &depth, &v}, {{"axis", int64_t{0}}}, 11));
  EXPECT_EQ(y.shape(), (Shape{3, 3}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{0, 0, 0, 1, 0, 0, 0, 1, 0}));
  Tensor zero = f32({}, {0});
  EXPECT_ERROR(run("OneHot", {&i, &zero, &v}));
  Tensor huge = f32({}, {1e30f});
  EXPECT_ERROR(run("OneHot", {&i, &huge, &v}));
  Tensor v3 = f32({3}, {0, 1, 2});
  EXPECT_ERROR(run("OneHot", {&i, &depth, &v3}));
  EXPECT_ERROR(run("OneHot", {&i, &depth, &v}, {{"axis", int64_t{2}}}));
}

TEST(NonZero, MatrixAndScalar) {
  // numpy: np.nonzero([[0, 2], [3, 0], [0, 5]]) -> ([0, 1, 2], [1, 0, 1])
  Tensor x = f32({3, 2}, {0, 2, 3, 0, 0, 5});
  Tensor y = out0(run("NonZero", {&x}));
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{0, 1, 2, 1, 0, 1}));
  Tensor s = f32({}, {4});
  EXPECT_EQ(out0(run("NonZero", {&s})).shape(), (Shape{1, 1}));
  Tensor e(DType::Float, {0, 3});
  EXPECT_EQ(out0(run("NonZero", {&e})).shape(), (Shape{2, 0}));
  Tensor n = f32({2}, {NAN, -0.0f});
  EXPECT_EQ(values<int64_t>(out0(run("NonZero", {&n}))), std::vector<int64_t>{0});
}

TEST(Compress, FlattenedAxisAndShortCondition) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  Tensor c = boolean({3}, {false, true, true});
  EXPECT_EQ(values<float>(out0(run("Compress", {&x, &c}))), (std::vector<float>{2, 3}));
  Tensor c1 = boolean({1}, {true});
  EXPECT_EQ(values<float>(out0(run("Compress", {&x, &c1}, {{"axis", int64_t{-1}}}))), (std::vector<float>{1, 3}));
  Tensor long_true = boolean({3}, {false, false, true});
  EXPECT_ERROR(run("Compress", {&x, &long_true}, {{"axis", int64_t{0}}}));
  Tensor long_false = boolean({3}, {true, false, false});
  EXPECT_EQ(values<float>(out0(run("Compress", {&x, &long_false}, {{"axis", int64_t{0}}}))), (std::vector<float>{1, 2}));
  EXPECT_ERROR(run("Compress", {&x, &c}, {{"axis", int64_t{2}}}));
}

TEST(Unique, SortedUnsortedAxisNanAndStrings) {
  // numpy: np.unique([2, 1, 1, 3, 4, 3], return_index, return_inverse, return_counts)
  Tensor x = i64({6}, {2, 1, 1, 3, 4, 3});
  auto r = run("Unique", {&x}, {}, 11, 4);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(values<int64_t>((*r)[0]), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(values<int64_t>((*r)[1]), (std::vector<int64_t>{1, 0, 3, 4}));
  EXPECT_EQ(values<int64_t>((*r)[2]), (std::vector<int64_t>{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(values<int64_t>((*r)[3]), (std::vector<int64_t>{2, 1, 2, 1}));
  // Unsorted: order of first occurrence (hand-computed from the above).
  auto u = run("Unique", {&x}, {{"sorted", int64_t{0}}}, 11, 4);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(values<int64_t>((*u)[0]), (std::vector<int64_t>{2, 1, 3, 4}));
  EXPECT_EQ(values<int64_t>((*u)[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(values<int64_t>((*u)[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(values<int64_t>((*u)[3]), (std::vector<int64_t>{1, 2, 2, 1}));
  // numpy: np.unique([[1,0,0],[1,0,0],[2,3,4]], axis=0, ...) -> rows [1,0,0],[2,3,4]; index [0,2]; inverse [0,0,1]; counts [2,1]
  Tensor m = i32({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4});
  auto a = run("Unique", {&m}, {{"axis", int64_t{-2}}}, 11, 4);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int32_t>((*a)[0]), (std::vector<int32_t>{1, 0, 0, 2, 3, 4}));
  EXPECT_EQ(values<int64_t>((*a)[1]), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(values<int64_t>((*a)[2]), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(values<int64_t>((*a)[3]), (std::vector<int64_t>{2, 1}));
  // numpy: np.unique([nan, 1, nan, 0.5], return_counts=True) -> [0.5, 1, nan], [1, 1, 2]
  Tensor n = f32({4}, {NAN, 1, NAN, 0.5f});
  auto rn = run("Unique", {&n}, {}, 11, 4);
  ASSERT_TRUE(rn.ok());
  auto vals = values<float>((*rn)[0]);
  ASSERT_EQ(vals.size(), 3u);
  EXPECT_EQ(vals[0], 0.5f);
  EXPECT_EQ(vals[1], 1.0f);
  EXPECT_TRUE(std::isnan(vals[2]));
  EXPECT_EQ(values<int64_t>((*rn)[3]), (std::vector<int64_t>{1, 1, 2}));
  Tensor s = strings({3}, {"b", "a", "b"});
  EXPECT_EQ(out0(run("Unique", {&s}, {}, 11, 4)).strings(), (std::vector<std::string>{"a", "b"}));
  Tensor e(DType::Float, {0});
  auto re = run("Unique", {&e}, {}, 11, 4);
  ASSERT_TRUE(re.ok());
  EXPECT_EQ((*re)[0].shape(), Shape{0});
  EXPECT_ERROR(run("Unique", {&m}, {{"axis", int64_t{2}}}, 11, 4));
}

// ---- Trilu, EyeLike, DepthToSpace, SpaceToDepth, ReverseSequence, Dropout --------------------

TEST(Trilu, KAndBatches) {
  std::vector<int64_t> v(12);
  for (int64_t i = 0; i < 12; ++i) v[static_cast<size_t>(i)] = i;
  Tensor x = i64({3, 4}, v);
  Tensor km1 = i64({}, {-1}), k2 = i64({}, {2});
  // numpy: np.tril(np.arange(12).reshape(3, 4), -1), np.triu(..., 2)
  EXPECT_EQ(values<int64_t>(out0(run("Trilu", {&x, &km1}, {{"upper", int64_t{0}}}))),
            (std::vector<int64_t>{0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0}));
  EXPECT_EQ(values<int64_t>(out0(run("Trilu", {&x, &k2}))), (std::vector<int64_t>{0, 0, 2, 3, 0, 0, 0, 7, 0, 0, 0, 0}));
  Tensor batch = f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(values<float>(out0(run("Trilu", {&batch}))), (std::vector<float>{1, 2, 0, 4, 5, 6, 0, 8}));
  Tensor kbig = i64({}, {kSmall});
  EXPECT_EQ(values<float>(out0(run("Trilu", {&batch, &kbig}))), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  Tensor v1 = f32({2}, {1, 2});
  EXPECT_ERROR(run("Trilu", {&v1}));
}

TEST(EyeLike, OffsetDiagonalDtypeAndErrors) {
  Tensor x(DType::Int32, {2, 3});
  Tensor y = out0(run("EyeLike", {&x}, {{"k", int64_t{1}}, {"dtype", int64_t{1}}}));
  EXPECT_EQ(y.dtype(), DType::Float);
  EXPECT_EQ(values<float>(y), (std::vector<float>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(values<int32_t>(out0(run("EyeLike", {&x}, {{"k", kBig}}))), std::vector<int32_t>(6, 0));
  EXPECT_EQ(values<int32_t>(out0(run("EyeLike", {&x}, {{"k", kSmall}}))), std::vector<int32_t>(6, 0));
  Tensor v = f32({2}, {1, 2});
  EXPECT_ERROR(run("EyeLike", {&v}));
}

TEST(DepthToSpace, DcrCrdAndSpaceToDepthInverse) {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  Tensor x = f32({1, 8, 1, 2}, v);
  // numpy: x.reshape(1,2,2,2,1,2).transpose(0,3,4,1,5,2).reshape(1,2,2,4) (DCR) and the CRD analogue
  EXPECT_EQ(values<float>(out0(run("DepthToSpace", {&x}, {{"blocksize", int64_t{2}}}))),
            (std::vector<float>{0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15}));
  EXPECT_EQ(values<float>(out0(run("DepthToSpace", {&x}, {{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}}))),
            (std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15}));
  Tensor sp = f32({1, 1, 4, 4}, v);
  // numpy: y.reshape(1,1,2,2,2,2).transpose(0,3,5,1,2,4).reshape(1,4,2,2)
  Tensor d = out0(run("SpaceToDepth", {&sp}, {{"blocksize", int64_t{2}}}));
  EXPECT_EQ(d.shape(), (Shape{1, 4, 2, 2}));
  EXPECT_EQ(values<float>(d), (std::vector<float>{0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15}));
  EXPECT_EQ(out0(run("DepthToSpace", {&d}, {{"blocksize", int64_t{2}}})), sp);
  EXPECT_ERROR(run("DepthToSpace", {&x}, {{"blocksize", int64_t{3}}}));
  EXPECT_ERROR(run("DepthToSpace", {&x}, {{"blocksize", int64_t{0}}}));
  EXPECT_ERROR(run("DepthToSpace", {&x}, {{"blocksize", int64_t{2}}, {"mode", std::string("XYZ")}}));
  EXPECT_ERROR(run("SpaceToDepth", {&sp}, {{"blocksize", int64_t{3}}}));
  EXPECT_ERROR(run("SpaceToDepth", {&sp}, {{"blocksize", kBig}}));
  EXPECT_ERROR(run("SpaceToDepth", {&sp}));  // blocksize is required
}

TEST(ReverseSequence, BatchMajorAndBadLengths) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});  // batch_axis 0, time_axis 1
  Tensor lens = i64({2}, {2, 3});
  EXPECT_EQ(values<float>(out0(run("ReverseSequence", {&x, &lens}, {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}}))),
            (std::vector<float>{2, 1, 3, 6, 5, 4}));
  Tensor too_long = i64({2}, {4, 0});
  EXPECT_ERROR(run("ReverseSequence", {&x, &too_long}, {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}}));
  Tensor wrong_count = i64({3}, {1, 1, 1});
  EXPECT_ERROR(run("ReverseSequence", {&x, &wrong_count}, {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}}));
  EXPECT_ERROR(run("ReverseSequence", {&x, &lens}, {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{0}}}));
}

TEST(Dropout, InferenceTrainingAndNumpySeed) {
  Tensor x = f32({6}, {1, 2, 3, 4, 5, 6});
  auto r = run("Dropout", {&x}, {}, 13, 2);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0], x);
  EXPECT_EQ((*r)[1].dtype(), DType::Bool);
  Tensor ratio = f32({}, {0.5f});
  Tensor train = boolean({}, {true});
  // numpy: np.random.seed(3); np.random.uniform(0, 1, (6,)) >= 0.5 -> [T, T, F, T, T, T]
  auto t = run("Dropout", {&x, &ratio, &train}, {{"seed", int64_t{3}}}, 13, 2);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(values<float>((*t)[0]), (std::vector<float>{2, 4, 0, 8, 10, 12}));
  EXPECT_EQ((*t)[1], boolean({6}, {true, true, false, true, true, true}));
  Tensor zero = f32({}, {0});
  auto z = run("Dropout", {&x, &zero, &train}, {}, 13, 2);
  ASSERT_TRUE(z.ok());
  EXPECT_EQ((*z)[0], x);
  Tensor one = f32({}, {1});
  EXPECT_ERROR(run("Dropout", {&x, &one, &train}, {}, 13, 2));
  auto old = run("Dropout", {&x}, {{"ratio", 0.3f}}, 7, 2);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ((*old)[1].dtype(), DType::Float);  // opset 7-9: the mask has the input's dtype
}

// Every op of the family on a pool of awkward inputs and attributes (extreme integers, empty,
// rank 0, wrong dtypes): any result is fine as long as nothing crashes or hangs.
TEST(TensorFamily, HostileInputsGiveResultsOrErrorsNeverCrashes) {
  const std::vector<std::string> ops = {
      "Constant",        "Identity",        "Cast",    "CastLike", "Reshape", "Flatten",        "Squeeze",  "Unsqueeze",
      "Transpose",       "Concat",          "Split",   "Slice",    "Gather",  "GatherElements", "GatherND", "Scatter",
      "ScatterElements", "ScatterND",       "Expand",  "Tile",     "Pad",     "Shape",          "Size",     "ConstantOfShape",
      "Range",           "OneHot",          "NonZero", "Compress", "Unique",  "Trilu",          "EyeLike",  "DepthToSpace",
      "SpaceToDepth",    "ReverseSequence", "Dropout"};
  std::vector<Tensor> pool = {f32({}, {1.5f}),
                              Tensor(DType::Float, {0}),
                              f32({2, 3}, {1, 2, 3, 4, 5, 6}),
                              i64({1}, {kBig}),
                              i64({2}, {kSmall, -1}),
                              i64({}, {-5}),
                              strings({1}, {"x"}),
                              boolean({1}, {true}),
                              f16({2}, {1, 2}),
                              i32({1, 2, 2, 1}, {0, 1, 0, 1})};
  const std::vector<Attrs> attr_sets = {
      {},
      {{"axis", kBig}, {"to", int64_t{8}}, {"blocksize", kBig}, {"k", kSmall}, {"perm", std::vector<int64_t>{kBig}}},
      {{"axis", int64_t{-1}},
       {"to", int64_t{3}},
       {"blocksize", int64_t{2}},
       {"batch_dims", int64_t{1}},
       {"split", std::vector<int64_t>{kSmall, 1}},
       {"starts", std::vector<int64_t>{kSmall}},
       {"ends", std::vector<int64_t>{kBig}},
       {"pads", std::vector<int64_t>{kBig, kSmall}},
       {"mode", std::string("reflect")},
       {"reduction", std::string("mul")},
       {"allowzero", int64_t{1}},
       {"value", i64({2}, {1, 2})}}};
  int runs = 0;
  for (const auto& op : ops)
    for (int64_t opset : {9, 11, 17})
      for (const auto& attrs : attr_sets)
        for (size_t n = 0; n <= 3; ++n) {
          size_t combos = 1;
          for (size_t i = 0; i < n; ++i) combos *= pool.size();
          for (size_t c = 0; c < combos; ++c) {
            std::vector<const Tensor*> in;
            for (size_t i = 0, rest = c; i < n; ++i, rest /= pool.size()) in.push_back(&pool[rest % pool.size()]);
            auto r = run(op, in, attrs, opset, 3);
            ++runs;
            (void)r;
          }
        }
  EXPECT_GT(runs, 0);
}

}  // namespace
}  // namespace poprt::ops
