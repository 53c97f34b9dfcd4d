// serialize_matmul (--serialize_matmul NODE=FACTOR): a Conv/ConvAct, MatMul or Gemm/GemmAct with a
// constant weight becomes FACTOR nodes, each computing a slice of the output channels (a Conv's
// output channels, a MatMul's or Gemm's columns) from the matching slice of the weight and bias,
// joined by a Concat. Each slice is planned over all the tiles on its own, so its temporaries
// take about 1/FACTOR of the whole node's: what fits a 2048-channel conv beside the resident
// weights of a big model (PopRT serialises large matmuls the same way). Named nodes this pass
// cannot split are an error naming the node and why.
#include <algorithm>

#include "passes/serialize_matmul.h"

#include "lib/ops/op_util.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

// Where a node's output channels lie: in the weight (input `weight`, axis `axis`) and in the
// output (axis `out_axis`, -1 for the last); a bias (input `bias`) is sliced when it holds one
// value per channel. Empty `why` when the node can be split.
struct Split {
  size_t weight = 1, axis = 0, bias = 2;
  int64_t out_axis = 1;
  std::string why;
};

Split splitOf(const ir::Node& n) {
  Split s;
  const std::string& op = n.opType();
  const Tensor* w = n.inputs().size() > 1 ? constantOf(n.input(1)) : nullptr;
  if (op == "Conv" || op == "ConvAct") {
    if (n.attrInt("group", 1) != 1) s.why = "a grouped conv";
    s.axis = 0;
  } else if (op == "MatMul") {
    s.bias = 99;  // none
    s.out_axis = -1;
    if (w && w->shape().size() != 2) s.why = "its weight is not 2-D";
    s.axis = 1;
  } else if (op == "Gemm" || op == "GemmAct") {
    s.out_axis = -1;
    s.axis = n.attrInt("transB", 0) ? 0 : 1;
  } else {
    s.why = "a " + op + " (serialize_matmul splits Conv, MatMul and Gemm)";
  }
  if (s.why.empty() && !w) s.why = "its weight is not a constant";
  return s;
}

}  // namespace

std::string serializeBlocker(const ir::Node& n) { return splitOf(n).why; }

namespace {

class SerializeMatMul : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    const auto& requests = ctx.serialize_matmul;
    bool changed = false;
    for (const auto& [name, factor] : requests) {
      ir::Node* n = nullptr;
      for (const auto& node : graph.nodes())
        if (node->name() == name) n = node.get();
      if (!n) return Error("--serialize_matmul: the model has no node named '" + name + "' (after the fusions)");
      const Split s = splitOf(*n);
      if (!s.why.empty()) return Error("--serialize_matmul: node '" + name + "' is " + s.why);
      const Tensor& w = *constantOf(n->input(s.weight));
      const int64_t channels = w.shape()[s.axis];
      const int64_t pieces = std::min<int64_t>(factor, channels);
      if (pieces < 2) continue;
      if (!n->output(0)->type.hasRank()) return Error("--serialize_matmul: node '" + name + "': its output has no known rank");
      const Tensor* bias = n->inputs().size() > s.bias && n->input(s.bias) ? constantOf(n->input(s.bias)) : nullptr;
      const bool slice_bias = bias && bias->numElements() == channels && bias->numElements() > 1;
      if (n->inputs().size() > s.bias && n->input(s.bias) && !bias)
        return Error("--serialize_matmul: node '" + name + "': its bias is not a constant");
      ir::Value* y = n->output(0);
      const std::vector<ir::Value*> node_inputs = n->inputs();
      const auto attributes = n->attributes;
      const std::string op = n->opType(), domain = n->domain();
      ir::Value* tmp = fusion::detach(graph, y, {n});
      std::vector<ir::Value*> parts;
      for (int64_t i = 0; i < pieces; ++i) {
        const int64_t begin = channels * i / pieces, end = channels * (i + 1) / pieces;
        std::vector<ir::Value*> inputs = node_inputs;
        inputs[s.weight] = fusion::addConstant(graph, node_inputs[s.weight]->name() + "/serial",
                                               ops::sliceAxis(w, static_cast<int64_t>(s.axis), begin, end - begin));
        if (slice_bias)
          inputs[s.bias] =
              fusion::addConstant(graph, node_inputs[s.bias]->name() + "/serial",
                                  ops::sliceAxis(Tensor(bias->dtype(), {channels}, {bias->bytes().begin(), bias->bytes().end()}),
                                                 0, begin, end - begin));
        // The slice's type: y's, with end - begin channels (a pass types every value it makes).
        ir::TensorType type = y->type;
        if (type.dims) {
          const size_t axis = s.out_axis < 0 ? type.dims->size() - 1 : static_cast<size_t>(s.out_axis);
          (*type.dims)[axis] = ir::Dim::fixed(end - begin);
        }
        ir::Value* part = graph.addValue(graph.uniqueName(y->name() + "/serial"), type);
        ir::Node* piece = graph.addNode(op, inputs, {part}, graph.uniqueName(name + "/serial"), domain);
        piece->attributes = attributes;
        parts.push_back(part);
      }
      ir::Node* concat = graph.addNode("Concat", parts, {y}, graph.uniqueName(name + "/concat"));
      concat->attributes["axis"].value = s.out_axis;
      fusion::reattach(graph, tmp, y);
      ctx.count("nodes_serialized");
      changed = true;
    }
    if (changed) POPRT_TRY(graph.topoSort());
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> makeSerializeMatMul() { return std::make_unique<SerializeMatMul>(); }

}  // namespace poprt::passes
