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

#include "lib/ops/op_util.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite_rule.h"

namespace poprt::passes {
namespace {

// The BN folded into the chain before it: y = chain.out * scale + shift, per channel.
struct BnMatch {
  std::vector<ir::Node*> nodes;  // the BN, the linear op and the chain's bias Add, if any
  fusion::LinearChain chain;
  std::vector<double> scale, shift;
};

class FuseBatchNorm : public RewriteRule<BnMatch> {
 protected:
  std::vector<std::string> rootOpTypes() const override { return {"BatchNormalization"}; }

  Status rewrite(ir::Graph& graph, BnMatch& m, PassContext& ctx) override {
    const std::string counter = fusion::counterName(m.chain.op->opType());
    POPRT_TRY(fusion::foldAffine(graph, m.chain, m.scale, m.shift, m.nodes[0]));
    ctx.count(counter);
    return okStatus();
  }

  Found<BnMatch> match(ir::Graph& g, ir::Node& bn, PassContext&) override {
    using F = Found<BnMatch>;
    ir::Value* x = bn.input(0);
    ir::Value* y = bn.output(0);
    if (!x || !y) return F::none();
    if (opset() >= 14 && bn.attrInt("training_mode", 0) != 0) return F::nearMiss("training_mode is set");
    for (size_t i = 1; i < bn.outputs().size(); ++i)  // before opset 14 the extra outputs mean training mode
      if (bn.output(i) || opset() < 14) return F::nearMiss("it has training outputs (running or saved mean/var)");
    const Tensor* params[4];
    const char* names[4] = {"scale", "B", "input_mean", "input_var"};
    for (size_t i = 0; i < 4; ++i) {
      params[i] = constantOf(bn.input(i + 1));
      if (!params[i]) return F::nearMiss(fusion::notConstant(bn.input(i + 1), names[i]));
      if (!isFloatingPoint(params[i]->dtype())) return F::nearMiss(std::string(names[i]) + " is not floating-point");
    }
    if (x->isGraphInput()) return F::nearMiss("its input is a graph input");
    fusion::ChainMatch m = fusion::matchLinearChain(g, x);
    if (!m.chain) {
      if (!m.why.empty()) return F::nearMiss(m.why);
      const ir::Node* p = x->producer();
      return F::nearMiss(p ? "its input comes from " + p->describe() + ", not a Conv, ConvTranspose, Gemm or MatMul"
                           : "its input is not computed by a node");
    }
    const fusion::LinearChain& c = *m.chain;
    if (c.rank < 0) return F::nearMiss("the rank of the output of " + c.op->describe() + " is unknown");
    if (c.axis != 1)
      return F::nearMiss("it normalises axis 1 of the rank-" + std::to_string(c.rank) + " output of " + c.op->describe() +
                         ", whose channels are on axis " + std::to_string(c.axis));
    for (size_t i = 0; i < 4; ++i)
      if (params[i]->numElements() != c.channels)
        return F::nearMiss(std::string(names[i]) + " of shape " + shapeToString(params[i]->shape()) +
                           " does not have one value for each of the " + std::to_string(c.channels) + " channels of " +
                           c.op->describe());
    const double eps = bn.attrFloat("epsilon", 1e-5f);
    std::vector<double> scale(static_cast<size_t>(c.channels)), shift(scale.size());
    auto values = [&](size_t i) {
      auto v = ops::toDoubles(*params[i]);
      return v.ok() ? std::move(v).value() : std::vector<double>{};
    };
    const std::vector<double> gamma = values(0), beta = values(1), mean = values(2), var = values(3);
    for (size_t ch = 0; ch < scale.size(); ++ch) {
      if (!(var[ch] + eps > 0)) return F::nearMiss("input_var + epsilon is not positive for channel " + std::to_string(ch));
      scale[ch] = gamma[ch] / std::sqrt(var[ch] + eps);
      shift[ch] = beta[ch] - mean[ch] * scale[ch];
    }
    std::string why;
    if (!fusion::allFinite(scale, "the folded scale", why) || !fusion::allFinite(shift, "the folded shift", why))
      return F::nearMiss(why);
    std::vector<ir::Node*> nodes = {&bn, c.op};
    if (c.bias_add) nodes.push_back(c.bias_add);
    return BnMatch{std::move(nodes), c, std::move(scale), std::move(shift)};
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseBatchNorm() { return std::make_unique<FuseBatchNorm>(); }

}  // namespace poprt::passes
