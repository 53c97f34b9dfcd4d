// fuse_mul_add_into_conv_matmul: folds a Mul by a constant per-output-channel (or scalar) tensor
// and an Add of a constant per-channel (or scalar) bias, directly after a Conv, ConvTranspose,
// Gemm or a MatMul with a constant 2-D weight, into the op's weights and bias. Exporters write the
// same thing several ways, all handled: commuted operands, Div by a constant (= Mul by its
// reciprocal), Sub of a constant (= Add of its negation) and constant - x (= x * -1 + constant).
// "Per channel" means the constant, broadcast against the op's output, varies only along the
// channel axis (1 for convolutions and Gemm, the last for MatMul) and leaves the shape unchanged:
// [C,1,1] or [1,C,1,1] after a 2-D Conv, [N] or [1,N] after a MatMul, or one value.
// Chains fold one op at a time (Conv -> Mul -> Add -> Conv). A MatMul keeps its bias as an Add
// (a MatMul + Add alone is left to fuse_matmul_add_into_gemm), or becomes a Gemm when its input is
// 2-D. The op's output must feed only the Mul/Add. A Mul or Add whose other operand is not a
// constant (x * sigmoid(x), residual adds) is not a candidate and is not reported.
#include "passes/fusion_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite_rule.h"

namespace poprt::passes {
namespace {

// The Mul/Add/Sub/Div folded into the chain before it: y = chain.out * scale + shift, per channel.
struct AffineMatch {
  std::vector<ir::Node*> nodes;  // the Mul/Add/Sub/Div, the linear op and the chain's bias Add, if any
  fusion::LinearChain chain;
  std::vector<double> scale, shift;
};

class FuseMulAddIntoConvMatMul : public RewriteRule<AffineMatch> {
 protected:
  std::vector<std::string> rootOpTypes() const override { return {"Mul", "Add", "Sub", "Div"}; }

  // The first operand order that is a candidate decides: a fold, or a near miss.
  Found<AffineMatch> match(ir::Graph& graph, ir::Node& n, PassContext&) override {
    if (n.inputs().size() != 2 || !n.output(0)) return Found<AffineMatch>::none();
    for (size_t data = 0; data < 2; ++data) {
      Found<AffineMatch> found = matchOperands(graph, n, data);
      if (found.match || !found.why.empty()) return found;
    }
    return Found<AffineMatch>::none();
  }

  Status rewrite(ir::Graph& graph, AffineMatch& m, PassContext& ctx) override {
    ir::Node* n = m.nodes[0];
    const std::string counter = fusion::counterName(n->opType()) + "_into_" + fusion::counterName(m.chain.op->opType());
    POPRT_TRY(fusion::foldAffine(graph, m.chain, m.scale, m.shift, n));
    ctx.count(counter);
    return okStatus();
  }

 private:
  // n = f(input `data`, constant input 1 - data) with the data input made by a linear op.
  Found<AffineMatch> matchOperands(ir::Graph& g, ir::Node& n, size_t data) {
    using F = Found<AffineMatch>;
    std::string why;
    const std::string& op = n.opType();
    ir::Value* x = n.input(data);
    const ir::Value* kv = n.input(1 - data);
    if (!x || !kv || (op == "Div" && data == 1)) return F::none();  // constant / x is not affine in x
    // A bare MatMul + Add is already MatMul's bias form: fuse_matmul_add_into_gemm's business.
    const ir::Node* p = x->producer();
    if ((op == "Add" || op == "Sub") && p && p->opType() == "MatMul") return F::none();
    const Tensor* k = constantOf(kv);
    // A non-constant operand (x * sigmoid(x), a residual Add) is not a candidate, but a weight
    // that is a graph input with a default is worth a word.
    if (!k && !kv->isInitializer()) return F::none();
    fusion::ChainMatch m = fusion::matchLinearChain(g, x);
    if (!m.chain) return m.why.empty() ? F::none() : F::nearMiss(m.why);
    const fusion::LinearChain& c = *m.chain;
    if (!k) return F::nearMiss(fusion::notConstant(kv, "the " + std::string(data == 0 ? "second" : "first") + " operand"));
    if (k->dtype() != c.dtype) return F::nearMiss("the constant's dtype differs from the weights' of " + c.op->describe());
    auto values = fusion::perChannel(*k, c, why);
    if (!values) return F::nearMiss("cannot fold into " + c.op->describe() + ": " + why);
    const size_t C = values->size();
    std::vector<double> scale(C, 1.0), shift(C, 0.0);
    for (size_t i = 0; i < C; ++i) {
      const double v = (*values)[i];
      if (op == "Mul") scale[i] = v;
      if (op == "Div") {
        if (v == 0) return F::nearMiss("it divides by zero");
        scale[i] = 1.0 / v;
      }
      if (op == "Add") shift[i] = v;
      if (op == "Sub") {
        scale[i] = data == 0 ? 1.0 : -1.0;  // x - k, or k - x
        shift[i] = data == 0 ? -v : v;
      }
    }
    if (!fusion::allFinite(scale, "the scale", why) || !fusion::allFinite(shift, "the shift", why)) return F::nearMiss(why);
    std::vector<ir::Node*> nodes = {&n, c.op};
    if (c.bias_add) nodes.push_back(c.bias_add);
    return AffineMatch{std::move(nodes), c, std::move(scale), std::move(shift)};
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseMulAddIntoConvMatMul() { return std::make_unique<FuseMulAddIntoConvMatMul>(); }

}  // namespace poprt::passes
