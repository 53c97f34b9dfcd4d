// --precision_compare's parts: the comparison of one value (cosine, errors, NaN/Inf the fp16 model
// adds) and the whole report on a model converted by float_to_half.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "converter/precision.h"
#include "lib/onnx/onnx_io.h"
#include "passes/pass_manager.h"

namespace poprt::tools {

using namespace poprt::converter;
namespace {

TEST(PrecisionCompare, CosineErrorsAndNewNonFiniteValues) {
  PrecisionDiff same;
  precisionDiff({1, -2, 3}, {1, -2, 3}, same);
  EXPECT_DOUBLE_EQ(same.cosine, 1);
  EXPECT_EQ(same.max_abs, 0);
  EXPECT_EQ(same.ref_max, 3);

  PrecisionDiff opposite;
  precisionDiff({1, 2}, {-1, -2}, opposite);
  EXPECT_NEAR(opposite.cosine, -1, 1e-12);
  EXPECT_EQ(opposite.max_abs, 4);
  EXPECT_EQ(opposite.max_rel, 2);

  // An overflow to infinity where fp32 is finite is counted, and left out of the cosine; an
  // infinity fp32 has too is not new.
  const double inf = std::numeric_limits<double>::infinity();
  PrecisionDiff overflow;
  precisionDiff({70000, 1, inf}, {inf, 1, inf}, overflow);
  EXPECT_EQ(overflow.new_nonfinite, 1);
  EXPECT_DOUBLE_EQ(overflow.cosine, 1);
  EXPECT_EQ(overflow.ref_max, 70000);

  PrecisionDiff zeros, one_zero;
  precisionDiff({0, 0}, {0, 0}, zeros);
  precisionDiff({0, 0}, {0, 1e-3}, one_zero);
  EXPECT_EQ(zeros.cosine, 1);
  EXPECT_EQ(one_zero.cosine, 0);
}

TEST(PrecisionCompare, ReportsOutputsAndLayersOfAConvertedModel) {
  ir::Model m;
  m.opset_imports = {{"", 13}};
  ir::Graph& g = *m.graph;
  ir::Value* x = g.addInput("x", ir::TensorType::of(DType::Float, {2, 4}));
  Tensor w(DType::Float, {4, 3});
  for (size_t i = 0; i < w.data<float>().size(); ++i) w.data<float>()[i] = 0.1f * static_cast<float>(i) - 0.5f;
  ir::Value* wv = g.addInitializer("w", std::move(w));
  ir::Value* h = g.addValue("h", ir::TensorType::of(DType::Float, {2, 3}));
  ir::Value* y = g.addValue("y", ir::TensorType::of(DType::Float, {2, 3}));
  g.addNode("MatMul", {x, wv}, {h}, "mm");
  g.addNode("Tanh", {h}, {y}, "tanh");
  g.addOutput(y);
  auto snapshot = onnxio::serializeModel(m);
  ASSERT_TRUE(snapshot.ok());
  passes::PipelineOptions p;
  p.passes = {"float_to_half", "fold_casts"};
  p.fp16.enabled = true;
  ASSERT_TRUE(passes::runPipeline(m, p).ok());

  auto r = comparePrecision(*snapshot, m, {/*per_layer=*/true, {}, 0});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_EQ(r->outputs[0].name, "y");
  EXPECT_EQ(r->outputs[0].dtype, "float32");
  EXPECT_GT(r->outputs[0].cosine, 0.999);
  EXPECT_LT(r->outputs[0].max_abs, 5e-3);
  EXPECT_GT(r->outputs[0].max_abs, 0);  // fp16 does round
  ASSERT_EQ(r->layers.size(), 1u);
  EXPECT_EQ(r->layers[0].name, "h");
  EXPECT_EQ(r->layers[0].op_type, "MatMul");
  EXPECT_EQ(r->layers[0].dtype, "float16");
  EXPECT_EQ(r->generated_inputs, (std::vector<std::string>{"x"}));
  std::ostringstream text;
  printPrecisionReport(*r, text);
  EXPECT_NE(text.str().find("cosine"), std::string::npos);
  EXPECT_EQ(precisionReportJson(*r)["outputs"][0]["name"], "y");

  // A named input the model does not have is an error naming it.
  auto bad = comparePrecision(*snapshot, m, {false, {"nope=/dev/null"}, 0});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("'nope'"), std::string::npos);
}

}  // namespace
}  // namespace poprt::tools
