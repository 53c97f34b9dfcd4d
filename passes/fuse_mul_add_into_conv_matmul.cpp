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
#include <set>

#include "passes/fusion_util.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

class FuseMulAddIntoConvMatMul : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    bool changed = false;
    std::vector<ir::Node*> nodes;
    for (const auto& n : graph.nodes()) nodes.push_back(n.get());
    std::set<ir::Node*> removed;
    for (ir::Node* n : nodes) {
      const std::string& op = n->opType();
      if (removed.count(n) || !n->domain().empty()) continue;
      if (op != "Mul" && op != "Add" && op != "Sub" && op != "Div") continue;
      if (n->inputs().size() != 2 || !n->output(0)) continue;
      for (size_t data = 0; data < 2; ++data) {
        std::string why;
        Outcome r = tryFold(graph, *n, data, ctx, removed, why);
        if (r == Outcome::NotCandidate) continue;
        if (r == Outcome::Folded) changed = true;
        if (r == Outcome::NearMiss) ctx.nearMiss(*n, why);
        break;
      }
    }
    if (changed) POPRT_TRY(fusion::finishRewrites(graph));
    return changed;
  }

 private:
  enum class Outcome { Folded, NearMiss, NotCandidate };

  // Tries n = f(input `data`, constant input 1 - data) with the data input made by a linear op.
  Outcome tryFold(ir::Graph& g, ir::Node& n, size_t data, PassContext& ctx, std::set<ir::Node*>& removed, std::string& why) {
    const std::string& op = n.opType();
    ir::Value* x = n.input(data);
    const ir::Value* kv = n.input(1 - data);
    if (!x || !kv || (op == "Div" && data == 1)) return Outcome::NotCandidate;  // constant / x is not affine in x
    // A bare MatMul + Add is already MatMul's bias form: fuse_matmul_add_into_gemm's business.
    const ir::Node* p = x->producer();
    if ((op == "Add" || op == "Sub") && p && p->opType() == "MatMul") return Outcome::NotCandidate;
    const Tensor* k = constantOf(kv);
    // A non-constant operand (x * sigmoid(x), a residual Add) is not a candidate, but a weight
    // that is a graph input with a default is worth a word.
    if (!k && !kv->isInitializer()) return Outcome::NotCandidate;
    fusion::ChainMatch m = fusion::matchLinearChain(g, x);
    if (!m.chain) {
      if (m.why.empty()) return Outcome::NotCandidate;
      why = m.why;
      return Outcome::NearMiss;
    }
    const fusion::LinearChain& c = *m.chain;
    if (!k) {
      why = fusion::notConstant(kv, "the " + std::string(data == 0 ? "second" : "first") + " operand");
      return Outcome::NearMiss;
    }
    if (k->dtype() != c.dtype) {
      why = "the constant's dtype differs from the weights' of " + c.op->describe();
      return Outcome::NearMiss;
    }
    auto values = fusion::perChannel(*k, c, why);
    if (!values) {
      why = "cannot fold into " + c.op->describe() + ": " + why;
      return Outcome::NearMiss;
    }
    const size_t C = values->size();
    std::vector<double> scale(C, 1.0), shift(C, 0.0);
    for (size_t i = 0; i < C; ++i) {
      const double v = (*values)[i];
      if (op == "Mul") scale[i] = v;
      if (op == "Div") {
        if (v == 0) {
          why = "it divides by zero";
          return Outcome::NearMiss;
        }
        scale[i] = 1.0 / v;
      }
      if (op == "Add") shift[i] = v;
      if (op == "Sub") {
        scale[i] = data == 0 ? 1.0 : -1.0;  // x - k, or k - x
        shift[i] = data == 0 ? -v : v;
      }
    }
    if (!fusion::allFinite(scale, "the scale", why) || !fusion::allFinite(shift, "the shift", why)) return Outcome::NearMiss;
    removed.insert(c.op);
    if (c.bias_add) removed.insert(c.bias_add);
    removed.insert(&n);
    const std::string counter = fusion::counterName(op) + "_into_" + fusion::counterName(c.op->opType());
    if (Status st = fusion::foldAffine(g, c, scale, shift, &n); !st.ok()) {
      why = st.error().message();
      return Outcome::NearMiss;
    }
    ctx.count(counter);
    return Outcome::Folded;
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseMulAddIntoConvMatMul() { return std::make_unique<FuseMulAddIntoConvMatMul>(); }

}  // namespace poprt::passes
