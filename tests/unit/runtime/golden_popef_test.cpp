// PopEFs written by an earlier poprt (tests/golden/, executable format 3) still load and give the
// reference evaluator's outputs for the model they were compiled from: the file format's meaning
// (vertex kinds, function numbers, param layouts) may not drift under them. They are never
// rewritten; a new format version adds new files and keeps these, refused by name or still read.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "popef/popef.h"
#include "runtime_test_util.h"
#include "sim/verify_popef.h"

namespace poprt::runtime::testing {
namespace {

const std::string kGolden = std::string(POPRT_SOURCE_DIR) + "/tests/golden/";

// x[i] = sin(i): the same input every run, every machine.
Tensor goldenInput() {
  Tensor x(DType::Float, {2, 3, 8, 8});
  auto d = x.data<float>();
  for (size_t i = 0; i < d.size(); ++i) d[i] = std::sin(static_cast<float>(i));
  return x;
}

std::set<exec::Codelet> codeletsOf(const std::string& popef) {
  auto model = sim::readVerifiedPopef(popef);
  if (!model.ok()) throw std::runtime_error(model.error().message());
  std::set<exec::Codelet> kinds;
  for (const auto& cs : model->executable.compute_sets)
    for (const auto& v : cs.vertices) kinds.insert(v.codelet);
  return kinds;
}

void expectGoldenOutputs(const std::string& popef, double tolerance) {
  auto model = onnxio::importModel(kGolden + "golden_model.onnx");
  ASSERT_TRUE(model.ok()) << model.error().message();
  const Tensor x = goldenInput();
  auto want = ops::evaluateGraph(*model->graph, {{"x", x}}, ops::opsetsOf(*model));
  ASSERT_TRUE(want.ok()) << want.error().message();
  ModelRunner runner(kGolden + popef, privateSystem());
  OutputMemory out = runner.execute({{"x", view(x)}});
  const std::vector<std::string> names = {"y", "e"};
  for (size_t o = 0; o < names.size(); ++o) {
    const auto& got = out.at(names[o]);
    auto w = (*want)[o].data<float>();
    ASSERT_EQ(got.data.size(), w.size() * 4) << popef << " " << names[o];
    const auto* g = reinterpret_cast<const float*>(got.data.data());
    for (size_t i = 0; i < w.size(); ++i)
      EXPECT_NEAR(g[i], w[i], tolerance * (1 + std::fabs(w[i]))) << popef << " " << names[o] << "[" << i << "]";
  }
}

// The kinds the golden model's fp32 compile uses: a file that loses one no longer pins its layout.
const std::set<exec::Codelet> kFp32Kinds = {
    exec::Codelet::ConvPartial, exec::Codelet::Pool, exec::Codelet::MatMul,  exec::Codelet::Binary, exec::Codelet::Unary,
    exec::Codelet::Activation,  exec::Codelet::Norm, exec::Codelet::Softmax, exec::Codelet::Reduce, exec::Codelet::Fill};

TEST(GoldenPopef, Fp32FromFormat3RunsAsTheModel) {
  const auto have = codeletsOf(kGolden + "golden_v3_fp32.popef");
  for (exec::Codelet c : kFp32Kinds) EXPECT_TRUE(have.count(c)) << "the golden PopEF lost codelet " << static_cast<int>(c);
  expectGoldenOutputs("golden_v3_fp32.popef", 1e-5);
}

TEST(GoldenPopef, Fp16FromFormat3RunsAsTheModel) {
  const auto have = codeletsOf(kGolden + "golden_v3_fp16.popef");
  EXPECT_TRUE(have.count(exec::Codelet::Cast));
  expectGoldenOutputs("golden_v3_fp16.popef", 2e-2);
}

// Format 4 packs the exchanges' copies and the layouts' regions (lib/exec/packed_tables.h): the same
// model, the same outputs.
TEST(GoldenPopef, Fp32AndFp16FromFormat4RunAsTheModel) {
  EXPECT_TRUE(codeletsOf(kGolden + "golden_v4_fp32.popef").count(exec::Codelet::ConvPartial));
  expectGoldenOutputs("golden_v4_fp32.popef", 1e-5);
  EXPECT_TRUE(codeletsOf(kGolden + "golden_v4_fp16.popef").count(exec::Codelet::Cast));
  expectGoldenOutputs("golden_v4_fp16.popef", 2e-2);
}

// Format 5 packs the compute sets' vertices too.
TEST(GoldenPopef, Fp32AndFp16FromFormat5RunAsTheModel) {
  const auto have = codeletsOf(kGolden + "golden_v5_fp32.popef");
  for (exec::Codelet c : kFp32Kinds) EXPECT_TRUE(have.count(c)) << "the golden PopEF lost codelet " << static_cast<int>(c);
  expectGoldenOutputs("golden_v5_fp32.popef", 1e-5);
  EXPECT_TRUE(codeletsOf(kGolden + "golden_v5_fp16.popef").count(exec::Codelet::Cast));
  expectGoldenOutputs("golden_v5_fp16.popef", 2e-2);
}

}  // namespace
}  // namespace poprt::runtime::testing
