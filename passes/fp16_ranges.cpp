#include "passes/fp16_ranges.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <set>

#include "lib/onnx/onnx_io.h"
#include "lib/ops/op_util.h"
#include "lib/ops/registry.h"

namespace poprt::passes {
namespace {

using ops::opsetsOf;

bool isFloat32Tensor(const ir::Value* v) {
  return v && v->type.isTensor() && v->type.kind == ValueKind::Tensor && v->type.dtype == DType::Float;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

size_t exposeFloatValues(ir::Graph& g) {
  std::set<const ir::Value*> outputs(g.outputs().begin(), g.outputs().end());
  size_t added = 0;
  for (const auto& n : g.nodes())
    for (ir::Value* v : n->outputs())
      if (v && v->type.isTensor() && v->type.kind == ValueKind::Tensor && isFloatingPoint(v->type.dtype) &&
          outputs.insert(v).second) {
        g.addOutput(v);
        ++added;
      }
  return added;
}

Expected<std::map<const ir::Node*, std::string>> outOfRangeNodes(
    const ir::Model& model, const std::vector<std::pair<std::string, ops::RtValue>>& inputs) {
  // A copy of the model whose every float value is an output (the model itself stays as it is).
  POPRT_ASSIGN_OR_RETURN(std::string bytes, onnxio::serializeModel(model));
  onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes)) throw InternalError("range check: the model's copy does not parse");
  POPRT_ASSIGN_OR_RETURN(ir::Model copy, onnxio::importModelProto(proto, "", "the float32 model", {false, false}));
  exposeFloatValues(*copy.graph);
  std::vector<std::pair<std::string, ops::RtValue>> feed;
  for (const auto& [name, value] : inputs)
    if (const ir::Value* v = copy.graph->findLocalValue(name); v && v->isGraphInput() && !v->isInitializer())
      feed.emplace_back(name, value);
  ops::EvalContext ctx(opsetsOf(copy));
  POPRT_ASSIGN_OR_RETURN(std::vector<ops::RtValue> values, ops::runGraph(*copy.graph, feed, ctx));

  // The largest finite magnitude of each value, by name (names are the same in the copy).
  std::map<std::string, double> magnitude;
  auto largest = [](const Tensor& t) -> Expected<double> {
    POPRT_ASSIGN_OR_RETURN(std::vector<double> x, ops::toDoubles(t));
    double m = 0;
    for (double d : x)
      if (std::isfinite(d)) m = std::max(m, std::fabs(d));
    return m;
  };
  for (const auto& [name, value] : feed)
    if (value.isTensor() && isFloatingPoint(value.tensor.dtype())) {
      POPRT_ASSIGN_OR_RETURN(magnitude[name], largest(value.tensor));
    }
  for (size_t i = 0; i < values.size() && i < copy.graph->outputs().size(); ++i) {
    if (!values[i].isTensor() || !isFloatingPoint(values[i].tensor.dtype())) continue;
    POPRT_ASSIGN_OR_RETURN(magnitude[copy.graph->outputs()[i]->name()], largest(values[i].tensor));
  }
  // A node stays float32 when a float32 value it reads or makes is beyond the safe magnitude: its
  // producer and every reader then handle it in float32, and no Cast to float16 ever sees it.
  std::map<const ir::Node*, std::string> keep;
  auto big = [&](const ir::Value* v) -> double {
    if (!isFloat32Tensor(v)) return 0;
    if (v->isInitializer() && !v->isGraphInput()) return 0;  // constants are clamped (with a warning), not kept
    auto it = magnitude.find(v->name());
    return it == magnitude.end() ? 0 : it->second;
  };
  for (const auto& node : model.graph->nodes()) {
    for (const ir::Value* out : node->outputs())
      if (double m = big(out); m > kFp16SafeMagnitude && !keep.count(node.get()))
        keep[node.get()] = "makes '" + out->name() + "' up to " + fmt(m) + " on the calibration inputs";
    for (const ir::Value* in : node->inputs())
      if (double m = big(in); m > kFp16SafeMagnitude && !keep.count(node.get()))
        keep[node.get()] = "reads '" + in->name() + "', up to " + fmt(m) + " on the calibration inputs";
  }
  return keep;
}

}  // namespace poprt::passes
