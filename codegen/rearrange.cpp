#include "codegen/rearrange.h"

#include "lib/ops/op_util.h"

namespace poprt::codegen {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 24;  // index maps cost 8 bytes per element at compile time
constexpr int kInputShift = 40;                     // index value = input << 40 | (element + 1); 0 = fill

bool isDataInput(const ir::Node& node, size_t i) { return node.opType() == "Concat" || i == 0; }

}  // namespace

Expected<RearrangeMap> rearrangeMap(const ir::Node& node, const ops::Opsets& opsets) {
  std::vector<Tensor> owned;
  owned.reserve(node.inputs().size());
  std::vector<const Tensor*> args;
  RearrangeMap map;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const ir::Value* v = node.input(i);
    if (!v) {
      args.push_back(nullptr);
      continue;
    }
    if (node.opType() == "Pad" && i == 2) {  // constant_value: becomes the fill; the index run pads with 0
      const Tensor* c = v->initializer();
      if (!c || v->isGraphInput()) return Error("Pad's constant_value is not a constant");
      POPRT_ASSIGN_OR_RETURN(std::vector<double> value, ops::toDoubles(*c));
      map.fill_value = value.empty() ? 0.0 : value[0];
      args.push_back(nullptr);
      continue;
    }
    if (!isDataInput(node, i)) {
      if (!v->isInitializer() || v->isGraphInput()) return Error("input '" + v->name() + "' is not a constant");
      args.push_back(v->initializer());
      continue;
    }
    if (!v->type.hasStaticShape()) return Error("input '" + v->name() + "' has a run-time shape");
    int64_t n = v->type.numElements();
    if (n > kMaxElements) return Error("input '" + v->name() + "' is too large to plan as copies");
    Tensor t(DType::Int64, v->type.staticShape());
    auto d = t.data<int64_t>();
    for (int64_t e = 0; e < n; ++e) d[static_cast<size_t>(e)] = (static_cast<int64_t>(i) << kInputShift) | (e + 1);
    owned.push_back(std::move(t));
    args.push_back(&owned.back());
  }
  if (node.opType() == "Pad" && node.attrString("mode", "constant") != "constant") return Error("only constant Pad");
  if (node.opType() == "Resize" || node.opType() == "Upsample")
    if (node.attrString("mode", "nearest") != "nearest") return Error("only nearest Resize moves elements unchanged");
  if (node.opType() == "Pad") map.fill_value = node.input(2) ? map.fill_value : node.attrFloat("value", 0.0f);
  const ops::OpDef* def = ops::findOp(node.domain(), node.opType());
  if (!def || !def->eval) return Error("no evaluator");
  // Before opset 11 Pad's fill is the attribute `value`; the index run must pad with 0 (= fill).
  const ir::Node* run = &node;
  ir::Graph scratch;
  if (node.opType() == "Pad" && node.hasAttr("value")) {
    std::vector<ir::Value*> ins, outs;
    for (size_t i = 0; i < node.inputs().size(); ++i) ins.push_back(scratch.addValue("in" + std::to_string(i)));
    for (size_t i = 0; i < node.outputs().size(); ++i) outs.push_back(scratch.addValue("out" + std::to_string(i)));
    ir::Node* copy = scratch.addNode(node.opType(), ins, outs, node.name(), node.domain());
    copy->attributes = node.attributes;
    copy->attributes["value"].value = 0.0f;
    run = copy;
  }
  ops::EvalContext ctx(opsets);
  auto outs = def->eval(*run, args, ctx);
  if (!outs.ok()) return Error("cannot plan the copies: " + outs.error().message());
  // Each input's element count, 0 for one that is not data (an index naming it is an error); once,
  // not per element: the loop below runs over every element of the outputs.
  std::vector<int64_t> data_elements(node.inputs().size(), 0);
  for (size_t i = 0; i < node.inputs().size(); ++i)
    if (node.input(i) && isDataInput(node, i)) data_elements[i] = node.input(i)->type.numElements();
  const bool pad = node.opType() == "Pad";
  for (const Tensor& out : *outs) {
    if (out.dtype() != DType::Int64) return Error("the op changed the index dtype");
    if (out.numElements() > kMaxElements) return Error("output too large to plan as copies");
    std::vector<RearrangeMap::Source> sources(static_cast<size_t>(out.numElements()));
    auto d = out.data<int64_t>();
    for (size_t e = 0; e < sources.size(); ++e) {
      int64_t code = d[e];
      if (code == 0) {  // a fill: only Pad makes them
        if (!pad) return Error("the op fills elements with a constant");
        continue;
      }
      int64_t input = code >> kInputShift;
      int64_t element = (code & ((int64_t{1} << kInputShift) - 1)) - 1;
      if (input < 0 || input >= static_cast<int64_t>(data_elements.size()) || element < 0 ||
          element >= data_elements[static_cast<size_t>(input)])
        return Error("the op computed new values; it is not a pure rearrangement");
      sources[e] = {static_cast<int32_t>(input), element};
    }
    map.outputs.push_back(std::move(sources));
  }
  return map;
}

}  // namespace poprt::codegen
