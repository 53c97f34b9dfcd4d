#include "converter/check.h"

#include <onnx/onnx_pb.h>

#include "converter/value_check.h"
#include "lib/onnx/onnx_io.h"
#include "lib/ops/registry.h"

namespace poprt::converter {
namespace {

using ops::opsetsOf;

// The graph inputs --check feeds, with the reason the first unusable one cannot be fed.
Status checkInputsUsable(const ir::Graph& g) {
  for (const ir::Value* in : g.inputs()) {
    if (in->isInitializer()) continue;
    const ir::TensorType& t = in->type;
    if (!t.isTensor() || t.kind != ValueKind::Tensor)
      return Error("--check: input '" + in->name() + "' is not a tensor; --check generates tensor inputs only");
    if (!t.hasStaticShape())
      return Error("--check: input '" + in->name() + "' has the dynamic shape " + t.toString() +
                   "; --check needs static input shapes (hint: --input_shape " + in->name() + "=D0,D1,...)");
    if (t.dtype == DType::String || t.dtype == DType::Undefined || t.dtype == DType::Complex64 || t.dtype == DType::Complex128)
      return Error("--check: input '" + in->name() + "' is of dtype " + std::string(dtypeName(t.dtype)) +
                   "; --check generates numeric and bool inputs only");
  }
  return okStatus();
}

}  // namespace

Expected<std::string> snapshotForCheck(const ir::Model& original) {
  POPRT_TRY(checkInputsUsable(*original.graph));
  return onnxio::serializeModel(original);
}

Status runCheck(const std::string& original_snapshot, const ir::Model& optimised, const CheckOptions& o, std::ostream& out) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(original_snapshot)) throw InternalError("--check: the original model's snapshot does not parse");
  auto imported = onnxio::importModelProto(proto, "", "the original model", {/*run_checker=*/false, /*infer_shapes=*/false});
  if (!imported.ok()) return imported.error().withContext("--check");
  const ir::Model& original = *imported;

  std::vector<std::pair<std::string, ops::RtValue>> inputs;
  size_t index = 0;
  for (const ir::Value* in : original.graph->inputs()) {
    if (in->isInitializer()) continue;
    auto t = generateInput(in->type.dtype, in->type.staticShape(), o.seed, index++);
    if (!t.ok()) return t.error().withContext("--check: input '" + in->name() + "'");
    inputs.emplace_back(in->name(), ops::RtValue::of(std::move(t).value()));
  }
  // Each graph gets the inputs it declares (a pass may drop an unused input).
  auto inputsOf = [&](const ir::Graph& g) {
    std::vector<std::pair<std::string, ops::RtValue>> mine;
    for (const auto& [name, value] : inputs)
      if (const ir::Value* v = g.findLocalValue(name); v && v->isGraphInput() && !v->isInitializer())
        mine.emplace_back(name, value);
    return mine;
  };
  ops::EvalContext ctx_ref(opsetsOf(original), o.seed);
  auto ref = ops::runGraph(*original.graph, inputsOf(*original.graph), ctx_ref);
  if (!ref.ok()) return ref.error().withContext("--check: the original model fails on the generated inputs");
  ops::EvalContext ctx_opt(opsetsOf(optimised), o.seed);
  auto got = ops::runGraph(*optimised.graph, inputsOf(*optimised.graph), ctx_opt);
  if (!got.ok()) return got.error().withContext("--check: the optimised model fails on the generated inputs");
  if (ref->size() != got->size())
    return Error("--check: the original model has " + std::to_string(ref->size()) + " outputs, the optimised one " +
                 std::to_string(got->size()));

  const Tolerance tol{o.rtol, o.atol};
  std::vector<ValueDiff> diffs;
  for (size_t i = 0; i < ref->size(); ++i) {
    ValueDiff d;
    d.name = original.graph->outputs()[i]->name();
    POPRT_TRY(compareValues((*ref)[i], (*got)[i], tol, {"in the original", "after the passes"}, d));
    diffs.push_back(std::move(d));
  }
  out << "check: original vs optimised graph on generated inputs (seed " << o.seed << ", rtol " << formatError(o.rtol)
      << ", atol " << formatError(o.atol) << ")\n";
  for (const auto& line : diffTable(diffs, "  ")) out << line << "\n";
  out.flush();
  return worstDiff(diffs, "--check", tol);
}

}  // namespace poprt::converter
