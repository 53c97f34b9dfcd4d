#include "passes/fp16_overflow.h"

#include <cmath>
#include <cstdio>
#include <set>

#include "passes/fusion_util.h"

namespace poprt::passes {
namespace {

using fusion::isOp;

// Sums of this many elements of magnitude 32 reach the float16 maximum.
constexpr int64_t kLargeSumExtent = 2048;

bool isFloat32Tensor(const ir::Value* v) {
  return v && v->type.isTensor() && v->type.kind == ValueKind::Tensor && v->type.dtype == DType::Float;
}

// How many input elements each output element of reduction `n` sums; 0 when unknown.
int64_t reducedExtent(const ir::Node& n) {
  const ir::Value* x = n.input(0);
  if (!x || !x->type.hasStaticShape()) return 0;
  const Shape shape = x->type.staticShape();
  auto axes = fusion::intsFromInputOrAttr(n, 1, "axes");
  int64_t extent = 1;
  if (!axes || axes->empty()) {
    if (axes && n.attrInt("noop_with_empty_axes", 0) != 0) return 1;
    for (int64_t d : shape) extent *= d;
    return extent;
  }
  const auto rank = static_cast<int64_t>(shape.size());
  for (int64_t a : *axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return 0;
    extent *= shape[static_cast<size_t>(a)];
  }
  return extent;
}

// Why `n` makes values far beyond its inputs' magnitude, or "".
std::string wideSource(const ir::Node& n) {
  if (!n.domain().empty()) return "";
  const std::string& op = n.opType();
  if (op == "Exp" || op == "Cosh" || op == "Sinh") return op;
  if (op == "Pow") {
    auto e = fusion::scalarOf(n.input(1));
    if (!e) return "Pow with a run-time exponent";
    char text[48];
    std::snprintf(text, sizeof text, "Pow with exponent %g", *e);
    return *e > 1 ? text : "";
  }
  if (op == "Mul" && n.input(0) && n.input(0) == n.input(1)) return "Mul(x, x)";
  if (op == "ReduceSumSquare" || op == "ReduceProd") return op;
  if ((op == "ReduceSum" || op == "ReduceL1") && reducedExtent(n) >= kLargeSumExtent)
    return op + " over " + std::to_string(reducedExtent(n)) + " elements";
  return "";
}

// Does `n`, reading a wide value, return values back in range? (`wide` says which inputs are.)
bool compresses(const ir::Node& n, const std::set<const ir::Value*>& wide) {
  if (!n.domain().empty()) return false;
  static const std::set<std::string> kCompressing = {"Log",        "Sqrt", "Sigmoid", "Tanh",     "Erf",        "Softmax",
                                                     "LogSoftmax", "Sign", "Atan",    "Softsign", "HardSigmoid"};
  const std::string& op = n.opType();
  if (kCompressing.count(op)) return true;
  if (op == "Div") return wide.count(n.input(1)) != 0;  // a ratio of wide values, or x / wide
  if (op == "Pow") {
    auto e = fusion::scalarOf(n.input(1));
    return e && std::fabs(*e) <= 0.5;
  }
  return false;
}

}  // namespace

std::map<const ir::Node*, std::string> overflowProneNodes(const ir::Graph& graph) {
  std::map<const ir::Node*, std::string> keep;
  std::map<const ir::Value*, std::string> wide_origin;  // wide value -> the source that made it wide
  std::set<const ir::Value*> wide;
  for (const auto& node : graph.nodes()) {
    const ir::Node& n = *node;
    const ir::Value* wide_input = nullptr;
    for (const ir::Value* v : n.inputs())
      if (v && wide.count(v)) {
        wide_input = v;
        break;
      }
    std::string origin;
    bool outputs_wide = false;
    if (wide_input) {
      origin = wide_origin[wide_input];
      keep[&n] = "reads '" + wide_input->name() + "', which " + origin + " can push beyond the float16 range";
      outputs_wide = !compresses(n, wide);
    } else if (std::string why = wideSource(n); !why.empty()) {
      bool float_in = false;
      for (const ir::Value* v : n.inputs()) float_in |= isFloat32Tensor(v);
      if (!float_in) continue;
      origin = n.describe();
      keep[&n] = "its result (" + why + ") can exceed the float16 range";
      outputs_wide = true;
    }
    if (!outputs_wide) continue;
    for (const ir::Value* out : n.outputs())
      if (isFloat32Tensor(out)) {
        wide.insert(out);
        wide_origin[out] = origin;
      }
  }
  return keep;
}

}  // namespace poprt::passes
