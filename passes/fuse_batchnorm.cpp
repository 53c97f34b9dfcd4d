// fuse_batchnorm: folds an inference BatchNormalization with constant scale, bias, mean and var
// (any epsilon) into the Conv, ConvTranspose, Gemm or MatMul (constant 2-D weight) before it:
// y = (x - mean) / sqrt(var + eps) * scale + bias = x * s + t per channel, with
// s = scale / sqrt(var + eps) and t = bias - mean * s, scales the op's weights per output channel
// (ConvTranspose's weights are [C_in, C_out/group, k...]) and makes a new bias. An Add of a
// constant per-channel bias between the op and the BN folds too (MatMul -> Add -> BN).
// BatchNormalization normalises axis 1, so a MatMul only qualifies when its output is 2-D
// ([M, N], N its columns); it then becomes a Gemm. The op's output must feed only the BN.
// New weights and biases are new initializers; the old ones are left for dead_code_elimination.
#include <cmath>
#include <set>

#include "lib/ops/op_util.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

class FuseBatchNorm : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    const int64_t opset = ctx.opsets()[""];
    bool changed = false;
    std::vector<ir::Node*> nodes;
    for (const auto& n : graph.nodes()) nodes.push_back(n.get());
    std::set<ir::Node*> removed;
    for (ir::Node* n : nodes) {
      if (removed.count(n) || n->opType() != "BatchNormalization" || !n->domain().empty()) continue;
      std::string why = tryFold(graph, *n, opset, ctx, removed);
      if (why.empty()) {
        changed = true;
      } else if (why != "-") {
        ctx.nearMiss(*n, why);
      }
    }
    if (changed) POPRT_TRY(fusion::finishRewrites(graph));
    return changed;
  }

 private:
  // "" when folded; "-" when not a candidate; otherwise why not.
  std::string tryFold(ir::Graph& g, ir::Node& bn, int64_t opset, PassContext& ctx, std::set<ir::Node*>& removed) {
    ir::Value* x = bn.input(0);
    ir::Value* y = bn.output(0);
    if (!x || !y) return "-";
    if (opset >= 14 && bn.attrInt("training_mode", 0) != 0) return "training_mode is set";
    for (size_t i = 1; i < bn.outputs().size(); ++i)  // before opset 14 the extra outputs mean training mode
      if (bn.output(i) || opset < 14) return "it has training outputs (running or saved mean/var)";
    const Tensor* params[4];
    const char* names[4] = {"scale", "B", "input_mean", "input_var"};
    for (size_t i = 0; i < 4; ++i) {
      params[i] = constantOf(bn.input(i + 1));
      if (!params[i]) return fusion::notConstant(bn.input(i + 1), names[i]);
      if (!isFloatingPoint(params[i]->dtype())) return std::string(names[i]) + " is not floating-point";
    }
    if (x->isGraphInput()) return "its input is a graph input";
    fusion::ChainMatch m = fusion::matchLinearChain(g, x);
    if (!m.chain) {
      if (!m.why.empty()) return m.why;
      const ir::Node* p = x->producer();
      return p ? "its input comes from " + p->describe() + ", not a Conv, ConvTranspose, Gemm or MatMul"
               : "its input is not computed by a node";
    }
    const fusion::LinearChain& c = *m.chain;
    if (c.rank < 0) return "the rank of the output of " + c.op->describe() + " is unknown";
    if (c.axis != 1)
      return "it normalises axis 1 of the rank-" + std::to_string(c.rank) + " output of " + c.op->describe() +
             ", whose channels are on axis " + std::to_string(c.axis);
    for (size_t i = 0; i < 4; ++i)
      if (params[i]->numElements() != c.channels)
        return std::string(names[i]) + " of shape " + shapeToString(params[i]->shape()) +
               " does not have one value for each of the " + std::to_string(c.channels) + " channels of " + c.op->describe();
    const double eps = bn.attrFloat("epsilon", 1e-5f);
    std::vector<double> scale(static_cast<size_t>(c.channels)), shift(scale.size());
    auto values = [&](size_t i) {
      auto v = ops::toDoubles(*params[i]);
      return v.ok() ? std::move(v).value() : std::vector<double>{};
    };
    const std::vector<double> gamma = values(0), beta = values(1), mean = values(2), var = values(3);
    for (size_t ch = 0; ch < scale.size(); ++ch) {
      if (!(var[ch] + eps > 0)) return "input_var + epsilon is not positive for channel " + std::to_string(ch);
      scale[ch] = gamma[ch] / std::sqrt(var[ch] + eps);
      shift[ch] = beta[ch] - mean[ch] * scale[ch];
    }
    std::string why;
    if (!fusion::allFinite(scale, "the folded scale", why) || !fusion::allFinite(shift, "the folded shift", why)) return why;
    removed.insert(c.op);
    if (c.bias_add) removed.insert(c.bias_add);
    removed.insert(&bn);
    const std::string counter = fusion::counterName(c.op->opType());
    if (Status st = fusion::foldAffine(g, c, scale, shift, &bn); !st.ok()) return st.error().message();
    ctx.count(counter);
    return "";
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseBatchNorm() { return std::make_unique<FuseBatchNorm>(); }

}  // namespace poprt::passes
