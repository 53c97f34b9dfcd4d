#include "passes/fp16_ranges.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "lib/ops/op_util.h"
#include "lib/ops/registry.h"
#include "lib/support/dtype_dispatch.h"

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

// The largest finite magnitude in a floating-point tensor (0 when none).
double largestFinite(const Tensor& t) {
  if (t.dtype() == DType::Float) {
    // The largest magnitude bit pattern below infinity's: a loop the compiler vectorises (every
    // value of the model passes here).
    uint32_t largest = 0;
    for (float x : t.data<float>()) {
      const uint32_t bits = std::bit_cast<uint32_t>(x) & 0x7fffffffu;
      largest = std::max(largest, bits < 0x7f800000u ? bits : 0u);
    }
    return std::bit_cast<float>(largest);
  }
  double m = 0;
  // (Every floating dtype is numeric: the dispatch cannot fail.)
  (void)dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>)
      for (T x : t.data<T>())
        if (const double d = static_cast<double>(toCompute(x)); std::isfinite(d)) m = std::max(m, std::fabs(d));
  });
  return m;
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
  // The largest finite magnitude of each float value, watched as the run makes it.
  std::unordered_map<const ir::Value*, double> magnitude;
  auto watch = [&](const ir::Value& v, const ops::RtValue& value) {
    if (!value.isTensor() || !isFloatingPoint(value.tensor.dtype())) return;
    const double m = largestFinite(value.tensor);
    double& seen = magnitude[&v];
    seen = std::max(seen, m);
  };
  std::vector<std::pair<std::string, ops::RtValue>> feed;
  for (const auto& [name, value] : inputs)
    if (const ir::Value* v = model.graph->findLocalValue(name); v && v->isGraphInput() && !v->isInitializer()) {
      feed.emplace_back(name, value);
      watch(*v, value);
    }
  ops::EvalContext ctx(opsetsOf(model));
  ctx.setObserver(watch);
  ctx.setFloat32Sums(true);  // magnitudes, against a threshold with a 4x margin
  POPRT_TRY(ops::runGraph(*model.graph, feed, ctx));

  // A node stays float32 when a float32 value it reads or makes is beyond the safe magnitude: its
  // producer and every reader then handle it in float32, and no Cast to float16 ever sees it.
  std::map<const ir::Node*, std::string> keep;
  auto big = [&](const ir::Value* v) -> double {
    if (!isFloat32Tensor(v)) return 0;
    if (v->isInitializer() && !v->isGraphInput()) return 0;  // constants are clamped (with a warning), not kept
    auto it = magnitude.find(v);
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
