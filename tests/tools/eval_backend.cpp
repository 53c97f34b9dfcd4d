// Developer tool: runs ONNX backend test folders through the reference evaluator alone (no
// codegen) and prints PASS/FAIL per test with the reason — the fast loop for op work.
//   eval_backend DIR... (each a test folder with model.onnx and test_data_set_*)
#include <cmath>
#include <filesystem>
#include <iostream>

#include "lib/onnx/onnx_io.h"
#include "lib/onnx/value_io.h"
#include "lib/ops/registry.h"
#include "lib/support/dtype_dispatch.h"

using namespace poprt;
namespace fs = std::filesystem;

namespace {

std::string compareTensor(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype())
    return "dtype " + std::string(dtypeName(got.dtype())) + " != " + std::string(dtypeName(want.dtype()));
  if (got.shape() != want.shape()) return "shape " + shapeToString(got.shape()) + " != " + shapeToString(want.shape());
  if (want.dtype() == DType::String) return got.strings() == want.strings() ? "" : "string values differ";
  std::string why;
  Status st = dispatchNumeric(want.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto g = got.data<T>();
    auto w = want.data<T>();
    for (size_t i = 0; i < w.size() && why.empty(); ++i) {
      double a = static_cast<double>(toCompute(g[i])), b = static_cast<double>(toCompute(w[i]));
      if (std::isnan(a) && std::isnan(b)) continue;
      if (a == b) continue;
      // Integers must match exactly (a relative tolerance would hide off-by-one errors).
      if (!isFloatingPoint(want.dtype()) || !(std::fabs(a - b) <= 1e-7 + 1e-3 * std::fabs(b)))
        why = "value at " + std::to_string(i) + ": " + std::to_string(a) + " != " + std::to_string(b);
    }
  });
  if (!st.ok())
    return got.bytes().size() == want.bytes().size() && std::equal(got.bytes().begin(), got.bytes().end(), want.bytes().begin())
               ? ""
               : "values differ";
  return why;
}

std::string compare(const ops::RtValue& got, const ops::RtValue& want) {
  if (got.kind != want.kind) return "value kind differs";
  if (got.kind == ops::RtValue::Kind::Tensor) return compareTensor(got.tensor, want.tensor);
  if (got.sequence.size() != want.sequence.size()) return "sequence length differs";
  for (size_t i = 0; i < want.sequence.size(); ++i)
    if (auto why = compareTensor(got.sequence[i], want.sequence[i]); !why.empty())
      return "item " + std::to_string(i) + ": " + why;
  return "";
}

std::string runTest(const fs::path& dir) {
  auto model = onnxio::importModel(dir / "model.onnx");
  if (!model.ok()) return model.error().message();
  ops::Opsets opsets;
  for (const auto& op : model->opset_imports) opsets[op.domain == "ai.onnx" ? "" : op.domain] = op.version;
  std::vector<const ir::Value*> inputs;
  for (const ir::Value* in : model->graph->inputs())
    if (!in->isInitializer()) inputs.push_back(in);
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_directory() || entry.path().filename().string().rfind("test_data_set", 0) != 0) continue;
    std::vector<std::pair<std::string, ops::RtValue>> args;
    for (size_t i = 0;; ++i) {
      fs::path p = entry.path() / ("input_" + std::to_string(i) + ".pb");
      if (!fs::exists(p)) break;
      if (i >= inputs.size()) return "more input files than inputs";
      auto v = onnxio::readValueFile(p, inputs[i]->type.kind);
      if (!v.ok()) return v.error().message();
      args.emplace_back(inputs[i]->name(), std::move(v).value());
    }
    ops::EvalContext ctx(opsets);
    auto outs = ops::runGraph(*model->graph, args, ctx);
    if (!outs.ok()) return outs.error().message();
    for (size_t o = 0; o < outs->size(); ++o) {
      fs::path p = entry.path() / ("output_" + std::to_string(o) + ".pb");
      auto want = onnxio::readValueFile(p, model->graph->outputs()[o]->type.kind);
      if (!want.ok()) return want.error().message();
      if (auto why = compare((*outs)[o], *want); !why.empty()) return "output " + std::to_string(o) + ": " + why;
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  int failed = 0;
  for (int i = 1; i < argc; ++i) {
    fs::path dir(argv[i]);
    std::string why;
    try {
      why = runTest(dir);
    } catch (const std::exception& e) { why = std::string("exception: ") + e.what(); }
    std::cout << (why.empty() ? "PASS " : "FAIL ") << dir.filename().string() << (why.empty() ? "" : "  " + why) << "\n";
    failed += !why.empty();
  }
  std::cout << (argc - 1 - failed) << "/" << (argc - 1) << " passed\n";
  return failed ? 1 : 0;
}
