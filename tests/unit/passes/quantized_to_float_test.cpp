// quantized_to_float against the reference evaluator's quantized ops (themselves checked against
// the ONNX test data by the conformance suite): the same outputs, integer ones bit for bit, with
// no quantized op left.
#include <random>

#include "passes/fp16_options.h"
#include "tests/unit/passes/fusion_test_util.h"

namespace poprt::passes {
namespace {

using namespace poprt::passes::testing;

const std::vector<std::string> kQuantizedOps = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "ConvInteger",
                                                "MatMulInteger",  "QLinearConv",      "QLinearMatMul"};

// Random integers of `dtype` in [lo, hi].
ir::Value* ints(Builder& b, DType dtype, Shape shape, int lo, int hi, uint32_t seed) {
  Tensor t(dtype, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  if (dtype == DType::UInt8) {
    for (auto& v : t.data<uint8_t>()) v = static_cast<uint8_t>(dist(rng));
  } else if (dtype == DType::Int8) {
    for (auto& v : t.data<int8_t>()) v = static_cast<int8_t>(dist(rng));
  } else {
    for (auto& v : t.data<int32_t>()) v = dist(rng);
  }
  return b.graph().addInitializer(b.graph().uniqueName("q"), std::move(t));
}
ir::Value* integer(Builder& b, DType dtype, int v) { return ints(b, dtype, {}, v, v, 0); }

// Positive float constants (scales) in [lo, hi].
ir::Value* scales(Builder& b, Shape shape, float lo, float hi, uint32_t seed) {
  Tensor t = randomTensor(std::move(shape), seed);
  for (float& x : t.data<float>()) x = lo + (x + 1) / 2 * (hi - lo);
  return b.graph().addInitializer(b.graph().uniqueName("s"), std::move(t));
}

// Runs infer_shapes then the pass, checked against the evaluator (`tol`; integer outputs exact);
// returns the pass's report.
PassReport convert(ir::Model& m, double tol = 1e-6) {
  runPipelineChecked(m, {"infer_shapes", "quantized_to_float"}, tol);
  return g_reports.empty() ? PassReport{} : g_reports.back();
}

void expectNoQuantizedOps(const ir::Model& m) {
  for (const std::string& op : kQuantizedOps) EXPECT_EQ(countOps(*m.graph, op), 0) << op << "\n" << reportText();
}

// QDQ: a fake-quantised activation (uint8, a zero point) before a Relu, and an int8 output read
// as it is (the integers are made again from the float values by a Cast).
TEST(QuantizedToFloat, QuantizeDequantizePairsAndIntegerOutputs) {
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* x = b.input("x", {2, 3, 4, 5});
  ir::Value* q = b.op("QuantizeLinear", {x, b.constant(0.01f), integer(b, DType::UInt8, 131)});
  b.output(b.op("Relu", {b.op("DequantizeLinear", {q, b.constant(0.01f), integer(b, DType::UInt8, 131)})}));
  // Per axis (opset 13): a scale per channel of axis 1, int8.
  b.output(b.op("QuantizeLinear", {x, scales(b, {3}, 0.002f, 0.02f, 3), ints(b, DType::Int8, {3}, -3, -3, 0)},
                {{"axis", int64_t{1}}}));
  PassReport r = convert(m, 0);
  EXPECT_EQ(counter(r, "quantize_linear"), 2) << reportText();
  EXPECT_EQ(counter(r, "dequantize_linear"), 1);
  expectNoQuantizedOps(m);
  EXPECT_EQ(countOps(*m.graph, "Cast"), 1);  // only the int8 output is made as integers
}

// Dynamic quantization as ONNX Runtime writes it: DynamicQuantizeLinear -> ConvInteger (uint8
// weights, a zero point per output channel) -> Cast -> Mul by the scales; and the same for a
// MatMulInteger.
TEST(QuantizedToFloat, DynamicQuantizationOfConvAndMatMul) {
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* x = b.input("x", {1, 4, 40, 60});  // 9,600 elements: min and max over rows of 4,800, then of those
  auto dq = b.ops("DynamicQuantizeLinear", {x}, 3);
  ir::Value* acc =
      b.op("ConvInteger", {dq[0], ints(b, DType::UInt8, {5, 4, 3, 3}, 0, 255, 1), dq[2], ints(b, DType::UInt8, {5}, 100, 150, 2)},
           {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  ir::Value* f = b.op("Cast", {acc}, {{"to", int64_t{1}}});
  b.output(b.op("Mul", {f, b.op("Mul", {dq[1], b.constant(0.003f)})}));
  ir::Value* a = b.input("a", {3, 8});
  auto dqa = b.ops("DynamicQuantizeLinear", {a}, 3);
  ir::Value* mm = b.op("MatMulInteger", {dqa[0], ints(b, DType::Int8, {8, 6}, -128, 127, 4), dqa[2], integer(b, DType::Int8, 0)});
  b.output(b.op("Mul", {b.op("Cast", {mm}, {{"to", int64_t{1}}}), dqa[1]}));
  b.output(dqa[2]);  // the zero point itself, as uint8
  PassReport r = convert(m);
  EXPECT_EQ(counter(r, "dynamic_quantize_linear"), 2) << reportText();
  EXPECT_EQ(counter(r, "conv_integer"), 1);
  EXPECT_EQ(counter(r, "matmul_integer"), 1);
  EXPECT_EQ(counter(r, "casts_to_float"), 2);
  EXPECT_EQ(countOps(*m.graph, "ReduceMin"), 3);  // two steps for x, one for a
  expectNoQuantizedOps(m);
}

// An all-zero input has scale 0: the evaluator gives zero point 0 and y 0, not NaN.
TEST(QuantizedToFloat, DynamicQuantizationOfZeros) {
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* x = b.op("Mul", {b.input("x", {4, 4}), b.constant(0.f)});
  auto dq = b.ops("DynamicQuantizeLinear", {x}, 3);
  for (ir::Value* v : dq) b.output(v);
  convert(m, 0);
  expectNoQuantizedOps(m);
}

// QuantizeLinear(x) -> QLinearConv with 4 int8 3x3 filters (a scale per channel, an int32 bias) at
// scales and zero points xs/xz in and ys/yz out: the QOperator start both QLinearConv tests use.
ir::Value* quantizedConv(Builder& b, ir::Value* x, ir::Value* xs, ir::Value* xz, ir::Value* ys, ir::Value* yz,
                         std::map<std::string, ir::AttributeValue> attrs) {
  return b.op("QLinearConv",
              {b.op("QuantizeLinear", {x, xs, xz}), xs, xz, ints(b, DType::Int8, {4, 3, 3, 3}, -127, 127, 5),
               scales(b, {4}, 0.001f, 0.01f, 6), integer(b, DType::Int8, 0), ys, yz, ints(b, DType::Int32, {4}, -2000, 2000, 7)},
              std::move(attrs));
}

// QOperator: QuantizeLinear -> QLinearConv (int8 weights, a scale per channel, int32 bias) ->
// MaxPool and Reshape on the quantized values -> QLinearMatMul (a scale per column) ->
// DequantizeLinear. Every step's integers are the evaluator's, so the float output is exact.
TEST(QuantizedToFloat, QLinearConvAndMatMulChains) {
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value *xs = b.constant(0.008f), *xz = integer(b, DType::UInt8, 128);
  ir::Value *ys = b.constant(0.05f), *yz = integer(b, DType::UInt8, 7);
  ir::Value* c = quantizedConv(b, b.input("x", {1, 3, 8, 8}), xs, xz, ys, yz,
                               {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}});
  ir::Value* p = b.op("MaxPool", {c}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  ir::Value* flat = b.op("Reshape", {p, b.ints({1, 16})});
  ir::Value *zs = b.constant(0.1f), *zz = integer(b, DType::UInt8, 120);
  ir::Value* mm = b.op("QLinearMatMul", {flat, ys, yz, ints(b, DType::Int8, {16, 5}, -127, 127, 8),
                                         scales(b, {5}, 0.002f, 0.02f, 9), ints(b, DType::Int8, {5}, -3, 3, 10), zs, zz});
  b.output(b.op("DequantizeLinear", {mm, zs, zz}));
  b.output(c);  // uint8, exact
  PassReport r = convert(m, 0);
  EXPECT_EQ(counter(r, "qlinear_conv"), 1) << reportText();
  EXPECT_EQ(counter(r, "qlinear_matmul"), 1);
  EXPECT_EQ(counter(r, "layout_ops_centered"), 2);
  expectNoQuantizedOps(m);
}

// QDQ as quantizers write it: Q -> DQ on the activation, an int8 weight with a scale per channel
// and an int32 bias at scale x_scale * w_scale behind DequantizeLinear, a Relu, Q -> DQ after: the
// conv runs on the integers and the QuantizeLinear rounds acc * (scales / y_scale) once.
TEST(QuantizedToFloat, QdqConvRunsOnTheIntegers) {
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value* x = b.input("x", {1, 3, 6, 6});
  ir::Value *xs = b.constant(0.008f), *xz = integer(b, DType::UInt8, 128);
  ir::Value* xd = b.op("DequantizeLinear", {b.op("QuantizeLinear", {x, xs, xz}), xs, xz});
  const std::vector<float> w_scale = {0.004f, 0.007f, 0.0031f, 0.01f};
  Tensor ws(DType::Float, {4}), bs(DType::Float, {4});
  for (size_t i = 0; i < 4; ++i) {
    ws.data<float>()[i] = w_scale[i];
    bs.data<float>()[i] = 0.008f * w_scale[i];  // in float, as the pass compares it
  }
  ir::Value* wd = b.op("DequantizeLinear",
                       {ints(b, DType::Int8, {4, 3, 3, 3}, -127, 127, 11), b.graph().addInitializer("w_scale", ws),
                        ints(b, DType::Int8, {4}, 0, 0, 0)},
                       {{"axis", int64_t{0}}});
  ir::Value* bd = b.op(
      "DequantizeLinear",
      {ints(b, DType::Int32, {4}, -3000, 3000, 12), b.graph().addInitializer("b_scale", bs), ints(b, DType::Int32, {4}, 0, 0, 0)},
      {{"axis", int64_t{0}}});
  ir::Value* y = b.op("Relu", {b.op("Conv", {xd, wd, bd}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})});
  ir::Value *ys = b.constant(0.03f), *yz = integer(b, DType::UInt8, 0);
  b.output(b.op("DequantizeLinear", {b.op("QuantizeLinear", {y, ys, yz}), ys, yz}));
  PassReport r = convert(m);
  EXPECT_EQ(counter(r, "qdq_conv"), 1) << reportText();
  EXPECT_EQ(counter(r, "requantized_products"), 1);
  // The conv reads the integers: its weight is the int8 values themselves.
  const ir::Node* conv = findNode(*m.graph, "Conv");
  ASSERT_NE(conv, nullptr);
  ASSERT_NE(constantOf(conv->input(1)), nullptr);
  EXPECT_EQ(constantOf(conv->input(1))->dtype(), DType::Float);
  for (float v : constantOf(conv->input(1))->data<float>()) EXPECT_EQ(v, std::nearbyint(v));
}

// Under --precision fp16 the integer arithmetic stays float32 (float16 would round the sums and
// the scales): the QOperator chain's float output is the evaluator's, exactly, after float_to_half.
TEST(QuantizedToFloat, IntegerArithmeticStaysFloat32UnderFp16) {
  ir::Model m = emptyModel(13);
  Builder b(m);
  ir::Value *xs = b.constant(0.008f), *xz = integer(b, DType::UInt8, 128);
  ir::Value *ys = b.constant(0.05f), *yz = integer(b, DType::UInt8, 7);
  ir::Value* c = quantizedConv(b, b.input("x", {1, 3, 8, 8}), xs, xz, ys, yz, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  b.output(b.op("Relu", {b.op("DequantizeLinear", {c, ys, yz})}));
  runPassesChecked(m, {"infer_shapes"});
  PipelineOptions options;
  options.passes = {"quantized_to_float", "float_to_half"};
  options.fp16.enabled = true;
  options.fp16.avoid_overflow_patterns = false;
  g_reports = runOptionsChecked(m, options, 0);
  EXPECT_GT(counter(g_reports.back(), "kept_integer_arithmetic"), 5) << reportText();
  for (const auto& n : m.graph->nodes())
    if (isIntegerArithmetic(*n))
      for (const ir::Value* v : n->outputs()) EXPECT_NE(v->type.dtype, DType::Float16) << n->describe();
}

// A weight that is not a constant stays on the host, reported as a near miss naming why.
TEST(QuantizedToFloat, NonConstantWeightsStayOnTheHost) {
  ir::Model m = emptyModel(13);
  Builder b(m);
  auto dq = b.ops("DynamicQuantizeLinear", {b.input("x", {2, 4})}, 3);
  auto dw = b.ops("DynamicQuantizeLinear", {b.input("w", {4, 3})}, 3);
  b.output(b.op("MatMulInteger", {dq[0], dw[0], dq[2], dw[2]}));
  PassReport r = convert(m, 0);
  EXPECT_EQ(countOps(*m.graph, "MatMulInteger"), 1);
  ASSERT_EQ(r.stats.near_misses.size(), 1u) << reportText();
  EXPECT_NE(r.stats.near_misses[0].find("its weight is not a constant"), std::string::npos) << r.stats.near_misses[0];
}

}  // namespace
}  // namespace poprt::passes
